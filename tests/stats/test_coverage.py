"""Coverage-aware evaluation of abstaining estimators (BLEU Neighbors, Table 1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from assay.stats import StatsInputError, coverage_report


def test_undefined_predictions_are_excluded_and_counted() -> None:
    predictions = [0.2, None, 0.5, float("nan"), 0.9, 0.4]
    human = [0.1, 0.3, 0.6, 0.2, 0.8, 0.5]
    result = coverage_report(predictions, human)
    defined_p, defined_h = [0.2, 0.5, 0.9, 0.4], [0.1, 0.6, 0.8, 0.5]
    assert result.coverage == pytest.approx(4 / 6)
    assert (result.n_defined, result.n_excluded, result.n_total) == (4, 2, 6)
    assert result.spearman == pytest.approx(scipy.stats.spearmanr(defined_p, defined_h).statistic, abs=1e-12)
    assert result.mse == pytest.approx(np.mean((np.array(defined_p) - np.array(defined_h)) ** 2), abs=1e-15)


def test_nothing_covered() -> None:
    result = coverage_report([None, None], [0.1, 0.2])
    assert result.coverage == 0.0 and result.n_excluded == 2
    assert math.isnan(result.spearman) and math.isnan(result.mse)


def test_human_scores_must_be_complete() -> None:
    with pytest.raises(StatsInputError, match="human scores"):
        coverage_report([0.1, 0.2], [0.1, None])
    with pytest.raises(StatsInputError, match="expected one each"):
        coverage_report([0.1, 0.2], [0.1])
