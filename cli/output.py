"""Printing helpers shared by the commands: JSON, result tables, the catalog's datasets."""

from __future__ import annotations

import json
from typing import Any

import click

from assay.provenance import short


def emit_json(payload: Any) -> None:
    """``payload`` as indented JSON on stdout (dates and paths as text)."""
    click.echo(json.dumps(payload, indent=2, ensure_ascii=False, default=str))


def print_rows(rows: list[dict[str, Any]], columns: list[str]) -> None:
    """Result rows as a table of ``columns``: ``ci`` shows ``[ci_low, ci_high]``; ``n`` with a
    ``unit`` column shows them together (``5,520 segments``, :func:`assay.results.correlations.counted`);
    a ``signature`` column shows a short reference (``s1``) whose signature is printed in full under
    the table, so a long signature neither squeezes the other columns nor is cut."""
    from rich.console import Console
    from rich.table import Table

    from assay.results.correlations import counted

    shown = [c for c in columns if not (c == "unit" and "n" in columns)]
    signatures: dict[str, str] = {}
    table = Table()
    for column in shown:
        table.add_column("sig" if column == "signature" else column,
                         justify="right" if column in ("value", "rank", "cluster", "n") else "left")
    for row in rows:
        cells = []
        for column in shown:
            if column == "ci":
                low, high = row.get("ci_low"), row.get("ci_high")
                cells.append("" if low is None else f"[{low:.3f}, {high:.3f}]")
            elif column == "value":
                cells.append("" if row["value"] is None else f"{row['value']:.4f}")
            elif column == "n" and "unit" in columns and row.get("n") is not None:
                cells.append(counted(int(row["n"]), row.get("unit")))
            elif column == "signature" and row.get("signature"):
                cells.append(signatures.setdefault(str(row["signature"]), f"s{len(signatures) + 1}"))
            else:
                value = row.get(column)
                cells.append("" if value is None else str(value))
        table.add_row(*cells)
    console = Console(width=max(120, Console().width))
    console.print(table)
    for signature, reference in signatures.items():
        console.print(f"{reference}  {signature}", markup=False, highlight=False, soft_wrap=True)


def print_catalog_table(rows: list[dict[str, Any]]) -> None:
    """The :func:`version_summary` rows as the catalog's table of datasets."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Assay catalog: datasets")
    for column in ("name", "version", "digest", "format", "segment judgments", "system judgments", "outputs"):
        table.add_column(column, justify="right" if "judg" in column or column == "outputs" else "left")
    for row in rows:
        table.add_row(row["name"], str(row["version_number"]), short(row["version_digest"]), row["format"],
                      f"{row['segment_judgments']:,}", f"{row['system_judgments']:,}", f"{row['outputs']:,}")
    if not rows:
        click.echo("the catalog holds no datasets yet: `assay ingest PATH` or `assay run`")
        return
    Console(width=max(100, Console().width)).print(table)
