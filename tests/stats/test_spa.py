"""Soft pairwise accuracy against mt-metrics-eval's pce.py, and its bootstrap replicates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assay.stats import StatsInputError, pairwise_p_values, resampled_spa, spa
from assay.stats.resampled import resample_counts

FIXTURE = Path(__file__).parent / "fixtures" / "mtme_pce.json"


def _cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(FIXTURE.read_text())["cases"]
    return cases


@pytest.mark.parametrize("case", _cases(), ids=lambda c: f"{c['shape'][0]}x{c['shape'][1]}-seed{c['seed']}")
def test_matches_mt_metrics_eval_pce(case: dict[str, Any]) -> None:
    # Expected numbers: google-research/mt-metrics-eval mt_metrics_eval/pce.py @ 68a481a
    # (compute_pairwise_p_values, compute_one_minus_pce) run outside this repository on the inputs
    # stored in the fixture (numpy default_rng(0) scores, 1000 permutations, seeds 4 and 7).
    human = np.array(case["human"])
    upper = np.triu_indices(human.shape[0], 1)
    p_human = pairwise_p_values(human, n_permutations=case["n_permutations"], seed=case["seed"])
    np.testing.assert_allclose(p_human[upper], case["human_p_upper"], rtol=0, atol=1e-12)
    assert np.isnan(p_human[np.tril_indices(human.shape[0])]).all()
    for expected in case["metrics"].values():
        result = spa(human, np.array(expected["scores"]), n_permutations=case["n_permutations"], seed=case["seed"])
        assert result.value == pytest.approx(expected["one_minus_pce"], abs=1e-12)
        np.testing.assert_allclose(result.metric_p_values[upper], expected["p_upper"], rtol=0, atol=1e-12)
        np.testing.assert_array_equal(result.human_p_values, p_human)
        assert (result.n_permutations, result.seed) == (case["n_permutations"], case["seed"])


def test_mt_metrics_eval_stats_test_case() -> None:
    # google-research/mt-metrics-eval stats_test.py CorrelationTest.testPairwiseConfidenceError:
    # 2 systems x 3 segments, 1 - PCE = 0.872 (assertAlmostEqual, places=3).
    human = [[1, 2, 3], [2, 3, 4]]
    metric = [[2, 2, 4], [1, 3, 5]]
    assert spa(human, metric).value == pytest.approx(0.872, abs=5e-4)


def test_seed_determines_the_p_values() -> None:
    scores = np.random.default_rng(11).normal(size=(6, 40))
    first = pairwise_p_values(scores, seed=4)
    np.testing.assert_array_equal(first, pairwise_p_values(scores, seed=4))
    upper = np.triu_indices(6, 1)
    assert not np.array_equal(first[upper], pairwise_p_values(scores, seed=5)[upper])


def test_systems_of_equal_quality_give_p_around_one_half() -> None:
    # Systems drawn from one distribution: "i beats j" is a coin flip, so the p-values spread
    # around 0.5 (uniform under the null), and p(i > j) + p(j > i) = 1 (no null sum ties the
    # observed difference with continuous scores).
    rng = np.random.default_rng(2)
    p_values = []
    for _ in range(200):  # independent pairs of systems
        scores = rng.normal(size=(2, 100))
        p = pairwise_p_values(scores, n_permutations=400)[0, 1]
        assert p + pairwise_p_values(scores[::-1], n_permutations=400)[0, 1] == pytest.approx(1.0, abs=1e-12)
        p_values.append(p)
    assert abs(float(np.mean(p_values)) - 0.5) < 0.1  # uniform: mean 0.5, standard error 0.02


def test_exactly_identical_systems_give_p_one() -> None:
    # Two copies of one system: every null difference is exactly 0, as is the observed one, and
    # pce.py's `>=` counts every permutation, so p = 1 both ways (not 0.5).
    row = np.random.default_rng(2).normal(size=300)
    p = pairwise_p_values(np.stack([row, row]))
    assert p[0, 1] == 1.0


def _exact_p_values(scores: np.ndarray, n_permutations: int, seed: int) -> np.ndarray:
    """The oracle: the upper-triangle p-values in exact rational arithmetic on the float32 scores
    (each float32 is a dyadic rational), with mt-metrics-eval's signs (pce.py: default_rng(seed),
    float32 uniforms rounded to 0/1, 2m - 1)."""
    from fractions import Fraction

    exact = [[Fraction(float(v)) for v in row] for row in scores.astype(np.float32)]
    signs = np.rint(np.random.default_rng(seed).random(size=(n_permutations, scores.shape[1]), dtype=np.float32))
    p_values = []
    for i, j in zip(*np.triu_indices(len(exact), 1), strict=True):
        d = [a - b for a, b in zip(exact[i], exact[j], strict=True)]
        observed = sum(d, Fraction(0))
        hits = sum(sum((x if s else -x for x, s in zip(d, row, strict=True)), Fraction(0)) >= observed
                   for row in signs)
        p_values.append(hits / n_permutations)
    return np.array(p_values)


def test_ties_of_discrete_scores_are_counted_exactly_whatever_the_blas_threads() -> None:
    # MQM-like scores (minor 1, major 5, minor punctuation 0.1; many segments tie): many permutations
    # tie the observed difference exactly, which pce.py's float32 product decides by its rounding,
    # which moved with OpenBLAS's thread count (TED en-de's SPA: 0.668923 with two threads, 0.668910
    # with one). The count here is the exact one, whatever the threads.
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(3)
    scores = -rng.choice([0.0, 0.0, 0.0, 0.1, 1.0, 1.1, 2.0, 5.0, 6.0, 10.0], size=(5, 60))
    scores[1, :50] = scores[0, :50]  # two systems that differ on a few segments only
    upper = np.triu_indices(5, 1)
    expected = _exact_p_values(scores, n_permutations=300, seed=4)
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="blas"):
            found = pairwise_p_values(scores, n_permutations=300, seed=4)[upper]
        np.testing.assert_array_equal(found, expected)


def test_metric_equal_to_humans_scores_one() -> None:
    human = np.random.default_rng(4).normal(size=(7, 50))
    result = spa(human, human.copy())
    assert result.value == 1.0
    # an affine map with positive scale (whose float32 sums keep the same comparisons) too
    assert spa(np.round(human, 2), np.round(human, 2) * 2).value == 1.0


def test_resampled_with_unit_counts_is_spa() -> None:
    rng = np.random.default_rng(5)
    human = rng.normal(size=(9, 80))
    metrics = [human + rng.normal(scale=s, size=human.shape) for s in (0.5, 2.0)]
    replicates = resampled_spa(human, metrics, np.ones((4, 80)), n_permutations=500, seed=7)
    assert replicates.shape == (2, 4)
    for row, metric in zip(replicates, metrics, strict=True):
        assert (row == spa(human, metric, n_permutations=500, seed=7).value).all()  # exactly
    single = resampled_spa(human, metrics[0], np.ones((3, 80)), n_permutations=500, seed=7)
    assert single.shape == (3,)


def test_resampled_replicate_is_the_count_weighted_test() -> None:
    # A replicate equals SPA computed on the count-weighted matrix (counts folded into the scores)
    # under the same signs; blocks of resamples do not change a replicate.
    rng = np.random.default_rng(6)
    human = rng.normal(size=(5, 30))
    metric = human + rng.normal(size=human.shape)
    counts = resample_counts(rng.integers(0, 30, size=(7, 30)), 30)
    replicates = resampled_spa(human, metric, counts, n_permutations=300)
    for row, replicate in zip(counts, replicates, strict=True):
        weighted_h = (human.astype(np.float32) * row.astype(np.float32)).astype(np.float64)
        weighted_m = (metric.astype(np.float32) * row.astype(np.float32)).astype(np.float64)
        assert replicate == spa(weighted_h, weighted_m, n_permutations=300).value


def test_resampled_on_a_wmt_sized_set() -> None:
    # WMT24-sized: 13 systems x 529 segments, human + 3 metrics, 1000 permutations x 1000 resamples
    # (its time is benchmarks/spa_resamples.py's)
    rng = np.random.default_rng(7)
    human = rng.normal(size=(13, 1)) * 0.3 + rng.normal(size=(13, 529))
    metrics = [human + rng.normal(scale=s, size=human.shape) for s in (0.5, 1.0, 2.0)]
    counts = resample_counts(rng.integers(0, 529, size=(1000, 529)), 529)
    replicates = resampled_spa(human, metrics, counts)
    assert replicates.shape == (3, 1000)
    assert np.isfinite(replicates).all()
    assert ((replicates >= 0) & (replicates <= 1)).all()
    # the closer the metric to the humans, the higher its SPA, replicate by replicate on the whole
    assert (replicates[0] >= replicates[2]).mean() > 0.9


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        ([[1.0, np.nan, 2.0], [1.0, 2.0, 3.0]], "1 missing or infinite score"),
        ([[1.0, None, 2.0], [1.0, 2.0, 3.0]], "complete"),
        ([[1.0, 2.0], [1.0, 2.0, 3.0]], "every system needs a score on every segment"),
        ([1.0, 2.0, 3.0], "expected a \\(systems x segments\\) matrix"),
        ([[1.0, 2.0, 3.0]], "at least 2 systems"),
    ],
)
def test_incomplete_scores_are_refused(scores: Any, message: str) -> None:
    with pytest.raises(StatsInputError, match=message):
        pairwise_p_values(scores)
    with pytest.raises(StatsInputError, match=message):
        spa([[1.0, 2.0, 3.0], [2.0, 3.0, 4.0]], scores)


def test_bad_arguments_are_refused() -> None:
    good = [[1.0, 2.0, 3.0], [2.0, 3.0, 4.0]]
    with pytest.raises(StatsInputError, match="same"):
        spa(good, [[1.0, 2.0], [2.0, 3.0]])
    with pytest.raises(StatsInputError, match="n_permutations"):
        pairwise_p_values(good, n_permutations=0)
    with pytest.raises(StatsInputError, match="seed"):
        pairwise_p_values(good, seed=-1)
    with pytest.raises(StatsInputError, match="counts must be"):
        resampled_spa(good, good, np.ones((2, 4)))
    with pytest.raises(StatsInputError, match="non-negative"):
        resampled_spa(good, good, -np.ones((2, 3)))
