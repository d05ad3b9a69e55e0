"""Worst disagreements on a hand-built case, where every pair's rank can be worked out by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from assay.errors import UsageError
from assay.mqm import RatedOutputs, item_disagreements, worst_disagreements

MAJOR = ("Accuracy/Mistranslation", "Major", "r1", "target", 0, 4)

# item, system, human, metric
ROWS = [
    ("a", "s1", 0.0, 0.5),
    ("a", "s2", -5.0, 0.9),  # humans: 5 points worse than s1; the metric puts it 0.4 above s1
    ("a", "s3", -1.0, 0.6),
    ("b", "s1", -0.5, 0.2),
    ("b", "s2", -1.0, 0.9),  # 0.5 below s1: not a clear human preference, whatever the metric says
    ("b", "s3", -3.0, 0.1),  # clearly worst, and the metric agrees
    ("c", "s1", 0.0, 0.0),
    ("c", "s2", -10.0, 0.05),  # the largest human gap, but the metric is only slightly wrong
    ("d", "s1", 0.0, 0.0),
    ("d", "s2", -1.0, 1.5),  # a small human gap, but the metric is far off
]


def _outputs() -> RatedOutputs:
    n = len(ROWS)
    errors = [(MAJOR,) if human <= -5 else () for _, _, human, _ in ROWS]
    return RatedOutputs([r[0] for r in ROWS], [r[1] for r in ROWS], [r[2] for r in ROWS], [r[3] for r in ROWS],
                        errors, [1] * n, [f"text {r[0]}{r[1]}" for r in ROWS], [f"source {r[0]}" for r in ROWS])


def test_worst_pair_is_the_largest_product_of_the_two_gaps() -> None:
    """Reversed pairs and their human gap x metric gap (the metric SD is common to all):
    a: s1 over s2, 5 x 0.4 = 2.0; d: 1 x 1.5 = 1.5; a: s3 over s2, 4 x 0.3 = 1.2;
    c: 10 x 0.05 = 0.5; a: s1 over s3, 1 x 0.1 = 0.1 (a gap of exactly 1 point counts).
    So item a's s1 (preferred) against s2 comes first: neither the largest human gap (c) nor the
    largest metric gap (d), but the largest product. Items are distinct: a's other two reversed
    pairs are counted with its worst, not listed."""
    worst = worst_disagreements(_outputs(), top=10)
    order = [(d.item, d.preferred.system, d.other.system) for d in worst.pairs]
    assert order == [("a", "s1", "s2"), ("d", "s1", "s2"), ("c", "s1", "s2")]
    assert [d.reversed_in_item for d in worst.pairs] == [3, 1, 1]
    # clear pairs: a 3, b 2 (s1-s3, s2-s3; s1-s2 is only 0.5 apart), c 1, d 1; reversed: the five above
    assert (worst.clear_pairs, worst.reversed_pairs, worst.items_reversed) == (7, 5, 3)
    first = worst.pairs[0]
    assert (first.human_gap, first.metric_gap) == (5.0, pytest.approx(0.4))
    assert (first.preferred.human, first.other.metric) == (0.0, 0.9)
    assert first.other.errors == (MAJOR,) and first.preferred.errors == ()
    assert first.other.candidate == "text as2" and first.source == "source a"


def test_metric_gap_is_standardised_by_the_pooled_within_item_sd() -> None:
    metric = np.array([r[3] for r in ROWS])
    residuals = []
    for item in "abcd":
        values = metric[[r[0] == item for r in ROWS]]
        residuals.extend(values - values.mean())
    sd = math.sqrt(sum(x * x for x in residuals) / (len(ROWS) - 4))
    worst = worst_disagreements(_outputs())
    assert worst.metric_sd == pytest.approx(sd, rel=1e-12)
    assert worst.pairs[0].metric_gap_std == pytest.approx(0.4 / sd, rel=1e-9)
    assert worst.pairs[0].severity == pytest.approx(5 * 0.4 / sd, rel=1e-9)


def test_threshold_top_and_json() -> None:
    assert [d.item for d in worst_disagreements(_outputs(), min_human_gap=4.5).pairs] == ["a", "c"]
    assert [d.item for d in worst_disagreements(_outputs(), top=2).pairs] == ["a", "d"]
    data = json.loads(json.dumps(worst_disagreements(_outputs(), top=1).as_dict(), allow_nan=False))
    assert data["pairs"][0]["other"]["errors"][0] == {"category": "Accuracy/Mistranslation", "severity": "Major",
                                                      "rater": "r1", "side": "target", "start": 0, "end": 4}
    with pytest.raises(UsageError):
        worst_disagreements(_outputs(), min_human_gap=0)


def test_one_item_lists_its_outputs_and_reversals() -> None:
    """Item a: humans s1 (0) > s3 (-1) > s2 (-5); the metric s2 (0.9) > s3 (0.6) > s1 (0.5): all
    three clear preferences reversed."""
    shown = item_disagreements(_outputs(), "a")
    assert [o.system for o in shown.outputs] == ["s1", "s3", "s2"]
    assert (shown.clear_pairs, set(shown.reversed)) == (3, {("s1", "s3"), ("s1", "s2"), ("s3", "s2")})
    data = shown.as_dict()
    assert [(o["human_rank"], o["metric_rank"]) for o in data["outputs"]] == [(1, 3), (2, 2), (3, 1)]
    assert data["source"] == "source a" and data["outputs"][2]["marks"]["target"][0]["text"] == "text"
    with pytest.raises(UsageError, match="no rated outputs of item 'z'"):
        item_disagreements(_outputs(), "z")
