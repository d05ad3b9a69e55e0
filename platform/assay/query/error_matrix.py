"""The error-analysis matrix of one MQM or ESA dataset version: error cells (rows) x metrics
(columns), from the stored ``assay errors`` runs (:mod:`assay.results.error_analysis`). One read
for every view of it: ``assay errors --matrix --json``, the served error-analysis page and the
report's section.

The rules, each here only:

* **one version**: the newest analysed version of the dataset, unless ``NAME@VERSION`` pins one;
* **one ``--by`` per matrix** (``category`` or ``category+severity``): a matrix never mixes the
  two. Without ``by`` it is the level the most metrics were analysed at (ties: ``category``, the
  CLI's default); the metrics analysed only at another level are listed under ``elsewhere``;
* **one run per metric**: each signature's newest run at that level
  (:func:`assay.results.newest_run.newest_run_rows`);
* **no stale verdicts**: a cell's verdict against a parent checkpoint (better/worse) is shown only
  when that run is the metric's newest analysis of the version; an older ``--against`` run
  superseded by a newer analysis keeps its numbers, but its verdicts are dropped and the metric is
  marked ``superseded``.

Cells are ordered as the report shows them: those the humans clearly penalise first, by mean
blind-spot ratio over the metrics (the most missed first). The worst disagreements are the chosen
runs' own, each error list parsed from its JSON.
"""

from __future__ import annotations

import json
from typing import Any

from assay.config import Settings
from assay.datasets.names import DatasetRef
from assay.errors import NotFoundError
from assay.results import error_analysis
from assay.results.newest_run import newest_run_rows

__all__ = ["LEVEL_ORDER", "error_matrix", "order_cells"]

LEVEL_ORDER = ("category", "category+severity")
"""The ``--by`` levels of ``assay errors``, the default first."""


def order_cells(rows: list[dict[str, Any]]) -> list[str]:
    """Cells the humans penalise first, by mean blind-spot ratio over metrics (the most missed first)."""
    by_cell: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_cell.setdefault(row["cell"], []).append(row)

    def key(cell: str) -> tuple[bool, float, str]:
        found = by_cell[cell]
        ratios = [r["ratio"] for r in found if r["ratio"] is not None]
        penalised = any(r["human_penalises"] for r in found)
        return (not penalised, sum(ratios) / len(ratios) if ratios else float("inf"), cell)

    return sorted(by_cell, key=key)


def _level_key(level: str) -> tuple[int, str]:
    return (LEVEL_ORDER.index(level) if level in LEVEL_ORDER else len(LEVEL_ORDER), level)


def error_matrix(settings: Settings, dataset: str, by: str | None = None) -> dict[str, Any]:
    """The matrix of ``dataset`` (``NAME`` or ``NAME@VERSION``) at ``by`` (see the module's rules)."""
    ref = DatasetRef.parse(dataset)
    stored = [r for r in error_analysis.SENSITIVITY.read(settings).to_pylist() if r["dataset"] == ref.name]
    if not stored:
        raise NotFoundError(f"no error analysis of {ref.name} yet; run `assay errors --dataset {ref.name} "
                            "--metric METRIC` on a dataset with error spans (MQM, ESA)")
    if ref.version_number is not None or ref.version_digest is not None:
        stored = [r for r in stored if (ref.version_number is None or r["version_number"] == ref.version_number)
                  and (ref.version_digest is None or r["version_digest"].startswith(ref.version_digest))]
        if not stored:
            raise NotFoundError(f"no error analysis of {dataset}; `assay errors` analyses the newest version "
                                "unless pinned")
    else:
        newest = max(r["version_number"] for r in stored)
        stored = [r for r in stored if r["version_number"] == newest]
    newest_overall = {r["signature"]: r["run_id"] for r in newest_run_rows(stored, ("signature",))}
    signatures_at: dict[str, set[str]] = {}
    for r in stored:
        signatures_at.setdefault(r["level"], set()).add(r["signature"])
    levels = sorted(signatures_at, key=_level_key)
    if by is None:
        by = min(levels, key=lambda lv: (-len(signatures_at[lv]), _level_key(lv)))
    elif by not in signatures_at:
        raise NotFoundError(f"no error analysis of {dataset} by {by}; analysed by: {', '.join(levels)}")
    chosen = newest_run_rows([r for r in stored if r["level"] == by], ("signature",))
    metrics: dict[str, dict[str, Any]] = {}
    for row in chosen:
        superseded = newest_overall[row["signature"]] != row["run_id"]
        if superseded:
            row.update(verdict=None, change_std=None, change_std_low=None, change_std_high=None)
        metrics.setdefault(row["signature"], {
            "metric": row["metric"], "signature": row["signature"], "run_id": row["run_id"],
            "created_at": row["created_at"], "parent_signature": None if superseded else row["parent_signature"],
            "superseded": superseded, "n_resamples": row["n_resamples"], "seed": row["seed"],
            "code_version": row["code_version"]})
    metrics = dict(sorted(metrics.items(), key=lambda kv: (kv[1]["metric"], kv[0])))
    at = {(r["cell"], r["signature"]): r for r in chosen}
    cells = []
    for cell in order_cells(chosen):
        found = [at[(cell, s)] for s in metrics if (cell, s) in at]
        yardstick = max(found, key=lambda r: r["outputs"])  # the humans' drop from the run that saw most outputs
        cells.append({"cell": cell, "outputs": yardstick["outputs"],
                      "human_drop": yardstick["human_drop"], "human_drop_low": yardstick["human_drop_low"],
                      "human_drop_high": yardstick["human_drop_high"],
                      "human_penalises": any(r["human_penalises"] for r in found),
                      "metrics": {r["signature"]: r for r in found}})
    runs = {m["run_id"] for m in metrics.values()}
    pairs = sorted((r for r in error_analysis.DISAGREEMENTS.read(settings).to_pylist() if r["run_id"] in runs),
                   key=lambda r: (r["signature"], r["rank"]))
    for pair in pairs:
        for side in ("preferred", "other"):
            pair[f"{side}_errors"] = json.loads(pair[f"{side}_errors"])
    first = chosen[0]
    elsewhere = sorted({r["signature"] for r in stored} - set(metrics))
    return {"dataset": ref.name, "version_number": first["version_number"], "version_digest": first["version_digest"],
            "label": f"{ref.name}@{first['version_number']}", "aspect": first["aspect"], "by": by, "levels": levels,
            "metrics": list(metrics.values()), "elsewhere": elsewhere, "cells": cells, "disagreements": pairs}
