"""Inter-rater agreement: pairwise Kendall tau and Krippendorff's alpha (interval) against the
``krippendorff`` package, a published example and the real WMT23 MQM ratings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
import scipy.stats

from assay.mqm import segment_scores
from assay.stats import StatsInputError, krippendorff_alpha_interval, pairwise_rater_kendall
from tests.mqm.conftest import WMT23, error_rows, read_tsv

NAN = float("nan")

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers x 12
# units, values 1-5, with missing data (unit 12 has a single value and is not pairable). The paper
# reports interval alpha = 0.849.
PAPER = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
]


def _as_ratings(matrix: Any) -> dict[str, dict[int, float]]:
    return {f"rater{r}": {u: float(v) for u, v in enumerate(row)} for r, row in enumerate(matrix)}


def _package_alpha(matrix: Any) -> float:
    return float(krippendorff.alpha(reliability_data=np.asarray(matrix, dtype=float), level_of_measurement="interval"))


def test_published_example() -> None:
    result = krippendorff_alpha_interval(_as_ratings(PAPER))
    assert result.alpha == pytest.approx(0.849, abs=5e-4)  # Krippendorff (2011), 3 decimals
    assert result.alpha == pytest.approx(_package_alpha(PAPER), abs=1e-9)
    assert (result.n_units, result.n_values, result.n_units_dropped, result.n_raters) == (11, 40, 1, 4)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_ratings_with_missing_values_match_the_package(seed: int) -> None:
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=60)
    matrix = np.round(truth + rng.normal(scale=0.7, size=(5, 60)), 1)
    matrix[rng.random(matrix.shape) < 0.4] = np.nan  # some units end with 0 or 1 rating
    result = krippendorff_alpha_interval(_as_ratings(matrix))
    assert result.alpha == pytest.approx(_package_alpha(matrix), abs=1e-9)
    assert result.n_units_dropped == int(((~np.isnan(matrix)).sum(axis=0) == 1).sum())


def test_long_table_equals_mapping_and_none_is_missing() -> None:
    rows = [(f"rater{r}", u, None if np.isnan(v) else v) for r, row in enumerate(PAPER) for u, v in enumerate(row)]
    assert krippendorff_alpha_interval(rows) == krippendorff_alpha_interval(_as_ratings(PAPER))
    assert pairwise_rater_kendall(rows) == pairwise_rater_kendall(_as_ratings(PAPER))


def test_alpha_degenerate_inputs() -> None:
    assert krippendorff_alpha_interval({"a": {1: 2.0}, "b": {2: 3.0}}).n_values == 0  # nothing pairable
    assert np.isnan(krippendorff_alpha_interval({"a": {1: 2.0}, "b": {2: 3.0}}).alpha)
    assert np.isnan(krippendorff_alpha_interval({"a": {1: 2.0, 2: 2.0}, "b": {1: 2.0, 2: 2.0}}).alpha)  # D_e = 0
    assert krippendorff_alpha_interval({"a": {1: 1.0, 2: 2.0}, "b": {1: 1.0, 2: 2.0}}).alpha == 1.0


def test_pairwise_kendall_against_scipy_and_undefined_pairs() -> None:
    ratings = {
        "a": {1: 1.0, 2: 2.0, 3: 3.0, 4: 3.0},
        "b": {1: 2.0, 2: 1.0, 3: 5.0, 4: 4.0, 5: 0.0},
        "c": {4: 1.0, 5: 2.0},  # shares 1 unit with a, 2 with b
        "d": {1: 7.0, 2: 7.0, 3: 7.0},  # constant
    }
    result = pairwise_rater_kendall(ratings)
    assert [(p.rater_a, p.rater_b) for p in result.pairs] == [
        ("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"), ("c", "d")]
    by_pair = {(p.rater_a, p.rater_b): p for p in result.pairs}
    expected_ab = scipy.stats.kendalltau([1, 2, 3, 3], [2, 1, 5, 4])
    assert by_pair["a", "b"].tau == pytest.approx(expected_ab.statistic, abs=1e-12)
    assert by_pair["a", "b"].p_value == pytest.approx(expected_ab.pvalue, abs=1e-12)
    assert by_pair["a", "b"].n_shared == 4
    assert by_pair["b", "c"].tau == pytest.approx(-1.0, abs=1e-12)  # units 4, 5: b 4 > 0, c 1 < 2
    assert by_pair["a", "c"].n_shared == 1 and "fewer than 2" in str(by_pair["a", "c"].reason)
    assert np.isnan(by_pair["a", "c"].tau)
    assert "constant" in str(by_pair["a", "d"].reason) and np.isnan(by_pair["b", "d"].tau)
    assert by_pair["c", "d"].n_shared == 0
    assert result.n_defined == 2
    assert result.mean_tau == pytest.approx((expected_ab.statistic - 1.0) / 2, abs=1e-12)
    assert result.weighted_mean_tau == pytest.approx((4 * expected_ab.statistic - 2.0) / 6, abs=1e-12)


def test_bad_ratings() -> None:
    with pytest.raises(StatsInputError, match="rated unit 1 twice"):
        krippendorff_alpha_interval([("a", 1, 1.0), ("a", 1, 2.0)])
    with pytest.raises(StatsInputError, match="expected \\(rater, unit, value\\)"):
        pairwise_rater_kendall([("a", 1)])  # type: ignore[list-item]
    with pytest.raises(StatsInputError, match="not finite"):
        krippendorff_alpha_interval({"a": {1: float("inf")}})
    with pytest.raises(StatsInputError, match="not a number"):
        krippendorff_alpha_interval({"a": {1: "high"}})  # type: ignore[dict-item]


def test_real_wmt23_mqm_ratings(shared_data: Path) -> None:
    # WMT23 en-de side-by-side MQM: 10 systems x 104 segments, each rated by 3 of 10 raters. A unit
    # is (system, globalSegId); a rater's value is their penalty (sum of the mt-metrics-eval weights
    # Major 5, Minor 1, Minor Fluency/Punctuation 0.1, Major Non-translation! 25, others 0).
    scores = segment_scores(error_rows(read_tsv(shared_data / WMT23), "globalSegId"))
    rows = [(rater, unit, penalty) for unit, raters in scores.penalties.items() for rater, penalty in raters.items()]
    alpha = krippendorff_alpha_interval(rows)
    assert (alpha.n_units, alpha.n_values, alpha.n_raters, alpha.n_units_dropped) == (1040, 3120, 10, 0)
    # krippendorff 0.9.0's alpha(level_of_measurement="interval") on all 1040 units, run once
    # outside the suite (it takes about 4 s there: its coincidence tensor is units x values x values)
    assert alpha.alpha == pytest.approx(0.4988272616923032, abs=1e-9)
    # ... and in the suite, on the units of 5 of the 10 systems (the package takes a fraction of a second)
    systems = sorted({system for system, _ in scores.penalties})[:5]
    subset = [row for row in rows if row[1][0] in systems]
    raters = {rater: r for r, rater in enumerate(sorted({rater for rater, _, _ in subset}))}
    units = {unit: u for u, unit in enumerate(sorted({unit for _, unit, _ in subset}))}
    matrix = np.full((len(raters), len(units)), np.nan)
    for rater, unit, penalty in subset:
        matrix[raters[rater], units[unit]] = penalty
    assert krippendorff_alpha_interval(subset).alpha == pytest.approx(_package_alpha(matrix), abs=1e-9)

    kendall = pairwise_rater_kendall(rows)
    assert len(kendall.pairs) == 45
    assert sum(pair.n_shared for pair in kendall.pairs) == 3 * 1040  # each unit: 3 rater pairs
    # side by side, a document's segments go to one set of 3 raters: 25 of the 45 pairs share no unit
    assert kendall.n_defined == 20
    assert sum(pair.n_shared == 0 for pair in kendall.pairs) == 25
    assert 0.3 < kendall.mean_tau < 0.7 and 0.3 < kendall.weighted_mean_tau < 0.7
    for pair in kendall.pairs:
        assert (pair.reason is None) == (not np.isnan(pair.tau))
