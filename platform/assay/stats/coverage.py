"""Coverage-aware evaluation of reference-less quality estimators that may abstain.

BLEU Neighbors (Ethayarajh and Sadigh 2020) predicts a quality only when a candidate has enough
neighbours and otherwise leaves it *undefined*. Its evaluation reports the *coverage*, the share
of candidates with a prediction (their Definition 3.3), and, on the covered candidates only,
Spearman's rho and the mean squared error against the ground-truth quality (their Table 1).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from assay.errors import StatsInputError
from assay.stats._groups import Scores, as_float_vector


@dataclass(frozen=True)
class CoverageResult:
    coverage: float
    """Share of candidates with a defined prediction."""
    spearman: float
    """Spearman's rho on the covered candidates; ``NaN`` with fewer than 2 or constant values."""
    spearman_p_value: float
    mse: float
    """Mean squared error on the covered candidates; ``NaN`` when none is covered."""
    n_defined: int
    n_excluded: int
    """Candidates without a prediction (``None``/``NaN``), left out of rho and MSE."""

    @property
    def n_total(self) -> int:
        return self.n_defined + self.n_excluded


def coverage_report(predictions: Scores, human: Scores) -> CoverageResult:
    """Coverage, Spearman's rho and MSE of ``predictions`` (``None``/``NaN`` = undefined).

    ``human`` holds the ground-truth quality of every candidate and must be complete; predictions
    and human scores are on the same scale for the MSE to mean anything.
    """
    predicted = as_float_vector(predictions, "predictions", allow_missing=True)
    truth = as_float_vector(human, "human scores", allow_missing=False)
    if predicted.shape != truth.shape:
        raise StatsInputError(f"{predicted.size} predictions vs {truth.size} human scores; expected one each")
    if predicted.size == 0:
        raise StatsInputError("no candidates to evaluate")
    defined = ~np.isnan(predicted)
    n_defined = int(defined.sum())
    rho = p_value = mse = float("nan")
    if n_defined:
        mse = float(np.mean((predicted[defined] - truth[defined]) ** 2))
    if n_defined >= 2:
        import scipy.stats  # here, not at module level: it is slow to import

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # constant input: rho is NaN, which is the answer
            result = scipy.stats.spearmanr(predicted[defined], truth[defined])
        rho, p_value = float(result.statistic), float(result.pvalue)
    return CoverageResult(
        coverage=n_defined / predicted.size,
        spearman=rho,
        spearman_p_value=p_value,
        mse=mse,
        n_defined=n_defined,
        n_excluded=int(predicted.size - n_defined),
    )
