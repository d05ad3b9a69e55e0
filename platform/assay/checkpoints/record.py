"""Everything the team knows about one checkpoint, as one JSON-ready record: ``assay checkpoints
show --json`` prints it and the served checkpoint page (:mod:`assay.serve`) renders it.

* ``lineage`` and ``ancestors``: the registry's row (:func:`assay.checkpoints.registry.describe`);
* ``nightly``: its correlations night by night (:func:`assay.nightly.history.history_rows`), and
  ``lineage_nightly``: those of every checkpoint of its lineage (the same root ancestor);
* ``regressions``: the nightly checks that found it significantly worse than the team's best
  (:func:`assay.nightly.regressions.list_regressions`);
* ``sweep``: the ``assay sweep`` and trial that trained it (from its hyper-parameters), or null;
* ``recipe``: the ``assay train --recipe`` run's recipe name and stage that made it, or null;
* ``error_analysis``: its stored ``assay errors`` runs against a parent checkpoint, the cells
  that got better or worse (:mod:`assay.results.error_analysis`), newest run per dataset and ``--by``.
"""

from __future__ import annotations

from typing import Any

from assay.checkpoints.labels import signature_checkpoint
from assay.checkpoints.ref import CheckpointRef
from assay.config import Settings

__all__ = ["checkpoint_record"]


def _error_comparisons(settings: Settings, checkpoint: CheckpointRef) -> list[dict[str, Any]]:
    """The newest ``assay errors --against`` run of the checkpoint per (dataset, version, level)."""
    from assay.results import error_analysis
    from assay.results.newest_run import newest_run_rows

    stored = [r for r in error_analysis.SENSITIVITY.read(settings).to_pylist()
              if r["parent_signature"] and checkpoint.matches(signature_checkpoint(r["signature"]))]
    newest = newest_run_rows(stored, ("dataset", "version_number", "level"))
    runs: dict[str, dict[str, Any]] = {}
    for row in newest:
        run = runs.setdefault(row["run_id"], {
            "dataset": row["dataset"], "version_number": row["version_number"], "aspect": row["aspect"],
            "by": row["level"], "signature": row["signature"], "parent_signature": row["parent_signature"],
            "run_id": row["run_id"], "created_at": row["created_at"].isoformat(), "cells": []})
        run["cells"].append({"cell": row["cell"], "outputs": row["outputs"], "verdict": row["verdict"],
                             "change_std": row["change_std"], "change_std_low": row["change_std_low"],
                             "change_std_high": row["change_std_high"], "ratio": row["ratio"]})
    for run in runs.values():
        run["cells"].sort(key=lambda c: (c["verdict"] == "unchanged", -c["outputs"], c["cell"]))
    return sorted(runs.values(), key=lambda r: (r["dataset"], -r["version_number"], r["by"]))


def checkpoint_record(settings: Settings, ref: str) -> dict[str, Any]:
    """One checkpoint (NAME or digest prefix) in full: the registry's description with its nightly
    history, recorded regressions and error analyses against its parent."""
    from assay.checkpoints.registry import describe
    from assay.nightly.history import history_rows
    from assay.nightly.regressions import list_regressions

    record = describe(settings, ref)
    checkpoint = CheckpointRef(record["digest"])
    record["lineage_nightly"] = history_rows(settings, checkpoint.digest, lineage=True)
    record["nightly"] = [p for p in record["lineage_nightly"] if p["checkpoint_digest"] == checkpoint.digest]
    record["regressions"] = list_regressions(settings, checkpoint=checkpoint.digest)
    record["error_analysis"] = _error_comparisons(settings, checkpoint)
    extra = (record["lineage"].get("hyperparameters") or {}).get("extra") or {}
    record["sweep"] = ({"sweep": extra["sweep"], "trial": extra.get("trial"), "space_digest": extra.get("space_digest")}
                       if "sweep" in extra else None)
    record["recipe"] = ({"recipe": extra["recipe"], "name": extra.get("recipe_name"),
                         "stage": extra.get("recipe_stage")} if "recipe" in extra else None)
    return record
