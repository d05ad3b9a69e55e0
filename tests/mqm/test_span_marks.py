"""Error spans as marks: properly nested on every output of the real WMT23 en-de release, crossing
spans split, severities told apart, source-side errors on the source."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from assay.cli.error_commands import error_summary, legend, marked, tag
from assay.mqm import RatedOutputs
from assay.mqm.span_marks import MarkEvent, SpanMark, bracketed, mark_events, severity_rank, span_marks

from .conftest import WMT23, read_tsv
from .wmt23_rated import wmt23_rated_outputs


@pytest.fixture(scope="module")
def wmt23(shared_data: Path) -> RatedOutputs:
    return wmt23_rated_outputs(read_tsv(shared_data / WMT23))


def _output(outputs: RatedOutputs, item: str, system: str) -> int:
    return next(o for o in range(outputs.size) if outputs.item[o] == item and outputs.system[o] == system)


def _tokens(text: str, marks: tuple[SpanMark, ...]) -> list[tuple[str, int, int | str]]:
    """The text as a stream of ('open', mark index, ...), ('close', mark index, ...), ('char', offset, c)."""
    index = {id(m): k for k, m in enumerate(marks)}
    stream: list[tuple[str, int, int | str]] = []
    at = 0
    for event in mark_events(marks):
        stream += [("char", i, text[i]) for i in range(at, event.offset)]
        at = event.offset
        stream.append((event.kind, index[id(event.mark)], event.offset))
    stream += [("char", i, text[i]) for i in range(at, len(text))]
    return stream


def test_every_output_of_the_release_is_marked_properly_nested(wmt23: RatedOutputs) -> None:
    """Invariant on all 936 outputs, both sides: the brackets balance as a stack (every closing
    mark closes the innermost open one), each mark covers exactly its own characters, and removing
    the marks gives the text back."""
    checked = 0
    for o in range(wmt23.size):
        for side, text in (("target", wmt23.candidate[o]), ("source", wmt23.source[o])):
            marks = span_marks(wmt23.errors[o], side, len(text))
            if not marks:
                continue
            checked += len(marks)
            stack: list[int] = []
            covered: dict[int, set[int]] = {k: set() for k in range(len(marks))}
            chars = []
            for kind, k, value in _tokens(text, marks):
                if kind == "open":
                    stack.append(k)
                elif kind == "close":
                    assert stack and stack[-1] == k, (wmt23.item[o], wmt23.system[o], side)
                    stack.pop()
                else:
                    chars.append(value)
                    for m in stack:
                        covered[m].add(k)
            assert not stack and "".join(map(str, chars)) == text
            for k, mark in enumerate(marks):
                assert covered[k] == set(range(mark.start, mark.end)), (wmt23.item[o], wmt23.system[o], mark)
    assert checked > 5000  # 9,977 errors, most with a span; equal spans of one severity are one mark


def test_item_13_overlapping_spans_nest_at_their_own_offsets(wmt23: RatedOutputs) -> None:
    """The issue's example: ONLINE-G on item 13, where rater2 marked 'Angriff eines 14-jährigen
    Mädchens' Minor and rater1 'eines' Major inside it. Before, the outer mark closed mid-word
    ('[[Angriff [[eines]]M 14-jährigen Mäd]]Mchens')."""
    o = _output(wmt23, "13", "ONLINE-G")
    text = click.unstyle(marked(wmt23.candidate[o], [e.as_dict() for e in wmt23.errors[o]], "target"))
    assert "[[Angriff [[eines]]MAJ 14-jährigen Mädchens]]MIN angeklagt" in text
    assert text.startswith("[[Vier Teenager]]MIN aus New Jersey")
    # the same words marked Major by all three raters: one mark, x3
    assert "[[Ein Jugendlicher]]MAJ×3 wird" in text
    assert text.replace("[[", "").replace("]]MAJ×3", "").replace("]]MAJ", "").replace("]]MIN", "") \
        == wmt23.candidate[o]


def test_an_omission_is_marked_on_the_source(wmt23: RatedOutputs) -> None:
    """NLLB_MBR_BLEU leaves out the second sentence of item 13; all three raters marked it, on the
    source (rater2 without the final full stop)."""
    o = _output(wmt23, "13", "NLLB_MBR_BLEU")
    errors = [e.as_dict() for e in wmt23.errors[o]]
    source = click.unstyle(marked(wmt23.source[o], errors, "source"))
    assert "social media. [[[[One juvenile is charged" in source
    assert source.endswith("told CBS News in an email]]MAJ.]]MAJ×2")
    summary = click.unstyle(error_summary(errors))
    assert "MAJ Accuracy/Omission (Translation 2) ×2 (on the source)" in summary
    assert "MAJ Accuracy/Omission (Translation) (on the source)" in summary


def test_crossing_spans_are_split_where_they_cross() -> None:
    text = "aaaa bbbb cccc"
    errors = [("Fluency/Grammar", "Minor", "r1", "target", 0, 9), ("Accuracy/Mistranslation", "Major", "r2",
                                                                  "target", 5, 14)]
    marks = span_marks(errors, "target", len(text))
    events = mark_events(marks)
    # the Major span is closed where the Minor one ends and reopened just after
    assert [(e.offset, e.kind, e.mark.severity, e.split) for e in events] == [
        (0, "open", "Minor", False), (5, "open", "Major", False), (9, "close", "Major", True),
        (9, "close", "Minor", False), (9, "open", "Major", True), (14, "close", "Major", False)]

    def opening(event: MarkEvent) -> str:
        return "<"

    def closing(event: MarkEvent) -> str:
        return f">{tag(event.mark.severity)}"

    assert bracketed(text, marks, opening, closing) == "<aaaa <bbbb>MAJ>MIN< cccc>MAJ"


def test_same_span_two_severities_and_points() -> None:
    text = "abc"
    errors = [("X", "Minor", "r1", "target", 0, 3), ("X", "Major", "r2", "target", 0, 3),
              ("X", "Minor", "r3", "target", 3, 3), ("X", "Major", "r3", "target", None, None),
              ("X", "minor", "r4", "target", 0, 99)]  # clamped to the text; ESA writes lowercase
    shown = click.unstyle(marked(text, [dict(zip(("category", "severity", "rater", "side", "start", "end"), e,
                                                 strict=True)) for e in errors], "target"))
    # the more severe outer; the lowercase ESA 'minor' is the same mark as 'Minor'; a point mark at the end
    assert shown == "[[[[abc]]MIN×2]]MAJ[[]]MIN"


def test_severities_are_told_apart_and_ranked() -> None:
    assert len({tag(s) for s in ("Critical", "Major", "Minor", "Neutral")}) == 4
    assert tag("major") == tag("Major") == "MAJ" and tag("Non-translation!") == "Non-translation!"
    assert [severity_rank(s) for s in ("Critical", "major", "Minor", "Neutral", "HOTW-test")] == [0, 1, 2, 3, 4]
    line = click.unstyle(legend(["Major", "Minor"]))
    assert "MAJ Major, MIN Minor" in line and "×N" in line
