"""Exactly-once scoring with real concurrent `assay score` processes on one PostgreSQL catalog and
one results store, and after a process is killed with SIGKILL mid-scoring.

The commands run as real subprocesses (``.venv/bin/assay score``) and their flows on the test
session's Prefect server (``prefect_engine``: its ``PREFECT_API_URL`` is in the environment the
subprocesses inherit, so none starts a background server). The oracle for "every expected row" is
the stored dataset itself: one row per distinct segment key (the store's content hash of source,
references and candidate), counted in the Parquet parts with pyarrow, independently of the code
that plans and reads scores. Cheap lexical metrics (sacrebleu's sentence BLEU and chrF) on the
real WMT16 DA (3,920 segments) and WebNLG 2017 (6,690 ratings) data keep the runtime small.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from sqlalchemy import select

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import reset_engines, session_scope
from assay.catalog.models import Run
from assay.config import Settings, load_settings
from assay.datasets import store
from assay.results.segment_scores import ROOT, segment_key

ASSAY = Path(sys.executable).parent / "assay"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def team(postgres_url: str, shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """A PostgreSQL catalog migrated by `assay db upgrade`, with WMT16 and WebNLG 2017 ingested."""
    from assay.cli.main import cli
    from assay.jobs.ingest import ingest_path

    monkeypatch.setenv("ASSAY_CATALOG_URL", postgres_url)
    reset_engines()
    upgraded = CliRunner().invoke(cli, ["db", "upgrade"])
    assert upgraded.exit_code == 0, upgraded.output
    reset_engines()
    for folder in ("wmt16-da-seg", "webnlg2017-human-eval"):
        ingest_path(shared_data / folder)
    yield load_settings()
    reset_engines()  # before the database is dropped


def start_score(dataset: str, metric: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(ASSAY), "score", "--dataset", dataset, "--metric", metric, "--json", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
                            cwd=REPO)


def finished(process: subprocess.Popen[str]) -> dict[str, object]:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    return dict(json.loads(out))


def expected_keys(settings: Settings, dataset: str) -> set[str]:
    """The distinct content keys of a dataset version's judged segments, read from its stored table."""
    with session_scope(settings) as session:
        store_path = resolve(session, dataset).store_path
    segments = store.read_table(settings, store_path, "segments").to_pylist()
    return {segment_key(row["source"], row["references"], row["candidate"]) for row in segments}


def stored_rows(settings: Settings, metric: str) -> Counter[tuple[str, str]]:
    """(signature, key) -> how many rows of the results store's parts hold it, for one metric."""
    counts: Counter[tuple[str, str]] = Counter()
    for part in sorted((settings.home / ROOT / f"metric={metric}").glob("*/part-*.parquet")):
        table = pq.read_table(part, columns=["signature", "key"])
        counts.update(zip(table.column("signature").to_pylist(), table.column("key").to_pylist(), strict=True))
    return counts


def score_runs(settings: Settings) -> list[Run]:
    with session_scope(settings) as session:
        return list(session.scalars(select(Run).where(Run.kind == "score").order_by(Run.started_at)).all())


@pytest.mark.prefect
@pytest.mark.postgres
def test_four_concurrent_requests_store_every_row_once(prefect_engine: None, team: Settings) -> None:
    # sentence BLEU's signature does not depend on the scored set: its two requests share one lock
    requests = [("wmt16", "sentbleu", "1000"), ("wmt16", "chrf", "1000"), ("webnlg2017", "chrf", "1000"),
                ("webnlg2017", "sentbleu", "1000")]
    processes = [start_score(dataset, metric, "--shard-size", size) for dataset, metric, size in requests]
    summaries = [finished(p) for p in processes]

    for (dataset, metric, _), summary in zip(requests, summaries, strict=True):
        keys = expected_keys(team, dataset)
        assert summary["computed"] == len(keys) and summary["cached"] == 0, (dataset, metric)
        rows = stored_rows(team, metric)
        mine = {key: n for (signature, key), n in rows.items() if signature == summary["signature"] and key in keys}
        assert set(mine) == keys, (dataset, metric)
        assert set(mine.values()) == {1}, (dataset, metric)  # no duplicates
    for metric in ("sentbleu", "chrf"):
        assert max(stored_rows(team, metric).values()) == 1
    runs = score_runs(team)
    assert len(runs) == 4 and {r.status for r in runs} == {"completed"}
    assert sorted(r.summary["computed"] for r in runs) == sorted(int(str(s["computed"])) for s in summaries)


@pytest.mark.prefect
@pytest.mark.postgres
def test_two_identical_concurrent_requests_store_one_set_of_rows(prefect_engine: None, team: Settings) -> None:
    keys = expected_keys(team, "wmt16")
    first, second = (start_score("wmt16", "chrf", "--shard-size", "250") for _ in range(2))
    summaries = sorted((finished(first), finished(second)), key=lambda s: int(str(s["computed"])))

    # one request computed everything; the other waited for the lock and found it all stored
    # (or planned after the first had finished): it computed nothing and recorded no run
    assert [s["computed"] for s in summaries] == [0, len(keys)]
    assert summaries[0]["cached"] == len(keys) and summaries[0]["run_id"] is None
    assert summaries[0]["signature"] == summaries[1]["signature"]
    rows = stored_rows(team, "chrf")
    assert {key for _, key in rows} == keys and set(rows.values()) == {1}
    runs = score_runs(team)
    assert [(r.id, r.status) for r in runs] == [(summaries[1]["run_id"], "completed")]


