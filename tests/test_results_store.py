"""The results store reads parts written before its columns were renamed.

``dataset_version`` became ``version_number`` and ``dataset_digest`` ``version_digest``
(docs/STORAGE.md, "Renamed columns"). Parts are immutable, so old parts stay as they were written
and are upgraded when read: by :mod:`assay.results.parts` in Python, and in DuckDB (the
leaderboard, the report). Each test writes parts with the old schema, as the code before the rename
wrote them, and reads them through the store's named readers.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from assay.checkpoints.labels import row_checkpoint
from assay.checkpoints.ref import CheckpointRef
from assay.config import load_settings
from assay.fixtures import fixtures_dir
from assay.jobs.evaluation import evaluate
from assay.jobs.ingest import ingest_path
from assay.jobs.scoring import finish_scoring, plan_scoring
from assay.jobs.scoring import score_shard as score_one_shard
from assay.metrics.registry import MetricSpec
from assay.query.leaderboard import LeaderboardQuery, available_groups, leaderboard
from assay.report.collect import correlation_rows
from assay.results import correlations, model_selection, parts, robustness, segment_scores, significance, system_points
from assay.results.segment_scores import scored_signatures

DEMO_WMT = fixtures_dir() / "demo-wmt"
OLD_NAMES = {"version_number": "dataset_version", "version_digest": "dataset_digest"}
"""The names the code wrote before the rename (written out here, independent of the code's map)."""


def _score(dataset: str, metric: str) -> None:
    plan = plan_scoring(dataset, MetricSpec(metric))
    finish_scoring(plan, [score_one_shard(plan, i) for i in range(len(plan.shards))])


def old_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` as it was before the rename: the old column names, in the same places."""
    return pa.schema([f.with_name(OLD_NAMES.get(f.name, f.name)) for f in schema])


def rewrite_as_old(files: list, schema: pa.Schema) -> None:
    """Replace each part by the same rows under the old column names (what the code before the
    rename wrote)."""
    for f in files:
        table = pq.read_table(f)
        assert set(OLD_NAMES) & set(table.column_names)  # a part of the current schema
        pq.write_table(table.rename_columns([OLD_NAMES.get(n, n) for n in table.column_names]).cast(
            old_schema(schema)), f)


def _board(dataset: str = "wmt99") -> list[dict]:
    rows = leaderboard(LeaderboardQuery(dataset, statistic="kendall", group="all"))
    return [{k: v for k, v in r.items() if k != "created_at"} for r in rows]


def test_correlations_written_before_the_rename_read_as_before() -> None:
    settings = load_settings()
    ingest_path(DEMO_WMT)
    _score("wmt99", "sentbleu")
    _score("wmt99", "chrf")
    first = evaluate("wmt99", level="seg", n_resamples=100)
    current_board, current_rows = _board(), correlations.read_run(settings, "wmt99", first["run_id"])
    current_p = significance.read_run(settings, "wmt99", first["run_id"])
    assert current_rows and current_board[0]["version_number"] == 1 and len(current_board[0]["version_digest"]) == 64

    rewrite_as_old(correlations.files(settings, "wmt99"), correlations.SCHEMA)
    rewrite_as_old(significance.files(settings, "wmt99"), significance.SCHEMA)
    stored = pq.read_schema(correlations.files(settings, "wmt99")[0]).names
    assert "dataset_version" in stored and "version_number" not in stored  # really the old layout
    # Python readers: the same rows under the new names
    assert correlations.read_run(settings, "wmt99", first["run_id"]) == current_rows
    assert significance.read_run(settings, "wmt99", first["run_id"]) == current_p
    # DuckDB readers over old parts only: the leaderboard (with its p-values), the report
    assert _board() == current_board
    assert _board("wmt99@1") == current_board
    assert _board(f"wmt99@{current_board[0]['version_digest'][:12]}") == current_board
    assert available_groups("wmt99", "seg")[0] == "all"
    report_rows = [r for r in correlation_rows(settings) if r.run_id == first["run_id"]]
    assert {(r.version_number, r.version_digest) for r in report_rows} == {(1, current_board[0]["version_digest"])}

    # old and new parts side by side: the newest run's rows, the version read from both layouts
    second = evaluate("wmt99", level="seg", n_resamples=100)
    board = _board()
    assert {r["run_id"] for r in board} == {second["run_id"]}
    assert [(r["signature"], r["value"], r["rank"], r["cluster"]) for r in board] == \
        [(r["signature"], r["value"], r["rank"], r["cluster"]) for r in current_board]
    both = {r.run_id: (r.version_number, r.version_digest) for r in correlation_rows(settings)}
    assert both[first["run_id"]] == both[second["run_id"]] == (1, current_board[0]["version_digest"])


def test_other_stores_upgrade_old_parts_and_fill_missing_columns() -> None:
    settings = load_settings()
    # model selection: an old part, as `assay select` wrote it before the rename
    old = old_schema(model_selection.SCHEMA)
    row = {f.name: None for f in old} | {
        "run_id": "a" * 32, "dataset": "webnlg2017", "dataset_version": 3, "dataset_digest": "d" * 64,
        "group": "webnlg2017", "aspect": "fluency", "metric": "bleu", "signature": "bleu|v:1", "hits_at_1": 0.5,
        "mrr": 0.6, "mean_abs_human_diff": 0.1, "n_systems": 9, "n_items": 223, "n_hybrid": 10, "n_candidates": 5,
        "n_trials": 100, "seed": 1, "code_version": "0.1.0", "created_at": pa.scalar(0, pa.timestamp("us", "UTC"))}
    target = parts.store_folder(settings, model_selection.STORE) / "dataset=webnlg2017" / f"part-{'a' * 32}-0.parquet"
    target.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([row], schema=old), target)
    (read,) = model_selection.read(settings)
    assert (read["version_number"], read["version_digest"], read["mrr"]) == (3, "d" * 64, 0.6)
    assert "dataset_version" not in read

    # system points: an old part lacking nothing but the new name
    old = old_schema(system_points.SCHEMA)
    points = [{"run_id": "b" * 32, "dataset": "wmt99", "dataset_version": 2, "level": "sys", "group": "de-en",
               "aspect": "da", "metric": "bleu", "signature": s, "system": "A", "human": 0.1, "metric_score": 20.0}
              for s in ("bleu|v:1", "chrf|v:1")]
    target = parts.store_folder(settings, system_points.STORE) / "dataset=wmt99" / f"part-{'b' * 32}-0.parquet"
    target.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(points, schema=old), target)
    (point,) = system_points.read(settings, "wmt99", "b" * 32, "bleu|v:1")
    assert (point["version_number"], point["metric_score"]) == (2, 20.0)

    # robustness: an old part without a column added later (read as null)
    old = pa.schema([f for f in old_schema(robustness.SCHEMA) if f.name != "trained_run_id"])
    row = {f.name: None for f in old} | {
        "run_id": "c" * 32, "experiment": "drift", "experiment_id": "e" * 16, "dataset": "wmt17@1",
        "dataset_digest": "f" * 64, "variant": "bleurt", "kind": "learned", "aspect": "da", "test_dataset": "x@1",
        "test_digest": "0" * 64, "metric": "bleurt", "signature": "bleurt|v:1", "statistic": "kendall",
        "group": "all", "value": 0.3, "n": 10, "seed": 1, "n_resamples": 10, "evaluate_run_id": "d" * 32,
        "code_version": "0.1.0", "created_at": pa.scalar(0, pa.timestamp("us", "UTC"))}
    relative = robustness.write(settings, "drift", "z" * 32, [])  # an empty new part beside it
    target = settings.home / relative.parent / f"part-{'c' * 32}-0.parquet"
    pq.write_table(pa.Table.from_pylist([row], schema=old), target)
    (read,) = robustness.read(settings, "drift")
    assert (read["version_digest"], read["value"], read["trained_run_id"]) == ("f" * 64, 0.3, None)
    assert robustness.read_part(settings, target.relative_to(settings.home))[0]["created_at"].startswith("1970")


def test_checkpoint_digest_column_and_parts_written_before_it() -> None:
    """Score and correlation rows carry the checkpoint as a column (``checkpoint_digest``); parts
    written before the column read it as null, and their checkpoint is the short digest their
    signature shows (:func:`assay.checkpoints.labels.row_checkpoint`), in Python and in DuckDB."""
    settings = load_settings()
    ingest_path(DEMO_WMT)
    _score("wmt99", "sentbleu")
    (plain,) = scored_signatures(settings)
    checkpoint = CheckpointRef("ab12" * 16)
    # two learned-metric signatures with the same scores: one stored with the column, one as before it
    new, old = (f"bleurt|checkpoint:{checkpoint.short}|v:{v}|assay:test" for v in (1, 0))
    scores = segment_scores.read_scores(settings, plain.metric, plain.signature)
    keys, values = scores.column("key").to_pylist(), scores.column("score").to_pylist()
    segment_scores.write_part(settings, "bleurt", new, "e" * 32, 0,
                              segment_scores.rows_table(new, keys, values, None, None, "e" * 32, checkpoint.digest))
    before = segment_scores.rows_table(old, keys, values, None, None, "f" * 32).drop_columns(["checkpoint_digest"])
    folder = segment_scores.partition_dir(settings, "bleurt", old)
    folder.mkdir(parents=True)
    pq.write_table(before, folder / f"part-{'f' * 32}-0.parquet")

    found = {s.signature: s for s in scored_signatures(settings)}
    assert (found[new].checkpoint_digest, found[old].checkpoint_digest, found[plain.signature].checkpoint) == \
        (checkpoint.digest, None, None)
    assert found[new].checkpoint == checkpoint.digest and found[old].checkpoint == checkpoint.short
    assert checkpoint.matches(found[new].checkpoint) and checkpoint.matches(found[old].checkpoint)

    run = evaluate("wmt99", level="seg", metrics=[new, old, plain.signature], n_resamples=50)["run_id"]
    rows = correlations.read_run(settings, "wmt99", run)
    assert {r["signature"]: r["checkpoint_digest"] for r in rows} == {new: checkpoint.digest, old: None,
                                                                       plain.signature: None}
    board = {r["signature"]: r["checkpoint"] for r in _board()}
    assert board == {new: f"unregistered {checkpoint.short}", old: f"unregistered {checkpoint.short}",
                     plain.signature: None}

    # the evaluation's part as the code before the column wrote it
    for f in correlations.files(settings, "wmt99", run):
        pq.write_table(pq.read_table(f).drop_columns(["checkpoint_digest"]), f)
    again = correlations.read_run(settings, "wmt99", run)
    assert [r["checkpoint_digest"] for r in again] == [None] * len(rows)
    assert {r["signature"]: row_checkpoint(r) for r in again} == {new: checkpoint.short, old: checkpoint.short,
                                                                  plain.signature: None}
    assert {r["signature"]: r["checkpoint"] for r in _board()} == board  # DuckDB over the old part
