"""The evaluation kernels called directly with plain arrays, as torchmetrics tests its functional API:
no version, no store, no catalog (evaluation is load -> array kernels -> record, and these are the
kernels: :mod:`assay.jobs.evaluation_levels`, :mod:`assay.jobs.protocol_wmt23`,
:mod:`assay.jobs.protocol_wmt24`).

Oracles: scipy.stats (``pearsonr``, ``spearmanr``, ``kendalltau`` with its default tau-b), computed
here on the same arrays, at 1e-12 (the kernels call the same scipy functions through
:mod:`assay.stats`, on the rows both scores define, so only float summation order may differ); and,
for WMT DARR Kendall-like, its definition counted by hand (Ma et al. 2018: (concordant - discordant)
/ (concordant + discordant), ties discordant since WMT18), exactly.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from assay.jobs import protocol_wmt23, protocol_wmt24
from assay.jobs.evaluation_cells import Resamples
from assay.jobs.evaluation_levels import (
    MIN_SYSTEMS,
    RankingPairs,
    RatedSegments,
    SlotScores,
    SystemSlot,
    darr_cells,
    segment_cells,
    system_cells,
)
from assay.results.segment_scores import ScoredMetric

TOLERANCE = 1e-12
METRIC = ScoredMetric("toy", "toy|v1")
KERNEL_MODULES = ("evaluation_cells", "evaluation_levels", "protocol_wmt23", "protocol_wmt24")
JOBS = Path(__file__).resolve().parents[1] / "platform" / "assay" / "jobs"


def _rng() -> np.random.Generator:
    return np.random.default_rng(20240529)


def test_segment_cells_equal_scipy_on_the_rows_both_scored() -> None:
    rng = _rng()
    n = 40
    human = rng.normal(size=2 * n)
    metric = human + rng.normal(scale=0.8, size=2 * n)
    human[[3, 17]] = np.nan  # unrated segments
    metric[[5, 50]] = np.nan  # undefined metric scores
    segments = RatedSegments(["de-en"] * n + ["zh-en"] * n, ["da"] * (2 * n),
                             [f"k{i}" for i in range(2 * n)], human)
    cells = segment_cells(METRIC, segments, metric, ["pearson", "spearman", "kendall", "kendall_like"],
                          Resamples(seed=1, n_resamples=20))
    oracle = {"pearson": scipy_stats.pearsonr, "spearman": scipy_stats.spearmanr, "kendall": scipy_stats.kendalltau}
    # kendall_like is DARR's statistic (darr_cells), not a segment correlation
    assert sorted({c.statistic for c in cells}) == ["kendall", "pearson", "spearman"]
    for group, rows in (("de-en", slice(0, n)), ("zh-en", slice(n, 2 * n))):
        h, m = human[rows], metric[rows]
        both = ~np.isnan(h) & ~np.isnan(m)
        for statistic, function in oracle.items():
            [cell] = [c for c in cells if c.group == group and c.statistic == statistic]
            assert cell.value == pytest.approx(float(function(h[both], m[both])[0]), abs=TOLERANCE)
            assert (cell.n, cell.n_excluded, cell.unit) == (int(both.sum()), n - int(both.sum()), "segments")
            assert cell.replicates.shape == (20,)
            assert cell.degenerate is None


def test_segment_cells_mark_a_constant_metric_degenerate() -> None:
    human = np.arange(6, dtype=np.float64)
    segments = RatedSegments(["g"] * 6, ["da"] * 6, [f"k{i}" for i in range(6)], human)
    [cell] = segment_cells(METRIC, segments, np.full(6, 0.5), ["pearson"], Resamples(seed=1, n_resamples=5))
    # scipy: a constant input has no correlation (NaN); the kernel stores None and says why
    assert cell.value is None and cell.degenerate is not None and not cell.ranked


def test_system_cells_correlate_the_mean_segment_scores_with_scipy() -> None:
    rng = _rng()
    systems, items = 5, 30
    human = rng.normal(size=systems)
    segment_scores = human[:, None] + rng.normal(scale=2.0, size=(systems, items))
    slot = SystemSlot("de-en", "da", [f"s{i}" for i in range(systems)], human, items)
    cells = system_cells(METRIC, [(slot, SlotScores(segment_scores))], ["pearson", "spearman", "kendall"],
                         Resamples(seed=1, n_resamples=50))
    system_scores = segment_scores.mean(axis=1)
    for cell, function in zip(cells, (scipy_stats.pearsonr, scipy_stats.spearmanr, scipy_stats.kendalltau),
                              strict=True):
        assert cell.value == pytest.approx(float(function(human, system_scores)[0]), abs=TOLERANCE)
        assert (cell.n, cell.unit, cell.systems) == (systems, "systems", slot.systems)
        assert cell.metric_values is not None
        np.testing.assert_allclose(cell.metric_values, system_scores, rtol=0, atol=TOLERANCE)
        assert np.isfinite(cell.replicates).all()


def test_system_cells_corpus_and_submitted_scores() -> None:
    human = np.array([1.0, 2.0, 3.0, 4.0])
    # sufficient statistics (systems x items x 2): the corpus score is sum(first) / sum(second), not a
    # mean of segment ratios
    statistics = np.array([[[1, 4], [1, 1]], [[2, 4], [2, 2]], [[4, 5], [1, 1]], [[5, 5], [1, 1]]], dtype=np.float64)
    slot = SystemSlot("g", "da", ["a", "b", "c", "d"], human, 2)
    [corpus] = system_cells(METRIC, [(slot, SlotScores(statistics, corpus_score=lambda s: s[0] / s[1]))], ["pearson"],
                            Resamples(seed=1, n_resamples=10))
    corpus_scores = statistics.sum(axis=1)[:, 0] / statistics.sum(axis=1)[:, 1]
    assert corpus.metric_values is not None
    np.testing.assert_allclose(corpus.metric_values, corpus_scores, rtol=0, atol=TOLERANCE)
    assert corpus.value == pytest.approx(float(scipy_stats.pearsonr(human, corpus_scores)[0]), abs=TOLERANCE)
    submitted = np.array([0.1, 0.4, 0.2, 0.9])
    [official] = system_cells(METRIC, [(slot, SlotScores(submitted=submitted))], ["pearson"],
                              Resamples(seed=1, n_resamples=10))
    assert official.value == pytest.approx(float(scipy_stats.pearsonr(human, submitted)[0]), abs=TOLERANCE)
    assert np.isnan(official.replicates).all()  # a submitted system score cannot be recomputed on resamples


def test_system_cells_need_min_systems() -> None:
    few = SystemSlot("g", "da", [f"s{i}" for i in range(MIN_SYSTEMS - 1)], np.arange(MIN_SYSTEMS - 1.0), 3)
    scores = SlotScores(np.ones((MIN_SYSTEMS - 1, 3)))
    assert system_cells(METRIC, [(few, scores)], ["pearson"], Resamples(seed=1, n_resamples=5)) == []


def test_darr_cells_count_kendall_like_by_hand() -> None:
    better = np.array([0.9, 0.5, 0.3, 0.7, 0.2, 0.6])
    worse = np.array([0.1, 0.5, 0.4, 0.2, 0.1, 0.8])
    pairs = RankingPairs(["g1", "g1", "g1", "g2", "g2", "g2"], [f"b{i}" for i in range(6)],
                         [f"w{i}" for i in range(6)])
    cells = darr_cells(METRIC, pairs, better, worse, "discordant", Resamples(seed=1, n_resamples=10))
    # g1: concordant 1, tie 1 (discordant since WMT18), discordant 1 -> (1 - 2) / 3;
    # g2: concordant 2, discordant 1 -> (2 - 1) / 3
    assert {c.group: c.value for c in cells} == {"g1": -1 / 3, "g2": 1 / 3}
    assert {c.n for c in cells} == {3} and {c.unit for c in cells} == {"pairs"}
    ignored = darr_cells(METRIC, pairs, better, worse, "ignore", Resamples(seed=1, n_resamples=10))
    assert ignored[0].value == 0.0  # WMT17: the tie is left out, (1 - 1) / 2


def test_wmt24_kernel_on_a_plain_grid() -> None:
    rng = _rng()
    systems, items = 4, 12
    human = rng.normal(size=(systems, items))
    # the judgment rows, system-major: row s * items + i is system s on item i
    seg = {"group": ["en-de"] * (systems * items), "aspect": ["mqm"] * (systems * items),
           "item_id": [str(i) for _ in range(systems) for i in range(items)],
           "system": [f"s{s}" for s in range(systems) for _ in range(items)]}
    keys = [f"k{r}" for r in range(systems * items)]
    grids = protocol_wmt24.complete_grids(seg, human.ravel(), keys)
    [(slot, grid)] = grids.items()
    np.testing.assert_array_equal(grid.human, human)
    metric = human + rng.normal(scale=0.5, size=(systems, items))
    matrices, skipped = protocol_wmt24.grid_scores(METRIC, metric.ravel(), grids)
    assert not skipped
    cells = protocol_wmt24.wmt24_cells(grids, {slot: [(METRIC, matrices[slot])]}, Resamples(seed=1, n_resamples=10),
                                       n_permutations=50, seed=4)
    by = {(c.group, c.statistic): c for c in cells}
    spa, acc = by[("en-de", protocol_wmt24.SPA)].value, by[("en-de", protocol_wmt24.ACC_T)].value
    assert spa is not None and acc is not None
    assert by[("en-de", protocol_wmt24.AVERAGE)].value == pytest.approx((spa + acc) / 2, abs=TOLERANCE)
    # the mean over language pairs is stored even for one pair: the protocol's headline
    assert by[("all", protocol_wmt24.AVERAGE)].value == by[("en-de", protocol_wmt24.AVERAGE)].value
    # an undefined metric score leaves the metric out of that grid, with the reason
    metric[0, 0] = np.nan
    assert protocol_wmt24.grid_scores(METRIC, metric.ravel(), grids)[1] == ["toy|v1 (undefined scores in en-de)"]


def test_wmt23_kernel_on_plain_pair_judgments() -> None:
    rng = _rng()
    systems, items = 4, 10
    human = rng.normal(size=(systems, items))
    human[1, 3] = np.nan  # an unrated segment
    sys_human = rng.normal(size=systems)
    settings = protocol_wmt23.PairSettings("en-de", "refA", {"seg": "mqm", "sys": "mqm"}, frozenset(), frozenset(),
                                           False, frozenset(), "test")
    names = [f"s{i}" for i in range(systems)]
    pair = protocol_wmt23.PairJudgments(settings, names, [str(i) for i in range(items)], human, names, sys_human)
    seg = human + rng.normal(scale=0.7, size=(systems, items))
    sys_scores = sys_human + rng.normal(scale=0.3, size=systems)
    evaluated = protocol_wmt23.wmt23_cells([pair], [protocol_wmt23.PairScores(METRIC, pair, seg, sys_scores)],
                                           Resamples(seed=1, n_resamples=10))
    by = {(c.level, c.statistic): c for c in evaluated.cells}
    rated = ~np.isnan(human)
    assert by[("sys", "pearson")].value == pytest.approx(float(scipy_stats.pearsonr(sys_human, sys_scores)[0]),
                                                        abs=TOLERANCE)
    # segment Pearson without grouping: one correlation over every rated (system, segment) cell
    assert by[("seg", "pearson")].value == pytest.approx(float(scipy_stats.pearsonr(human[rated], seg[rated])[0]),
                                                        abs=TOLERANCE)
    assert by[("seg", "pearson")].n == int(rated.sum())
    assert ("avg", protocol_wmt23.AVERAGE) in by and ("sys", protocol_wmt23.ACCURACY) in by


@pytest.mark.parametrize("module", KERNEL_MODULES)
def test_kernel_modules_read_nothing(module: str) -> None:
    """The kernels take arrays: their modules import no settings or dataset store and call no reader
    (the load step, :mod:`assay.jobs.evaluation_inputs`, does every read)."""
    tree = ast.parse((JOBS / f"{module}.py").read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                for alias in node.names} | {node.module for node in ast.walk(tree)
                                            if isinstance(node, ast.ImportFrom) and node.module}
    assert not imported & {"assay.config", "Settings", "assay.datasets.store", "store", "score_lookup",
                           "read_scores", "assay.jobs.judgments", "JudgmentFilter", "VersionOfficialScores"}
    called = {node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
              for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert not called & {"read_table", "read_scores", "score_lookup", "table", "of"}
    arguments = {a.arg for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) for a in node.args.args}
    assert not arguments & {"settings", "store_path"}


@pytest.mark.parametrize("module", (*KERNEL_MODULES, "evaluation_inputs", "official_scores"))
def test_no_import_loop_through_the_evaluation_job(module: str) -> None:
    """The job imports its load step and kernels, never the other way round, lazy imports included
    (``score_lookup`` lives with the segment-score store, :mod:`assay.results.segment_scores`)."""
    tree = ast.parse((JOBS / f"{module}.py").read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {f"{node.module}.{alias.name}" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                 for alias in node.names}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert "assay.jobs.evaluation" not in imported