@pytest.mark.prefect
@pytest.mark.postgres
def test_a_killed_request_is_marked_crashed_and_its_rerun_computes_only_what_is_missing(
        prefect_engine: None, team: Settings) -> None:
    keys = expected_keys(team, "wmt16")
    process = start_score("wmt16", "sentbleu", "--shard-size", "100")  # 40 shards, one part each
    parts_root = team.home / ROOT / "metric=sentbleu"
    deadline = time.monotonic() + 120
    while not any(parts_root.glob("*/part-*.parquet")):
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, "no part was written in 120 s"
        time.sleep(0.01)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL

    [killed] = score_runs(team)
    assert killed.status == "running" and killed.finished_at is None
    before = stored_rows(team, "sentbleu")
    assert 0 < len(before) < len(keys) and set(before.values()) == {1}
    assert (team.work_dir / killed.id / "todo.parquet").exists()  # the dead run's work file

    summary = finished(start_score("wmt16", "sentbleu", "--shard-size", "100"))
    assert summary["computed"] == len(keys) - len(before) and summary["cached"] == len(before)
    after = stored_rows(team, "sentbleu")
    assert {key for _, key in after} == keys and set(after.values()) == {1}
    assert {key for (_, key) in before} <= {key for _, key in after}

    runs = {r.id: r for r in score_runs(team)}
    assert set(runs) == {killed.id, summary["run_id"]}
    crashed, rerun = runs[killed.id], runs[str(summary["run_id"])]
    assert crashed.status == "crashed" and crashed.finished_at is not None
    assert crashed.error == "its process died: no live holder of the signature lock"
    assert crashed.inputs["signature"] == summary["signature"]
    assert rerun.status == "completed" and rerun.summary["computed"] == len(keys) - len(before)
    assert not (team.work_dir / killed.id).exists()  # its work files were cleaned up


def test_runs_of_a_crashed_flow_run_are_marked_crashed(catalog: Settings) -> None:
    """The flow layer's reconciler: every run still running in the crashed flow run, and no other."""
    from assay.jobs.runs import mark_crashed_by_flow_run

    now = datetime.now(UTC)
    rows = {"a": ("running", "fr-1"), "b": ("running", "fr-1"), "c": ("completed", "fr-1"),
            "d": ("running", "fr-2"), "e": ("running", None)}
    with session_scope(catalog) as session:
        for run_id, (status, flow_run) in rows.items():
            session.add(Run(id=run_id, kind="score", status=status, inputs={}, parameters={}, code_version="test",
                            summary={"computed": 7}, started_at=now, flow_run_id=flow_run))
    assert mark_crashed_by_flow_run(catalog, "fr-1", "Prefect reports flow run fr-1 crashed") == ["a", "b"]
    assert mark_crashed_by_flow_run(catalog, "fr-1", "again") == []  # only running runs change
    with session_scope(catalog) as session:
        runs = {r.id: r for r in session.scalars(select(Run)).all()}
    assert {k: r.status for k, r in runs.items()} == {"a": "crashed", "b": "crashed", "c": "completed",
                                                      "d": "running", "e": "running"}
    assert runs["a"].error == "Prefect reports flow run fr-1 crashed" and runs["a"].finished_at is not None
    assert runs["a"].summary == {"computed": 7}  # the summary is kept


@pytest.mark.postgres
def test_a_dropped_catalog_connection_is_transient_and_bad_input_is_not(postgres_url: str) -> None:
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import DBAPIError

    from assay.errors import UsageError
    from assay.transient import is_transient

    engine = create_engine(postgres_url)
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn, admin.connect() as other:
            pid = conn.execute(text("SELECT pg_backend_pid()")).scalar()
            other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})  # as a server restart does
            with pytest.raises(DBAPIError) as dropped:
                conn.execute(text("SELECT 1"))
        assert dropped.value.connection_invalidated and is_transient(dropped.value)
        with engine.connect() as conn, pytest.raises(DBAPIError) as wrong:
            conn.execute(text("SELECT * FROM no_such_table"))
        assert not is_transient(wrong.value)
    finally:
        engine.dispose()
        admin.dispose()
    refused = create_engine("postgresql+psycopg://postgres@127.0.0.1:1/none", connect_args={"connect_timeout": 3})
    with pytest.raises(DBAPIError) as unreachable:
        refused.connect()
    assert is_transient(unreachable.value)
    # a catalog URL naming a database that does not exist is a set-up error: never retried
    missing = create_engine(postgres_url.rsplit("/", 1)[0] + "/assay_no_such_database")
    with pytest.raises(DBAPIError) as no_database:
        missing.connect()
    missing.dispose()
    assert "does not exist" in str(no_database.value) and not is_transient(no_database.value)
    assert not is_transient(UsageError("shard size must be a positive integer"))
    try:
        raise UsageError("bad dataset") from ConnectionResetError()
    except UsageError as exc:
        assert not is_transient(exc)  # an Assay error is final, whatever caused it
