"""Numbers that mean nothing say so: degenerate values, shared ranks, units, calibrated thresholds.

On the real TED en-de MQM release (``../shared/data/mqm-ted-ende``; most outputs there have no error,
so the raters tie most pairs of an item) metric scores are planted beside sentBLEU's:

* ``noise``: sentBLEU's scores divided by 10^9 plus a tiny seeded jitter, so no two differ by more
  than about 1e-7. Its tie calibration (acc-t, Deutsch et al. 2023) picks a threshold that makes
  every pair of an item a metric tie (the raters' tie rate, 0.4803 on this set, beats any ordering
  the jitter makes), so its acc-t is the raters' tie rate, which any metric gets: degenerate.
* ``copy-a`` and ``copy-b``: sentBLEU's scores under two signatures, so every statistic of the two is
  equal and they must share a rank.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.config import load_settings
from assay.datasets import store
from assay.jobs.evaluation import SEG_STATS, SYS_STATS, evaluate
from assay.jobs.ingest import ingest_path
from assay.jobs.protocol_wmt23 import STATISTICS as WMT23_STATISTICS
from assay.jobs.protocol_wmt24 import STATISTICS as WMT24_STATISTICS
from assay.jobs.scoring import score_dataset
from assay.metrics.registry import MetricSpec
from assay.query.leaderboard import LeaderboardQuery, leaderboard
from assay.results import correlations, segment_scores
from assay.results.segment_scores import scored_signatures
from assay.stats import shared_ranks
from tests.mqm.conftest import TED


def plant(name: str) -> None:
    """Write the planted signatures' segment scores (module docstring) for every rated output."""
    settings = load_settings()
    with session_scope(settings) as session:
        path = resolve(session, name).store_path
    seg = store.read_table(settings, path, "segments").to_pydict()
    keys = sorted({segment_scores.segment_key(s, r, c)
                   for s, r, c in zip(seg["source"], seg["references"], seg["candidate"], strict=True)})
    sentbleu = next(s for s in scored_signatures(settings) if s.metric == "sentbleu")
    table = segment_scores.read_scores(settings, "sentbleu", sentbleu.signature, keys)
    scores = dict(zip(table.column("key").to_pylist(), table.column("score").to_pylist(), strict=True))
    base = np.array([scores[k] for k in keys])
    jitter = np.random.default_rng(0).random(len(keys)) * 1e-9
    for metric, values in (("noise", base * 1e-9 + jitter), ("copy-a", base), ("copy-b", base)):
        signature = f"{metric}|planted:yes|v:1"
        rows = segment_scores.rows_table(signature, keys, [float(v) for v in values], None, None, "planted")
        segment_scores.write_part(settings, metric, signature, "planted", 0, rows)


@pytest.fixture()
def ted_planted(shared_data: Path) -> str:
    name = ingest_path(shared_data / TED.parent).version.name
    score_dataset(name, MetricSpec("sentbleu"))
    plant(name)
    return name


