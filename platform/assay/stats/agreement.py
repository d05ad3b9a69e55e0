"""Inter-rater agreement of human ratings (e.g. MQM penalties): pairwise Kendall tau and Krippendorff's alpha.

Ratings are given per rater and *unit* (what is rated: for MQM a (system, segment)), either as a
mapping ``{rater: {unit: value}}`` or as a long table of ``(rater, unit, value)`` rows. A ``None`` or
NaN value is a missing rating; raters usually rate only a subset of the units (WMT's MQM assigns
each segment to 3 of ~10 raters).

* :func:`pairwise_rater_kendall`: for every pair of raters, Kendall's tau-b (scipy's
  ``kendalltau``) over the units both rated. A pair with fewer than two shared units, or whose
  ratings on them are constant for either rater, has no tau: it is reported with the reason, not
  dropped silently and not an error.
* :func:`krippendorff_alpha_interval`: Krippendorff's alpha with the interval metric
  ``delta^2(c, k) = (c - k)^2``, from its definition in Krippendorff (2011), "Computing
  Krippendorff's Alpha-Reliability" (values-pairable form of the coincidence matrix)::

      alpha = 1 - D_o / D_e
      D_o = 1/n  sum_u 1/(m_u - 1) sum_{i != j in u} delta^2(v_ui, v_uj)
      D_e = 1/(n (n - 1))  sum_{i != j, all pairable values} delta^2(v_i, v_j)

  where ``m_u`` is the number of values of unit ``u`` and ``n = sum_u m_u`` counts the *pairable*
  values only: a unit with fewer than two ratings forms no pair and drops out entirely. (Summing the
  coincidences ``o_ck = sum_u (number of c-k pairs in u) / (m_u - 1)`` gives the same sums.) For the
  interval metric ``sum_{i != j} (v_i - v_j)^2 = 2 m sum_i (v_i - mean)^2`` over any ``m`` values,
  so both sums are computed from per-unit and overall sums of squared deviations, in O(n).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np

from assay.errors import StatsInputError

Ratings: TypeAlias = Mapping[Any, Mapping[Any, float | None]] | Iterable[tuple[Any, Any, float | None]]
"""``{rater: {unit: value}}`` or ``(rater, unit, value)`` rows; ``None``/NaN is a missing rating."""


def _scipy() -> Any:
    """scipy.stats, imported on first use (importing ``assay.stats`` stays light)."""
    from scipy import stats

    return stats


@dataclass(frozen=True)
class RaterPairKendall:
    """Kendall's tau-b between two raters over the units both rated."""

    rater_a: Hashable
    rater_b: Hashable
    n_shared: int
    """Units both raters rated."""
    tau: float
    """Kendall's tau-b (scipy); NaN when undefined (see ``reason``)."""
    p_value: float
    """scipy's two-sided p-value for tau = 0; NaN when tau is."""
    reason: str | None
    """Why ``tau`` is NaN (fewer than 2 shared units, constant ratings); None when it is defined."""


@dataclass(frozen=True)
class RaterKendallResult:
    """Kendall's tau-b for every rater pair, and two means over the pairs that have one."""

    pairs: tuple[RaterPairKendall, ...]
    """Every pair of raters, raters in first-seen order, ``rater_a`` before ``rater_b``."""
    mean_tau: float
    """Unweighted mean of tau over the pairs with a tau (each pair counts once); NaN if none."""
    weighted_mean_tau: float
    """Mean of tau weighted by each pair's ``n_shared`` (a pair sharing more units counts more); NaN if none."""
    n_defined: int
    """Pairs with a tau."""


@dataclass(frozen=True)
class KrippendorffAlpha:
    """Krippendorff's alpha (interval metric) with the counts it rests on."""

    alpha: float
    """``1 - D_o / D_e``; NaN when there is no pairable value or all pairable values are equal."""
    observed_disagreement: float
    """``D_o``."""
    expected_disagreement: float
    """``D_e``."""
    n_units: int
    """Pairable units: units with at least two ratings."""
    n_values: int
    """Pairable values ``n`` (ratings of the pairable units)."""
    n_units_dropped: int
    """Units with a single rating: not pairable, left out."""
    n_raters: int


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float | np.floating) and math.isnan(value))


