"""``assay report``'s page, built: every section rendered from the stores and the catalog into one
self-contained ``index.html`` (:mod:`assay.report`)."""

from __future__ import annotations

import hashlib
import time
from datetime import UTC, datetime
from pathlib import Path

from assay.atomic import write_text
from assay.checkpoints.registry import labels_by_digest
from assay.config import Settings, load_settings
from assay.jobs.runs import RunRecorder
from assay.provenance import code_version
from assay.report import REPORT_FILE
from assay.report.collect import correlation_rows, dataset_versions, latest_evaluations, side_evaluations
from assay.report.context import ReportContext
from assay.report.page import render_page
from assay.report.palette import MetricPalette
from assay.report.sections import (
    Section,
    correlations,
    errors,
    learned,
    nightly,
    reproduction,
    scatter,
    selection,
    systems,
)
from assay.report.sections import drift as drift_section
from assay.report.sections import neighbors as neighbors_section
from assay.report.svg import esc
from assay.results import robustness as robustness_results
from assay.serve.export import INDEX, export_site

__all__ = ["PAGES_DIR", "build_report"]

PAGES_DIR = "pages"
"""Where the report's folder holds the served pages, exported (:func:`assay.serve.export.export_site`)."""



def build_report(out_dir: Path | str, settings: Settings | None = None, *, main_dataset: str | None = None,
                 sample_limit: int = 2000, seed: int = 0) -> Path:
    """Write the report into ``out_dir`` (created if needed); returns the path of ``index.html``.

    ``main_dataset`` picks the dataset of the segment-level scatter plots (default: WMT17 if
    evaluated, else the largest evaluated WMT dataset); ``seed`` fixes their sample.
    """
    settings = settings or load_settings()
    started = time.time()
    versions = dataset_versions(settings)
    experiment_runs = {r["evaluate_run_id"] for r in robustness_results.read(settings) if r["evaluate_run_id"]}
    stored = correlation_rows(settings)
    evaluations, drift_evaluations = latest_evaluations(stored, versions, experiment_runs)
    sides = side_evaluations(stored)
    signatures = [s for e in [*evaluations, *drift_evaluations] for s in e.signatures]
    signatures += errors.analysed_signatures(settings)
    ctx = ReportContext(settings, versions, MetricPalette.of(signatures, labels_by_digest(settings)), code_version())
    sections = [
        correlations.render(ctx, evaluations),
        scatter.render(ctx, evaluations, main_dataset, sample_limit, seed),
        systems.render(ctx, evaluations),
        errors.render(ctx),
        neighbors_section.render(ctx, versions),
        drift_section.render(ctx, drift_evaluations),
        learned.render(ctx),
    ]
    over_time = nightly.render(ctx)  # rendered in page order (footnote numbers follow citation order)
    sections += [over_time] if over_time is not None else []  # only with completed nightly evaluations
    sections += [selection.render(ctx), reproduction.render(ctx, evaluations)]
    code_note = ctx.notes.cite("code", ctx.code_version, f"report built by <code>{esc(ctx.code_version)}</code>")
    sections.append(Section("sec-notes", "Notes: signatures, dataset versions, runs", ctx.notes.html()))
    counts = {
        "dataset versions": len(versions),
        "evaluations": len(evaluations) + len(drift_evaluations),
        "metric signatures": len(set(signatures)),
        "correlations shown": sum(len(e.rows) for e in evaluations),
    }
    if sides:  # labelled, never in the headline panels (assay.results.headline)
        counts["side evaluations (not shown; assay leaderboard --side)"] = len(sides)
    exported = export_site(settings, Path(out_dir) / PAGES_DIR)
    html = render_page(sections, generated_at=datetime.now(UTC), code_version=ctx.code_version,
                       code_note=ctx.notes.marker(code_note), counts=counts, pages_link=f"{PAGES_DIR}/{INDEX}")
    target = write_text(html, Path(out_dir) / REPORT_FILE)
    evaluate_runs = sorted({r for e in [*evaluations, *drift_evaluations] for r in e.run_ids})
    RunRecorder(settings, "report", inputs={"evaluate_runs": evaluate_runs,
                                            "dataset_versions": sorted(v.ref.digest for v in versions)},
                parameters={"main_dataset": main_dataset, "sample_limit": sample_limit, "seed": seed},
                started=started).record({"path": str(target.resolve()), **counts, "pages": len(exported),
                                         "sha256": hashlib.sha256(html.encode()).hexdigest()})
    return target
