"""The WMT23 protocol (``assay evaluate --protocol wmt23``) on the real WMT23 en-de data in
mt-metrics-eval's layout (``../shared/data/mtme-wmt23``), against mt-metrics-eval's own numbers.

The oracle, ``tests/stats/fixtures/mtme_wmt23_ende.json``, is google-research/mt-metrics-eval @ 68a481a
run outside the repository as its ``wmt23_metrics.ipynb`` runs it: ``data.EvalSet('wmt23', 'en-de',
read_stored_metric_scores=True, path=<data/mtme-wmt23>)``, ``tasks.WMT23(['en-de'], k=0)``,
``TaskSet.Run``, and ``TaskSetResults.AverageCorrs(weights)`` for the final ranking. Its values agree
with REFERENCE_NUMBERS.md "WMT23 metrics task" (printed there to 6 decimals), which is checked too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.catalog.engine import session_scope
from assay.catalog.models import Run
from assay.config import load_settings
from assay.jobs.evaluation import evaluate
from assay.jobs.ingest import ingest_path
from assay.jobs.scoring import score_dataset
from assay.metrics.registry import MetricSpec
from assay.query.leaderboard import LeaderboardQuery, leaderboard
from assay.results.external_scores import parse_external

FIXTURE = Path(__file__).parent / "stats" / "fixtures" / "mtme_wmt23_ende.json"
REFERENCE_NUMBERS = Path(__file__).resolve().parents[2] / "shared" / "design" / "REFERENCE_NUMBERS.md"
#: mt-metrics-eval's task -> the (level, statistic) Assay stores it under
TASKS = {("sys", "accuracy"): ("sys", "pairwise_accuracy"), ("sys", "pearson"): ("sys", "pearson"),
         ("seg", "pearson"): ("seg", "pearson"), ("seg", "KendallWithTiesOpt"): ("seg", "acc_t_item")}
TOLERANCE = 1e-9  # the issue's: Assay equals MTME to 1e-9 (found: 2e-15)


def display_name(row: dict[str, Any]) -> str:
    """The metric as mt-metrics-eval's tables name it: ``[noref]`` for a reference-free submission."""
    variant = parse_external(row["signature"])
    return row["metric"] + ("[noref]" if variant and variant.is_reference_free else "")


