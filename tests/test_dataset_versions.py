"""Naming and storing dataset versions: VersionRef and DatasetRef, one store_version for every
producer (nothing left when the catalog write fails), and versions stored before the dataset-store
column ``version`` became ``version_digest``."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy.exc import IntegrityError

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.config import load_settings
from assay.datasets import store
from assay.datasets.names import DatasetRef, VersionRef, split_reference
from assay.datasets.profile import profile
from assay.datasets.schema import TABLES, parser_schema
from assay.datasets.versions import store_version
from assay.errors import NotFoundError, UsageError
from assay.fixtures import fixtures_dir
from assay.jobs.ingest import derive_version, ingest_path
from assay.provenance import table_digest
from assay.query.duck import run_user_query
from tests.test_ingest import store_snapshot as store_and_catalog

DEMO_WMT = fixtures_dir() / "demo-wmt"
DIGEST = "3f2a9c" + "0" * 58


# --- the references ------------------------------------------------------------------------------


def test_version_ref_label_parse_and_json() -> None:
    ref = VersionRef("wmt17", 2, DIGEST)
    assert ref.label == str(ref) == "wmt17@2" and ref.pinned == f"wmt17@{DIGEST}"
    assert VersionRef.parse("wmt17@2", DIGEST) == ref
    assert VersionRef.from_dict(json.loads(json.dumps(ref.as_dict()))) == ref
    assert ref.as_dict()["label"] == "wmt17@2"
    # as a results-store row names it (docs/STORAGE.md), read back the same
    assert ref.columns() == {"dataset": "wmt17", "version_number": 2, "version_digest": DIGEST}
    assert VersionRef.from_columns({**ref.columns(), "run_id": "x"}) == ref
    # a bare name or a digest names no number: the catalog resolves those (DatasetRef)
    for text in ("wmt17", "wmt17@3f2a9c"):
        with pytest.raises(UsageError, match="not a version label"):
            VersionRef.parse(text, DIGEST)


def test_dataset_ref_says_whether_it_names_a_number_or_a_digest() -> None:
    assert DatasetRef.parse("wmt17") == DatasetRef("wmt17")
    assert DatasetRef.parse("wmt17@2") == DatasetRef("wmt17", version_number=2)
    assert DatasetRef.parse("wmt17@12345") == DatasetRef("wmt17", version_number=12345)
    # six or more digits, or any hex letter: a digest prefix (lower-cased)
    assert DatasetRef.parse("wmt17@123456") == DatasetRef("wmt17", version_digest="123456")
    assert DatasetRef.parse("wmt17@3F2A9C") == DatasetRef("wmt17", version_digest="3f2a9c")
    assert [str(DatasetRef.parse(t)) for t in ("wmt17", "wmt17@2", "wmt17@3f2a9c")] == ["wmt17", "wmt17@2",
                                                                                        "wmt17@3f2a9c"]
    with pytest.raises(UsageError, match="nothing after '@'"):
        DatasetRef.parse("wmt17@")
    # the NAME[@VERSION] grammar, shared with versioned suites
    assert [split_reference(t) for t in ("wmt17", "wmt17@2", "wmt17@")] == [("wmt17", None), ("wmt17", "2"),
                                                                           ("wmt17", "")]


def test_the_catalog_resolves_both_kinds_to_the_same_version_ref() -> None:
    result = ingest_path(DEMO_WMT)
    with session_scope(load_settings()) as session:
        by_number = resolve(session, "wmt99@1").ref
        by_digest = resolve(session, f"wmt99@{result.version.digest[:8].upper()}").ref
    assert by_number == by_digest == result.version == VersionRef("wmt99", 1, result.version.digest)
    # a VersionRef already resolved is found by its digest, not parsed again
    with session_scope(load_settings()) as session:
        assert resolve(session, result.version).ref == result.version
        with pytest.raises(NotFoundError, match="no longer in the catalog"):
            resolve(session, VersionRef("wmt99", 1, "f" * 64))


# --- one way to store a version --------------------------------------------------------------------


def store_snapshot() -> tuple[list[str], dict[str, int]]:
    """The files under the dataset store (an emptied dataset folder may stay: a concurrent writer of
    that dataset may be about to use it) and the catalog's row counts."""
    settings = load_settings()
    paths, counts = store_and_catalog()
    return [p for p in paths if (settings.home / p).is_file()], counts


