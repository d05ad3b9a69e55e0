"""The ``webnlg2017`` parser: the real human evaluation joined with the test-set XML, and defects."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from assay.datasets import formats
from assay.datasets.parsed import ParsedDataset

Check = Callable[..., AbstractContextManager[None]]  # the raises_input_error fixture
Make = Callable[..., Path]  # a factory fixture that builds a small copy

CSV = "all_data_final_averaged.csv"
XML = "testdata_with_lex.xml"


def parse(path: Path) -> ParsedDataset:
    return formats.parse(path, "webnlg2017")


def test_real_shapes(parsed_webnlg: ParsedDataset) -> None:
    segments = parsed_webnlg.tables["segments"].to_pylist()
    assert len(segments) == 6690
    assert Counter(r["aspect"] for r in segments) == {"semantics": 2230, "grammar": 2230, "fluency": 2230}
    assert len({r["segment_id"] for r in segments}) == 2230
    assert len({r["item_id"] for r in segments}) == 223
    assert Counter(r["system"] for r in segments if r["aspect"] == "fluency") == {
        team: 223 for team in ("adapt", "baseline", "melbourne", "pkuwriter", "tilburg-nmt", "tilburg-pipe",
                               "tilburg-smt", "upf-forge", "vietnam", "webnlg")
    }
    assert {r["system"] for r in segments if r["is_human"]} == {"webnlg"}
    assert all(1.0 <= r["human_raw"] <= 3.0 and r["human_z"] is None for r in segments)
    assert {r["group"] for r in segments} == {"webnlg2017"}
    assert sum(len(r["references"]) for r in segments if r["aspect"] == "fluency" and not r["is_human"]) == 5355
    assert parsed_webnlg.metadata["inputs"] == 223


def test_real_warnings(parsed_webnlg: ParsedDataset) -> None:
    assert parsed_webnlg.warnings == [
        "25 rated outputs of tilburg-pipe are empty (the system produced nothing) and were kept with candidate ''.",
        "223 outputs of webnlg ended in a line break, which was removed.",
    ]
    empty = [r for r in parsed_webnlg.tables["segments"].to_pylist() if r["candidate"] == ""]
    assert len(empty) == 25 * 3 and {r["system"] for r in empty} == {"tilburg-pipe"}


def test_references_are_the_lex_texts_of_the_matching_entry(parsed_webnlg: ParsedDataset, shared_data: Path) -> None:
    mr = "(29075)_1950_DA | discoverer | Carl_A._Wirtanen"
    root = ET.parse(shared_data / "webnlg2017-human-eval" / XML).getroot()
    (entry,) = [e for e in root.iter("entry")
                if "<br>".join(t.text or "" for t in e.iter("mtriple")) == mr]
    lex = [x.text for x in entry.iter("lex")]
    rows = [r for r in parsed_webnlg.tables["segments"].to_pylist() if r["source"] == mr]
    assert len(rows) == 30
    assert all(r["references"] == lex for r in rows)
    assert {r["item_id"] for r in rows} == {f"{entry.get('category')}/{entry.get('size')}/{entry.get('eid')}"}
    (pku,) = [r for r in rows if r["system"] == "pkuwriter" and r["aspect"] == "semantics"]
    assert pku["candidate"] == "carl a. wirtanen discovered (29075) 1950 da."
    assert pku["segment_id"] == "4" and pku["human_raw"] == pytest.approx(2.3333333333333335)


def test_a_rating_outside_the_scale(webnlg_copy: Make, raises_input_error: Check) -> None:
    def edit(records: list[list[str]]) -> None:
        records[11][records[0].index("grammar")] = "3.5"  # id 11: line 13, after a two-line record

    root = webnlg_copy(edit=edit)
    with raises_input_error(CSV, line=13, expected="a rating from 1 to 3", problem="grammar"):
        parse(root)


@pytest.mark.parametrize("value", ["nan", "good", ""])
def test_a_rating_that_is_not_a_number(
    value: str, webnlg_copy: Make, raises_input_error: Check
) -> None:
    def edit(records: list[list[str]]) -> None:
        records[3][records[0].index("fluency")] = value

    with raises_input_error(CSV, line=4, expected="a finite number", problem="fluency"):
        parse(webnlg_copy(edit=edit))


def test_an_mr_without_xml_entry(webnlg_copy: Make, raises_input_error: Check) -> None:
    def edit(records: list[list[str]]) -> None:
        records[5][1] = records[5][1].replace("discoverer", "inventor")

    with raises_input_error(CSV, line=6, expected="exactly one <entry>", problem="matches no entry"):
        parse(webnlg_copy(edit=edit))


def test_malformed_xml(webnlg_copy: Make, raises_input_error: Check) -> None:
    root = webnlg_copy()
    xml = root / XML
    lines = xml.read_text(encoding="utf-8").split("\n")
    broken = next(i for i, line in enumerate(lines) if "</lex>" in line and i > 40)
    lines[broken] = lines[broken].replace("</lex>", "</le>")
    xml.write_text("\n".join(lines), encoding="utf-8")
    with raises_input_error(XML, line=broken + 1, expected="well-formed XML", problem="mismatched tag"):
        parse(root)


def test_missing_column(webnlg_copy: Make, raises_input_error: Check) -> None:
    def edit(records: list[list[str]]) -> None:
        for record in records:
            del record[-1]  # semantics

    with raises_input_error(CSV, line=1, expected="semantics", problem="missing column(s) semantics"):
        parse(webnlg_copy(edit=edit))


def test_wrong_delimiter(webnlg_copy: Make, raises_input_error: Check) -> None:
    root = webnlg_copy()
    csv_path = root / CSV
    csv_path.write_text(csv_path.read_text(encoding="utf-8").replace(",", ";"), encoding="utf-8")
    with raises_input_error(CSV, line=1, expected="separated by commas", problem="single column"):
        parse(root)


def test_truncated_row(webnlg_copy: Make, raises_input_error: Check) -> None:
    def edit(records: list[list[str]]) -> None:
        del records[7][-3:]

    with raises_input_error(CSV, line=8, expected="14 fields", problem="11 fields"):
        parse(webnlg_copy(edit=edit))


def test_duplicate_id(webnlg_copy: Make, raises_input_error: Check) -> None:
    def edit(records: list[list[str]]) -> None:
        records[4][0] = records[2][0]

    with raises_input_error(CSV, line=5, expected="a unique id", problem="line 3"):
        parse(webnlg_copy(edit=edit))


def test_empty_file(webnlg_copy: Make, raises_input_error: Check) -> None:
    root = webnlg_copy()
    (root / CSV).write_text("")
    with raises_input_error(CSV, expected="a header line", problem="empty"):
        parse(root)


def test_not_utf8(webnlg_copy: Make, raises_input_error: Check) -> None:
    root = webnlg_copy()
    csv_path = root / CSV
    data = csv_path.read_bytes().split(b"\r\n")
    data[2] = data[2].replace(b"baseline", b"basel\xefne")
    csv_path.write_bytes(b"\r\n".join(data))
    with raises_input_error(CSV, line=3, expected="UTF-8"):
        parse(root)
