"""The within-item (fixed-effects) least-squares fit, from per-item sufficient statistics.

The model, for outputs ``o`` of items ``i`` (one source segment translated by several systems)::

    y_o = alpha_i(o) + sum_c beta_c x_oc + e_o

has one intercept per item, so the ``beta`` compare outputs of the *same* source only: how the
score moves with the error counts, the difficulty of the source held fixed (the within estimator
of panel econometrics, Wooldridge 2010, "Econometric Analysis of Cross Section and Panel Data",
ch. 10.5). By the Frisch-Waugh-Lovell theorem the ``beta`` are the least-squares coefficients of
the item-demeaned score on the item-demeaned features, with no intercept.

Everything the fit needs is a sum over items of per-item statistics of the demeaned data:
``X_i'X_i`` (cells x cells), ``X_i'y_i`` (cells x scores), ``y_i'y_i`` and ``n_i - 1`` (for the
pooled within-item standard deviation of each score). A bootstrap resample of items, drawn with
replacement, is a vector of counts ``w`` (how often each item was drawn); an item drawn twice
brings its own intercept twice, with the same demeaned rows, so the resample's fit is exactly the
``w``-weighted sum of the per-item statistics. :func:`fit_within_item` sums them for all resamples
with one matrix product each and solves the ``R`` normal equations in one batched call
(sufficient statistics, then aggregation: nothing is demeaned again per resample).

Numerical safety: a cell that varies within no drawn item has an all-zero row and column; its
coefficient is undefined (NaN) and its diagonal is set to 1 so the rest of the system still solves
(its coefficient would then be 0, and it is reported as NaN). A ridge of ``1e-12`` times the mean
diagonal is added to every system, far below any effect it could hide (the tests check the fit
against ``numpy.linalg.lstsq`` to 1e-9), so that cells which always co-occur give a large but
finite answer rather than a failed solve.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]

#: the ridge added to the normal equations, relative to their mean diagonal (numerical safety only)
RELATIVE_RIDGE = 1e-12


@dataclass(frozen=True, eq=False)
class WithinItemMoments:
    """Per-item sufficient statistics of the item-demeaned features ``X`` and scores ``Y``."""

    xx: FloatArray  # (items, cells, cells): X_i'X_i
    xy: FloatArray  # (items, cells, scores): X_i'Y_i
    yy: FloatArray  # (items, scores): the within-item sum of squares of each score
    dof: FloatArray  # (items,): n_i - 1, the within-item degrees of freedom
    varies: BoolArray  # (items, cells): whether the cell's feature differs between the item's outputs

    @property
    def items(self) -> int:
        return int(self.dof.size)

    @property
    def cells(self) -> int:
        return int(self.xx.shape[1])

    @property
    def scores(self) -> int:
        return int(self.yy.shape[1])


@dataclass(frozen=True, eq=False)
class WithinItemFit:
    """The fit of every weighting of the items (row ``r`` of the weights)."""

    beta: FloatArray  # (R, cells, scores); NaN where the cell varies within no weighted item
    sd: FloatArray  # (R, scores): pooled within-item standard deviation of each score


def demean_within_items(values: FloatArray, items: IntArray, n_items: int) -> FloatArray:
    """``values`` (outputs x columns) minus the mean of their item's outputs, per column.

    A column constant within an item is exactly 0 there (not a rounding residue), so that "does not
    vary" is an exact test.
    """
    sizes = np.bincount(items, minlength=n_items).astype(np.float64)
    columns = values.shape[1]
    flat = (items[:, None] * columns + np.arange(columns)[None, :]).ravel()
    sums = np.bincount(flat, weights=values.ravel(), minlength=n_items * columns).reshape(n_items, columns)
    means = sums / np.maximum(sizes, 1.0)[:, None]
    high = np.full((n_items, columns), -np.inf)
    low = np.full((n_items, columns), np.inf)
    np.maximum.at(high, items, values)
    np.minimum.at(low, items, values)
    constant = (high == low)[items]
    return np.where(constant, 0.0, values - means[items])


def within_item_moments(features: FloatArray, scores: FloatArray, items: IntArray, n_items: int) -> WithinItemMoments:
    """The per-item statistics of ``features`` (outputs x cells) and ``scores`` (outputs x scores).

    ``items`` gives each output's item as 0..n_items-1; every item must hold at least one output.
    """
    x = demean_within_items(np.asarray(features, dtype=np.float64), items, n_items)
    y = demean_within_items(np.asarray(scores, dtype=np.float64), items, n_items)
    order = np.argsort(items, kind="stable")
    sizes = np.bincount(items, minlength=n_items)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    xs, ys = x[order], y[order]
    # One small product per item: faster than reducing (outputs x cells x cells) outer products,
    # and memory stays at the size of the result whatever the number of outputs.
    groups = [slice(bounds[i], bounds[i + 1]) for i in range(n_items)]
    xx = np.stack([xs[g].T @ xs[g] for g in groups])
    xy = np.stack([xs[g].T @ ys[g] for g in groups])
    yy = np.stack([np.einsum("oc,oc->c", ys[g], ys[g]) for g in groups])
    varies = np.stack([(xs[g] != 0).any(axis=0) for g in groups])
    return WithinItemMoments(xx, xy, yy, (sizes - 1).astype(np.float64), varies)


def fit_within_item(moments: WithinItemMoments, weights: FloatArray) -> WithinItemFit:
    """The within-item least-squares fit for each row of ``weights`` (R x items, e.g. resample counts).

    One product per statistic sums the items for every row at once; the ``R`` normal equations
    are solved in one batched :func:`numpy.linalg.solve`.
    """
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    rows, k, s = w.shape[0], moments.cells, moments.scores
    with np.errstate(invalid="ignore", divide="ignore"):  # no item with two outputs: NaN
        sd = np.sqrt((w @ moments.yy) / (w @ moments.dof)[:, None])
    if k == 0:
        return WithinItemFit(np.zeros((rows, 0, s)), sd)
    a = (w @ moments.xx.reshape(moments.items, k * k)).reshape(rows, k, k)
    b = (w @ moments.xy.reshape(moments.items, k * s)).reshape(rows, k, s)
    cells = np.arange(k)
    diagonal = a[:, cells, cells]
    absent = diagonal <= 0
    b[absent] = 0.0
    diagonal[absent] = 1.0
    a[:, cells, cells] = diagonal + RELATIVE_RIDGE * diagonal.mean(axis=1)[:, None]
    beta = np.asarray(np.linalg.solve(a, b), dtype=np.float64)
    beta[absent] = np.nan
    return WithinItemFit(beta, sd)


__all__ = ["RELATIVE_RIDGE", "WithinItemFit", "WithinItemMoments", "demean_within_items", "fit_within_item",
           "within_item_moments"]
