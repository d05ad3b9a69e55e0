"""Weighting schemes: mt-metrics-eval's most-specific match, parsing, signatures."""

from __future__ import annotations

import pytest

from assay.errors import InputError, UsageError
from assay.mqm import MTME, WeightingScheme, named, scheme
from assay.mqm.weights import MTME_SPEC


@pytest.mark.parametrize(("severity", "category", "weight"), [
    # The default of mt-metrics-eval converters/score_mqm.py --weights.
    ("Major", "Accuracy/Mistranslation", 5.0),
    ("Minor", "Style/Awkward", 1.0),
    ("Neutral", "Fluency/Punctuation", 0.0),
    ("Major", "Non-translation!", 25.0),       # severity/category beats severity
    ("Minor", "Fluency/Punctuation", 0.1),     # severity/category beats severity
    ("Major", "Fluency/Punctuation", 5.0),     # the 0.1 rule is for Minor only
    ("Minor", "Fluency/Grammar", 1.0),         # a sibling category falls back to the severity
    ("Minor", "Fluency/Punctuation/Comma", 0.1),  # a deeper path falls back to its parent
    ("No-error", "No-error", 0.0),
    ("HOTW-test", "Found", 0.0),               # WMT23 attention checks weigh nothing
    # Case and spaces around "/" do not matter (documented in assay.mqm.weights).
    ("minor", "fluency / PUNCTUATION", 0.1),
    (" MAJOR ", "non-translation!", 25.0),
])
def test_most_specific_match(severity: str, category: str, weight: float) -> None:
    assert MTME.weight(severity, category) == weight


def test_the_most_specific_rule_wins_three_levels_deep() -> None:
    s = WeightingScheme.parse("Minor:1 Minor/Fluency:2 Minor/Fluency/Spelling:3 Major:5")
    assert [s.weight("Minor", c) for c in ("Fluency/Spelling", "Fluency/Grammar", "Style", "")] == [3, 2, 1, 1]
    assert s.weight("Major", "Fluency/Spelling") == 5


def test_unknown_severity_is_an_error() -> None:
    with pytest.raises(UsageError, match=r"unknown MQM severity 'Critical'.*Major"):
        MTME.weight("Critical", "Accuracy/Mistranslation")
    with pytest.raises(InputError) as excinfo:
        MTME.weight("Critical", "Accuracy", path="ratings.tsv", line=9)
    assert str(excinfo.value).startswith("ratings.tsv:9: unknown MQM severity 'Critical'")
    assert "expected one of" in str(excinfo.value)
    # Neutral is known because a rule names it; a scheme without that rule does not know it.
    assert not WeightingScheme.parse("Major:5 Minor:1").knows("Neutral")


def test_parse_round_trips_and_reads_patterns_with_spaces() -> None:
    assert WeightingScheme.parse(MTME.spec) == MTME and MTME.spec == MTME_SPEC
    s = WeightingScheme.parse("  Major:5\tMinor:1  Minor/Terminology/Inappropriate for context:0.5 ")
    assert s.rules[-1] == ("Minor/Terminology/Inappropriate for context", 0.5)
    assert s.weight("Minor", "Terminology/Inappropriate for context") == 0.5


@pytest.mark.parametrize(("text", "message"), [
    ("", "no rules given"),
    ("   ", "no rules given"),
    ("Major", "cannot read 'Major'"),
    ("Major:5 Minor", "cannot read 'Minor'"),
    ("Major:five", "'five', not a number"),
    ("Major:", "'', not a number"),
    ("Major:nan", "finite number"),
    ("Major:-1", "finite number >= 0"),
    ("Major:5 major:4", "given twice"),
    ("Major//Fluency:1", "empty level"),
])
def test_bad_text_is_a_clear_usage_error(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=r"MQM weights: .*" + message.replace("(", r"\(")):
        WeightingScheme.parse(text)


def test_signatures_follow_content_not_names() -> None:
    assert MTME.signature == "mqm-weights:mtme" and named("mtme") is MTME and scheme(None) is MTME
    # The same rules written differently are the same scheme.
    same = WeightingScheme.parse("minor/fluency/punctuation:0.10 Major/Non-translation!:25 "
                                 "Neutral:0 Minor:1.0 MAJOR:5")
    assert same.signature == "mqm-weights:mtme" and same.name == "mtme"
    custom = scheme("Major:10 Minor:1 Neutral:0")
    prefix = "mqm-weights:custom-"
    assert custom.signature.startswith(prefix) and len(custom.signature) == len(prefix) + 12
    assert custom.signature == WeightingScheme.parse("Major:10 Minor:1 Neutral:0").signature
    assert custom.signature != WeightingScheme.parse("Major:10 Minor:1.5 Neutral:0").signature
    with pytest.raises(UsageError, match="unknown MQM weighting scheme 'google'"):
        named("google")


def test_a_scheme_is_frozen() -> None:
    with pytest.raises(AttributeError):
        MTME.rules = ()  # type: ignore[misc]
