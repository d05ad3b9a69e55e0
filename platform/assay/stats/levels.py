"""Levels of meta-evaluation, and the statistics each level accepts.

A correlation with human judgments is computed at a *level* (mt-metrics-eval's ``level``):

``seg``
    segment level: the metric's and the humans' scores of the same segments (Pearson, Spearman,
    Kendall tau-b and tau-c; WMT's DARR Kendall-like tau on relative rankings; tau_23, acc_23 and
    the tie-calibrated acc-t of Deutsch et al., 2023);
``sys``
    system level: each system's mean scores (Pearson, Spearman, Kendall; pairwise accuracy, Kocmi
    et al., 2021).

A protocol that fixes its own statistics names the level of each one (WMT24: SPA at ``sys``,
item-grouped acc-t at ``seg``, and their mean at ``avg``; :data:`assay.jobs.protocol_wmt24.LEVELS`);
:func:`statistics_at` reads such a table too. This module is the one list of the statistics per
level: ``assay evaluate`` refuses the others, a suite entry may only name these, and the regression
check compares only these.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["DEFAULT_STATS", "LEVELS", "SEG_STATS", "STATISTIC_ORDER", "SYS_STATS", "statistics_at"]

LEVELS = ("seg", "sys")
"""The levels ``assay evaluate`` computes without a protocol, in their canonical order."""
SEG_STATS = ("pearson", "spearman", "kendall", "kendall_c", "kendall_like", "tau23", "acc23", "acc_t")
"""The segment-level statistics."""
SYS_STATS = ("pearson", "spearman", "kendall", "pairwise_accuracy")
"""The system-level statistics."""
DEFAULT_STATS = {"seg": ("pearson", "kendall"), "sys": ("pearson", "kendall")}
"""The statistics computed at each level when none is named."""
STATISTIC_ORDER = SEG_STATS + tuple(s for s in SYS_STATS if s not in SEG_STATS)
"""Every per-level statistic once, in canonical order (as a suite's definition lists them)."""

_BY_LEVEL: dict[str, tuple[str, ...]] = {"seg": SEG_STATS, "sys": SYS_STATS}


def statistics_at(level: str, protocol_levels: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The statistics an evaluation computes at ``level``: the per-level ones, or, given a
    protocol's ``{statistic: level}`` table (e.g. :data:`assay.jobs.protocol_wmt24.LEVELS`), that
    protocol's statistics at ``level``, in the table's order. Empty for a level with none."""
    if protocol_levels is None:
        return _BY_LEVEL.get(level, ())
    return tuple(s for s, at in protocol_levels.items() if at == level)