def test_a_tie_everything_acc_t_is_degenerate_and_equal_values_share_a_rank(ted_planted: str, tmp_path: Path
                                                                           ) -> None:
    result = evaluate(ted_planted, protocol="wmt24", n_resamples=50)
    rows = {(r["statistic"], r["group"], r["metric"]): r for r in result["rows"]}

    noise = rows[("acc_t_item", "en-de", "noise")]
    assert "makes every pair within every item a metric tie" in (noise["degenerate"] or "")
    # the calibrated threshold is stored: the widest difference within an item (scores span < 1.02e-7)
    assert 0 < noise["epsilon"] < 1.02e-7
    # the value is the raters' tie rate (REFERENCE_NUMBERS.md "WMT24 protocol defaults": 0.48029664097717023)
    assert noise["value"] == pytest.approx(0.48029664097717023, abs=1e-12)
    assert (noise["rank"], noise["cluster"], noise["unit"]) == (None, None, "items")

    # equal values share a rank, at every statistic where they are ranked
    for statistic in ("spa", "wmt24"):
        a, b = rows[(statistic, "en-de", "copy-a")], rows[(statistic, "en-de", "copy-b")]
        assert a["value"] == b["value"] and a["rank"] == b["rank"] is not None
        assert rows[(statistic, "en-de", "sentbleu")]["rank"] == a["rank"]  # the copies are sentBLEU's scores

    # the leaderboard: degenerate rows listed last without a rank; equal values share a rank
    board = leaderboard(LeaderboardQuery(ted_planted, "seg", "acc_t_item", "en-de", protocol="wmt24"))
    assert all(r["rank"] is None and r["degenerate"] for r in board)
    spa = leaderboard(LeaderboardQuery(ted_planted, "sys", "spa", "en-de", protocol="wmt24"))
    ranks = {r["metric"]: r["rank"] for r in spa}
    assert ranks["copy-a"] == ranks["copy-b"] == ranks["sentbleu"]
    assert all(r["unit"] == "systems" and r["official"] is False for r in spa)

    # the terminal says it too: no rank, the unit beside n, epsilon, the reason
    from assay.cli.main import cli

    shown = CliRunner().invoke(cli, ["leaderboard", "--dataset", ted_planted, "--protocol", "wmt24", "--level", "seg",
                                     "--stat", "acc_t_item", "--group", "en-de"])
    assert shown.exit_code == 0, shown.output
    for text in ("items", "epsilon", "degenerate, not ranked: noise acc_t_item (en-de)"):
        assert text in shown.output, text

    # and the report: the unit of n, the calibrated thresholds, the degenerate values with their reason
    from assay.report import build_report

    html = build_report(tmp_path / "report").read_text()
    for text in ("n = 529 items", "n = 13 systems", "Calibrated tie threshold ε", "Degenerate, not ranked",
                 "makes every pair within every item a metric tie"):
        assert text in html, text


def test_correlations_stored_before_the_new_columns_still_read(ted_planted: str) -> None:
    """A part written before ``unit``, ``epsilon``, ``degenerate``, ``official`` and
    ``protocol_signature`` existed reads them as null in Python and in DuckDB (the leaderboard)."""
    settings = load_settings()
    result = evaluate(ted_planted, protocol="wmt24", metrics=["sentbleu", "copy-a"], n_resamples=20)
    (part,) = correlations.files(settings, ted_planted, result["run_id"])
    table = pq.read_table(part)
    new = ["unit", "epsilon", "degenerate", "official", "protocol_signature"]
    pq.write_table(table.drop_columns(new), part)
    assert not set(new) & set(pq.read_schema(part).names)
    stored = correlations.read_run(settings, ted_planted, result["run_id"])
    assert {r["unit"] for r in stored} == {None} and len(stored) == len(result["rows"])
    board = leaderboard(LeaderboardQuery(ted_planted, "sys", "spa", "en-de"))
    assert {r["metric"] for r in board} == {"sentbleu", "copy-a"} and {r["rank"] for r in board} == {1}
    assert all(r["unit"] is None and r["official"] is False for r in board)


def test_shared_ranks() -> None:
    assert shared_ranks([0.9, 0.8, 0.8, 0.7]) == [1, 2, 2, 4]
    assert shared_ranks([]) == []
    assert shared_ranks([0.5, 0.5]) == [1, 1]


def test_stat_help_lists_every_statistic() -> None:
    from assay.cli.main import cli

    for command in ("evaluate", "leaderboard"):
        shown = CliRunner().invoke(cli, [command, "--help"], terminal_width=400)
        assert shown.exit_code == 0, shown.output
        text = " ".join(shown.output.split())
        for statistic in {*SEG_STATS, *SYS_STATS, *WMT24_STATISTICS, *WMT23_STATISTICS}:
            assert statistic in text, (command, statistic)
        assert "wmt23" in text and "wmt24" in text
