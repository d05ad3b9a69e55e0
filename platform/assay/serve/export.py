"""The served pages as self-contained files: ``assay report`` writes them beside its page, so the
report and ``assay serve`` show the same views from the same code (:mod:`assay.serve.pages`, the
same templates) and cannot disagree.

Every exported page is one HTML file with the stylesheets and the sorting script inlined (it opens
from disk or a mail attachment with no server), and its JSON twin beside it (``<page>.json``). The
export starts from the overview, every dataset version, every checkpoint and every error matrix,
and follows the links they show (leaderboards, permalinks) up to :data:`MAX_PAGES`; a linked page
that has nothing to show (a dataset not evaluated yet) is written as the app's 404 page, with its
reason. The filter and compare forms need the app and are left out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from assay.atomic import write_text
from assay.config import Settings
from assay.errors import AssayError
from assay.query.leaderboard import LeaderboardQuery
from assay.serve import pages
from assay.serve.views import report_css
from assay.slugs import slug

__all__ = ["INDEX", "MAX_PAGES", "export_site"]

INDEX = "index.html"
MAX_PAGES = 400
"""The most pages one export writes (links past it are not followed)."""

Target = tuple[str, tuple[tuple[str, Any], ...]]


class _FileLinks:
    """:mod:`assay.serve.links` for files: each link names the file its page is exported to, and is
    remembered, so the export can write every page it links."""

    def __init__(self) -> None:
        self.wanted: dict[Target, str] = {}

    def _file(self, kind: str, **params: Any) -> str:
        given = [(k, v) for k, v in params.items() if v not in (None, "")]
        shown = tuple(sorted(given))
        target = (kind, shown)
        if target not in self.wanted:
            label = slug(" ".join(str(v) for _, v in given), keep="@.", max_length=60, default=kind)
            digest = hashlib.sha256(json.dumps([kind, shown], default=str).encode()).hexdigest()[:8]
            self.wanted[target] = f"{kind}-{label}-{digest}.html"
        return self.wanted[target]

    def home(self) -> str:
        return INDEX

    def leaderboard(self, dataset: str, **params: Any) -> str:
        return self._file("leaderboard", dataset=dataset, **params)

    def compare(self, dataset: str, first: str, second: str, **params: Any) -> str:
        return self._file("compare", dataset=dataset, first=first, second=second, **params)

    def checkpoint(self, ref: str) -> str:
        return self._file("checkpoint", ref=ref)

    def dataset(self, ref: str) -> str:
        return self._file("dataset", ref=ref)

    def errors(self, dataset: str, *, by: str | None = None) -> str:
        return self._file("errors", dataset=dataset, by=by)

    def versions(self, dataset: str, metric: str, **params: Any) -> str:
        return self._file("versions", dataset=dataset, metric=metric, **params)


def _build(settings: Settings, kind: str, params: dict[str, Any]) -> pages.Page:
    builders: dict[str, Callable[[], pages.Page]] = {
        "leaderboard": lambda: pages.leaderboard_page(settings, LeaderboardQuery(
            params["dataset"], params.get("level"), params.get("stat"), params.get("group") or "all",
            params.get("aspect"), protocol=params.get("protocol"), side=params.get("side"))),
        "compare": lambda: pages.compare_page(settings, LeaderboardQuery(
            params["dataset"], params.get("level"), params.get("stat"), aspect=params.get("aspect"),
            side=params.get("side")), params["first"], params["second"]),
        "checkpoint": lambda: pages.checkpoint_page(settings, params["ref"]),
        "dataset": lambda: pages.dataset_page(settings, params["ref"]),
        "errors": lambda: pages.errors_page(settings, params["dataset"], params.get("by")),
        "versions": lambda: pages.versions_page(settings, LeaderboardQuery(
            params["dataset"], params.get("level"), params.get("stat"), params.get("group") or "all",
            params.get("aspect"), side=params.get("side")), params["metric"]),
    }
    return builders[kind]()


def export_site(settings: Settings, out_dir: Path | str) -> list[Path]:
    """Write the pages into ``out_dir`` (``index.html`` is the overview); returns the HTML files."""
    from assay.catalog.dataset_versions import list_versions
    from assay.catalog.engine import session_scope
    from assay.checkpoints.registry import list_checkpoints
    from assay.results import error_analysis

    out = Path(out_dir)
    static = {name: resources.files("assay.serve").joinpath("static", name).read_text(encoding="utf-8")
              for name in ("assay.css", "sort.js")}
    static["report.css"] = report_css()
    address = _FileLinks()
    env = pages.environment(address, static=static)
    written: list[Path] = []

    def write(name: str, shown: pages.Page) -> None:
        json_name = name.removesuffix(".html") + ".json"
        write_text(json.dumps(shown.payload, indent=2, ensure_ascii=False, default=str), out / json_name)
        html = env.get_template(shown.template).render(json_link=json_name, **shown.context)
        written.append(write_text(html, out / name))

    write(INDEX, pages.overview_page(settings))
    with session_scope(settings) as session:
        for version in list_versions(session, all_versions=True):
            address.dataset(version.label)
    for row in list_checkpoints(settings):
        address.checkpoint(row["name"])
    for dataset in sorted(set(error_analysis.SENSITIVITY.read(settings).column("dataset").to_pylist())):
        address.errors(dataset)
    done: set[Target] = set()
    while len(done) < MAX_PAGES:
        todo = [t for t in address.wanted if t not in done]
        if not todo:
            break
        target = todo[0]
        done.add(target)
        kind, params = target
        name = address.wanted[target]
        try:
            write(name, _build(settings, kind, dict(params)))
        except AssayError as exc:
            html = env.get_template("error.html").render(status=404, title="not found", message=str(exc),
                                                          json_link=None)
            written.append(write_text(html, out / name))
    return written
