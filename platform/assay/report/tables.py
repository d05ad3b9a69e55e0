"""Reproduction tables in the layout of the papers, filled with what Assay computed.

* BLEURT Table 2: WMT17 to-English, segment level; rows = metrics, columns = language pairs and
  "avg" (Assay's group ``all``, the plain mean over pairs); each cell "τ / r" ×100.
* BERTScore Table 1: WMT18 to-English, system level; Pearson r. Assay's cells keep the sign; the
  paper prints absolute values.

Assay rows come from the latest evaluation of the dataset (found by name, else by WMT year); a
cell Assay has not computed shows "–". Reference rows (paper / independent) follow, labelled.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from assay.report.collect import CorrelationRow, Evaluation
from assay.report.reference import BERTSCORE_TABLE1, BLEURT_TABLE2, WMT17_SEG_COLUMNS, WMT18_SYS_COLUMNS, ReferenceRow

DASH = "–"


@dataclass(frozen=True)
class TableSpec:
    key: str
    title: str
    caption: str
    dataset: str
    year: int
    level: str
    columns: tuple[str, ...]
    statistics: tuple[str, ...]
    scale: float
    decimals: int
    references: tuple[ReferenceRow, ...]
    produce: str  # the commands that fill the Assay rows

    def group_of(self, column: str) -> str:
        return "all" if column == "avg" else column


BLEURT_T2 = TableSpec(
    key="bleurt-table2", title="BLEURT Table 2 — WMT17 to-English, segment level",
    caption="Kendall τ (τ-b) / Pearson r against DA z-scores, ×100; avg = plain mean over the 7 pairs.",
    dataset="wmt17", year=2017, level="seg", columns=WMT17_SEG_COLUMNS, statistics=("kendall", "pearson"),
    scale=100.0, decimals=1, references=BLEURT_TABLE2,
    produce="assay ingest ../shared/data/wmt17-da && assay score --dataset wmt17 --metric sentbleu && "
            "assay evaluate --dataset wmt17 --level seg",
)
BERTSCORE_T1 = TableSpec(
    key="bertscore-table1", title="BERTScore Table 1 — WMT18 to-English, system level",
    caption="Pearson r between the metric's system scores and DA z. Assay shows the signed r; "
            "the paper prints absolute values |r|.",
    dataset="wmt18", year=2018, level="sys", columns=WMT18_SYS_COLUMNS, statistics=("pearson",),
    scale=1.0, decimals=3, references=BERTSCORE_TABLE1,
    produce="assay ingest ../shared/data/wmt18-da && assay score --dataset wmt18 --metric bleu --scope outputs && "
            "assay evaluate --dataset wmt18 --level sys",
)
TABLES = (BLEURT_T2, BERTSCORE_T1)


def find_evaluation(spec: TableSpec, evaluations: list[Evaluation]) -> Evaluation | None:
    """The evaluation of the table's dataset at its level: by name, else a WMT dataset of its year."""
    at_level = [e for e in evaluations if e.level == spec.level]
    by_name = [e for e in at_level if e.version.ref.name == spec.dataset]
    by_year = [e for e in at_level if e.version.year == spec.year and e.version.format.startswith("wmt")]
    found = by_name or by_year
    return found[0] if found else None


@dataclass(frozen=True)
class Cell:
    text: str
    rows: tuple[CorrelationRow, ...]  # the correlation rows behind the text (empty for "–")


def fmt(value: float | None, spec: TableSpec) -> str:
    if value is None:
        return DASH
    return f"{value * spec.scale:.{spec.decimals}f}".replace("-", "−")


def assay_cells(spec: TableSpec, evaluation: Evaluation, signature: str) -> list[Cell]:
    """The table's cells for one metric signature, in column order."""
    aspect = "da" if "da" in evaluation.aspects else (evaluation.aspects[0] if evaluation.aspects else "")
    cells = []
    for column in spec.columns:
        found = [evaluation.cell(spec.group_of(column), aspect, s, signature) for s in spec.statistics]
        present = tuple(r for r in found if r is not None and r.value is not None)
        if not present:
            cells.append(Cell(DASH, ()))
            continue
        cells.append(Cell(" / ".join(fmt(r.value if r else None, spec) for r in found), present))
    return cells


def reference_cells(spec: TableSpec, row: ReferenceRow) -> list[str]:
    def show(values: tuple[float, ...]) -> str:
        pattern: Callable[[float], str] = (lambda v: f"{v:.1f}") if spec.scale == 100 else (lambda v: f"{v:.3f}")
        return " / ".join(pattern(v).replace("-", "−") for v in values)

    return [show(row.cells[c]) if c in row.cells else DASH for c in spec.columns]
