"""One home per rule (issue 29, finding 2): each rule that several modules apply has one named
function, and these tests hold each home to its rule, on the real WMT16 DA data where the rule
reads data.

* "mean over groups, else each group": :func:`assay.results.correlations.mean_else_each_group`;
* "newest run": :mod:`assay.results.newest_run` (Python and DuckDB);
* statistics per level: :mod:`assay.stats.levels`;
* the segment keys of a table: :func:`assay.results.segment_scores.segment_keys`;
* a cross-process lock: :func:`assay.jobs.signature_lock.signature_lock` (the sweeps' storage too);
* a canonical-JSON digest: :func:`assay.provenance.json_digest`;
* TrainConfig's fields: :data:`assay.training.config.FIELD_TYPES`;
* renamed columns read under their new names: :mod:`assay.renamed_columns`;
* a dataset version's folder in the store: :func:`assay.datasets.store.is_stored`.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import reset_engines, session_scope
from assay.config import load_settings
from assay.datasets import store
from assay.datasets.names import VersionRef
from assay.errors import UsageError
from assay.jobs.evaluation import _check_request, evaluate
from assay.jobs.ingest import ingest_path
from assay.jobs.scoring import score_dataset
from assay.metrics.registry import MetricSpec
from assay.provenance import json_digest
from assay.query.leaderboard import LeaderboardQuery, headline, leaderboard
from assay.renamed_columns import rename_table, renames_in, sql_columns
from assay.results import correlations, segment_scores
from assay.results.correlations import MEAN_GROUP, mean_else_each_group
from assay.results.newest_run import newest_run_by_cell, newest_run_rows, newest_run_sql
from assay.stats.levels import LEVELS, SEG_STATS, STATISTIC_ORDER, SYS_STATS, statistics_at
from tests.conftest import assay_home_at

DATASET = "wmt16"
ONE_GROUP = "cs-en"


@pytest.fixture(scope="module")
def evaluated_home(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """WMT16 DA (seven language pairs), scored with sentBLEU and chrF, evaluated three times at segment
    level: Pearson and Kendall; Kendall again; Kendall on one language pair only (no mean)."""
    with assay_home_at(tmp_path_factory.mktemp("rule_homes")) as home:
        ingest_path(shared_data / "wmt16-da-seg")
        for metric in ("sentbleu", "chrf"):
            score_dataset(DATASET, MetricSpec(metric), progress=False)
        both = evaluate(DATASET, level="seg", statistics=["pearson", "kendall"], n_resamples=20, seed=1)
        again = evaluate(DATASET, level="seg", statistics=["kendall"], n_resamples=20, seed=2)
        groups = sorted({r["group"] for r in both["rows"]} - {MEAN_GROUP})
        one = evaluate(DATASET, level="seg", statistics=["kendall"], n_resamples=20, seed=3,
                       exclude_groups=[g for g in groups if g != ONE_GROUP])
    yield {"home": home, "both": both, "again": again, "one": one, "groups": groups}


@pytest.fixture
def in_home(evaluated_home: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("ASSAY_HOME", str(evaluated_home["home"]))
    reset_engines()
    return evaluated_home


# --- mean over groups, else each group ------------------------------------------------------------

def test_the_mean_over_groups_stands_for_its_cell_else_every_group(in_home: dict[str, Any]) -> None:
    cell = ("level", "aspect", "statistic", "signature")
    both, one = in_home["both"]["rows"], in_home["one"]["rows"]
    assert {r["group"] for r in both} == {MEAN_GROUP, *in_home["groups"]} and len(in_home["groups"]) == 7
    kept = mean_else_each_group(both, cell)
    assert {r["group"] for r in kept} == {MEAN_GROUP}
    assert len(kept) == 2 * 2  # (pearson, kendall) x (sentBLEU, chrF)
    assert kept == [r for r in both if r["group"] == MEAN_GROUP]  # in their given order
    # one language pair: no mean, so the group stands for itself
    assert {r["group"] for r in one} == {ONE_GROUP}
    assert mean_else_each_group(one, cell) == one
    # the cell is what the caller names: runs together, a cell with a mean in one run keeps only it
    mixed = mean_else_each_group([*one, *both], ("statistic", "signature"))
    assert {(r["group"], r["statistic"]) for r in mixed} == {(MEAN_GROUP, "pearson"), (MEAN_GROUP, "kendall")}


# --- newest run -----------------------------------------------------------------------------------

def _stored(settings: Any) -> list[dict[str, Any]]:
    return correlations.PARTS.read(settings, DATASET).to_pylist()


def test_the_newest_run_of_each_cell_in_python_and_in_sql(in_home: dict[str, Any]) -> None:
    settings = load_settings()
    rows = _stored(settings)
    both, again, one = (in_home[k]["run_id"] for k in ("both", "again", "one"))
    by_statistic = newest_run_by_cell(rows, ("statistic",))
    assert {k: {r["run_id"] for r in v} for k, v in by_statistic.items()} == {("pearson",): {both},
                                                                                ("kendall",): {one}}
    # whole runs: every row of the newest run, never a mix
    assert len(by_statistic[("kendall",)]) == len([r for r in rows if r["run_id"] == one])
    per_group = newest_run_rows(rows, ("statistic", "group"))
    assert {(r["statistic"], r["group"], r["run_id"]) for r in per_group if r["group"] in (MEAN_GROUP, ONE_GROUP)} \
        == {("pearson", MEAN_GROUP, both), ("pearson", ONE_GROUP, both), ("kendall", MEAN_GROUP, again),
            ("kendall", ONE_GROUP, one)}
    # the DuckDB form keeps the same rows
    for cell in (("statistic",), ("statistic", "group"), ("signature", "aspect", "level", "statistic", "group")):
        with duckdb.connect() as con:
            source = correlations.sql_source(con, settings, DATASET)
            found = con.execute(f'SELECT run_id, "group", statistic, signature FROM {source} '
                                f"{newest_run_sql(cell)}").fetchall()
        assert sorted(found) == sorted((r["run_id"], r["group"], r["statistic"], r["signature"])
                                       for r in newest_run_rows(rows, cell))


def test_a_tie_in_time_goes_to_the_larger_run_id_in_both_forms() -> None:
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [{"run_id": run, "cell": "x", "created_at": moment, "value": i} for i, run in enumerate("bca")]
    assert [r["run_id"] for r in newest_run_rows(rows, ("cell",))] == ["c"]
    stored = pa.Table.from_pylist(rows)  # noqa: F841  (read by DuckDB below)
    with duckdb.connect() as con:
        assert con.execute(f"SELECT run_id FROM stored {newest_run_sql(('cell',))}").fetchall() == [("c",)]
    with pytest.raises(ValueError, match="not a column name"):
        newest_run_sql(('cell"; DROP',))


def test_the_report_and_the_leaderboard_read_the_newest_run(in_home: dict[str, Any]) -> None:
    from assay.report.collect import correlation_rows, dataset_versions, latest_evaluations

    settings = load_settings()
    evaluations, _ = latest_evaluations(correlation_rows(settings), dataset_versions(settings))
    (seg,) = [e for e in evaluations if e.version.ref.name == DATASET and e.level == "seg"]
    # leaving pairs out is not a side evaluation (assay.results.headline): `one` is the newest Kendall run
    assert in_home["one"]["side"] is None
    assert {r.statistic: r.run_id for r in seg.rows} == {"pearson": in_home["both"]["run_id"],
                                                         "kendall": in_home["one"]["run_id"]}
    level, statistic, group = headline()
    assert (level, statistic, group) == ("seg", "kendall", MEAN_GROUP)
    board = leaderboard(LeaderboardQuery(DATASET))  # the newest run with an `all` Kendall row
    assert {r["run_id"] for r in board} == {in_home["again"]["run_id"]}
    assert sorted(r["metric"] for r in board) == ["chrf", "sentbleu"]
    assert headline("wmt24")[:2] == ("avg", "wmt24")


# --- statistics per level --------------------------------------------------------------------------

def test_every_reader_of_the_statistics_per_level_agrees(in_home: dict[str, Any]) -> None:
    from assay.nightly.regressions import SuiteCell, compare_with_best
    from assay.nightly.suites import define_suite

    assert statistics_at("seg") == SEG_STATS and statistics_at("sys") == SYS_STATS
    assert statistics_at("avg") == () and set(STATISTIC_ORDER) == set(SEG_STATS) | set(SYS_STATS)
    assert statistics_at("sys", {"spa": "sys", "acc_t_item": "seg", "wmt24": "avg"}) == ("spa",)
    settings = load_settings()
    for level in LEVELS:
        for statistic in STATISTIC_ORDER:
            if statistic in statistics_at(level):
                assert _check_request(level, [statistic]) == [statistic]
                continue
            with pytest.raises(UsageError, match="not available at level"):
                _check_request(level, [statistic])
            with pytest.raises(UsageError, match="not available at level"):
                define_suite(settings, "levels", [{"dataset": DATASET, "levels": [level], "statistics": [statistic]}])
            with pytest.raises(UsageError, match="not available at level"):
                compare_with_best(settings, checkpoint_digest="0" * 64, suite_signature="s",
                                  entries=[SuiteCell(f"{DATASET}@1", level, statistic)])


# --- segment keys ---------------------------------------------------------------------------------

def test_the_segment_keys_of_a_table_are_the_keys_its_scores_are_stored_under(in_home: dict[str, Any]) -> None:
    from assay.query.duck import register_functions

    settings = load_settings()
    with session_scope(settings) as session:
        store_path = resolve(session, DATASET).store_path
    segments = store.read_table(settings, store_path, "segments")
    keys = segment_scores.segment_keys(segments)
    assert len(keys) == segments.num_rows == 560 * 7
    assert keys == [segment_scores.segment_key(s, r, c) for s, r, c in zip(
        *(segments.column(c).to_pylist() for c in segment_scores.SEGMENT_COLUMNS), strict=True)]
    assert segment_scores.segment_keys(segments.to_pydict()) == keys
    assert segment_scores.segment_keys(segments, [7, 3]) == [keys[7], keys[3]]
    (scored,) = [s for s in segment_scores.scored_signatures(settings) if s.metric == "chrf"]
    assert set(keys) <= segment_scores.scored_keys(settings, "chrf", scored.signature)
    with duckdb.connect() as con:  # the SQL function of `assay sql` is the same rule
        register_functions(con)
        found = con.execute('SELECT segment_key(source, "references", candidate) FROM segments').fetchall()
    assert [k for (k,) in found] == keys


# --- a cross-process lock -------------------------------------------------------------------------

def test_opening_a_sweep_storage_waits_for_the_one_lock(tmp_path: Path) -> None:
    from assay.jobs.signature_lock import signature_lock
    from assay.sweeps.storage import OPENING_LOCK, create_storage

    settings = load_settings()
    create_storage(settings).engine.dispose()  # made once: opening it again is quick, unless it waits
    opened = threading.Event()

    def open_it() -> None:
        storage = create_storage(settings)
        storage.engine.dispose()
        opened.set()

    with signature_lock(settings, *OPENING_LOCK):
        worker = threading.Thread(target=open_it)
        worker.start()
        assert not opened.wait(1.0)  # held here: the opener waits
    worker.join(60)
    assert opened.is_set()


# --- canonical-JSON digest ------------------------------------------------------------------------

def test_every_stored_json_identity_keeps_its_value(tmp_path: Path) -> None:
    """Each identity as it was computed when it was first stored, written out here."""
    from assay.sweeps.space import load_space
    from assay.training.robustness.experiment import Experiment

    value = {"b": [1, 2.5, "é"], "a": {"z": None, "y": True}}
    assert json_digest(value) == hashlib.sha256(
        json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")).hexdigest()
    experiment = Experiment(kind="drift", version=VersionRef("wmt17", 1, "d" * 64), points=[0.0, 0.5], variants=[],
                            baselines=[{"name": "chrf"}], config={"max_steps": 2}, hyperparameters={"é": 1e-5},
                            seed=1, statistics=["kendall"], n_resamples=10, options={"aspect": "da"})
    identity = {"kind": "drift", "dataset_digest": "d" * 64, "points": [0.0, 0.5], "variants": [],
                "baselines": [{"name": "chrf"}], "hyperparameters": {"é": 1e-5}, "seed": 1,
                "statistics": ["kendall"], "n_resamples": 10, "options": {"aspect": "da"}}
    written = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    assert experiment.id == hashlib.sha256(written.encode()).hexdigest()[:16]
    path = tmp_path / "space.toml"
    path.write_text('[trial]\ndata = ["wmt16"]\n[trial.config]\nmax_steps = 4\n'
                    "[params.learning_rate]\nlow = 1e-5\nhigh = 1e-4\nlog = true\n", encoding="utf-8")
    space = load_space(path)
    # a study keeps this digest: it is json's default separators, kept (assay.sweeps.space.DIGEST_SEPARATORS)
    assert space.digest == hashlib.sha256(json.dumps(space.canonical(), sort_keys=True).encode()).hexdigest()


# --- TrainConfig's fields -------------------------------------------------------------------------

def test_the_cli_and_a_sweep_take_the_trainer_s_fields_and_types() -> None:
    import click

    from assay.cli.training_options import LENGTH_FIELDS, OPTION_FIELDS, training_options
    from assay.sweeps.space import TUNABLE
    from assay.training.config import FIELD_TYPES, TrainConfig

    config = TrainConfig(max_steps=1)
    assert FIELD_TYPES["max_steps"] is int and FIELD_TYPES["head_input"] is str and FIELD_TYPES["unfreeze"] is tuple
    assert set(FIELD_TYPES) == set(config.to_json())
    assert all(FIELD_TYPES[name] is kind for name, kind in TUNABLE.items())
    command = training_options(click.command()(lambda **_: None))
    typed = {p.name: p.type for p in command.params if isinstance(p, click.Option) and not p.is_flag}
    fields = {**LENGTH_FIELDS, **OPTION_FIELDS}
    for option, field in fields.items():
        expected = {int: click.INT, float: click.FLOAT}.get(FIELD_TYPES[field])
        if expected is not None:
            assert typed[option] == expected, option
    # every searchable field can be set from the command line too
    by_cli = set(fields.values()) | {"freeze_embeddings", "group_by_length"}
    assert set(TUNABLE) <= by_cli


# --- renamed columns ------------------------------------------------------------------------------

def test_a_renamed_column_reads_under_its_new_name_in_arrow_and_in_sql(tmp_path: Path) -> None:
    renamed = {"dataset_version": "version_number"}
    old = pa.table({"run_id": ["a"], "dataset_version": [3], "value": [0.5]})
    new = pa.table({"run_id": ["b"], "version_number": [4], "value": [0.25]})
    assert renames_in(old.column_names, renamed) == renamed and renames_in(new.column_names, renamed) == {}
    assert rename_table(old, renamed).column_names == ["run_id", "version_number", "value"]  # in its place
    assert rename_table(new, renamed).equals(new)
    both = pa.table({"version_number": [None, 7], "dataset_version": [3, 9]})
    assert rename_table(both, renamed).to_pylist() == [{"version_number": 3}, {"version_number": 7}]
    pq.write_table(old, tmp_path / "old.parquet")
    pq.write_table(new, tmp_path / "new.parquet")
    with duckdb.connect() as con:
        for files in (["old"], ["old", "new"], ["new"]):
            listed = ", ".join(f"'{tmp_path / name}.parquet'" for name in files)
            scan = f"read_parquet([{listed}], union_by_name = true)"
            columns = [d[0] for d in con.execute(f"SELECT * FROM {scan} LIMIT 0").description]
            found = con.execute(f"SELECT {sql_columns(columns, renamed)} FROM {scan} ORDER BY run_id")
            names = [d[0] for d in found.description]
            rows = [dict(zip(names, row, strict=True)) for row in found.fetchall()]
            expected = [rename_table(pq.read_table(tmp_path / f"{name}.parquet"), renamed).to_pylist()[0]
                        for name in files]
            assert rows == expected, files


# --- a dataset version in the store ---------------------------------------------------------------

def test_a_training_run_is_not_resumed_on_a_version_gone_from_the_store(in_home: dict[str, Any]) -> None:
    from assay.training.plan import PLAN_RECORD, check_resumable

    settings = load_settings()
    with session_scope(settings) as session:
        version = resolve(session, DATASET)
        store_path, label, digest = version.store_path, version.label, version.digest
    record = settings.work_dir / "training" / "ft" / PLAN_RECORD
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"data": [{"label": label, "digest": digest}]}), encoding="utf-8")
    assert store.is_stored(settings, store_path)
    check_resumable(settings, "ft", resume=True)  # present: nothing to refuse
    manifest = store.version_folder(settings, store_path) / store.MANIFEST
    kept = manifest.read_bytes()
    manifest.unlink()
    try:
        assert not store.is_stored(settings, store_path)
        with pytest.raises(UsageError, match="has no files in the store any more"):
            check_resumable(settings, "ft", resume=True)
    finally:
        manifest.write_bytes(kept)


# --- headline and side evaluations ----------------------------------------------------------------

def test_a_part_written_before_side_labels_reads_its_rater_as_a_side(in_home: dict[str, Any]) -> None:
    """Parts written before the ``side`` column: a one-rater run (its protocol signature says
    ``|rater:``) is a side evaluation in SQL and in Python alike; the others are headline ones."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from assay.report.collect import correlation_rows
    from assay.results.headline import side_of

    settings = load_settings()
    rows = [dict(r) for r in _stored(settings) if r["run_id"] == in_home["again"]["run_id"]]
    legacy_schema = pa.schema([f for f in correlations.SCHEMA if f.name != "side"])
    for row in rows:
        row.pop("side")
        row["run_id"] = "legacy-rater"
        row["protocol_signature"] += "|rater:rater2"
    path = settings.home / correlations.PARTS.write(settings, DATASET, "legacy-rater", rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=legacy_schema), path)  # as written before the column
    assert "side" not in pq.read_schema(path).names
    read_back = [r for r in _stored(settings) if r["run_id"] == "legacy-rater"]
    assert read_back and {side_of(r) for r in read_back} == {"rater rater2"}
    assert {side_of(r) for r in _stored(settings) if r["run_id"] != "legacy-rater"} == {None}
    in_sql = {r.run_id: r.side for r in correlation_rows(settings)}
    assert in_sql["legacy-rater"] == "rater rater2" and in_sql[in_home["both"]["run_id"]] is None
    board = leaderboard(LeaderboardQuery(DATASET))
    assert "legacy-rater" not in {r["run_id"] for r in board}
    path.unlink()
