"""The ``wmt-da`` parser: real WMT17/WMT18 packages, resolution rules, and one test per defect."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

from assay.datasets import formats
from assay.datasets.parsed import ParsedDataset

Check = Callable[..., AbstractContextManager[None]]  # the raises_input_error fixture
Make = Callable[..., Path]  # a factory fixture that builds a small copy


def rows(parsed: ParsedDataset, table: str, **where: Any) -> list[dict[str, Any]]:
    """The rows of a table whose columns equal the given values (filtered in Arrow: outputs are big)."""
    data = parsed.tables[table]
    for column, value in where.items():
        data = data.filter(pc.equal(data[column], value))
    return data.to_pylist()


def text_lines(path: Path) -> list[str]:
    """A text file's lines as the WMT files are meant to be read (utf-8-sig, split on \\n)."""
    return path.read_text(encoding="utf-8-sig").split("\n")


def edit_lines(path: Path, edit: Callable[[list[str]], object]) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    edit(lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def parse(path: Path) -> ParsedDataset:
    return formats.parse(path, "wmt-da")


# -- the real WMT17 package ------------------------------------------------------------------


def test_wmt17_shapes(parsed_wmt17: ParsedDataset, shared_data: Path) -> None:
    segments = parsed_wmt17.tables["segments"]
    groups = Counter(segments.column("group").to_pylist())
    assert groups == {lp: 560 for lp in ("cs-en", "de-en", "fi-en", "lv-en", "ru-en", "tr-en", "zh-en")}
    assert segments.num_rows == 3920
    assert set(segments.column("aspect").to_pylist()) == {"da"}
    assert segments.column("human_z").null_count == 0
    systems = parsed_wmt17.tables["systems"]
    assert systems.num_rows == 152
    assert len(set(systems.column("group").to_pylist())) == 14
    assert parsed_wmt17.metadata["year"] == 2017
    assert parsed_wmt17.metadata["test_set"] == "newstest2017"
    # outputs: every line of every raw output file, counted here straight from the files
    out_dir = shared_data / "wmt17-da/system-outputs/newstest2017"
    expected = sum(p.read_bytes().count(b"\n") for p in out_dir.glob("*/*"))
    outputs = parsed_wmt17.tables["outputs"]
    assert outputs.num_rows == expected == 170_180
    assert Counter(r["group"] for r in rows(parsed_wmt17, "outputs", segment_id="1")) == {
        "cs-en": 4, "de-en": 11, "fi-en": 6, "lv-en": 9, "ru-en": 9, "tr-en": 10, "zh-en": 16,
    }
    assert parsed_wmt17.tables["rankings"].num_rows == 0
    # every file that was read is recorded with its digest
    names = {f.path for f in parsed_wmt17.source_files}
    assert {"DA-seglevel.csv", "DA-syslevel.csv", "references/newstest2017-deen-ref.en"} <= names
    assert all(len(f.sha256) == 64 and f.size > 0 for f in parsed_wmt17.source_files)


def test_wmt17_de_en_row_is_joined_with_the_raw_files(parsed_wmt17: ParsedDataset, shared_data: Path) -> None:
    root = shared_data / "wmt17-da"
    _header, *data = (root / "DA-seglevel.csv").read_text().splitlines()
    lp, _, system, sid, human = next(r.split(" ") for r in data if r.startswith("de-en ") and "+" not in r)
    (row,) = rows(parsed_wmt17, "segments", group=lp, system=system, segment_id=sid)
    i = int(sid) - 1
    assert row["candidate"] == text_lines(root / f"system-outputs/newstest2017/de-en/newstest2017.{system}.de-en")[i]
    assert row["source"] == text_lines(root / "sources/newstest2017-deen-src.de")[i]
    assert row["references"] == [text_lines(root / "references/newstest2017-deen-ref.en")[i]]
    assert row["human_z"] == pytest.approx(float(human))
    assert row["item_id"] == sid and row["is_human"] is False


def test_wmt17_byte_order_marks_are_removed(parsed_wmt17: ParsedDataset, shared_data: Path) -> None:
    (row,) = rows(parsed_wmt17, "outputs", group="de-en", system="online-A.0", segment_id="1")
    raw = (shared_data / "wmt17-da/system-outputs/newstest2017/de-en/newstest2017.online-A.0.de-en").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    assert row["candidate"] == raw[3:].decode().split("\n")[0]
    (warning,) = [w for w in parsed_wmt17.warnings if "byte-order mark" in w]
    assert warning.startswith("4 files")


def test_wmt17_zh_en_names_are_resolved_with_warnings(parsed_wmt17: ParsedDataset, shared_data: Path) -> None:
    root = shared_data / "wmt17-da"
    rocmt = text_lines(root / "metrics-package-preprocessed/system-outputs/zh-en/newstest2017.ROCMT.5167.zh-en")
    casict = text_lines(root / "system-outputs/newstest2017/zh-en/newstest2017.CASICT-DCU-NMT.5144.zh-en")
    lowercased = rows(parsed_wmt17, "segments", group="zh-en", system="ROCMT.5167")
    assert len(lowercased) == 25
    assert all(r["candidate"] == rocmt[int(r["segment_id"]) - 1] for r in lowercased)
    by_id = [r for r in rows(parsed_wmt17, "segments", group="zh-en") if r["system"].startswith("CASICT-cons.5144")]
    assert Counter(r["system"] for r in by_id) == {"CASICT-cons.5144": 26, "CASICT-cons.5144+ROCMT.5167": 8}
    assert all(r["candidate"] == casict[int(r["segment_id"]) - 1] for r in by_id)

    warnings = parsed_wmt17.warnings
    assert any("25 rows of zh-en" in w and "lowercased" in w and "ROCMT.5167" in w for w in warnings)
    assert any("34 rows of zh-en" in w and "CASICT-DCU-NMT.5144" in w and "submission id" in w for w in warnings)
    assert any(w.startswith("1,120 rows of en-ru, en-zh") and "skipped" in w for w in warnings)


def test_wmt17_system_level_output_names(parsed_wmt17: ParsedDataset) -> None:
    def output_system(lp: str, system: str) -> str | None:
        (row,) = rows(parsed_wmt17, "systems", group=lp, system=system)
        return row["output_system"]

    assert output_system("zh-en", "CASICT-cons.5144") == "CASICT-DCU-NMT.5144"
    assert output_system("zh-en", "ROCMT.5167") is None  # only a lowercased copy exists
    assert output_system("de-en", "KIT.4951") == "KIT.4951"
    assert output_system("en-lv", "tilde-nc-nmt-smt-hybrid.5047") is None
    # every output_system names a system of the outputs table
    available = {(r["group"], r["system"]) for r in rows(parsed_wmt17, "outputs", segment_id="1")}
    for row in parsed_wmt17.tables["systems"].to_pylist():
        if row["output_system"] is not None:
            assert (row["group"], row["output_system"]) in available
    assert sum(1 for r in parsed_wmt17.tables["systems"].to_pylist() if r["output_system"]) == 152 - 88


# -- the real WMT18 package (flat system-outputs/<lp>/ and source/ layout) ------------------


def test_wmt18_shapes(parsed_wmt18: ParsedDataset, shared_data: Path) -> None:
    assert parsed_wmt18.tables["systems"].num_rows == 149
    assert parsed_wmt18.tables["segments"].num_rows == 0
    assert Counter(r["group"] for r in rows(parsed_wmt18, "outputs", segment_id="1")) == {
        "cs-en": 5, "de-en": 16, "et-en": 14, "fi-en": 9, "ru-en": 8, "tr-en": 5, "zh-en": 14,
    }
    assert parsed_wmt18.tables["outputs"].num_rows == 212_617
    (row,) = rows(parsed_wmt18, "outputs", group="de-en", system="RWTH.5636", segment_id="1")
    assert row["candidate"] == "Munich 1856: four maps that change your view of the city"
    assert row["references"] == ["Munich 1856: Four maps that will change your view of the city"]
    assert row["source"] == text_lines(shared_data / "wmt18-da/source/newstest2018-deen-src.de")[0]
    assert parsed_wmt18.metadata["year"] == 2018
    assert any("no DA-seglevel.csv" in w for w in parsed_wmt18.warnings)
    assert any(w.startswith("1 file started with a UTF-8 byte-order mark") for w in parsed_wmt18.warnings)
    # all to-English systems have their outputs under their own name
    to_english = [r for r in parsed_wmt18.tables["systems"].to_pylist() if r["group"].endswith("-en")]
    assert len(to_english) == 71 and all(r["output_system"] == r["system"] for r in to_english)


# -- layouts and resolution rules, on small copies --------------------------------------------


def test_a_new_year_needs_no_code_change(wmt_package: Make, tmp_path: Path) -> None:
    root = wmt_package()
    renamed = tmp_path / "wmt31"
    shutil.copytree(root, renamed)
    for path in sorted(renamed.rglob("*"), key=lambda p: -len(p.parts)):
        if "2017" in path.name:
            path.rename(path.with_name(path.name.replace("2017", "2031")))
    seg = renamed / "DA-seglevel.csv"
    seg.write_text(seg.read_text().replace("newstest2017", "newstest2031"))
    parsed = parse(renamed)
    assert parsed.metadata == parse(root).metadata | {"test_set": "newstest2031", "year": 2031}
    assert parsed.tables["segments"].num_rows == parse(root).tables["segments"].num_rows == 55


def test_flat_layout_with_source_folder(wmt_package: Make) -> None:
    root = wmt_package()
    before = parse(root)
    (root / "sources").rename(root / "source")
    (root / "system-outputs/newstest2017/cs-en").rename(root / "system-outputs/cs-en")
    (root / "system-outputs/newstest2017").rmdir()
    after = parse(root)
    assert after.tables["segments"].equals(before.tables["segments"])
    assert after.tables["outputs"].equals(before.tables["outputs"])
    assert after.tables["outputs"].num_rows == 4 * 300


def test_joined_names_use_any_alternative(wmt_package: Make) -> None:
    root = wmt_package()
    seg = root / "DA-seglevel.csv"
    seg.write_text(seg.read_text() + "cs-en newstest2017 no-such-system.9999+uedin-nmt.4955 5 0.25\n")
    parsed = parse(root)
    (row,) = rows(parsed, "segments", system="no-such-system.9999+uedin-nmt.4955")
    uedin = text_lines(root / "system-outputs/newstest2017/cs-en/newstest2017.uedin-nmt.4955.cs-en")
    assert row["candidate"] == uedin[4]
    assert not [w for w in parsed.warnings if "submission id" in w or "lowercased" in w]


def test_same_submission_id_resolves_with_a_warning(wmt_package: Make) -> None:
    root = wmt_package()
    out = root / "system-outputs/newstest2017/cs-en"
    (out / "newstest2017.uedin-nmt.4955.cs-en").rename(out / "newstest2017.uedin-renamed.4955.cs-en")
    parsed = parse(root)
    judged = rows(parsed, "segments", system="uedin-nmt.4955")
    renamed = text_lines(out / "newstest2017.uedin-renamed.4955.cs-en")
    assert judged and all(r["candidate"] == renamed[int(r["segment_id"]) - 1] for r in judged)
    assert any(f"{len(judged)} rows of cs-en" in w and "uedin-renamed.4955" in w for w in parsed.warnings)
    (system,) = rows(parsed, "systems", system="uedin-nmt.4955")
    assert system["output_system"] == "uedin-renamed.4955"


def test_online_systems_are_not_matched_by_id_zero(
    wmt_package: Make, raises_input_error: Check
) -> None:
    root = wmt_package()
    out = root / "system-outputs/newstest2017/cs-en"
    (out / "newstest2017.online-A.0.cs-en").unlink()
    first = next(i for i, r in enumerate((root / "DA-seglevel.csv").read_text().splitlines(), 1) if " online-A.0 " in r)
    with raises_input_error("DA-seglevel.csv", line=first, expected="newstest2017.online-A.0.cs-en"):
        parse(root)


def test_lowercased_copy_is_the_last_resort(wmt_package: Make) -> None:
    root = wmt_package()
    lowercased = root / "metrics-package-preprocessed/system-outputs/cs-en"
    lowercased.mkdir(parents=True)
    (root / "system-outputs/newstest2017/cs-en/newstest2017.PJATK.4760.cs-en").rename(
        lowercased / "newstest2017.PJATK.4760.cs-en"
    )
    parsed = parse(root)
    n = len(rows(parsed, "segments", system="PJATK.4760"))
    assert any(w.startswith(f"{n} rows of cs-en") and "lowercased" in w for w in parsed.warnings)
    (system,) = rows(parsed, "systems", system="PJATK.4760")
    assert system["output_system"] is None  # the outputs table holds raw cased files only
    assert "PJATK.4760" not in {r["system"] for r in rows(parsed, "outputs", segment_id="1")}


def test_pairs_without_texts_are_skipped_with_one_warning(wmt_package: Make) -> None:
    parsed = parse(wmt_package(foreign=True))
    assert set(parsed.tables["segments"].column("group").to_pylist()) == {"cs-en"}
    assert [w for w in parsed.warnings if "skipped" in w] == [
        "560 rows of en-ru in DA-seglevel.csv were skipped: their texts are not in the package."
    ]


# -- RR-seglevel.csv (no real copy exists: a small WMT18-shaped fixture) ---------------------


RR_SYSTEMS = ("RWTH.5636", "UCAM.5690", "online-B.0")


@pytest.fixture
def wmt18_small(tmp_path: Path, shared_data: Path) -> Path:
    """de-en of WMT18 (first 20 lines, 3 systems), flat layout, with an RR-seglevel.csv."""
    real, root = shared_data / "wmt18-da", tmp_path / "wmt18-small"
    systems = RR_SYSTEMS
    files = [Path("source/newstest2018-deen-src.de"), Path("references/newstest2018-deen-ref.en")]
    files += [Path(f"system-outputs/de-en/newstest2018.{s}.de-en") for s in systems]
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("\n".join(text_lines(real / rel)[:20]) + "\n", encoding="utf-8")
    sys_rows = [r for r in (real / "DA-syslevel.csv").read_text().splitlines()
                if r.startswith("de-en ") and r.split(" ")[-1] in systems]
    (root / "DA-syslevel.csv").write_text("LP HUMAN SYSTEM\n" + "\n".join(sys_rows) + "\n")
    return root


RR_ROWS = [
    "de-en newstest2018 3 RWTH.5636 online-B.0",
    "de-en newstest2018 3 UCAM.5690 online-B.0",
    "de-en newstest2018 17 online-B.0 UCAM.5690",
]


def test_rr_seglevel_pairs(wmt18_small: Path) -> None:
    (wmt18_small / "RR-seglevel.csv").write_text("LP DATA SID BETTER WORSE\n" + "\n".join(RR_ROWS) + "\n")
    parsed = parse(wmt18_small)
    assert parsed.tables["rankings"].to_pylist() == [
        {"group": "de-en", "segment_id": "3", "better_system": "RWTH.5636", "worse_system": "online-B.0"},
        {"group": "de-en", "segment_id": "3", "better_system": "UCAM.5690", "worse_system": "online-B.0"},
        {"group": "de-en", "segment_id": "17", "better_system": "online-B.0", "worse_system": "UCAM.5690"},
    ]
    assert parsed.tables["outputs"].num_rows == 3 * 20
    assert {r["output_system"] for r in parsed.tables["systems"].to_pylist()} == set(RR_SYSTEMS)
    assert not [w for w in parsed.warnings if "header" in w]


def test_rr_seglevel_header_missing_a_name_is_accepted(wmt18_small: Path) -> None:
    # the WMT18 file's header lacks the LP name: rows have one field more than the header names
    (wmt18_small / "RR-seglevel.csv").write_text("DATA SID BETTER WORSE\n" + "\n".join(RR_ROWS) + "\n")
    parsed = parse(wmt18_small)
    assert parsed.tables["rankings"].num_rows == 3
    assert set(parsed.tables["rankings"].column("group").to_pylist()) == {"de-en"}
    assert any("RR-seglevel.csv" in w and "LP" in w and "missing" in w for w in parsed.warnings)


def test_rr_seglevel_truncated_row(wmt18_small: Path, raises_input_error: Check) -> None:
    (wmt18_small / "RR-seglevel.csv").write_text(
        "LP DATA SID BETTER WORSE\n" + RR_ROWS[0] + "\nde-en newstest2018 3 RWTH.5636\n"
    )
    with raises_input_error("RR-seglevel.csv", line=3, expected="5 fields"):
        parse(wmt18_small)


def test_rr_seglevel_of_another_test_set(wmt18_small: Path, raises_input_error: Check) -> None:
    (wmt18_small / "RR-seglevel.csv").write_text(
        "LP DATA SID BETTER WORSE\n" + RR_ROWS[0] + "\nde-en newstest2017 3 RWTH.5636 UCAM.5690\n"
    )
    with raises_input_error("RR-seglevel.csv", line=3, expected="'newstest2018'"):
        parse(wmt18_small)


def test_rr_seglevel_sid_beyond_the_texts(wmt18_small: Path, raises_input_error: Check) -> None:
    (wmt18_small / "RR-seglevel.csv").write_text(
        "LP DATA SID BETTER WORSE\n" + RR_ROWS[0] + "\nde-en newstest2018 21 RWTH.5636 UCAM.5690\n"
    )
    with raises_input_error("RR-seglevel.csv", line=3, problem="SID 21"):
        parse(wmt18_small)


# -- bad input: one test per defect ----------------------------------------------------------
# Line numbers: DA-seglevel.csv of the small package is header + cs-en rows (lines 2..56).

SEG = "DA-seglevel.csv"


def _set_field(root: Path, line: int, column: int, value: str, name: str = SEG) -> None:
    def edit(lines: list[str]) -> None:
        fields = lines[line - 1].split(" ")
        fields[column] = value
        lines[line - 1] = " ".join(fields)

    edit_lines(root / name, edit)


def test_sid_out_of_range(wmt_package: Make, raises_input_error: Check) -> None:
    root = wmt_package()
    _set_field(root, 4, 3, "301")
    with raises_input_error(SEG, line=4, expected="a line number from 1 to 300", problem="SID 301"):
        parse(root)


@pytest.mark.parametrize("sid", ["x7", "0", "2.5", ""])
def test_sid_not_an_integer(
    sid: str, wmt_package: Make, raises_input_error: Check
) -> None:
    root = wmt_package()
    if sid == "":  # an empty field: the row then has a field too few
        _set_field(root, 6, 3, "")
        with raises_input_error(SEG, line=6, expected="5 fields"):
            parse(root)
        return
    _set_field(root, 6, 3, sid)
    with raises_input_error(SEG, line=6, expected="an integer >= 1", problem=repr(sid)):
        parse(root)


def test_output_file_of_unequal_length(wmt_package: Make, raises_input_error: Check) -> None:
    root = wmt_package()
    output = root / "system-outputs/newstest2017/cs-en/newstest2017.online-B.0.cs-en"
    edit_lines(output, lambda lines: lines.pop())
    with raises_input_error(output.name, expected="300 lines", problem="299 lines"):
        parse(root)


def test_reference_of_unequal_length(wmt_package: Make, raises_input_error: Check) -> None:
    root = wmt_package()
    reference = root / "references/newstest2017-csen-ref.en"
    edit_lines(reference, lambda lines: lines.append("an extra line"))
    with raises_input_error(reference.name, expected="300 lines", problem="301 lines"):
        parse(root)


def test_source_of_unequal_length(wmt_package: Make, raises_input_error: Check) -> None:
    root = wmt_package()
    source = root / "sources/newstest2017-csen-src.cs"
    edit_lines(source, lambda lines: lines.pop())
    with raises_input_error(source.name, expected="300 lines, one per segment, like the other text files of cs-en",
                            problem="299 lines but references/newstest2017-csen-ref.en has 300"):
        parse(root)


def test_missing_system_output(wmt_package: Make, raises_input_error: Check) -> None:
    root = wmt_package()
    (root / "system-outputs/newstest2017/cs-en/newstest2017.PJATK.4760.cs-en").unlink()
    first = next(i for i, r in enumerate((root / SEG).read_text().splitlines(), 1) if " PJATK.4760" in r)
    with raises_input_error(
        SEG, line=first, expected="system-outputs/newstest2017/cs-en/newstest2017.PJATK.4760.cs-en",
        problem="no system-output file",
    ):
        parse(root)


@pytest.mark.parametrize(
    ("kind", "rel"),
    [("reference", "references/newstest2017-csen-ref.en"), ("source", "sources/newstest2017-csen-src.cs")],
)
def test_missing_source_or_reference(
    kind: str, rel: str, wmt_package: Make, raises_input_error: Check
) -> None:
    root = wmt_package()
    (root / rel).unlink()
    with raises_input_error(SEG, line=2, expected=rel, problem=f"no {kind} file for cs-en"):
        parse(root)


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-Infinity"])
def test_human_score_nan(value: str, wmt_package: Make, raises_input_error: Check) -> None:
    root = wmt_package()
    _set_field(root, 9, 4, value)
    with raises_input_error(SEG, line=9, expected="a finite number"):
        parse(root)


def test_human_score_not_a_number(wmt_package: Make, raises_input_error: Check) -> None:
    root = wmt_package()
    _set_field(root, 9, 4, "zero-point-six")
    with raises_input_error(SEG, line=9, expected="a finite number", problem="'zero-point-six' is not a number"):
        parse(root)


def test_system_score_not_a_number(wmt_package: Make, raises_input_error: Check) -> None:
    root = wmt_package()
    _set_field(root, 3, 1, "NaN", name="DA-syslevel.csv")
    with raises_input_error("DA-syslevel.csv", line=3, expected="a finite number"):
        parse(root)


def test_duplicate_key(wmt_package: Make, raises_input_error: Check) -> None:
    root = wmt_package()
    edit_lines(root / SEG, lambda lines: lines.append(lines[4].rsplit(" ", 1)[0] + " 0.5"))
    with raises_input_error(SEG, line=57, expected="one row per (LP, SYSTEM, SID)", problem="on line 5"):
        parse(root)


def test_duplicate_system(wmt_package: Make, raises_input_error: Check) -> None:
    root = wmt_package()
    edit_lines(root / "DA-syslevel.csv", lambda lines: lines.append(lines[1]))
    with raises_input_error("DA-syslevel.csv", line=6, expected="one row per (LP, SYSTEM)"):
        parse(root)


@pytest.mark.parametrize("delimiter", ["\t", ","])
def test_wrong_delimiter(
    delimiter: str, wmt_package: Make, raises_input_error: Check
) -> None:
    root = wmt_package()
    seg = root / SEG
    seg.write_text(seg.read_text().replace(" ", delimiter))
    with raises_input_error(SEG, line=1, expected="separated by spaces: LP DATA SYSTEM SID HUMAN",
                            problem="single column"):
        parse(root)


def test_missing_column(wmt_package: Make, raises_input_error: Check) -> None:
    root = wmt_package()
    edit_lines(root / SEG, lambda lines: lines.__setitem__(0, "LP DATA SYSTEM SEGMENT HUMAN"))
    with raises_input_error(SEG, line=1, expected="SID", problem="missing column(s) SID"):
        parse(root)


def test_truncated_row(wmt_package: Make, raises_input_error: Check) -> None:
    root = wmt_package()
    edit_lines(root / SEG, lambda lines: lines.__setitem__(11, lines[11].rsplit(" ", 1)[0]))
    with raises_input_error(SEG, line=12, expected="5 fields", problem="4 fields"):
        parse(root)


@pytest.mark.parametrize("name", [SEG, "DA-syslevel.csv"])
def test_empty_file(name: str, wmt_package: Make, raises_input_error: Check) -> None:
    root = wmt_package()
    (root / name).write_text("")
    with raises_input_error(name, expected="a header line", problem="empty"):
        parse(root)


def test_empty_source_file(wmt_package: Make, raises_input_error: Check) -> None:
    root = wmt_package()
    (root / "sources/newstest2017-csen-src.cs").write_text("")
    with raises_input_error("newstest2017-csen-src.cs", problem="empty"):
        parse(root)


def test_not_utf8_in_a_system_output(wmt_package: Make, raises_input_error: Check) -> None:
    root = wmt_package()
    output = root / "system-outputs/newstest2017/cs-en/newstest2017.uedin-nmt.4955.cs-en"
    lines = output.read_bytes().split(b"\n")
    lines[6] = lines[6] + b" caf\xe9"
    output.write_bytes(b"\n".join(lines))
    with raises_input_error(output.name, line=7, expected="UTF-8", problem="0xe9"):
        parse(root)


def test_not_utf8_in_the_scores(wmt_package: Make, raises_input_error: Check) -> None:
    root = wmt_package()
    seg = root / SEG
    seg.write_bytes(seg.read_bytes().replace(b"cs-en", b"cs\xff-en", 3))
    with raises_input_error(SEG, line=2, expected="UTF-8"):
        parse(root)


def test_byte_order_mark_on_the_scores_is_accepted(wmt_package: Make) -> None:
    root = wmt_package()
    seg = root / SEG
    seg.write_bytes(b"\xef\xbb\xbf" + seg.read_bytes())
    parsed = parse(root)
    assert parsed.tables["segments"].num_rows == 55
    assert any(w.startswith("1 file started with a UTF-8 byte-order mark") and SEG in w for w in parsed.warnings)


def test_data_column_of_another_test_set(wmt_package: Make, raises_input_error: Check) -> None:
    root = wmt_package()
    _set_field(root, 20, 1, "newstest2019")
    with raises_input_error(SEG, line=20, expected="'newstest2017'"):
        parse(root)
