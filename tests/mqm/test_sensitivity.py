"""Error sensitivity on planted data: the planted blind spot is found, the fit is exact least squares."""

from __future__ import annotations

import json

import numpy as np
import pytest

from assay.errors import UsageError
from assay.mqm import (
    RatedOutputs,
    SensitivityReport,
    compare_sensitivity,
    error_features,
    error_sensitivity,
)
from assay.mqm.sensitivity import BootstrapPlan
from assay.mqm.within_item_regression import fit_within_item, within_item_moments

from .planted_errors import CATEGORIES, IGNORED, PlantedRatings

R = 300  # resamples: enough for stable 95% intervals on 300 items, fast


@pytest.fixture(scope="module")
def planted() -> PlantedRatings:
    return PlantedRatings()


@pytest.fixture(scope="module")
def sees_all(planted: PlantedRatings) -> RatedOutputs:
    return planted.outputs(planted.metric())


@pytest.fixture(scope="module")
def blind(planted: PlantedRatings) -> RatedOutputs:
    return planted.outputs(planted.metric([c for c in CATEGORIES if c != IGNORED]))


@pytest.fixture(scope="module")
def blind_report(blind: RatedOutputs) -> SensitivityReport:
    return error_sensitivity(blind, n_resamples=R, seed=3)


# --- the oracle of the product spec: a metric that ignores one category ---------------------------

def test_ignored_category_is_the_first_blind_spot(blind_report: SensitivityReport) -> None:
    spots = blind_report.blind_spots()
    first = spots[0]
    assert first.name == IGNORED
    assert first.human_drop_std.excludes_zero and first.human_drop_std.low > 0  # the humans mind it
    assert first.metric_drop_std.low <= 0 <= first.metric_drop_std.high  # the metric does not
    assert abs(first.ratio.value) < 0.1
    # every other category is seen: its metric interval lies above zero
    assert all(c.metric_drop_std.low > 0 for c in spots[1:])
    assert len(spots) == len(CATEGORIES)


def test_ignored_category_per_severity(blind: RatedOutputs) -> None:
    report = error_sensitivity(blind, level="category+severity", n_resamples=R, seed=3)
    first_two = {c.name for c in report.blind_spots()[:2]}
    assert first_two == {f"{IGNORED} (Major)", f"{IGNORED} (Minor)"}
    # humans: Major costs 5 MQM points, Minor 1 (noise 0.3 per output; 0.1 is > 3 standard errors)
    for cell in report.cells:
        assert cell.human_drop.value == pytest.approx(5.0 if cell.cell.severity == "Major" else 1.0, abs=0.1)


def test_a_metric_that_sees_everything_has_ratios_near_one(sees_all: RatedOutputs) -> None:
    """The metric is 0.02 x the human penalty plus an item offset and noise of the same size as the
    humans' (0.3 before scaling): within items it is the human score rescaled, so each standardised
    drop matches the humans'. Tolerance 0.1: the noise moves the two pooled SDs apart by ~2%."""
    report = error_sensitivity(sees_all, n_resamples=R, seed=3)
    for cell in report.cells:
        assert cell.ratio.value == pytest.approx(1.0, abs=0.1), cell.name
        assert cell.ratio.low < 1.0 + 0.1 and cell.ratio.high > 1.0 - 0.1
    # the item offsets (SD 2, a hundred times the effects) are removed by the within-item fit
    assert report.metric_sd < 0.02 * 10


# --- exactness: the sufficient statistics give least squares on the demeaned design ---------------

def _explicit_within_fit(x: np.ndarray, y: np.ndarray, items: np.ndarray) -> np.ndarray:
    xd, yd = x.copy(), y.copy()
    for item in np.unique(items):
        rows = items == item
        xd[rows] -= x[rows].mean(axis=0)
        yd[rows] -= y[rows].mean(axis=0)
    return np.linalg.lstsq(xd, yd, rcond=None)[0]


def test_point_fit_equals_lstsq_on_the_demeaned_design(blind: RatedOutputs) -> None:
    for level in ("category", "category+severity"):
        features = error_features(blind, level)
        scores = np.column_stack([blind.human, blind.metric])
        moments = within_item_moments(features.counts, scores, blind.item_codes, len(blind.item_ids))
        fit = fit_within_item(moments, np.ones((1, len(blind.item_ids))))
        expected = _explicit_within_fit(features.counts, scores, blind.item_codes)
        np.testing.assert_allclose(fit.beta[0], expected, rtol=0, atol=1e-9)


def test_each_replicate_equals_lstsq_on_its_resampled_rows(blind: RatedOutputs) -> None:
    """A resample that draws an item twice holds its outputs twice, each copy its own item."""
    features = error_features(blind)
    scores = np.column_stack([blind.human, blind.metric])
    n_items = len(blind.item_ids)
    moments = within_item_moments(features.counts, scores, blind.item_codes, n_items)
    plan = BootstrapPlan(n_resamples=3, seed=11)
    counts = plan.counts(n_items)
    fit = fit_within_item(moments, counts)
    for r in range(3):
        rows, labels = [], []
        for item in range(n_items):
            for copy in range(int(counts[r, item])):
                members = np.flatnonzero(blind.item_codes == item)
                rows.append(members)
                labels.append(np.full(members.size, item * 1000 + copy))
        picked, drawn = np.concatenate(rows), np.concatenate(labels)
        expected = _explicit_within_fit(features.counts[picked], scores[picked], drawn)
        np.testing.assert_allclose(fit.beta[r], expected, rtol=0, atol=1e-9)