def reference_table() -> dict[str, tuple[float, float, float]]:
    """REFERENCE_NUMBERS.md's WMT23 table: metric -> (sys Pearson, seg Pearson, seg acc-t)."""
    section = REFERENCE_NUMBERS.read_text().split("## WMT23 metrics task", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| metric")]
    return {r[0]: (float(r[1]), float(r[2]), float(r[3])) for r in rows}


def test_wmt23_protocol_equals_mt_metrics_eval(shared_data: Path) -> None:
    name = ingest_path(shared_data / "mtme-wmt23" / "wmt23").version.name
    result = evaluate(name, protocol="wmt23", n_resamples=50)
    rows = result["rows"]
    by_task = {(r["level"], r["statistic"], display_name(r)): r for r in rows}
    oracle = json.loads(FIXTURE.read_text())

    # every statistic of every task, and the final WMT23 average, for every primary submission
    for task in oracle["tasks"]:
        level, statistic = TASKS[(task["level"], task["corr_fcn"])]
        for metric, expected in task["values"].items():
            assert by_task[(level, statistic, metric)]["value"] == pytest.approx(expected, abs=TOLERANCE), \
                (level, statistic, metric)
    for metric, expected in oracle["wmt23_average"].items():
        assert by_task[("avg", "wmt23", metric)]["value"] == pytest.approx(expected, abs=TOLERANCE), metric
    # only what MTME evaluates: the 32 primary submissions with refA or no reference (no synthetic_ref)
    assert {display_name(r) for r in rows} == set(oracle["wmt23_average"])
    assert not any("|ref:synthetic_ref|" in r["signature"] for r in rows)
    # the independent table, printed to 6 decimals
    for metric, (sys_pearson, seg_pearson, acc_t) in reference_table().items():
        assert by_task[("sys", "pearson", metric)]["value"] == pytest.approx(sys_pearson, abs=5e-7), metric
        assert by_task[("seg", "pearson", metric)]["value"] == pytest.approx(seg_pearson, abs=5e-7), metric
        assert by_task[("seg", "acc_t_item", metric)]["value"] == pytest.approx(acc_t, abs=5e-7), metric

    # what each number is: units, official submissions, the calibrated threshold, every default
    first = by_task[("seg", "acc_t_item", "XCOMET-Ensemble")]
    assert (first["n"], first["unit"], first["official"]) == (460, "items", True)
    assert first["epsilon"] is not None and first["degenerate"] is None
    assert (by_task[("seg", "pearson", "XCOMET-Ensemble")]["n"],
            by_task[("seg", "pearson", "XCOMET-Ensemble")]["unit"]) == (12 * 460, "segments")
    assert (by_task[("sys", "pearson", "XCOMET-Ensemble")]["n"],
            by_task[("sys", "pearson", "XCOMET-Ensemble")]["unit"]) == (12, "systems")
    signature = result["protocol_signature"]
    for default in ("wmt23|", "sample_rate=1.0", "ref=refA", "gold=seg:mqm/sys:mqm", "human=out",
                    "outliers=synthetic_ref", "metrics:primary", "accuracy=0.25", "seed=12345,resamples=50"):
        assert default in signature, default
    assert {r["protocol_signature"] for r in rows} == {signature}
    # MTME ranks the average (k=0: ranks are positions); equal values would share a rank
    average = sorted((r for r in rows if r["statistic"] == "wmt23"), key=lambda r: r["rank"])
    by_value = sorted(oracle["wmt23_average"], key=lambda m: -oracle["wmt23_average"][m])
    assert [display_name(r) for r in average] == by_value
    assert [r["rank"] for r in average] == list(range(1, len(average) + 1))  # no two averages are equal here

    # the leaderboard of the protocol: its average, the official submissions marked
    board = leaderboard(LeaderboardQuery(name, protocol="wmt23"))
    assert (board[0]["statistic"], board[0]["rank"], board[0]["metric"], board[0]["official"]) == \
        ("wmt23", 1, "XCOMET-Ensemble", True)
    assert board[0]["unit"] == "segments"

    # the same official scores outside the protocol: system scores as submitted, never segment means
    plain = evaluate(name, level="sys", metrics=["XCOMET-Ensemble"], statistics=["pearson"], n_resamples=20)
    (official_row,) = [r for r in plain["rows"] if r["group"] == "en-de" and r["aspect"] == "mqm"
                       and "|ref:refA|" in r["signature"]]
    assert official_row["value"] == pytest.approx(by_task[("sys", "pearson", "XCOMET-Ensemble")]["value"],
                                                  abs=TOLERANCE)
    assert official_row["ci_low"] is None  # a submitted system score cannot be recomputed on resampled items
    segment = evaluate(name, level="seg", metrics=["XCOMET-Ensemble"], statistics=["pearson"], n_resamples=20)
    (official_row,) = [r for r in segment["rows"] if r["group"] == "en-de" and r["aspect"] == "mqm"
                       and "|ref:refA|" in r["signature"]]
    # the submitted score of every (system, segment), also where two systems gave the same output
    assert official_row["value"] == pytest.approx(by_task[("seg", "pearson", "XCOMET-Ensemble")]["value"],
                                                  abs=TOLERANCE)


def test_own_metrics_are_placed_among_the_submissions(shared_data: Path) -> None:
    name = ingest_path(shared_data / "mtme-wmt23" / "wmt23").version.name
    score_dataset(name, MetricSpec("chrf"), scope="outputs")
    result = evaluate(name, protocol="wmt23", metrics=["chrF", "chrf", "XCOMET-Ensemble"], n_resamples=50)
    rows = {(r["level"], r["statistic"], r["signature"]): r for r in result["rows"]}
    official = next(s for (_, _, s) in rows if s.startswith("chrF|official:wmt23|ref:refA|"))
    own = next(s for (_, _, s) in rows if s.startswith("chrf|"))
    assert not rows[("seg", "pearson", own)]["official"] and rows[("seg", "pearson", official)]["official"]
    # Assay's chrF scores the same segments as the official chrF-refA baseline (sacrebleu's chrF2), so
    # its segment-level correlations equal the baseline's to the scores' printed precision
    for statistic in ("pearson", "acc_t_item"):
        assert rows[("seg", statistic, own)]["value"] == pytest.approx(
            rows[("seg", statistic, official)]["value"], abs=1e-5)
    # its system score is the mean of its segment scores over the test set (the official one is corpus chrF)
    assert rows[("sys", "pearson", own)]["value"] != pytest.approx(rows[("sys", "pearson", official)]["value"])
    average = sorted((r for r in result["rows"] if r["statistic"] == "wmt23"), key=lambda r: r["rank"])
    assert [r["metric"] for r in average] == ["XCOMET-Ensemble", "chrF", "chrf"]
    with session_scope(load_settings()) as session:
        run = session.get(Run, result["run_id"])
        assert run is not None and run.parameters["protocol"] == "wmt23"
