"""Error analysis of sentence chrF on the real WMT23 en-de MQM release (../shared/data/mqm-wmt23-ende):
distinct worst items with their references, blind spots ranked only against a clearly non-zero
human drop, one item's outputs, and the same spans with their categories removed (ESA's shape).

The release is read by :mod:`tests.mqm.wmt23_rated`, independently of the ingest; the expected
counts are recomputed here by brute force over every within-item pair.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.errors import UsageError
from assay.mqm import (
    RatedOutputs,
    SensitivityReport,
    error_sensitivity,
    item_disagreements,
    span_marks,
    worst_disagreements,
)

from .conftest import WMT23, read_tsv
from .wmt23_rated import wmt23_rated_outputs

R = 300  # resamples: stable enough for the cells below, fast


@pytest.fixture(scope="module")
def table(shared_data: Path) -> list[list[str]]:
    return read_tsv(shared_data / WMT23)


@pytest.fixture(scope="module")
def wmt23(table: list[list[str]]) -> RatedOutputs:
    return wmt23_rated_outputs(table)


@pytest.fixture(scope="module")
def report(wmt23: RatedOutputs) -> SensitivityReport:
    return error_sensitivity(wmt23, n_resamples=R)


def _reversed_by_item(outputs: RatedOutputs, gap: float = 1.0) -> dict[str, int]:
    """Brute force: per item, the pairs with a human gap >= gap that chrF orders the other way."""
    found: dict[str, int] = {}
    for a in range(outputs.size):
        for b in range(outputs.size):
            if (outputs.item[a] == outputs.item[b] and outputs.human[a] - outputs.human[b] >= gap
                    and outputs.metric[a] < outputs.metric[b]):
                found[outputs.item[a]] = found.get(outputs.item[a], 0) + 1
    return found


def test_the_release_as_rated_outputs(wmt23: RatedOutputs) -> None:
    # PROVENANCE.md: 10 systems (refA the reference) x 104 segments, 3 raters each
    assert (wmt23.size, len(wmt23.item_ids), len(set(wmt23.system))) == (936, 104, 9)
    assert set(wmt23.raters) == {3} and all(len(r) == 1 for r in wmt23.references)


def test_worst_disagreements_are_distinct_items(wmt23: RatedOutputs) -> None:
    """Before, item 13 filled 5 of the top 10 (its short NLLB output against five longer ones)."""
    worst = worst_disagreements(wmt23, top=10)
    items = [p.item for p in worst.pairs]
    assert len(items) == 10 and len(set(items)) == 10
    by_item = _reversed_by_item(wmt23)
    assert worst.reversed_pairs == sum(by_item.values()) and worst.items_reversed == len(by_item)
    for pair in worst.pairs:
        assert pair.reversed_in_item == by_item[pair.item]
        assert pair.preferred.human - pair.other.human >= 1 and pair.other.metric > pair.preferred.metric
    assert [p.severity for p in worst.pairs] == sorted((p.severity for p in worst.pairs), reverse=True)
    first = worst.pairs[0]
    assert (first.item, first.preferred.system, first.other.system) == ("13", "NLLB_MBR_BLEU", "ONLINE-G")
    assert first.references[0].startswith("Vier Teenager aus New Jersey wurden im Zusammenhang mit einem Angriff")
    assert first.preferred.raters == 3
    data = json.loads(json.dumps(worst.as_dict(), allow_nan=False))
    pair = data["pairs"][0]
    assert pair["references"] == list(first.references) and pair["reversed_in_item"] == by_item["13"]
    # the omission is carried as marks on the source, with the words it covers
    omitted = pair["preferred"]["marks"]["source"]
    assert {m["text"].rstrip(".") for m in omitted} == {
        "One juvenile is charged with aggravated assault, two juveniles are charged with conspiracy to commit "
        "aggravated assault and one juvenile is charged with harassment, Ocean County prosecutor Bradley D. "
        "Billhimer told CBS News in an email"}
    assert sorted(len(m["raters"]) for m in omitted) == [1, 2]


def test_the_worst_pair_of_each_item_is_the_one_shown(wmt23: RatedOutputs) -> None:
    every = worst_disagreements(wmt23, top=10_000)
    assert len(every.pairs) == every.items_reversed  # one pair per item with a reversal
    item_13 = item_disagreements(wmt23, "13")
    assert len(item_13.reversed) == every.pairs[0].reversed_in_item
    assert (every.pairs[0].preferred.system, every.pairs[0].other.system) in item_13.reversed


def test_blind_spots_are_ranked_only_against_a_clearly_nonzero_human_drop(report: SensitivityReport) -> None:
    """Fluency/Punctuation: the humans' drop is about 0.01 SDs with an interval across 0 (Minor
    punctuation weighs 0.1), so chrF's ratio there (4.22 [-25.75, 30.07] in the issue) is no finding."""
    data = json.loads(json.dumps(report.as_dict(), allow_nan=False))
    cells = {c["name"]: c for c in data["cells"]}
    punctuation = cells["Fluency/Punctuation"]
    assert punctuation["blind_spot_rank"] is None
    assert punctuation["human_drop_std"]["low"] <= 0 <= punctuation["human_drop_std"]["high"]
    assert "includes 0" in punctuation["undetermined"]
    for cell in data["cells"]:
        ranked = cell["blind_spot_rank"] is not None
        assert ranked == (cell["undetermined"] is None)
        assert ranked == (cell["human_drop_std"]["low"] > 0 and cell["outputs"] >= data["min_outputs"]), cell["name"]
    assert data["blind_spots"] == sorted(data["blind_spots"], key=lambda n: cells[n]["blind_spot_rank"])
    assert [u["name"] for u in data["undetermined"]] == [c["name"] for c in data["cells"] if c["undetermined"]]
    assert len(data["blind_spots"]) + len(data["undetermined"]) == len(data["cells"])


