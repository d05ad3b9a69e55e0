"""The ``huse`` parser: the raw MTurk batch results, the summary_clean cross-check, and defects."""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from assay.datasets import formats
from assay.datasets.parsed import ParsedDataset

Check = Callable[..., AbstractContextManager[None]]  # the raises_input_error fixture
Make = Callable[..., Path]  # a factory fixture that builds a small copy

RAW = "summarization_raw_outputs.csv"
CLEAN = "summary_clean.csv"
LABELS = ("Invalid", "Rare", "Specific", "Average", "Typical", "Very Typical")


def parse(path: Path) -> ParsedDataset:
    return formats.parse(path, "huse")


def test_real_shapes(parsed_huse: ParsedDataset) -> None:
    segments = parsed_huse.tables["segments"].to_pylist()
    assert len(segments) == 200
    assert all(r["rating_count"] == 20 and len(r["ratings"]) == 20 for r in segments)
    assert sum(len(r["ratings"]) for r in segments) == 4000
    assert Counter((r["system"], r["is_human"]) for r in segments) == {("model", False): 100, ("human", True): 100}
    assert all(r["references"] == [] and r["group"] == "summarization" and r["aspect"] == "typicality"
               for r in segments)
    assert all(r["human_raw"] == pytest.approx(sum(r["ratings"]) / 20) for r in segments)
    assert all(0 <= r["human_raw"] <= 5 for r in segments)
    assert len({r["segment_id"] for r in segments}) == 200
    assert len({r["item_id"] for r in segments}) == 99  # articles: one is shown in two HIT pairs
    assert len(parsed_huse.metadata["model_logp"]) == 200
    assert parsed_huse.metadata["summary_clean_scale"] == "1-6"


def test_real_warnings(parsed_huse: ParsedDataset) -> None:
    assert parsed_huse.warnings == [
        "The header of summarization_raw_outputs.csv names 179 columns but its 160 rows have 177 fields: "
        "the last 2 header columns (Approve, Reject) have no values and were ignored.",
        "1 model headline equals the human headline of the same article; both are kept as separate sentences "
        "(they are separate HIT slots with their own judgments).",
        "summary_clean.csv gives each sentence's mean label plus 1 (a 1-6 scale); with that offset all its "
        "200 rows match summarization_raw_outputs.csv.",
    ]


def test_means_equal_summary_clean_row_by_row(parsed_huse: ParsedDataset, shared_data: Path) -> None:
    # rows are sorted by (HITId, slot), which is also the order of summary_clean.csv
    with (shared_data / "huse" / CLEAN).open(newline="") as handle:
        clean = list(csv.reader(handle))[1:]
    segments = parsed_huse.tables["segments"].to_pylist()
    for row, (judgement, logp, label, length) in zip(segments, clean, strict=True):
        assert row["human_raw"] + 1 == pytest.approx(float(judgement))
        assert parsed_huse.metadata["model_logp"][row["segment_id"]] == pytest.approx(float(logp))
        assert row["system"] == ("model" if label.strip() == "True" else "human")
        assert len(row["candidate"].split()) == int(length)


def test_a_sentence_is_a_hit_slot(parsed_huse: ParsedDataset, shared_data: Path) -> None:
    with (shared_data / "huse" / RAW).open(newline="") as handle:
        raw = list(csv.DictReader(handle))
    first = raw[0]
    (row,) = [r for r in parsed_huse.tables["segments"].to_pylist() if r["segment_id"] == f"{first['HITId']}-0"]
    assert row["candidate"] == first["Input.OUT0"] == "kwan withdraws from #### us figure skating championship"
    assert row["source"] == first["Input.CTX0"]
    labels = [LABELS.index(r["Answer.0"]) for r in raw if r["HITId"] == first["HITId"]]
    assert row["ratings"] == [float(x) for x in labels]
    # the one (article, headline) text with 40 judgments is two sentences of 20
    same = Counter((r["source"], r["candidate"]) for r in parsed_huse.tables["segments"].to_pylist())
    assert sorted(same.values())[-2:] == [1, 2]