def rating_table(ratings: Ratings) -> dict[Hashable, dict[Hashable, float]]:
    """``{rater: {unit: value}}`` without missing ratings, raters and units in first-seen order.

    A unit rated twice by one rater, or a value that is not a finite number, is a
    :class:`~assay.stats.StatsInputError`.
    """
    rows: Iterable[tuple[Any, Any, Any]]
    if isinstance(ratings, Mapping):
        rows = ((rater, unit, value) for rater, units in ratings.items() for unit, value in units.items())
    else:
        rows = ratings
    table: dict[Hashable, dict[Hashable, float]] = {}
    for position, row in enumerate(rows):
        try:
            rater, unit, value = row
        except (TypeError, ValueError) as exc:
            raise StatsInputError(
                f"rating row {position}: expected (rater, unit, value), got {row!r}"
            ) from exc
        by_unit = table.setdefault(rater, {})
        if _is_missing(value):
            continue
        try:
            number = float(value)
        except (TypeError, ValueError) as exc:
            raise StatsInputError(f"rating row {position}: value {value!r} of rater {rater!r} on unit {unit!r} "
                                  "is not a number") from exc
        if not math.isfinite(number):
            raise StatsInputError(f"rating row {position}: value {value!r} of rater {rater!r} on unit {unit!r} "
                                  "is not finite")
        if unit in by_unit:
            raise StatsInputError(f"rater {rater!r} rated unit {unit!r} twice (rating row {position}); each rater "
                                  "gives a unit one value (aggregate duplicates first, e.g. sum MQM error weights)")
        by_unit[unit] = number
    return table


def _pair(rater_a: Hashable, rater_b: Hashable, first: dict[Hashable, float],
          second: dict[Hashable, float]) -> RaterPairKendall:
    shared = [unit for unit in first if unit in second]
    x = np.array([first[unit] for unit in shared])
    y = np.array([second[unit] for unit in shared])
    nan = float("nan")
    if len(shared) < 2:
        return RaterPairKendall(rater_a, rater_b, len(shared), nan, nan, f"{len(shared)} shared unit(s), fewer than 2")
    constant = [str(rater) for rater, values in ((rater_a, x), (rater_b, y)) if (values == values[0]).all()]
    if constant:
        return RaterPairKendall(rater_a, rater_b, len(shared), nan, nan,
                                f"constant ratings on the shared units ({', '.join(constant)})")
    result = _scipy().kendalltau(x, y)
    return RaterPairKendall(rater_a, rater_b, len(shared), float(result.statistic), float(result.pvalue), None)


def pairwise_rater_kendall(ratings: Ratings) -> RaterKendallResult:
    """Kendall's tau-b between every two raters, over the units both rated (module docstring)."""
    table = rating_table(ratings)
    raters = list(table)
    pairs = tuple(_pair(a, b, table[a], table[b]) for k, a in enumerate(raters) for b in raters[k + 1:])
    defined = [pair for pair in pairs if pair.reason is None]
    taus = np.array([pair.tau for pair in defined])
    shared = np.array([pair.n_shared for pair in defined], dtype=np.float64)
    return RaterKendallResult(
        pairs=pairs,
        mean_tau=float(np.mean(taus)) if defined else float("nan"),
        weighted_mean_tau=float(np.sum(shared * taus) / np.sum(shared)) if defined else float("nan"),
        n_defined=len(defined),
    )


def krippendorff_alpha_interval(ratings: Ratings) -> KrippendorffAlpha:
    """Krippendorff's alpha, interval metric, with missing ratings (module docstring)."""
    table = rating_table(ratings)
    unit_ids: dict[Hashable, int] = {}
    units, values = [], []
    for by_unit in table.values():
        for unit, value in by_unit.items():
            units.append(unit_ids.setdefault(unit, len(unit_ids)))
            values.append(value)
    unit_index = np.asarray(units, dtype=np.intp)
    value_array = np.asarray(values, dtype=np.float64)
    per_unit = np.bincount(unit_index, minlength=len(unit_ids))
    pairable = per_unit[unit_index] >= 2
    n_units = int((per_unit >= 2).sum())
    n_dropped = int((per_unit == 1).sum())
    unit_index, value_array = unit_index[pairable], value_array[pairable]
    n = value_array.size
    nan = float("nan")
    if n < 2:
        return KrippendorffAlpha(nan, nan, nan, n_units, n, n_dropped, len(table))
    m = per_unit.astype(np.float64)
    unit_mean = np.bincount(unit_index, weights=value_array, minlength=m.size) / np.maximum(m, 1)
    unit_squares = np.bincount(unit_index, weights=(value_array - unit_mean[unit_index]) ** 2, minlength=m.size)
    kept = per_unit >= 2
    # sum_{i != j in u} (v_i - v_j)^2 / (m_u - 1) = 2 m_u SS_u / (m_u - 1)
    observed = float(np.sum(2 * m[kept] * unit_squares[kept] / (m[kept] - 1))) / n
    expected = 2 * float(np.sum((value_array - value_array.mean()) ** 2)) / (n - 1)
    alpha = 1.0 - observed / expected if expected > 0 else nan
    return KrippendorffAlpha(alpha, observed, expected, n_units, n, n_dropped, len(table))
