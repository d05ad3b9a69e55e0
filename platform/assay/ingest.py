"""Ingesting a human-judgment release: parse, digest, store once, record in the catalog.

The order matters for the "nothing is written on error" guarantee: the input is parsed and
validated completely in memory first (any defect raises :class:`InputError`), then the version
folder is written atomically, then the catalog rows are inserted in one transaction. If the
catalog write fails, the folder this call created is removed again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.catalog.dataset_versions import find_version_by_digest, record_version
from assay.catalog.engine import session_scope
from assay.config import Settings, load_settings
from assay.datasets import formats, store
from assay.datasets.names import slug, validate_name
from assay.datasets.parsed import ParsedDataset
from assay.errors import InputError
from assay.provenance import code_version, short, table_digest


@dataclass(frozen=True)
class IngestResult:
    name: str
    number: int
    digest: str
    format: str
    created: bool
    """False when identical content was already stored (the re-ingest was a no-op)."""
    row_counts: dict[str, int]
    warnings: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.name}@{self.number}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.number,
            "digest": self.digest,
            "format": self.format,
            "created": self.created,
            "row_counts": self.row_counts,
            "warnings": self.warnings,
        }


def default_name(parsed: ParsedDataset, path: Path) -> str:
    """The name a dataset gets when none is given: ``wmt17`` for a WMT package of 2017, etc."""
    year = parsed.metadata.get("year")
    if parsed.format in ("wmt-da", "wmt16-daseg") and year:
        return f"wmt{int(year) % 100:02d}"
    if parsed.format in ("webnlg2017", "huse"):
        return parsed.format
    return slug(path.stem if path.is_file() else path.name)


def ingest_path(
    path: str | Path,
    *,
    format_name: str | None = None,
    name: str | None = None,
    options: Mapping[str, str] | None = None,
    settings: Settings | None = None,
) -> IngestResult:
    """Ingest one file or folder; identical content returns the existing version unchanged."""
    settings = settings or load_settings()
    path = Path(path).resolve()
    if name is not None:
        validate_name(name)
    parsed = formats.parse(path, format_name, {**sidecar_options(path), **(options or {})})
    name = name or default_name(parsed, path)
    digest = table_digest(parsed.tables)
    row_counts = parsed.row_counts()

    with session_scope(settings) as session:
        existing = find_version_by_digest(session, name, digest)
        if existing is not None:
            return IngestResult(name, existing.number, digest, parsed.format, False, row_counts,
                                list(existing.warnings))

    version_label = short(digest)
    tables = {
        table_name: store.with_store_columns(table, table_name, name, version_label)
        for table_name, table in parsed.tables.items()
    }
    source_files = [vars(f) for f in parsed.source_files]
    manifest = {
        "dataset": name,
        "digest": digest,
        "format": parsed.format,
        "source_path": str(path),
        "source_files": source_files,
        "row_counts": row_counts,
        "warnings": parsed.warnings,
        "info": parsed.metadata,
        "code_version": code_version(),
    }
    rel, created = store.write_version(settings, name, digest, tables, manifest)
    try:
        with session_scope(settings) as session:
            version = record_version(
                session,
                name=name,
                digest=digest,
                format=parsed.format,
                store_path=rel,
                source_path=str(path),
                source_files=source_files,
                row_counts=row_counts,
                warnings=list(parsed.warnings),
                info=dict(parsed.metadata),
                code_version=code_version(),
                tables=tables,
            )
            number = version.number
    except BaseException:
        if created:
            store.remove_version(settings, rel)
        raise
    return IngestResult(name, number, digest, parsed.format, True, row_counts, list(parsed.warnings))


def sidecar_options(path: Path) -> dict[str, str]:
    """Column declarations kept beside a file: ``data.tsv`` -> ``data.columns.json``.

    Lets ``assay run`` ingest generic files without command-line options; options given on the
    command line override the sidecar's.
    """
    sidecar = path.with_name(path.stem + ".columns.json")
    if not path.is_file() or not sidecar.is_file():
        return {}
    try:
        declared = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(sidecar, f"unreadable column declarations ({exc})",
                         expected="a JSON object mapping canonical names to input columns") from exc
    if not isinstance(declared, dict) or not all(isinstance(v, str) for v in declared.values()):
        raise InputError(sidecar, "column declarations must be a JSON object of strings",
                         expected='{"candidate": "hyp", "human_raw": "score", ...}')
    return {str(k): v for k, v in declared.items()}


def discover(data_dir: Path) -> list[Path]:
    """The datasets in ``data_dir``: every entry (folder or file) that some format recognises."""
    found = []
    registry = formats.registry()
    for entry in sorted(data_dir.iterdir()):
        if entry.name.startswith(".") or entry.name.endswith(".md"):
            continue
        if any(fmt.detect(entry) for fmt in registry.values()):
            found.append(entry)
    return found


def derive_version(
    parent: str,
    name: str,
    tables: dict[str, Any],
    derivation: dict[str, Any],
    *,
    settings: Settings | None = None,
) -> IngestResult:
    """Store tables derived from an existing version (a sample, a filtered copy) as a version of
    dataset ``name``, with its lineage (parent version and how it was derived) in the catalog.

    ``tables`` hold canonical rows (the store columns ``dataset``/``version`` are replaced);
    identical derived content is a no-op, as for ingestion.
    """
    from assay.catalog.dataset_versions import resolve
    from assay.datasets.schema import STORE_COLUMNS, parser_schema

    settings = settings or load_settings()
    validate_name(name)
    canonical = {}
    for table_name in ("segments", "systems", "outputs", "rankings"):
        schema = parser_schema(table_name)
        table = tables.get(table_name)
        if table is None:
            canonical[table_name] = schema.empty_table()
        else:
            keep = [c for c in table.column_names if c not in STORE_COLUMNS]
            canonical[table_name] = table.select(keep).cast(schema)
    digest = table_digest(canonical)
    row_counts = {k: v.num_rows for k, v in canonical.items()}
    with session_scope(settings) as session:
        parent_version = resolve(session, parent)
        parent_label, parent_digest = parent_version.label, parent_version.digest
        existing = find_version_by_digest(session, name, digest)
        if existing is not None:
            return IngestResult(name, existing.number, digest, "derived", False, row_counts, [])
    lineage = {"parent": parent_label, "parent_digest": parent_digest, **derivation}
    stored = {t: store.with_store_columns(tb, t, name, short(digest)) for t, tb in canonical.items()}
    manifest = {"dataset": name, "digest": digest, "format": "derived", "derivation": lineage,
                "row_counts": row_counts, "code_version": code_version()}
    rel, created = store.write_version(settings, name, digest, stored, manifest)
    try:
        with session_scope(settings) as session:
            parent_version = resolve(session, parent)
            version = record_version(
                session, name=name, digest=digest, format="derived", store_path=rel,
                source_path=f"derived from {parent_label}", source_files=[], row_counts=row_counts,
                warnings=[], info={"derivation": lineage, **{k: v for k, v in parent_version.info.items()
                                                             if k in ("year", "testset")}},
                code_version=code_version(), tables=stored, parent=parent_version, derivation=lineage,
            )
            number = version.number
    except BaseException:
        if created:
            store.remove_version(settings, rel)
        raise
    return IngestResult(name, number, digest, "derived", True, row_counts, [])