def test_one_item_shows_every_output_best_first(wmt23: RatedOutputs) -> None:
    shown = item_disagreements(wmt23, "13").as_dict()
    humans = [o["human"] for o in shown["outputs"]]
    assert len(humans) == 9 and humans == sorted(humans, reverse=True)
    assert shown["outputs"][0]["human_rank"] == 1
    metric_ranks = {o["system"]: o["metric_rank"] for o in shown["outputs"]}
    assert metric_ranks["NLLB_MBR_BLEU"] == 9  # the humans' best, chrF's last: the short output
    assert shown["references"] and shown["source"].startswith("Four New Jersey teenagers")
    with pytest.raises(UsageError, match="no rated outputs of item 'nope'"):
        item_disagreements(wmt23, "nope")


def test_severity_only_spans_work(table: list[list[str]]) -> None:
    """The same spans without their categories, as ESA's error spans come (a severity only)."""
    plain = wmt23_rated_outputs(table, with_categories=False)
    assert {e.category for errors in plain.errors for e in errors} == {""}
    by_category = error_sensitivity(plain, n_resamples=50)
    assert [c.name for c in by_category.cells] == ["(no category)"]
    assert by_category.cells[0].human_drop_std.low > 0  # any error costs MQM points
    by_severity = error_sensitivity(plain, level="category+severity", n_resamples=50)
    drops = {c.name: c.human_drop.value for c in by_severity.cells}
    # MQM weights: Major 5, Minor 1 (0.1 for Minor punctuation, hence below 1)
    assert drops["(no category) (Major)"] == pytest.approx(5.0, abs=0.5)
    assert 0 < drops["(no category) (Minor)"] < 1.0
    json.dumps(by_severity.as_dict(), allow_nan=False)
    worst = worst_disagreements(plain, top=3)
    side = worst.pairs[0].other
    assert span_marks(side.errors, "target", len(side.candidate))
    assert all(c == [""] for m in worst.as_dict()["pairs"][0]["other"]["marks"]["target"] for c in [m["categories"]])
