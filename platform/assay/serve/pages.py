"""The served pages, each built once for the web app and for the static export: a page is its
template, its JSON twin (the payload a command's ``--json`` prints) and what the template shows.
:mod:`assay.serve.app` answers requests with them; :mod:`assay.serve.export` writes them to files
(``assay report``), so the app and the exported pages cannot disagree.

Every number comes from the read side: :mod:`assay.query.leaderboard`, :mod:`assay.query.compare`,
:mod:`assay.query.error_matrix`, :mod:`assay.checkpoints.record` and
:mod:`assay.catalog.version_detail`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from assay.catalog.version_detail import describe_version, version_fact_lines
from assay.checkpoints.record import checkpoint_record
from assay.config import Settings
from assay.provenance import code_version
from assay.query.compare import compare
from assay.query.error_matrix import error_matrix
from assay.query.leaderboard import LeaderboardQuery, leaderboard
from assay.query.versions import across_versions
from assay.report.spans import error_label, highlight
from assay.results.correlations import counted
from assay.serve import links
from assay.serve.views import choices, heat_class, history_chart, overview, versions_chart

__all__ = ["Page", "checkpoint_page", "compare_page", "dataset_page", "environment", "errors_page",
           "leaderboard_page", "overview_page", "versions_page"]


@dataclass(frozen=True)
class Page:
    template: str
    payload: Any
    """The JSON twin: what ``assay ... --json`` prints for the same question."""
    context: dict[str, Any] = field(default_factory=dict)


def fmt(value: float | None) -> str:
    """A correlation as the pages show it: 4 decimals, ``–`` for none."""
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4f}"


def marked(text: str | None, errors: list[dict[str, Any]], side: str = "target") -> tuple[Markup, list[Any]]:
    """:func:`assay.report.spans.highlight` for a template: its HTML (every piece of text escaped
    there) marked safe, and the errors without a span."""
    html, unplaced = highlight(text or "", errors, side=side)
    return Markup(html), list(unplaced)  # highlight() escapes every piece of text itself


def environment(address: Any = links, *, static: dict[str, str] | None = None) -> Environment:
    """The templates, with ``address`` building every link (:mod:`assay.serve.links`, or the export's
    file names) and, for the static export, ``static`` (name -> text) inlined instead of linked."""
    env = Environment(loader=PackageLoader("assay.serve", "templates"), autoescape=select_autoescape(["html"]))
    env.globals.update(fmt=fmt, counted=counted, code_version=code_version(), links=address, heat_class=heat_class,
                       highlight=marked, error_label=error_label, inline=static)
    return env


def overview_page(settings: Settings) -> Page:
    cells = overview(settings)
    return Page("overview.html", [c.as_dict() for c in cells], {"cells": cells})


def leaderboard_page(settings: Settings, query: LeaderboardQuery) -> Page:
    query = query.resolved()
    assert query.level is not None and query.statistic is not None
    rows = leaderboard(query, settings)
    first = rows[0]
    version = f"{first['dataset']}@{first['version_number']}"
    return Page("leaderboard.html", rows, {
        "rows": rows, "query": query, "version_label": version,
        "choices": choices(settings, query.dataset, query.level, query.group),
        "pinned": {"level": query.level, "stat": query.statistic, "group": query.group, "aspect": query.aspect,
                   "protocol": query.protocol, "side": query.side},
        "degenerate": [r for r in rows if r.get("degenerate")]})


def compare_page(settings: Settings, query: LeaderboardQuery, first: str, second: str) -> Page:
    result = compare(query, first, second, settings)
    return Page("compare.html", result, {"result": result})


def checkpoint_page(settings: Settings, ref: str) -> Page:
    record = checkpoint_record(settings, ref)
    return Page("checkpoint.html", record, {"record": record, "chart": Markup(history_chart(record))})


def dataset_page(settings: Settings, ref: str) -> Page:
    detail = describe_version(settings, ref)
    return Page("dataset.html", detail, {"detail": detail, "fact_lines": version_fact_lines(detail["info"])})


def errors_page(settings: Settings, dataset: str, by: str | None) -> Page:
    matrix = error_matrix(settings, dataset, by)
    return Page("errors.html", matrix, {"matrix": matrix})


def versions_page(settings: Settings, query: LeaderboardQuery, metric: str) -> Page:
    result = across_versions(query, metric, settings)
    return Page("versions.html", result, {"result": result, "chart": Markup(versions_chart(result))})
