"""Inter-rater agreement of a version with per-rater ratings (MQM), as ``assay datasets show`` reports it.

A unit is one rated output (group, system, segment); a rater's value is their score of it (minus
their penalty, :mod:`assay.datasets.formats.mqm_tsv`). Reported: Krippendorff's alpha with the
interval metric over all raters (Krippendorff 2011; units rated once are not pairable and drop
out), and Kendall's tau-b for every pair of raters over the units both rated, with the mean over
pairs, unweighted and weighted by shared units (:mod:`assay.stats.agreement`).
"""

from __future__ import annotations

import math
from typing import Any

from assay.config import Settings
from assay.datasets import store
from assay.stats.agreement import krippendorff_alpha_interval, pairwise_rater_kendall


def rater_agreement(settings: Settings, store_path: str) -> dict[str, Any] | None:
    """The agreement summary of a stored version; None when it has no per-rater ratings."""
    if not store.has_table(settings, store_path, "ratings"):
        return None
    table = store.read_table(settings, store_path, "ratings").to_pydict()
    rows = [(rater, (g, s, seg), -penalty) for rater, g, s, seg, penalty in zip(
        table["rater"], table["group"], table["system"], table["segment_id"], table["penalty"], strict=True)]
    alpha = krippendorff_alpha_interval(rows)
    kendall = pairwise_rater_kendall(rows)
    return {
        "raters": alpha.n_raters,
        "krippendorff_alpha_interval": _number(alpha.alpha),
        "pairable_units": alpha.n_units,
        "units_rated_once": alpha.n_units_dropped,
        "kendall_tau_b_mean": _number(kendall.mean_tau),
        "kendall_tau_b_weighted_mean": _number(kendall.weighted_mean_tau),
        "rater_pairs_with_tau": kendall.n_defined,
        "pairs": [{"raters": [str(p.rater_a), str(p.rater_b)], "shared_units": p.n_shared, "tau_b": _number(p.tau),
                   "note": p.reason} for p in kendall.pairs],
    }


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)
