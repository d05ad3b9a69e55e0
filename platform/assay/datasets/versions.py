"""Storing a dataset version: its folder in the dataset store and its catalog row, both or neither.

Every producer of versions (ingestion, derived samples, synthetic pairs) stores through
:func:`store_version`. The order is what keeps "nothing is written on failure": the caller has
parsed and checked everything in memory first; the folder is then written atomically
(:func:`assay.datasets.store.write_version`: a temporary folder renamed into place), and the catalog
row follows in one transaction. If that transaction fails, the folder this call created is removed
again, so a failure leaves neither a folder nor a row. A folder that was already there (written by
a concurrent producer of the same content) is left alone.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from assay.catalog.dataset_versions import find_version_by_digest, record_version
from assay.catalog.engine import session_scope
from assay.config import Settings
from assay.datasets import store
from assay.datasets.names import VersionRef
from assay.errors import NotFoundError
from assay.provenance import short


def store_version(
    settings: Settings,
    *,
    name: str,
    digest: str,
    tables: dict[str, pa.Table],
    manifest: dict[str, Any],
    parent: VersionRef | None = None,
    **catalog_row: Any,
) -> VersionRef:
    """Write the version folder of ``tables`` and ``manifest`` under ``digest``, then record its
    catalog row (``catalog_row``: the other fields of
    :func:`assay.catalog.dataset_versions.record_version`; ``parent``: the version it derives from);
    returns the new version. On any failure of the catalog write, the folder this call created is
    removed and the error raised."""
    rel, created = store.write_version(settings, name, digest, tables, manifest)
    try:
        with session_scope(settings) as session:
            parent_row = None
            if parent is not None:
                parent_row = find_version_by_digest(session, parent.name, parent.digest)
                if parent_row is None:
                    raise NotFoundError(f"{parent.label} ({short(parent.digest)}) is no longer in the catalog")
            version = record_version(session, name=name, digest=digest, store_path=rel, tables=tables,
                                     parent=parent_row, **catalog_row)
            return VersionRef(name, version.number, digest)
    except BaseException:
        if created:
            store.remove_version(settings, rel)
        raise
