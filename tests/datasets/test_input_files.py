"""The shared reading helpers of the format parsers (``assay.datasets.formats.input_files``)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from assay.datasets.formats.input_files import (
    InputFiles,
    count,
    listing,
    parse_float,
    parse_int,
    read_csv,
    read_delimited,
    split_lines,
    table_from_columns,
)
from assay.datasets.parsed import SourceFile
from assay.errors import PluginError

Check = Callable[..., AbstractContextManager[None]]  # the raises_input_error fixture

P = Path("t.txt")


def test_split_lines_splits_on_newline_only() -> None:
    # U+2028 and U+0085 occur inside WMT sentences: str.splitlines would misalign the files
    assert split_lines("a\u2028b\nc\x85d\n") == ["a\u2028b", "c\x85d"]
    assert split_lines("a\r\nb") == ["a", "b"]
    assert split_lines("a\n\n") == ["a", ""]
    assert split_lines("") == []


def test_strict_utf8_names_the_line(tmp_path: Path, raises_input_error: Check) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(b"ok\nstill ok\nbad \xc3(\n")
    with raises_input_error("t.txt", line=3, expected="UTF-8 text", problem="0xc3 at offset 16"):
        InputFiles(tmp_path).read_text(path)


def test_bom_is_removed_and_counted(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / name).write_bytes((b"\xef\xbb\xbf" if name != "b" else b"") + b"x\ny\n")
    files = InputFiles(tmp_path)
    assert [files.read_lines(tmp_path / n) for n in ("a", "b", "c", "a")] == [["x", "y"]] * 4
    assert files.bom_warning() == "2 files started with a UTF-8 byte-order mark, which was removed: a, c."
    assert [f.path for f in files.source_files] == ["a", "b", "c"]  # each file recorded once
    assert files.source_files[1] == SourceFile.of(tmp_path / "b", tmp_path)


def test_read_lines_rejects_an_empty_file(tmp_path: Path, raises_input_error: Check) -> None:
    (tmp_path / "e").write_text("")
    with raises_input_error("e", problem="empty"):
        InputFiles(tmp_path).read_lines(tmp_path / "e")
    assert InputFiles(tmp_path).read_lines(tmp_path / "e", allow_empty=True) == []


def test_missing_file(tmp_path: Path, raises_input_error: Check) -> None:
    with raises_input_error("nope", problem="no such file"):
        InputFiles(tmp_path).read_text(tmp_path / "nope")


def test_read_delimited_physical_lines_and_blank_lines() -> None:
    table = read_delimited(P, "A B C\n1 2 3\n\n4  5 6\n", delimiter=" ", required=("A", "C"))
    assert table.header == ["A", "B", "C"]
    assert table.rows == [["1", "2", "3"], ["4", "5", "6"]]
    assert table.lines == [2, 4]


def test_read_delimited_repairs_a_header_missing_one_name() -> None:
    table = read_delimited(P, "DATA SID\nde-en nt 3\n", delimiter=" ", required=("LP", "DATA", "SID"),
                           missing_name_ok=True)
    assert table.header == ["LP", "DATA", "SID"] and table.rows == [["de-en", "nt", "3"]]
    assert table.warning is not None and "LP" in table.warning


def test_read_delimited_does_not_repair_without_the_extra_field(raises_input_error: Check) -> None:
    with raises_input_error(P, line=1, problem="missing column(s) LP"):
        read_delimited(P, "DATA SID\nnt 3\n", delimiter=" ", required=("LP", "DATA", "SID"), missing_name_ok=True)


def test_read_delimited_rejects_duplicate_column_names(raises_input_error: Check) -> None:
    with raises_input_error(P, line=1, problem="more than once"):
        read_delimited(P, "A B A\n1 2 3\n", delimiter=" ", required=("A", "B"))


def test_read_csv_gives_the_first_line_of_each_record() -> None:
    text = 'id,text\r\n1,"two\r\nlines"\r\n2,one line\r\n\r\n3,"three\nmore\nlines"\r\n4,x\r\n'
    table = read_csv(P, text, required=("id", "text"))
    assert [row[0] for row in table.rows] == ["1", "2", "3", "4"]
    assert table.lines == [2, 4, 6, 9]
    assert table.rows[0][1] == "two\r\nlines"


def test_read_csv_reports_malformed_quoting(raises_input_error: Check) -> None:
    with raises_input_error(P, line=3, expected="RFC 4180 CSV", problem="malformed CSV"):
        read_csv(P, 'a,b\n1,2\n3,"x"y\n', required=("a", "b"))


@pytest.mark.parametrize("value", ["nan", "-inf", "Infinity", "", "1,5", "one", None, True])
def test_parse_float_rejects(value: Any, raises_input_error: Check) -> None:
    with raises_input_error(P, line=7, expected="a finite number", problem="score"):
        parse_float(value, P, 7, "score")


def test_parse_float_and_int_accept() -> None:
    assert parse_float(" -1.5e-3 ", P, 1, "x") == -0.0015
    assert parse_float(3, P, 1, "x") == 3.0
    assert parse_int("12", P, 1, "SID") == 12


@pytest.mark.parametrize("value", ["0", "-1", "1.0", "x", ""])
def test_parse_int_rejects(value: str, raises_input_error: Check) -> None:
    with raises_input_error(P, line=2, expected="an integer >= 1"):
        parse_int(value, P, 2, "SID")


def test_table_from_columns_fills_absent_columns_with_nulls() -> None:
    table = table_from_columns("rankings", {"group": ["a"], "segment_id": ["1"], "better_system": ["x"],
                                            "worse_system": ["y"]})
    assert table.to_pylist() == [{"group": "a", "segment_id": "1", "better_system": "x", "worse_system": "y"}]
    systems = table_from_columns("systems", {"group": ["g"], "aspect": ["da"], "system": ["s"], "is_human": [False]})
    assert systems.column("output_system").to_pylist() == [None]
    with pytest.raises(PluginError, match="no column"):
        table_from_columns("rankings", {"nonsense": []})


def test_message_helpers() -> None:
    assert count(1120, "row") == "1,120 rows" and count(1, "file") == "1 file"
    assert listing(["a", "b"]) == "a, b"
    assert listing([str(i) for i in range(9)], limit=3) == "0, 1, 2 and 6 more"