def _empty_tables(name: str, digest: str) -> dict[str, pa.Table]:
    return {t: store.with_store_columns(parser_schema(t).empty_table(), t, name, digest) for t in TABLES}


def test_store_version_writes_folder_and_row_or_neither() -> None:
    settings = load_settings()
    tables = {t: parser_schema(t).empty_table() for t in TABLES}
    digest = table_digest(tables)
    stored = _empty_tables("empty", digest)
    manifest = {"dataset": "empty", "digest": digest, "format": "derived"}
    row = {"format": "derived", "source_path": "test", "source_files": [], "row_counts": {}, "warnings": [],
           "info": {}, "code_version": "test"}
    before = store_snapshot()
    # the catalog refuses the row (a required column missing): the folder just written goes again
    with pytest.raises(IntegrityError):
        store_version(settings, name="empty", digest=digest, tables=stored, manifest=manifest,
                      **{**row, "format": None})
    assert store_snapshot() == before
    # a parent that is not in the catalog: the same
    with pytest.raises(NotFoundError, match="no longer in the catalog"):
        store_version(settings, name="empty", digest=digest, tables=stored, manifest=manifest,
                      parent=VersionRef("gone", 1, DIGEST), **row)
    assert store_snapshot() == before
    # and when it succeeds, both are there
    ref = store_version(settings, name="empty", digest=digest, tables=stored, manifest=manifest, **row)
    assert ref == VersionRef("empty", 1, digest)
    assert (settings.home / store.relative_version_path("empty", digest) / "manifest.json").is_file()


def test_a_derived_version_whose_catalog_write_fails_leaves_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    import assay.datasets.versions

    parent = ingest_path(DEMO_WMT)
    settings = load_settings()
    segments = store.read_table(settings, store.relative_version_path("wmt99", parent.version.digest), "segments")
    before = store_snapshot()

    def fail(*_args: object, **_kwargs: object) -> None:
        raise UsageError("simulated catalog failure")

    monkeypatch.setattr(assay.datasets.versions, "record_version", fail)
    with pytest.raises(UsageError, match="simulated"):
        derive_version("wmt99@1", "wmt99-half", {"segments": segments.slice(0, 10)}, {"kind": "test"})
    assert store_snapshot() == before


# --- versions stored before the column was renamed ---------------------------------------------------


def _write_old_layout(folder: str) -> None:
    """Rewrite a version's tables as versions were written before: the store column ``version``."""
    settings = load_settings()
    for table in TABLES:
        path = store.table_path(settings, folder, table)
        current = pq.read_table(path)
        old = current.rename_columns(["version" if c == "version_digest" else c for c in current.column_names])
        pq.write_table(old, path)
        assert "version" in pq.read_schema(path).names and "version_digest" not in pq.read_schema(path).names


def test_a_version_in_the_old_layout_reads_as_the_current_one() -> None:
    result = ingest_path(DEMO_WMT)
    settings = load_settings()
    folder = store.relative_version_path("wmt99", result.version.digest)
    expected = {t: store.read_table(settings, folder, t) for t in TABLES}
    profiled = profile("wmt99")
    _write_old_layout(folder)
    for table in TABLES:
        read = store.read_table(settings, folder, table)
        assert read.schema.names == TABLES[table].names
        assert read.equals(expected[table])
    assert store.legacy_renames(store.table_path(settings, folder, "segments")) == {"version": "version_digest"}
    # `assay sql` sees the current column name; what the version holds is unchanged
    columns, rows = run_user_query("SELECT DISTINCT version_digest FROM wmt99")
    assert columns == ["version_digest"] and rows == [(result.version.digest[:12],)]
    columns, _ = run_user_query("SELECT * FROM segments LIMIT 1")
    assert "version_digest" in columns and "version" not in columns
    assert profile("wmt99") == profiled
    # re-ingesting the same source is still a no-op on the old folder
    again = ingest_path(DEMO_WMT, reparse=True)
    assert again.version == result.version and not again.created