def test_the_file_alone(shared_data: Path) -> None:
    parsed = parse(shared_data / "huse" / RAW)
    assert parsed.tables["segments"].num_rows == 200
    assert [f.path for f in parsed.source_files] == [RAW]
    assert "summary_clean_scale" not in parsed.metadata
    assert formats.detect_format(shared_data / "huse" / RAW) == "huse"


def test_an_unknown_label(huse_copy: Make, raises_input_error: Check) -> None:
    def edit(records: list[list[str]]) -> None:
        records[3][records[0].index("Answer.7")] = "Quite Typical"

    # no field of this file holds a line break: record i is on line i + 1
    with raises_input_error(RAW, line=4, expected="one of Invalid, Rare, Specific, Average, Typical, Very Typical",
                            problem="'Quite Typical'"):
        parse(huse_copy(edit_raw=edit))


def test_summary_clean_that_disagrees(huse_copy: Make, raises_input_error: Check) -> None:
    def edit(records: list[list[str]]) -> None:
        records[17][0] = str(float(records[17][0]) + 0.05)

    with raises_input_error(CLEAN, line=18, expected="mean label", problem="1 row matches no sentence"):
        parse(huse_copy(edit_clean=edit))


def test_summary_clean_with_a_row_missing(huse_copy: Make, raises_input_error: Check) -> None:
    with raises_input_error(CLEAN, expected="one row per sentence", problem="199 rows"):
        parse(huse_copy(edit_clean=lambda records: records.pop()))


def test_summary_clean_on_the_documented_scale_is_accepted(huse_copy: Make) -> None:
    def edit(records: list[list[str]]) -> None:
        for record in records[1:]:
            record[0] = str(float(record[0]) - 1)

    parsed = parse(huse_copy(edit_clean=edit))
    assert parsed.metadata["summary_clean_scale"] == "0-5"
    assert not [w for w in parsed.warnings if CLEAN in w]


def test_an_unknown_type(huse_copy: Make, raises_input_error: Check) -> None:
    def edit(records: list[list[str]]) -> None:
        records[5][records[0].index("Input.TYPE3")] = "MODEL"

    with raises_input_error(RAW, line=6, expected="SUM or HUMAN_SUM"):
        parse(huse_copy(edit_raw=edit, clean=False))


def test_assignments_of_a_hit_that_disagree(huse_copy: Make, raises_input_error: Check) -> None:
    changed = []

    def edit(records: list[list[str]]) -> None:
        hit = records[1][0]
        later = next(i for i in range(2, len(records)) if records[i][0] == hit)
        records[later][records[0].index("Input.OUT2")] += " (edited)"
        changed.append(later + 1)

    root = huse_copy(edit_raw=edit, clean=False)
    with raises_input_error(RAW, line=changed[0], expected="the same inputs in every assignment",
                            problem="another article or headline than on line 2"):
        parse(root)


def test_missing_answer_columns(huse_copy: Make, raises_input_error: Check) -> None:
    def edit(records: list[list[str]]) -> None:
        records[0] = [name.replace("Answer.", "Reply.") for name in records[0]]

    with raises_input_error(RAW, line=1, expected="Answer.0", problem="missing column(s) Answer.0"):
        parse(huse_copy(edit_raw=edit, clean=False))


def test_truncated_row(huse_copy: Make, raises_input_error: Check) -> None:
    def edit(records: list[list[str]]) -> None:
        del records[9][-5:]  # this row now lacks answers, not only the unfilled Approve/Reject

    with raises_input_error(RAW, line=10, expected="177 fields", problem="172 fields"):
        parse(huse_copy(edit_raw=edit, clean=False))


def test_wrong_delimiter(huse_copy: Make, raises_input_error: Check) -> None:
    root = huse_copy(clean=False)
    with (root / RAW).open(newline="") as handle:
        records = list(csv.reader(handle))
    with (root / RAW).open("w", newline="") as handle:
        csv.writer(handle, delimiter="\t").writerows(records)
    with raises_input_error(RAW, line=1, problem="single column"):
        parse(root)


def test_empty_file(huse_copy: Make, raises_input_error: Check) -> None:
    root = huse_copy(clean=False)
    (root / RAW).write_text("")
    with raises_input_error(RAW, problem="empty"):
        parse(root)
