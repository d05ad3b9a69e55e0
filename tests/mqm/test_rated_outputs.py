"""The input of error analysis: validation, and the error cells with rare ones folded."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from assay.errors import UsageError
from assay.mqm import ErrorRecord, RatedOutputs, error_features


def _outputs(**change: Any) -> RatedOutputs:
    fields: dict[str, Any] = {
        "item": ["a", "a"], "system": ["s1", "s2"], "human": [0.0, -1.0], "metric": [0.5, 0.4],
        "errors": [(), (("Fluency/Grammar", "Minor", "r1", "target", 0, 3),)], "raters": [1, 2],
        "candidate": ["Ein Haus.", "Eine Haus."], "source": ["A house.", "A house."]}
    fields.update(change)
    return RatedOutputs(**fields)


def test_records_become_error_records_and_scores_read_only_arrays() -> None:
    outputs = _outputs()
    assert outputs.errors[1][0] == ErrorRecord("Fluency/Grammar", "Minor", "r1", "target", 0, 3)
    assert outputs.errors[1][0].as_dict()["side"] == "target"
    assert outputs.human.dtype == np.float64 and not outputs.human.flags.writeable
    assert outputs.item_ids == ("a",) and outputs.item_codes.tolist() == [0, 0]
    assert outputs.with_metric([1.0, 2.0]).metric.tolist() == [1.0, 2.0]
    assert outputs.same_outputs(outputs.with_metric([1.0, 2.0]))


@pytest.mark.parametrize(("change", "message"), [
    ({"system": ["s1"]}, "system has 1"),
    ({"metric": [0.1, 0.2, 0.3]}, "metric has 3"),
    ({"human": [0.0, float("nan")]}, "not finite"),
    ({"raters": [1, 0]}, "0 raters"),
    ({"raters": [1, True]}, "True raters"),
    ({"system": ["s1", "s1"]}, "repeats item"),
    ({"errors": [(), (("Fluency/Grammar", "Minor", "r1", "candidate", None, None),)]}, "side 'candidate'"),
    ({"errors": [(), (("Fluency/Grammar", "Minor", "r1", "target", 3, 99),)]}, "outside its target text"),
    ({"errors": [(), (("Fluency/Grammar", "Minor", "r1", "source", 3, None),)]}, "both offsets or neither"),
    ({"errors": [(), ((3, "Minor", "r1", "target", None, None),)]}, "category is 3"),
    ({"errors": [(), (("Fluency/Grammar", "Minor", "r1"),)]}, "3 fields"),
    ({"item": [], "system": [], "human": [], "metric": [], "errors": [], "raters": [], "candidate": [],
      "source": []}, "no outputs"),
])
def test_inconsistent_input_is_a_usage_error(change: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        _outputs(**change)


def test_features_are_rater_averaged_counts() -> None:
    outputs = _outputs(errors=[(), (("Fluency/Grammar", "Minor", "r1", "target", None, None),
                                    ("Fluency/Grammar", "Major", "r2", "target", None, None))])
    pooled = error_features(outputs, min_outputs=1)
    assert [c.name for c in pooled.cells] == ["Fluency/Grammar"]
    assert pooled.counts[:, 0].tolist() == [0.0, 1.0]  # two errors, two raters
    split = error_features(outputs, "category+severity", min_outputs=1)
    assert [c.name for c in split.cells] == ["Fluency/Grammar (Major)", "Fluency/Grammar (Minor)"]
    assert split.counts.tolist() == [[0.0, 0.0], [0.5, 0.5]]


def test_rare_cells_fold_into_other_then_rare() -> None:
    def output(*categories: str) -> tuple[tuple[str, str, str, str, None, None], ...]:
        return tuple((c, "Minor", "r", "target", None, None) for c in categories)

    errors = ([output("Accuracy/Mistranslation")] * 3 + [output("Accuracy/Addition")] * 1
              + [output("Accuracy/Omission")] * 1 + [output("Fluency/Display")] + [output("Non-translation!")]
              + [output("Accuracy/Mistranslation", "Accuracy/Addition")])
    n = len(errors)
    outputs = RatedOutputs([f"i{o // 2}" for o in range(n)], [f"s{o % 2}" for o in range(n)], [0.0] * n,
                           [0.0] * n, errors, [1] * n, ["x"] * n, ["y"] * n)
    features = error_features(outputs, min_outputs=3)
    cells = {c.name: c for c in features.cells}
    # Addition (2 outputs) and Omission (1) are rare; together, as Accuracy/Other, they reach 3
    assert cells["Accuracy/Other"].folded_from == ("Accuracy/Addition", "Accuracy/Omission")
    # Fluency/Other would hold one output, Non-translation! has no parent: both go to (rare), kept last
    assert cells["(rare)"].folded_from == ("Fluency/Display", "Non-translation!")
    assert list(cells) == ["Accuracy/Mistranslation", "Accuracy/Other", "(rare)"]
    assert features.outputs_with.tolist() == [4, 3, 2]
    assert features.counts.sum(axis=0).tolist() == [4.0, 3.0, 2.0]
