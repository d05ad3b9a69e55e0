"""Migrations tested like code: one head, the models agree with them, a round trip
upgrade -> downgrade -> upgrade keeps the data, and each data migration rewrites rows written
before it, on SQLite and on PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from assay.catalog import engine as catalog_engine
from assay.catalog.models import Base
from assay.datasets.names import VersionRef
from assay.jobs.runs import inputs_version, version_inputs


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
    assert catalog_engine.upgrade(catalog_url) == (None, "0006")
    _insert_rows(catalog_url)
    engine = catalog_engine.make_engine(catalog_url)
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO checkpoints (id, name, path, digest, config, created_at, lineage, run_id) VALUES "
            "(1, 'ft', '/ckpt/ft', :d, '{}', CURRENT_TIMESTAMP, '{\"operation\": \"finetune\"}', 'run-1')"
        ), {"d": "cd" * 32})
    engine.dispose()
    before = _read_rows(catalog_url)

    assert catalog_engine.downgrade(catalog_url) == ("0006", "0005")
    assert _read_rows(catalog_url) == before
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

    assert catalog_engine.upgrade(catalog_url) == ("0001", "0006")
    assert "checkpoint_outbox" in _tables(catalog_url)
    assert _read_rows(catalog_url) == before
    # idempotent: a second upgrade changes nothing
    assert catalog_engine.upgrade(catalog_url) == ("0006", "0006")

    # all the way down and up again
    assert catalog_engine.downgrade(catalog_url, "base") == ("0006", None)
    assert catalog_engine.downgrade(catalog_url, "base") == (None, None)
    assert catalog_engine.upgrade(catalog_url) == (None, "0006")


def test_out_of_date_shared_catalog_is_refused(catalog_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.config import load_settings
    from assay.errors import CatalogOutOfDate

    catalog_engine.upgrade(catalog_url, "0001")
    monkeypatch.setenv("ASSAY_CATALOG_URL", catalog_url)
    catalog_engine.reset_engines()
    with pytest.raises(CatalogOutOfDate, match=r"revision 0001.*needs revision 0006.*assay db upgrade"):
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


# --- 0006: a run's dataset version is one JSON shape -----------------------------------------------

_RUNS = sa.table("runs", sa.column("id", sa.String), sa.column("kind", sa.String), sa.column("status", sa.String),
                 sa.column("inputs", sa.JSON), sa.column("parameters", sa.JSON), sa.column("code_version", sa.String),
                 sa.column("started_at", sa.DateTime(timezone=True)), sa.column("summary", sa.JSON))
_DIGEST = "ab" * 32
"""The digest of wmt17@1, as :func:`_insert_rows` stores it."""
_SIGNATURE = "chrf|nc:6|nw:0|v:1|assay:0.1.0"
_TRAINED_ON = {"role": "train", "rows": 100, "groups": ["de-en"], "aspect": "da"}
_OLD_INPUTS: dict[str, tuple[str, dict[str, Any]]] = {
    # written out as the code before 0006 wrote them (jobs/scoring.py, training/robustness/runs.py,
    # jobs/reruns.py, workers/training/stage_runs.py), independent of the code's writer
    "score-1": ("score", {"dataset": "wmt17", "version": 1, "dataset_digest": _DIGEST, "signature": _SIGNATURE}),
    "robust-1": ("robustness", {"dataset": "wmt17@1", "dataset_digest": _DIGEST, "variants": [], "baselines": []}),
    "rerun-1": ("rerun", {"run": "score-1", "dataset": f"wmt17@{_DIGEST}"}),
    "rerun-gone": ("rerun", {"run": "score-1", "dataset": f"wmt17@{'cd' * 32}"}),
    "train-1": ("finetune", {"data": [{"role": "train", "label": "wmt17@1", "digest": _DIGEST, "rows": 100,
                                       "groups": ["de-en"], "aspect": "da"}], "init": None, "init_digest": None}),
    "report-1": ("report", {"evaluate_runs": ["score-1"]}),
}


def _run_inputs(url: str) -> dict[str, dict[str, Any]]:
    engine = catalog_engine.make_engine(url)
    with engine.connect() as conn:
        found = {run_id: dict(inputs) for run_id, inputs in conn.execute(sa.select(_RUNS.c.id, _RUNS.c.inputs))}
    engine.dispose()
    return found


def test_run_inputs_written_before_0006_name_their_version_one_way(catalog_url: str) -> None:
    assert catalog_engine.upgrade(catalog_url, "0005") == (None, "0005")
    _insert_rows(catalog_url)
    engine = catalog_engine.make_engine(catalog_url)
    with engine.begin() as conn:
        conn.execute(_RUNS.insert(), [
            {"id": run_id, "kind": kind, "status": "completed", "inputs": inputs, "parameters": {},
             "code_version": "assay-test", "started_at": datetime(2026, 11, 30, tzinfo=UTC), "summary": {}}
            for run_id, (kind, inputs) in _OLD_INPUTS.items()])
    engine.dispose()
    before = _run_inputs(catalog_url)

    assert catalog_engine.upgrade(catalog_url) == ("0005", "0006")
    after = _run_inputs(catalog_url)
    wmt17 = VersionRef("wmt17", 1, _DIGEST)
    # what the code writes now (jobs.runs.version_inputs), and read back by its one reader
    assert after["score-1"] == version_inputs(wmt17, signature=_SIGNATURE)
    assert after["robust-1"] == version_inputs(wmt17, variants=[], baselines=[])
    assert after["rerun-1"] == version_inputs(wmt17, run="score-1")
    assert after["train-1"] == {"data": [version_inputs(wmt17, **_TRAINED_ON)], "init": None, "init_digest": None}
    assert {inputs_version(after[r]) for r in ("score-1", "robust-1", "rerun-1")} == {wmt17}
    assert inputs_version(after["train-1"]["data"][0]) == wmt17
    # nothing to rewrite: no version, or a pinned version no longer in the catalog
    assert after["report-1"] == before["report-1"] and after["rerun-gone"] == before["rerun-gone"]
    assert after["run-1"] == before["run-1"] == {}

    assert catalog_engine.downgrade(catalog_url) == ("0006", "0005")
    assert _run_inputs(catalog_url) == before
