"""Migrations tested like code: one head, the models agree with them, and a round trip
upgrade -> downgrade -> upgrade keeps the data, on SQLite and on PostgreSQL."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from assay.catalog import engine as catalog_engine
from assay.catalog.models import Base


def test_one_alembic_head() -> None:
    script = ScriptDirectory.from_config(catalog_engine.alembic_config("sqlite://"))
    assert len(script.get_heads()) == 1
    assert catalog_engine.head_revision() == script.get_current_head()


def test_models_match_migrations(catalog_url: str) -> None:
    catalog_engine.upgrade(catalog_url)
    engine = catalog_engine.make_engine(catalog_url)
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    finally:
        engine.dispose()
    assert diff == [], f"models and migrations disagree: {diff}"


def _insert_rows(url: str) -> None:
    engine = catalog_engine.make_engine(url)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO datasets (id, name, created_at) VALUES (1, 'wmt17', CURRENT_TIMESTAMP)"))
        conn.execute(text(
            "INSERT INTO dataset_versions (id, dataset_id, number, digest, format, store_path, source_path, "
            "source_files, row_counts, warnings, info, code_version, created_at) VALUES "
            "(1, 1, 1, :d, 'wmt-da', 'datasets/wmt17/x', '/data/wmt17', '[]', '{\"segments\": 3920}', "
            "'[\"a warning\"]', '{}', 'assay-test', CURRENT_TIMESTAMP)"
        ), {"d": "ab" * 32})
        conn.execute(text(
            "INSERT INTO runs (id, kind, status, inputs, parameters, code_version, started_at, summary) VALUES "
            "('run-1', 'ingest', 'completed', '{}', '{}', 'assay-test', CURRENT_TIMESTAMP, '{}')"
        ))
    engine.dispose()


def _read_rows(url: str) -> tuple[list[tuple], list[tuple]]:
    engine = catalog_engine.make_engine(url)
    with engine.connect() as conn:
        versions = conn.execute(text("SELECT number, digest, format FROM dataset_versions")).fetchall()
        runs = conn.execute(text("SELECT id, kind FROM runs")).fetchall()
    engine.dispose()
    return [tuple(r) for r in versions], [tuple(r) for r in runs]


def _tables(url: str) -> set[str]:
    engine = catalog_engine.make_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def _columns(url: str, table: str) -> set[str]:
    engine = catalog_engine.make_engine(url)
    columns = {c["name"] for c in inspect(engine).get_columns(table)}
    engine.dispose()
    return columns


def test_round_trip_keeps_data(catalog_url: str) -> None:
    assert catalog_engine.upgrade(catalog_url) == (None, "0005")
    _insert_rows(catalog_url)
    engine = catalog_engine.make_engine(catalog_url)
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO checkpoints (id, name, path, digest, config, created_at, lineage, run_id) VALUES "
            "(1, 'ft', '/ckpt/ft', :d, '{}', CURRENT_TIMESTAMP, '{\"operation\": \"finetune\"}', 'run-1')"
        ), {"d": "cd" * 32})
    engine.dispose()
    before = _read_rows(catalog_url)

    assert catalog_engine.downgrade(catalog_url) == ("0005", "0004")
    assert "checkpoint_outbox" not in _tables(catalog_url)
    assert _read_rows(catalog_url) == before
    assert catalog_engine.downgrade(catalog_url) == ("0004", "0003")
    assert "suite_evaluations" not in _tables(catalog_url)
    assert _read_rows(catalog_url) == before
    assert catalog_engine.downgrade(catalog_url) == ("0003", "0002")
    assert "lineage" not in _columns(catalog_url, "checkpoints")
    assert _read_rows(catalog_url) == before
    assert catalog_engine.downgrade(catalog_url) == ("0002", "0001")
    assert "parent_version_id" not in _columns(catalog_url, "dataset_versions")
    assert _read_rows(catalog_url) == before

    assert catalog_engine.upgrade(catalog_url) == ("0001", "0005")
    assert "checkpoint_outbox" in _tables(catalog_url)
    assert _read_rows(catalog_url) == before
    # idempotent: a second upgrade changes nothing
    assert catalog_engine.upgrade(catalog_url) == ("0005", "0005")

    # all the way down and up again
    assert catalog_engine.downgrade(catalog_url, "base") == ("0005", None)
    assert catalog_engine.downgrade(catalog_url, "base") == (None, None)
    assert catalog_engine.upgrade(catalog_url) == (None, "0005")


def test_out_of_date_shared_catalog_is_refused(catalog_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.config import load_settings
    from assay.errors import CatalogOutOfDate

    catalog_engine.upgrade(catalog_url, "0001")
    monkeypatch.setenv("ASSAY_CATALOG_URL", catalog_url)
    catalog_engine.reset_engines()
    with pytest.raises(CatalogOutOfDate, match=r"revision 0001.*needs revision 0005.*assay db upgrade"):
        catalog_engine.get_engine(load_settings())
    # and it did not migrate it
    engine = catalog_engine.make_engine(catalog_url)
    assert catalog_engine.current_revision(engine) == "0001"
    engine.dispose()
    catalog_engine.reset_engines()


def test_embedded_catalog_is_created_on_first_use() -> None:
    from assay.config import load_settings

    catalog_engine.reset_engines()
    settings = load_settings()
    assert not (settings.home / "catalog.sqlite").exists()
    engine = catalog_engine.get_engine(settings)
    assert catalog_engine.current_revision(engine) == catalog_engine.head_revision()
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert conn.execute(text("PRAGMA busy_timeout")).scalar() == catalog_engine.SQLITE_BUSY_TIMEOUT_MS
    catalog_engine.reset_engines()
