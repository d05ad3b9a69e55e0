"""The ``wmt16-daseg`` parser: the real WMT16 DAseg release and its defects."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from assay.datasets import formats
from assay.datasets.parsed import ParsedDataset

Check = Callable[..., AbstractContextManager[None]]  # the raises_input_error fixture
Make = Callable[..., Path]  # a factory fixture that builds a small copy

LPS = ("cs-en", "de-en", "en-ru", "fi-en", "ro-en", "ru-en", "tr-en")


def parse(path: Path) -> ParsedDataset:
    return formats.parse(path, "wmt16-daseg")


def test_real_release_shapes(parsed_wmt16: ParsedDataset) -> None:
    segments = parsed_wmt16.tables["segments"]
    assert Counter(segments.column("group").to_pylist()) == {lp: 560 for lp in LPS}
    assert set(segments.column("system").to_pylist()) == {"mt-system"}
    assert set(segments.column("aspect").to_pylist()) == {"da"}
    assert segments.column("human_z").null_count == 0
    assert parsed_wmt16.metadata["year"] == 2016
    assert len(parsed_wmt16.source_files) == 28
    assert parsed_wmt16.warnings == [
        "The release does not name the MT systems: all 3,920 segments have system 'mt-system'."
    ]
    for name in ("systems", "outputs", "rankings"):
        assert parsed_wmt16.tables[name].num_rows == 0


def test_real_rows_are_line_aligned(parsed_wmt16: ParsedDataset, shared_data: Path) -> None:
    root = shared_data / "wmt16-da-seg"
    segments = parsed_wmt16.tables["segments"].to_pylist()
    (row,) = [r for r in segments if r["group"] == "de-en" and r["segment_id"] == "2"]
    assert row["candidate"] == "On Wednesday morning there still 40 refugees would have be."
    assert row["references"] == ["On Wednesday morning another 40 refugees were stopped there."]
    assert row["source"] == (root / "DAseg.newstest2016.source.de-en").read_text().split("\n")[1]
    assert row["human_z"] == pytest.approx(-0.501993769758787)
    assert row["item_id"] == "2"


def test_detected_by_file_names(shared_data: Path, tmp_path: Path) -> None:
    assert formats.detect_format(shared_data / "wmt16-da-seg") == "wmt16-daseg"
    assert not formats.registry()["wmt16-daseg"].detect(tmp_path)


def test_year_comes_from_the_file_names(wmt16_copy: Make) -> None:
    root = wmt16_copy()
    for path in root.iterdir():
        path.rename(path.with_name(path.name.replace("2016", "2015")))
    parsed = parse(root)
    assert parsed.metadata["year"] == 2015 and parsed.metadata["test_set"] == "newstest2015"
    assert parsed.tables["segments"].num_rows == 30


def test_missing_file(wmt16_copy: Make, raises_input_error: Check) -> None:
    root = wmt16_copy()
    (root / "DAseg.newstest2016.reference.de-en").unlink()
    with raises_input_error("DAseg.newstest2016.reference.de-en", expected="all four files", problem="missing"):
        parse(root)


def test_files_of_unequal_length(wmt16_copy: Make, raises_input_error: Check) -> None:
    root = wmt16_copy()
    source = root / "DAseg.newstest2016.source.de-en"
    source.write_text("\n".join(source.read_text().splitlines()[:-2]) + "\n")
    with raises_input_error(source.name, expected="30 lines",
                            problem="28 lines but DAseg.newstest2016.human.de-en has 30"):
        parse(root)


@pytest.mark.parametrize("value", ["nan", "high", ""])
def test_bad_score(value: str, wmt16_copy: Make, raises_input_error: Check) -> None:
    root = wmt16_copy()
    human = root / "DAseg.newstest2016.human.de-en"
    lines = human.read_text().splitlines()
    lines[4] = value
    human.write_text("\n".join(lines) + "\n")
    with raises_input_error(human.name, line=5, expected="a finite number"):
        parse(root)


def test_not_utf8(wmt16_copy: Make, raises_input_error: Check) -> None:
    root = wmt16_copy()
    mt = root / "DAseg.newstest2016.mt-system.de-en"
    lines = mt.read_bytes().split(b"\n")
    lines[9] += b"\x80"
    mt.write_bytes(b"\n".join(lines))
    with raises_input_error(mt.name, line=10, expected="UTF-8"):
        parse(root)


def test_empty_file(wmt16_copy: Make, raises_input_error: Check) -> None:
    root = wmt16_copy()
    (root / "DAseg.newstest2016.human.de-en").write_text("")
    with raises_input_error("DAseg.newstest2016.human.de-en", problem="empty"):
        parse(root)


def test_two_test_sets_in_one_folder(wmt16_copy: Make, raises_input_error: Check) -> None:
    root = wmt16_copy()
    (root / "DAseg.newstest2016.human.de-en").rename(root / "DAseg.newstest2015.human.de-en")
    with raises_input_error(root.name, expected="one test set", problem="newstest2015, newstest2016"):
        parse(root)
