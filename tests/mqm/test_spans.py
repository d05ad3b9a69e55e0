"""Inline ``<v>...</v>`` error spans: offsets into the clean text, on real rows and defects."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.errors import InputError
from assay.mqm import parse_span

from .conftest import TED, WMT23, read_tsv


def test_a_real_ted_row(ted_table: list[list[str]]) -> None:
    # mqm_ted_ende.tsv line 2 (Facebook-AI, talk.1, seg 1, rater1): a Minor terminology error.
    target = ted_table[1][6]
    marked = parse_span(target, path=TED, line=2, column="target")
    assert marked.text == ("Ich möchte Sie alle bitten, für eine Sekunde die sehr einfache Tatsache "
                           "in Betracht zu ziehen, dass bei weitem das meiste, was wir über das "
                           "Universum wissen, aus dem Licht kommt.")
    assert (marked.start, marked.end) == (72, 93)
    assert marked.span_text == "in Betracht zu ziehen"
    assert "<v>" not in marked.text and "</v>" not in marked.text


def test_a_row_without_a_span() -> None:
    marked = parse_span("Kein Fehler hier.")
    assert marked == parse_span("Kein Fehler hier.")
    assert (marked.text, marked.start, marked.end, marked.has_span) == ("Kein Fehler hier.", None, None, False)
    assert marked.span_text is None


@pytest.mark.parametrize(("marked", "start", "end"), [
    ("<v>Alles</v> falsch", 0, 5),
    ("ganz am Ende<v>.</v>", 12, 13),
    ("ein leerer <v></v>Span", 11, 11),
])
def test_spans_at_the_edges(marked: str, start: int, end: int) -> None:
    parsed = parse_span(marked)
    assert (parsed.start, parsed.end) == (start, end)
    assert parsed.text == marked.replace("<v>", "").replace("</v>", "")


def test_every_real_row_has_at_most_one_span(ted_table: list[list[str]],
                                            wmt23_table: list[list[str]]) -> None:
    """Both releases parse whole: each clean text is the marked one without its markers."""
    spans = 0
    for table in (ted_table, wmt23_table):
        for line, row in enumerate(table[1:], start=2):
            for text in (row[5], row[6]):
                if table is ted_table and line == UNCLOSED_TED_LINE:
                    continue
                parsed = parse_span(text)
                spans += parsed.has_span
                if parsed.has_span:
                    assert text == (parsed.text[:parsed.start] + "<v>" + parsed.span_text  # type: ignore[operator]
                                    + "</v>" + parsed.text[parsed.end:])
    assert spans > 10_000


# The one defective row of both releases: its target ends in "sozialer Mobilität. <v>?" (never closed).
UNCLOSED_TED_LINE = 6444


def test_the_one_unclosed_real_span_is_refused_unless_asked(ted_table: list[list[str]]) -> None:
    target = ted_table[UNCLOSED_TED_LINE - 1][6]
    with pytest.raises(InputError) as excinfo:
        parse_span(target, path=TED, line=UNCLOSED_TED_LINE, column="target")
    assert f"mqm_ted_ende.tsv:{UNCLOSED_TED_LINE}: column 'target': unbalanced" in str(excinfo.value)
    lenient = parse_span(target, close_at_end=True)
    assert lenient.span_text == "?" and lenient.end == len(lenient.text)
    assert lenient.text == target.replace("<v>", "")


@pytest.mark.parametrize(("marked", "problem"), [
    ("ein <v>offener Span", "unbalanced"),
    ("ein geschlossener</v> Span", "unbalanced"),
    ("verkehrt </v>herum<v>", "comes before"),
    ("<v>außen <v>innen</v></v>", "nested"),
    ("<v>eins</v> und <v>zwei</v>", "2 error spans"),
])
def test_defective_markers_name_file_line_and_expectation(marked: str, problem: str) -> None:
    path = Path("mqm") / "ratings.tsv"
    with pytest.raises(InputError) as excinfo:
        parse_span(marked, path=path, line=17, column="target")
    err = excinfo.value
    assert err.path.endswith("ratings.tsv") and err.line == 17
    assert "ratings.tsv:17:" in str(err) and "'target'" in str(err)
    assert problem in err.problem
    assert err.expected is not None and "<v>...</v>" in err.expected


def test_defects_without_a_file_still_say_what_was_expected() -> None:
    with pytest.raises(InputError, match=r"unbalanced.*expected at most one error span"):
        parse_span("<v>offen")


def test_wmt23_file_constant_names_a_real_file(shared_data: Path) -> None:
    assert (shared_data / WMT23).is_file() and read_tsv(shared_data / TED)[0][6] == "target"
