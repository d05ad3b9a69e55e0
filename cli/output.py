"""Printing helpers shared by the commands: JSON, result tables, the catalog's datasets."""

from __future__ import annotations

import json
from typing import Any

import click


def emit_json(payload: Any) -> None:
    """``payload`` as indented JSON on stdout (dates and paths as text)."""
    click.echo(json.dumps(payload, indent=2, ensure_ascii=False, default=str))


def print_rows(rows: list[dict[str, Any]], columns: list[str]) -> None:
    """Result rows as a table of ``columns`` (``ci`` shows ``[ci_low, ci_high]``)."""
    from rich.console import Console
    from rich.table import Table

    table = Table()
    for column in columns:
        table.add_column(column, justify="right" if column in ("value", "rank", "cluster", "n") else "left")
    for row in rows:
        cells = []
        for column in columns:
            if column == "ci":
                low, high = row.get("ci_low"), row.get("ci_high")
                cells.append("" if low is None else f"[{low:.3f}, {high:.3f}]")
            elif column == "value":
                cells.append("" if row["value"] is None else f"{row['value']:.4f}")
            else:
                value = row.get(column)
                cells.append("" if value is None else str(value))
        table.add_row(*cells)
    Console(width=max(120, Console().width)).print(table)


def version_summary(version: Any) -> dict[str, Any]:
    """A catalog dataset version as printed (``assay datasets list|show``, ``assay run``)."""
    counts = version.row_counts
    return {
        "name": version.dataset.name,
        "version_number": version.number,
        "version_digest": version.digest,
        "label": version.label,
        "format": version.format,
        "segment_judgments": counts.get("segments", 0),
        "system_judgments": counts.get("systems", 0),
        "outputs": counts.get("outputs", 0),
        "rankings": counts.get("rankings", 0),
        "warnings": len(version.warnings),
        "created_at": version.created_at.isoformat(),
        "source_path": version.source_path,
    }


def print_catalog_table(rows: list[dict[str, Any]]) -> None:
    """The :func:`version_summary` rows as the catalog's table of datasets."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Assay catalog: datasets")
    for column in ("name", "version", "digest", "format", "segment judgments", "system judgments", "outputs"):
        table.add_column(column, justify="right" if "judg" in column or column == "outputs" else "left")
    for row in rows:
        table.add_row(row["name"], str(row["version_number"]), row["version_digest"][:12], row["format"],
                      f"{row['segment_judgments']:,}", f"{row['system_judgments']:,}", f"{row['outputs']:,}")
    if not rows:
        click.echo("the catalog holds no datasets yet: `assay ingest PATH` or `assay run`")
        return
    Console(width=max(100, Console().width)).print(table)
