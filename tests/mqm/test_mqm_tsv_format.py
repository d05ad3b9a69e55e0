"""The ``mqm-tsv`` format on the two real releases, and its refusals of bad input.

Expected figures come from the releases' PROVENANCE.md and REFERENCE_NUMBERS.md ("MQM with error
spans"): TED en-de 14 systems x 529 segments, one rater each, 8,435 rows of which 4,404 No-error;
WMT23 en-de 10 systems x 104 segments x 3 raters, 10,970 rows, 245 HOTW-test rows, 748 No-error.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow.compute as pc
import pytest

from assay.datasets import formats
from assay.datasets.parsed import ParsedDataset
from assay.errors import InputError
from assay.jobs.ingest import ingest_path
from tests.mqm.conftest import TED, WMT23
from tests.test_ingest import store_snapshot


@pytest.fixture(scope="module")
def ted(shared_data: Path) -> ParsedDataset:
    return formats.parse(shared_data / TED.parent)


@pytest.fixture(scope="module")
def wmt23(shared_data: Path) -> ParsedDataset:
    return formats.parse(shared_data / WMT23.parent)


def test_ted_is_detected_and_parsed_with_errors_and_ratings(ted: ParsedDataset) -> None:
    assert ted.format == "mqm-tsv"
    counts = ted.row_counts()
    # 8,435 rows - 4,404 No-error = 4,031 errors; 7,406 rated outputs, 529 of them the reference's
    assert counts["errors"] == 4031 and counts["ratings"] == 7406
    assert counts["segments"] == counts["outputs"] == 13 * 529 and counts["systems"] == 14
    segments = ted.tables["segments"]
    assert set(segments.column("aspect").to_pylist()) == {"mqm:mtme"}
    assert "ref" not in set(segments.column("system").to_pylist())  # the reference is not a candidate
    assert ted.metadata["reference_system"] == "ref"
    assert ted.metadata["mqm_weights"]["signature"] == "mqm-weights:mtme"


def test_ted_scores_equal_the_published_averages(ted: ParsedDataset) -> None:
    # mqm_ted_ende.avg_seg_scores.tsv: every rated row (the reference under its other name ref-A)
    averages = ted.metadata["published_averages"]
    assert averages["compared"] == 7406 and averages["checked"]
    assert averages["max_abs_difference"] <= 1e-9
    assert any("'ref-A': its 606 rows were matched to 'ref'" in w for w in ted.warnings)
    # REFERENCE_NUMBERS.md: TED en-de mean MQM -1.58 (all 7,406 rated outputs; here the candidates)
    assert pc.mean(ted.tables["segments"].column("human_raw")).as_py() == pytest.approx(-1.58, abs=0.05)


def test_ted_spans_point_at_the_marked_words(ted: ParsedDataset, shared_data: Path) -> None:
    errors = ted.tables["errors"].to_pylist()
    segments = {(r["system"], r["segment_id"]): r for r in ted.tables["segments"].to_pylist()}
    lines = (shared_data / TED).read_text(encoding="utf-8").split("\n")
    checked = 0
    for error in errors[:400]:
        row = segments.get((error["system"], error["segment_id"]))
        if row is None or error["start"] is None or error["side"] != "target":
            continue
        marked = lines[error["line"] - 1].split("\t")[6]
        inside = marked[marked.index("<v>") + 3:marked.index("</v>")] if "</v>" in marked else None
        assert row["candidate"][error["start"]:error["end"]] == inside
        checked += 1
    assert checked > 200
    # 14 TED errors are marked in the source (omissions), PROVENANCE.md
    assert sum(e["side"] == "source" for e in errors) == 14
    # line 6,444 ends with an unclosed <v>: read as a span to the end, with a warning
    assert any("never closed" in w for w in ted.warnings)


def test_wmt23_quirks_are_warnings_with_counts(wmt23: ParsedDataset) -> None:
    counts = wmt23.row_counts()
    assert counts["segments"] == 9 * 104 and counts["ratings"] == 10 * 104 * 3
    # 10,970 rows - 748 No-error - 245 HOTW-test = 9,977 errors
    assert counts["errors"] == 9977
    text = "\n".join(wmt23.warnings)
    assert "245 attention-check rows" in text
    assert "documentation link" in text
    assert "5 rows differed" in text and "trailing white space" in text
    assert wmt23.metadata["reference_system"] == "refA"
    ratings = wmt23.tables["segments"].column("rating_count").to_pylist()
    assert set(ratings) == {3}


def test_wmt23_system_mqm_matches_reference_numbers(wmt23: ParsedDataset) -> None:
    # REFERENCE_NUMBERS.md, "WMT23 en-de system MQM" (2 decimals)
    expected = {"ONLINE-W": -3.25, "GPT4-5shot_with_refA": -3.41, "GPT4-5shot_with_ONLINE-W": -3.60,
                "ONLINE-A": -4.47, "ONLINE-Y": -4.97, "ONLINE-M": -5.94, "ONLINE-G": -6.44, "Lan-BridgeMT": -8.45,
                "NLLB_MBR_BLEU": -11.03}
    systems = {r["system"]: r["human_raw"] for r in wmt23.tables["systems"].to_pylist()}
    assert {s: round(v, 2) for s, v in systems.items() if s in expected} == expected


def test_a_custom_scheme_is_part_of_the_identity(shared_data: Path) -> None:
    custom = formats.parse(shared_data / TED.parent, options={"mqm_weights": "Major:10 Minor:1"})
    aspect = set(custom.tables["segments"].column("aspect").to_pylist())
    assert len(aspect) == 1 and aspect.pop().startswith("mqm:custom-")
    assert set(custom.tables["ratings"].column("scheme").to_pylist()) == {custom.metadata["mqm_weights"]["signature"]}
    assert custom.metadata["published_averages"]["checked"] is False


# --- bad input: one error naming file and line, nothing stored --------------------------------------

HEADER = "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity\tcomment"
ROWS = [
    "sysA\td\t1\t1\trater1\tHello world.\tHallo <v>Welt</v>.\tAccuracy/Mistranslation\tMinor\t",
    "sysA\td\t1\t2\trater1\tGood day.\tGuten Tag.\tNo-error\tNo-error\t",
    "ref\td\t1\t1\trater2\tHello world.\tHallo Welt.\tNo-error\tNo-error\t",
    "ref\td\t1\t2\trater2\tGood day.\tGuten Tag.\tNo-error\tNo-error\t",
    "sysB\td\t1\t1\trater2\tHello world.\tHallo Erde.\tNo-error\tNo-error\t",
    "sysB\td\t1\t2\trater2\tGood day.\t<v>Gut</v> Tag.\tFluency/Grammar\tMajor\t",
]


def write_release(folder: Path, rows: list[str], *, header: str = HEADER, name: str = "mqm_toy_ende.tsv",
                  averages: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    if averages is not None:
        (folder / name.replace(".tsv", ".avg_seg_scores.tsv")).write_text(averages, encoding="utf-8")
    return folder


def test_a_small_valid_release_ingests(tmp_path: Path) -> None:
    result = ingest_path(write_release(tmp_path / "toy", ROWS))
    assert result.format == "mqm-tsv" and result.row_counts["errors"] == 2 and result.row_counts["segments"] == 4


def _replace(row: int, old: str, new: str) -> Callable[[list[str]], list[str]]:
    def change(rows: list[str]) -> list[str]:
        changed = list(rows)
        changed[row] = changed[row].replace(old, new, 1)
        return changed
    return change


def _append(row: str) -> Callable[[list[str]], list[str]]:
    return lambda rows: [*rows, row]


BAD_ROWS = {
    "unbalanced marker": (_replace(0, "</v>", "</v></v>"), 2, "unbalanced"),
    "nested marker": (_replace(0, "<v>Welt</v>", "<v>W<v>el</v>t</v>"), 2, "nested"),
    "unknown severity": (_replace(0, "\tMinor\t", "\tCritical\t"), 2, "unknown MQM severity 'Critical'"),
    "missing category": (_replace(5, "Fluency/Grammar", ""), 7, "without a category"),
    "text differs": (_append("sysA\td\t1\t1\trater3\tHello world.\tHallo Planet.\tNo-error\tNo-error\t"), 8,
                     "differs from line 2"),
    "wrong cell count": (_replace(1, "\tNo-error\t", "\t"), 3, "tab-separated cells"),
}


@pytest.mark.parametrize("case", sorted(BAD_ROWS))
def test_bad_rows_are_refused_with_file_and_line(tmp_path: Path, case: str) -> None:
    change, line, words = BAD_ROWS[case]
    folder = write_release(tmp_path / "bad", change(ROWS))
    before = store_snapshot()
    with pytest.raises(InputError) as excinfo:
        ingest_path(folder)
    message = str(excinfo.value)
    assert f"mqm_toy_ende.tsv:{line}:" in message and words in message, message
    assert store_snapshot() == before


def test_a_rater_count_the_file_name_claims_is_checked(tmp_path: Path) -> None:
    rows = [r.replace("rater2", "rater1") for r in ROWS]
    folder = write_release(tmp_path / "claims", [*rows, rows[0].replace("rater1", "rater2")],
                           name="mqm_toy_ende.2ratingsPerSegment.tsv")
    with pytest.raises(InputError, match=r"2ratingsPerSegment.tsv:3: .*rated by 1 rater.*expected 2 raters"):
        formats.parse(folder)


def test_an_unknown_column_is_ignored_with_a_warning(tmp_path: Path) -> None:
    # columns are read by name (issue 28): a column the releases do not have is not read, and named
    plain = formats.parse(write_release(tmp_path / "plain", ROWS))
    folder = write_release(tmp_path / "header", ROWS, header=HEADER.replace("comment", "notes"))
    parsed = formats.parse(folder, "mqm-tsv")
    assert parsed.tables == plain.tables
    assert "mqm_toy_ende.tsv: 1 column that an MQM release does not have (notes) was ignored." in parsed.warnings


def test_a_header_without_a_required_column_is_refused(tmp_path: Path) -> None:
    folder = write_release(tmp_path / "header", ROWS, header=HEADER.replace("category", "kind"))
    with pytest.raises(InputError, match=r"mqm_toy_ende.tsv:1: the header .* has no category column \(expected the "
                                         r"columns system, rater, seg_id or globalSegId"):
        formats.parse(folder, "mqm-tsv")


@pytest.mark.parametrize(("averages", "line", "words"), [
    ("system mqm_avg_score seg_id\nsysA\tNone 1\n", 2, "is None but the segment was rated"),
    ("system mqm_avg_score seg_id\nsysA\t-1.0 1\nsysA\tabc 2\n", 3, "'abc' is not a number"),
])
def test_averages_file_needs_numbers_for_rated_segments(tmp_path: Path, averages: str, line: int,
                                                        words: str) -> None:
    folder = write_release(tmp_path / "avg", ROWS, averages=averages)
    before = store_snapshot()
    with pytest.raises(InputError) as excinfo:
        ingest_path(folder)
    assert f"mqm_toy_ende.avg_seg_scores.tsv:{line}:" in str(excinfo.value) and words in str(excinfo.value)
    assert store_snapshot() == before


def test_none_for_an_unrated_segment_is_fine(tmp_path: Path) -> None:
    averages = "system mqm_avg_score seg_id\nsysA\t-1.000000 1\nsysA\t-0.000000 2\nsysA\tNone 3\n"
    parsed = formats.parse(write_release(tmp_path / "avg-ok", ROWS, averages=averages))
    assert parsed.metadata["published_averages"]["compared"] == 2


def test_the_real_release_with_a_defect_is_refused(tmp_path: Path, shared_data: Path) -> None:
    # a copy of the real TED release with a second opening marker in line 100's target
    folder = tmp_path / "ted"
    shutil.copytree(shared_data / TED.parent, folder)
    path = folder / TED.name
    lines = path.read_text(encoding="utf-8").split("\n")
    cells = lines[99].split("\t")
    cells[6] = "<v>" + cells[6] + "<v></v>"
    lines[99] = "\t".join(cells)
    path.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(InputError, match=r"mqm_ted_ende.tsv:100: "):
        formats.parse(folder)
