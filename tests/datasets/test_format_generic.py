"""The ``generic`` parser: TSV and JSONL with declared columns, defaults, constants and defects."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from assay.datasets import formats
from assay.datasets.parsed import ParsedDataset
from assay.fixtures import fixtures_dir

Check = Callable[..., AbstractContextManager[None]]  # the raises_input_error fixture

TSV = (
    "id\tlp\tsys\thyp\tref1\tref2\tz\n"
    "1\tde-en\ts1\ta cat\tthe cat\tone cat\t0.5\n"
    "2\tde-en\ts1\ta dog\tthe dog\t\t-0.25\n"
)
OPTIONS = {"candidate": "hyp", "references": "ref1,ref2", "human_z": "z", "group": "lp", "system": "sys",
           "segment_id": "id"}


def parse(path: Path, options: dict[str, str] | None = None) -> ParsedDataset:
    return formats.parse(path, "generic", options or {})


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def test_tsv_with_declared_columns(tmp_path: Path) -> None:
    parsed = parse(write(tmp_path, "scores.tsv", TSV), OPTIONS)
    assert parsed.tables["segments"].to_pylist() == [
        {"group": "de-en", "aspect": "score", "item_id": "1", "segment_id": "1", "system": "s1", "is_human": False,
         "source": None, "references": ["the cat", "one cat"], "candidate": "a cat", "human_z": 0.5,
         "human_raw": None, "rating_count": None, "ratings": None},
        {"group": "de-en", "aspect": "score", "item_id": "2", "segment_id": "2", "system": "s1", "is_human": False,
         "source": None, "references": ["the dog"], "candidate": "a dog", "human_z": -0.25,
         "human_raw": None, "rating_count": None, "ratings": None},
    ]
    assert [f.path for f in parsed.source_files] == ["scores.tsv"]
    assert parsed.metadata["columns"]["references"] == ["ref1", "ref2"]


def test_same_named_columns_and_constants(tmp_path: Path) -> None:
    text = "segment_id\tcandidate\tsource\thuman_raw\tis_human\n7\tok\tsrc\t4\ttrue\n8\tbad\tsrc\t1\tfalse\n"
    parsed = parse(write(tmp_path, "x.tsv", text), {"aspect_value": "quality", "scale": "1,5"})
    rows = parsed.tables["segments"].to_pylist()
    assert [(r["group"], r["aspect"], r["system"]) for r in rows] == [("default", "quality", "unknown")] * 2
    assert [(r["source"], r["human_raw"], r["is_human"], r["references"]) for r in rows] == [
        ("src", 4.0, True, []), ("src", 1.0, False, []),
    ]
    assert parsed.metadata["scale"] == [1.0, 5.0]


def test_jsonl_with_reference_lists(tmp_path: Path) -> None:
    text = jsonl(
        {"id": 1, "hyp": "a cat", "refs": ["the cat", "one cat"], "score": 3, "task": "t"},
        {"id": 2, "hyp": "a dog", "refs": "the dog", "score": "2.5", "task": "t"},
    )
    parsed = parse(write(tmp_path, "x.jsonl", text), {"candidate": "hyp", "references": "refs", "human_raw": "score",
                                                      "segment_id": "id", "group": "task"})
    rows = parsed.tables["segments"].to_pylist()
    assert [(r["segment_id"], r["references"], r["human_raw"], r["group"]) for r in rows] == [
        ("1", ["the cat", "one cat"], 3.0, "t"), ("2", ["the dog"], 2.5, "t"),
    ]


def test_bundled_demo_captions() -> None:
    path = fixtures_dir() / "demo-captions.tsv"
    options = json.loads((fixtures_dir() / "demo-captions.columns.json").read_text())
    parsed = formats.parse(path, None, options)
    assert parsed.format == "generic" and parsed.tables["segments"].num_rows == 6


def test_detects_by_suffix(tmp_path: Path) -> None:
    assert formats.detect_format(write(tmp_path, "a.tsv", TSV)) == "generic"
    assert formats.detect_format(write(tmp_path, "a.jsonl", "{}\n")) == "generic"
    assert not formats.registry()["generic"].detect(write(tmp_path, "a.csv", "x\n"))


# -- defects ---------------------------------------------------------------------------------


def test_missing_declared_column(tmp_path: Path, raises_input_error: Check) -> None:
    path = write(tmp_path, "x.tsv", TSV)
    with raises_input_error("x.tsv", line=1, expected="hypothesis", problem="missing column(s) hypothesis; the header "
                            "has id, lp, sys, hyp, ref1, ref2, z"):
        parse(path, OPTIONS | {"candidate": "hypothesis"})


def test_missing_required_column(tmp_path: Path, raises_input_error: Check) -> None:
    path = write(tmp_path, "x.tsv", TSV)
    with raises_input_error("x.tsv", line=1, expected="declared by the options",
                            problem="missing a candidate column; the header has: id, lp"):
        parse(path, {"segment_id": "id", "human_z": "z"})


def test_missing_key_in_a_jsonl_record(tmp_path: Path, raises_input_error: Check) -> None:
    path = write(tmp_path, "x.jsonl", jsonl({"segment_id": 1, "candidate": "a", "human_z": 1},
                                            {"segment_id": 2, "human_z": 1}))
    with raises_input_error("x.jsonl", line=2, expected="'candidate'", problem="this record has: segment_id, human_z"):
        parse(path)


def test_duplicate_key(tmp_path: Path, raises_input_error: Check) -> None:
    path = write(tmp_path, "x.tsv", TSV + "1\tde-en\ts1\tanother\tr\t\t0.1\n")
    with raises_input_error("x.tsv", line=4, expected="one row per (group, aspect, system, segment_id)",
                            problem="already appears on line 2"):
        parse(path, OPTIONS)


@pytest.mark.parametrize("value", ["NaN", "inf", "high", ""])
def test_bad_score(value: str, tmp_path: Path, raises_input_error: Check) -> None:
    path = write(tmp_path, "x.tsv", TSV.replace("-0.25", value))
    with raises_input_error("x.tsv", line=3, expected="a finite number", problem="z"):
        parse(path, OPTIONS)


def test_bad_score_in_jsonl(tmp_path: Path, raises_input_error: Check) -> None:
    path = write(tmp_path, "x.jsonl", jsonl({"segment_id": 1, "candidate": "a", "human_z": None}))
    with raises_input_error("x.jsonl", line=1, expected="a finite number"):
        parse(path)


def test_bad_json(tmp_path: Path, raises_input_error: Check) -> None:
    text = jsonl({"segment_id": 1, "candidate": "a", "human_z": 1}) + '{"segment_id": 2, "candidate": "b",\n'
    with raises_input_error("x.jsonl", line=2, expected="one JSON object per line", problem="invalid JSON"):
        parse(write(tmp_path, "x.jsonl", text))


def test_json_that_is_not_an_object(tmp_path: Path, raises_input_error: Check) -> None:
    with raises_input_error("x.jsonl", line=1, expected="one JSON object per line", problem="list"):
        parse(write(tmp_path, "x.jsonl", "[1, 2]\n"))


@pytest.mark.parametrize("delimiter", [",", ";"])
def test_wrong_delimiter(delimiter: str, tmp_path: Path, raises_input_error: Check) -> None:
    path = write(tmp_path, "x.tsv", TSV.replace("\t", delimiter))
    with raises_input_error("x.tsv", line=1, expected="separated by tabs", problem="single column"):
        parse(path, OPTIONS)


def test_wrong_delimiter_with_default_columns(tmp_path: Path, raises_input_error: Check) -> None:
    path = write(tmp_path, "x.tsv", "segment_id,candidate,human_z\n1,a,0.5\n")
    with raises_input_error("x.tsv", line=1, expected="tab-separated", problem="single column"):
        parse(path)


def test_truncated_row(tmp_path: Path, raises_input_error: Check) -> None:
    path = write(tmp_path, "x.tsv", TSV + "3\tde-en\ts1\n")
    with raises_input_error("x.tsv", line=4, expected="7 fields", problem="3 fields"):
        parse(path, OPTIONS)


def test_score_outside_the_scale(tmp_path: Path, raises_input_error: Check) -> None:
    path = write(tmp_path, "x.tsv", "segment_id\tcandidate\thuman_raw\n1\ta\t3\n2\tb\t6\n")
    with raises_input_error("x.tsv", line=3, expected="a score from 1 to 5", problem="outside the scale"):
        parse(path, {"scale": "1,5"})


@pytest.mark.parametrize("scale", ["5,1", "1-5", "1,x"])
def test_bad_scale_option(scale: str, tmp_path: Path, raises_input_error: Check) -> None:
    path = write(tmp_path, "x.tsv", "segment_id\tcandidate\thuman_raw\n1\ta\t3\n")
    with raises_input_error("x.tsv", expected="scale=LOW,HIGH"):
        parse(path, {"scale": scale})


def test_unknown_option(tmp_path: Path, raises_input_error: Check) -> None:
    with raises_input_error("x.tsv", expected="options from", problem="hypothesis_column"):
        parse(write(tmp_path, "x.tsv", TSV), OPTIONS | {"hypothesis_column": "hyp"})


def test_column_and_constant_together(tmp_path: Path, raises_input_error: Check) -> None:
    with raises_input_error("x.tsv", expected="one of them", problem="group and group_value"):
        parse(write(tmp_path, "x.tsv", TSV), OPTIONS | {"group_value": "x"})


@pytest.mark.parametrize("name", ["x.tsv", "x.jsonl"])
def test_empty_file(name: str, tmp_path: Path, raises_input_error: Check) -> None:
    with raises_input_error(name, problem="empty"):
        parse(write(tmp_path, name, ""), OPTIONS)


def test_not_utf8(tmp_path: Path, raises_input_error: Check) -> None:
    path = tmp_path / "x.tsv"
    path.write_bytes(TSV.encode().replace(b"a dog", b"a d\xf6g"))
    with raises_input_error("x.tsv", line=3, expected="UTF-8"):
        parse(path, OPTIONS)
