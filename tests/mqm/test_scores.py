"""Segment MQM on the real releases, against the published scores and REFERENCE_NUMBERS.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.errors import InputError
from assay.mqm import ErrorRow, SegmentScores, segment_scores

from .conftest import TED, TED_AVG, WMT23, error_rows

# The averages file names the reference system `ref-A`; the errors file names it `ref`.
REF_RENAMED = {"ref-A": "ref"}


def read_published(path: Path) -> dict[tuple[str, str], float | None]:
    """``system<TAB> score seg_id`` (a tab, then a space); ``None`` where a segment was not rated."""
    published: dict[tuple[str, str], float | None] = {}
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[0] == "system mqm_avg_score seg_id"
    for line in lines[1:]:
        if not line:
            continue
        system, rest = line.split("\t")
        value, seg_id = rest.lstrip(" ").split(" ")
        published[(REF_RENAMED.get(system, system), seg_id)] = None if value == "None" else float(value)
    return published


@pytest.fixture(scope="module")
def ted(ted_table: list[list[str]]) -> SegmentScores:
    return segment_scores(error_rows(ted_table, "seg_id"), path=TED)


@pytest.fixture(scope="module")
def wmt23(wmt23_table: list[list[str]]) -> SegmentScores:
    # globalSegId names a segment across the 30 documents.
    return segment_scores(error_rows(wmt23_table, "globalSegId"), path=WMT23)


def test_ted_equals_the_published_segment_scores(ted: SegmentScores, shared_data: Path) -> None:
    # Oracle: mqm_ted_ende.avg_seg_scores.tsv, released with the ratings by Google
    # (github.com/google/wmt-mqm-human-evaluation @ 7fadea2, ted/ende; PROVENANCE.md) and produced
    # by mt-metrics-eval converters/score_mqm.py with its default weights.
    published = read_published(shared_data / TED_AVG)
    ours = ted.scores()
    common = [key for key, value in published.items() if value is not None and key in ours]
    # 14 systems x 529 segments rated; REFERENCE_NUMBERS.md: 6,877 without the reference.
    assert len(ours) == 7_406 and len(common) == 7_406
    assert sum(1 for system, _ in common if system != "ref") == 6_877
    worst = max(abs(ours[key] - published[key]) for key in common)  # type: ignore[operator]
    assert worst <= 1e-9
    # Nothing we score is published as unrated, and nothing published as rated is missing.
    assert {k for k, v in published.items() if v is not None} == set(ours)


def test_ted_reference_numbers(ted: SegmentScores) -> None:
    # REFERENCE_NUMBERS.md (MQM section): "TED en-de mean MQM -1.58, 59 % of segments have no
    # error", over the candidates (the reference system `ref` left out), one rater each.
    candidates = {k: v for k, v in ted.scores().items() if k[0] != "ref"}
    assert len(candidates) == 6_877
    assert sum(candidates.values()) / len(candidates) == pytest.approx(-1.58, abs=0.005)
    assert sum(v == 0 for v in candidates.values()) / len(candidates) == pytest.approx(0.59, abs=0.005)
    assert {len(raters) for raters in ted.penalties.values()} == {1}
    assert ted.signature == "mqm-weights:mtme"


# REFERENCE_NUMBERS.md (MQM section), two decimals: mean segment MQM per system over its 104
# segments, each the mean of 3 raters; attention-check (HOTW-test) rows weigh 0.
WMT23_SYSTEMS = {
    "ONLINE-W": -3.25, "GPT4-5shot_with_refA": -3.41, "GPT4-5shot_with_ONLINE-W": -3.60,
    "ONLINE-A": -4.47, "ONLINE-Y": -4.97, "ONLINE-M": -5.94, "ONLINE-G": -6.44,
    "Lan-BridgeMT": -8.45, "NLLB_MBR_BLEU": -11.03,
}


def test_wmt23_system_mqm(wmt23: SegmentScores) -> None:
    assert len(wmt23.penalties) == 1_040
    assert {len(raters) for raters in wmt23.penalties.values()} == {3}
    systems = wmt23.system_scores()
    assert set(systems) == set(WMT23_SYSTEMS) | {"refA"}
    for system, expected in WMT23_SYSTEMS.items():
        assert systems[system] == pytest.approx(expected, abs=0.005), system
    ranked = sorted(WMT23_SYSTEMS, key=lambda s: -systems[s])
    assert ranked == list(WMT23_SYSTEMS)


def test_wmt23_attention_checks_do_not_change_scores(wmt23_table: list[list[str]],
                                                     wmt23: SegmentScores) -> None:
    rows = [r for r in error_rows(wmt23_table, "globalSegId") if r.severity != "HOTW-test"]
    assert len(rows) == 10_970 - 245
    assert segment_scores(rows).scores() == wmt23.scores()


def test_per_rater_penalties_and_tables() -> None:
    rows = [
        ErrorRow("sysA", "1", "r1", "Major", "Accuracy/Mistranslation"),
        ErrorRow("sysA", "1", "r1", "Minor", "Fluency/Punctuation"),
        ErrorRow("sysA", "1", "r2", "No-error", "No-error"),   # rated, no error: penalty 0
        ErrorRow("sysA", "2", "r2", "Minor", "Style/Awkward"),
    ]
    scores = segment_scores(rows)
    assert scores.penalties[("sysA", "1")] == {"r1": 5.1, "r2": 0.0}
    assert scores.mqm("sysA", "1") == pytest.approx(-2.55)
    assert scores.mqm("sysA", "2") == -1.0
    assert scores.system_scores() == {"sysA": pytest.approx((-2.55 - 1.0) / 2)}
    table = scores.to_table()
    assert table.column_names == ["system", "segment", "mqm", "raters"]
    assert table.column("raters").to_pylist() == [2, 1]
    assert scores.rater_table().column("penalty").to_pylist() == pytest.approx([5.1, 0.0, 1.0])


def test_a_custom_scheme_changes_scores(ted_table: list[list[str]], ted: SegmentScores) -> None:
    rows = error_rows(ted_table, "seg_id")
    flat = segment_scores(rows, "Major:5 Minor:1 Neutral:0")
    # Without the punctuation and non-translation rules, every Minor punctuation error costs 1, not 0.1.
    punct = {(r.system, r.segment) for r in rows
             if r.severity == "Minor" and r.category == "Fluency/Punctuation"}
    assert punct
    custom, default = flat.scores(), ted.scores()
    changed = {k for k, v in custom.items() if v != default[k]}
    assert changed and changed <= punct
    assert all(custom[k] < default[k] for k in changed)
    assert flat.signature != ted.signature and flat.signature.startswith("mqm-weights:custom-")


def test_an_unknown_severity_names_the_file_and_line(ted_table: list[list[str]]) -> None:
    rows = error_rows(ted_table[:5], "seg_id")
    rows[2] = ErrorRow("sysA", "3", "r1", "Critical", "Accuracy/Mistranslation", line=4)
    with pytest.raises(InputError) as excinfo:
        segment_scores(rows, path=TED)
    assert "mqm_ted_ende.tsv:4: unknown MQM severity 'Critical'" in str(excinfo.value)
