"""The HTML report: one self-contained static page of everything Assay has computed.

``build_report(out_dir)`` gathers the catalog and the results stores of ``ASSAY_HOME`` and writes
``out_dir/index.html`` with, in order:

1. per-group correlation bars with bootstrap confidence intervals, ranks and clusters, for every
   evaluated dataset, level and statistic;
2. metric-vs-human scatter plots at segment level for the main dataset (a sample of at most
   ``sample_limit`` segments per plot);
3. system-level plots, human vs metric system scores per language pair, as the evaluation stored them;
   then, on MQM data, what each metric misses (``assay errors``): a heat map of blind-spot ratios per
   error category and metric, and the worst disagreements with the raters' error spans;
4. the BLEU Neighbors coverage/Spearman trade-off on HUSE, computed at build time;
5. correlation against α for quality-drift test samples, then learned metrics: validation curves
   and lineage of registered checkpoints, and the robustness experiments with training (BLEURT
   §5.2 quality drift, §5.3 WebNLG) from ``results/robustness``;
   then, when the nightly ledger has completed evaluations, each checkpoint's correlation over time
   per lineage with the recorded regressions;
6. model selection with hybrid systems (Hits@1, MRR, Diff) from ``assay select``;
7. the BLEURT Table 2 and BERTScore Table 1 layouts with Assay's and the papers' numbers;
8. numbered notes: signatures, dataset versions with digests, runs, code version.

Sections without data say which commands produce them. Charts are inline SVG; nothing is loaded
from the network when the page is viewed.

``__all__`` names the package's public modules and the names defined here.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "REPORT_FILE", "build", "charts", "collect", "context", "drift", "footnotes", "neighbors", "page",
    "palette",
    "reference", "sections", "segments", "spans", "stylesheet", "svg", "tables",
]

REPORT_FILE = "index.html"


def __getattr__(name: str) -> Any:
    """``build_report`` (:mod:`assay.report.build`) on first use: the package itself imports nothing, so
    the served app (:mod:`assay.serve`) can use the charts, spans and stylesheet without the builder."""
    if name == "build_report":
        from assay.report.build import build_report

        return build_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
