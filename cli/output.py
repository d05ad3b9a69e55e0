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


#: What a format records in a version's metadata about its human scores and references, shown by
#: ``assay datasets show`` as fields: metadata key -> (JSON field, label). A key a format does not
#: record is null in JSON and not shown in the text.
VERSION_FACTS: dict[str, tuple[str, str]] = {
    "protocol": ("protocol", "protocol"),
    "mqm_weights": ("weighting_scheme", "weighting scheme"),  # mqm-tsv: {signature, rules}
    "reference_system": ("reference_system", "reference system"),  # one name, or one per language pair (esa)
    "reference_rule": ("reference_chosen_by", "reference chosen by"),  # mqm-tsv
    "reference_source": ("reference_chosen_by", "reference chosen by"),  # mtme
    "references": ("references", "references"),
    "primary_human": ("primary_human", "primary human score"),  # mtme: level -> kind
    "primary_human_source": ("primary_human_chosen_by", "primary human score chosen by"),
    "human_scores": ("human_scores", "human scores"),  # mtme: kind -> levels
    "human_systems": ("human_systems", "human systems"),
    "outlier_systems": ("outlier_systems", "outlier systems"),
}


def version_facts(metadata: dict[str, Any]) -> dict[str, Any]:
    """The :data:`VERSION_FACTS` of a version's metadata, by JSON field (null where not recorded)."""
    facts: dict[str, Any] = {field: None for field, _ in VERSION_FACTS.values()}
    for key, (field, _) in VERSION_FACTS.items():
        if key in metadata:
            facts[field] = metadata[key]
    return facts


def version_fact_lines(metadata: dict[str, Any]) -> list[str]:
    """The :data:`VERSION_FACTS` a version's metadata records, one ``label: value`` line each."""
    return [f"{label}: {fact_text(metadata[key])}" for key, (_, label) in VERSION_FACTS.items() if key in metadata]


def fact_text(value: Any) -> str:
    """A recorded fact as text: a weighting scheme as ``signature (rules)``, a mapping as
    ``key: value; ...``, a list comma-separated (``none`` when empty)."""
    if isinstance(value, dict):
        if set(value) == {"signature", "rules"}:
            return f"{value['signature']} ({value['rules']})"
        return "; ".join(f"{key}: {fact_text(item)}" for key, item in value.items()) or "none"
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value) or "none"
    return "none" if value is None else str(value)


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
