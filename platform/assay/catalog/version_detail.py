"""What the catalog says about a dataset version, as plain data: the one-line summary of
``assay datasets list`` and the full detail of ``assay datasets show --json`` and the served
dataset page (:mod:`assay.serve`), so the terminal and the web cannot disagree.

The detail holds the source files with their sha256, row counts, warnings, the systems, the
raters' agreement (:mod:`assay.datasets.rater_agreement`), and what the version's format recorded
about its human scores and references (:data:`VERSION_FACTS`).
"""

from __future__ import annotations

from typing import Any

from assay.config import Settings

__all__ = ["VERSION_FACTS", "describe_version", "fact_text", "version_fact_lines", "version_facts",
           "version_summary"]

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


def version_summary(version: Any) -> dict[str, Any]:
    """A catalog dataset version in one row (``assay datasets list``, ``assay run``, the detail's head)."""
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


def describe_version(settings: Settings, ref: str) -> dict[str, Any]:
    """One dataset version (``NAME`` for the newest, or ``NAME@VERSION``) in full: its summary, the
    recorded facts (by JSON field, with ``fact_lines`` as the terminal prints them), rater agreement,
    source files with sha256, row counts, warnings, systems and the dataset's other versions."""
    from assay.catalog.dataset_versions import resolve
    from assay.catalog.engine import session_scope
    from assay.datasets.rater_agreement import rater_agreement

    with session_scope(settings) as session:
        version = resolve(session, ref)
        detail = version_summary(version)
        detail["rater_agreement"] = rater_agreement(settings, version.store_path)
        detail.update(version_facts(version.info))
        detail.update(
            store_path=version.store_path,
            code_version=version.code_version,
            source_files=version.source_files,
            row_counts=version.row_counts,
            warnings=version.warnings,
            info=version.info,
            systems=[{"group": s.group, "name": s.name, "is_human": s.is_human,
                      "segment_judgments": s.segment_judgments, "system_judgments": s.system_judgments,
                      "outputs": s.outputs} for s in version.systems],
            versions=[{"version_number": v.number, "version_digest": v.digest, "created_at": v.created_at.isoformat()}
                      for v in version.dataset.versions],
        )
    return detail