def test_a_cell_that_never_varies_within_an_item_is_undefined_not_zero() -> None:
    # two items x 2 systems; "Style/Awkward" appears on both outputs of item a: no within-item variation
    outputs = RatedOutputs(
        ["a", "a", "b", "b"], ["s1", "s2", "s1", "s2"], [-1.0, -2.0, 0.0, -1.0], [0.1, 0.2, 0.3, 0.4],
        [(("Style/Awkward", "Minor", "r", "target", None, None),),
         (("Style/Awkward", "Minor", "r", "target", None, None), ("Fluency/Grammar", "Minor", "r", "target", 0, 1)),
         (), (("Fluency/Grammar", "Minor", "r", "target", None, None),)],
        [1, 1, 1, 1], ["xy"] * 4, ["src"] * 4)
    report = error_sensitivity(outputs, min_outputs=1, n_resamples=20)
    awkward = report.cell("Style/Awkward")
    assert awkward.items_varying == 0 and np.isnan(awkward.human_drop.value)
    assert report.cell("Fluency/Grammar").human_drop.value == pytest.approx(1.0, abs=1e-9)
    json.dumps(report.as_dict(), allow_nan=False)


# --- bootstrap: reproducible from the recorded seed and stream -----------------------------------

def test_bootstrap_is_deterministic_for_a_seed(blind: RatedOutputs, blind_report: SensitivityReport) -> None:
    again = error_sensitivity(blind, n_resamples=R, seed=3)
    assert again.as_dict() == blind_report.as_dict()
    other_seed = error_sensitivity(blind, n_resamples=R, seed=4)
    other_stream = error_sensitivity(blind, n_resamples=R, seed=3, stream="another")
    first = blind_report.cells[0]
    assert other_seed.cells[0].ratio.low != first.ratio.low
    assert other_stream.cells[0].ratio.low != first.ratio.low
    assert other_seed.cells[0].ratio.value == first.ratio.value  # the point estimate does not resample


def test_as_dict_is_json_ready(blind_report: SensitivityReport) -> None:
    data = json.loads(json.dumps(blind_report.as_dict(), allow_nan=False))
    assert data["signature"] == "mqm-sensitivity|level:category|min:20|boot:300|seed:3|stream:mqm-sensitivity|ci:0.95"
    assert data["blind_spots"][0] == IGNORED
    assert set(data["cells"][0]) == {"name", "category", "severity", "folded_from", "outputs", "items_varying",
                                     "metric_drop", "metric_drop_std", "human_drop", "human_drop_std", "ratio",
                                     "human_penalises", "blind_spot_rank", "undetermined"}
    assert data["cells"][0]["blind_spot_rank"] is not None and data["undetermined"] == []
    assert set(data["cells"][0]["ratio"]) == {"value", "low", "high"}


# --- checkpoint against parent --------------------------------------------------------------------

def test_a_child_that_fixes_the_blind_spot_is_improved_there(sees_all: RatedOutputs, blind: RatedOutputs) -> None:
    comparison = compare_sensitivity(sees_all, blind, n_resamples=R, seed=3)
    fixed = comparison.cell(IGNORED)
    assert fixed.verdict == "improved"
    assert fixed.difference.low > 0 and fixed.human_penalises
    backwards = compare_sensitivity(blind, sees_all, n_resamples=R, seed=3)
    assert backwards.cell(IGNORED).verdict == "worse"
    data = json.loads(json.dumps(comparison.as_dict(), allow_nan=False))
    assert {c["name"]: c["verdict"] for c in data["cells"]}[IGNORED] == "improved"


def test_a_metric_against_itself_is_unchanged_everywhere(blind: RatedOutputs) -> None:
    comparison = compare_sensitivity(blind, blind, n_resamples=50)
    assert {c.verdict for c in comparison.cells} == {"unchanged"}
    # the same metric in two columns of one batched solve: equal up to rounding
    assert all(max(abs(c.difference.low), abs(c.difference.high)) < 1e-12 for c in comparison.cells)


def test_comparison_pairs_the_resamples(sees_all: RatedOutputs, blind: RatedOutputs) -> None:
    """Child and parent intervals equal those of separate reports with the same seed and stream."""
    comparison = compare_sensitivity(sees_all, blind, n_resamples=R, seed=3)
    child = error_sensitivity(sees_all, n_resamples=R, seed=3)
    for mine, theirs in zip(comparison.cells, child.cells, strict=True):
        assert mine.child_drop_std.low == pytest.approx(theirs.metric_drop_std.low, abs=1e-12)


def test_comparison_needs_the_same_outputs(sees_all: RatedOutputs, planted: PlantedRatings) -> None:
    other = RatedOutputs(sees_all.item, sees_all.system, sees_all.human + 1, sees_all.metric, sees_all.errors,
                         sees_all.raters, sees_all.candidate, sees_all.source)
    with pytest.raises(UsageError, match="same rated outputs"):
        compare_sensitivity(sees_all, other, n_resamples=10)


@pytest.mark.parametrize("kwargs", [{"n_resamples": 0}, {"confidence": 1.5}, {"level": "severity"},
                                    {"min_outputs": 0}])
def test_bad_parameters_are_usage_errors(blind: RatedOutputs, kwargs: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        error_sensitivity(blind, **kwargs)  # type: ignore[arg-type]
