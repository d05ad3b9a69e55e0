"""Inter-rater agreement of a version with per-rater scores (MQM, ESA), as ``assay datasets show`` reports it.

A unit is one rated output (group, system, segment) of one kind of human score; a rater's value is
their own score of it, from whichever table holds them (:mod:`assay.datasets.rater_scores`: minus
their MQM penalty, or an ESA annotator's 0-100 score). Reported: Krippendorff's alpha with the
interval metric over all raters (Krippendorff 2011; units rated once are not pairable and drop
out), and Kendall's tau-b for every pair of raters over the units both rated, with the mean over
pairs, unweighted and weighted by shared units (:mod:`assay.stats.agreement`).

Agreement needs outputs rated by more than one rater. Where every output has one (WMT24's ESA wave 2
gives each item to one annotator) there is nothing to compare: alpha and the means are null and
``undefined`` says why, rather than a number that means nothing. ``pairs`` lists the rater pairs that
share at least one output (with ``203`` annotators, most of the 20,503 pairs share none; they are
counted, not listed).
"""

from __future__ import annotations

import math
from typing import Any

from assay.config import Settings
from assay.datasets.rater_scores import read_rater_scores
from assay.stats.agreement import krippendorff_alpha_interval, pairwise_rater_kendall


def rater_agreement(settings: Settings, store_path: str) -> dict[str, Any] | None:
    """The agreement summary of a stored version; None when it has no per-rater scores."""
    scores = read_rater_scores(settings, store_path)
    if scores is None:
        return None
    rows = list(scores.rows())
    alpha = krippendorff_alpha_interval(rows)
    kendall = pairwise_rater_kendall(rows)
    sharing = [p for p in kendall.pairs if p.n_shared > 0]
    summary: dict[str, Any] = {
        "tables": list(scores.tables),
        "scores": scores.meaning,
        "kinds": scores.kinds,
        "unit": "rated outputs (group, system, segment)",
        "raters": alpha.n_raters,
        "krippendorff_alpha_interval": _number(alpha.alpha),
        "pairable_units": alpha.n_units,
        "units_rated_once": alpha.n_units_dropped,
        "kendall_tau_b_mean": _number(kendall.mean_tau),
        "kendall_tau_b_weighted_mean": _number(kendall.weighted_mean_tau),
        "rater_pairs_with_tau": kendall.n_defined,
        "rater_pairs": len(kendall.pairs),
        "rater_pairs_sharing_outputs": len(sharing),
        "pairs": [{"raters": [str(p.rater_a), str(p.rater_b)], "shared_units": p.n_shared, "tau_b": _number(p.tau),
                   "note": p.reason} for p in sharing],
    }
    if alpha.n_units == 0:
        summary["undefined"] = (f"every one of the {alpha.n_units_dropped:,} rated outputs has a single rater, so "
                                "there is no second score to agree with: agreement is undefined")
    elif math.isnan(alpha.alpha):
        summary["undefined"] = ("the outputs rated more than once all have the same score: Krippendorff's alpha is "
                                "undefined (no expected disagreement)")
    return summary


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)
