"""Readers of the two real MQM releases in ../shared/data, as their PROVENANCE.md says to read them."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from assay.mqm import ErrorRow

TED = Path("mqm-ted-ende") / "mqm_ted_ende.tsv"
TED_AVG = Path("mqm-ted-ende") / "mqm_ted_ende.avg_seg_scores.tsv"
WMT23 = Path("mqm-wmt23-ende") / "sxs_mqm_generalMT2023_ende.3ratingsPerSegment.tsv"


def read_tsv(path: Path) -> list[list[str]]:
    """Tab-separated, no quoting (QUOTE_NONE): quotes in sentences are text."""
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def error_rows(table: list[list[str]], segment_column: str) -> list[ErrorRow]:
    """The header names the columns; the data starts on physical line 2."""
    header = table[0]
    col = {name: header.index(name) for name in ("system", "rater", "severity", "category")}
    seg = header.index(segment_column)
    return [ErrorRow(r[col["system"]], r[seg], r[col["rater"]], r[col["severity"]],
                     r[col["category"]], line)
            for line, r in enumerate(table[1:], start=2)]


@pytest.fixture(scope="module")
def ted_table(shared_data: Path) -> list[list[str]]:
    return read_tsv(shared_data / TED)


@pytest.fixture(scope="module")
def wmt23_table(shared_data: Path) -> list[list[str]]:
    return read_tsv(shared_data / WMT23)
