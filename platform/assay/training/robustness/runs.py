"""The ``robustness`` run: what a call records in the catalog, whether it trained or found its rows."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from assay.config import Settings
from assay.errors import UsageError
from assay.jobs.runs import RunRecorder, version_inputs
from assay.results import robustness as stored
from assay.training.robustness.experiment import Experiment
from assay.training.robustness.rows import write_results

RUN_KIND = "robustness"


def _run_fields(experiment: Experiment) -> tuple[dict[str, Any], dict[str, Any]]:
    """(inputs, parameters) of a ``robustness`` run: the data and inits by digest, the request."""
    inputs = version_inputs(experiment.version, variants=[v.as_dict() for v in experiment.variants],
                            baselines=experiment.baselines)
    parameters = {"experiment": experiment.kind, "experiment_id": experiment.id, "points": experiment.points,
                  "config": experiment.config, "hyperparameters": experiment.hyperparameters,
                  "seed": experiment.seed, "statistics": experiment.statistics,
                  "n_resamples": experiment.n_resamples, "options": experiment.options}
    return inputs, parameters


def start_run(settings: Settings, experiment: Experiment) -> RunRecorder:
    """The ``robustness`` run, written as running: the fine-tuning runs name it as their parent."""
    return RunRecorder(settings, RUN_KIND, *_run_fields(experiment)).start()


def skipped_variants(experiment: Experiment) -> list[str]:
    """What a WebNLG experiment leaves out by design: at share 0 nothing is trained, and a variant
    that starts from an encoder has no trained rating head to score (§5.3 scores pre-trained
    checkpoints "with zero fine-tuning")."""
    if experiment.kind != "webnlg" or 0.0 not in experiment.points:
        return []
    return [f"share 0: variant {v.name} starts from an encoder ({v.init}), which has no trained rating head; "
            "nothing is trained at share 0, so it is not scored there" for v in experiment.variants
            if not v.is_checkpoint]


def checkpoints_of(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The distinct checkpoints (per variant) of stored rows, as a run summary names them."""
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        if not r["checkpoint_digest"] or (r["variant"], r["checkpoint_digest"]) in seen:
            continue
        point = {"alpha": r["alpha"]} if r["alpha"] is not None else {"share": r["share"], "split_by": r["split_by"]}
        seen[(r["variant"], r["checkpoint_digest"])] = {
            "variant": r["variant"], "point": point, "aspect": r["aspect"] if r["train_dataset"] else None,
            "name": r["checkpoint"], "digest": r["checkpoint_digest"], "run_id": r["trained_run_id"],
            "trained": False, "train_dataset": r["train_dataset"]}
    return list(seen.values())


def summary_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    keep = ("variant", "kind", "alpha", "share", "split_by", "aspect", "statistic", "value", "ci_low", "ci_high",
            "checkpoint", "test_dataset")
    return [{k: r.get(k) for k in keep} for r in rows]


def finish_run(settings: Settings, recorder: RunRecorder, experiment: Experiment, rows: Sequence[dict[str, Any]],
               checkpoints: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Write the rows as one part and complete the run; returns the run's summary with the rows."""
    if not rows:
        raise UsageError("the experiment produced no result rows; check --variant and the points")
    recorded = write_results(settings, experiment, recorder.run_id, rows)
    summary = {"experiment": experiment.kind, "experiment_id": experiment.id, "checkpoints": list(checkpoints),
               "trained": sum(bool(c.get("trained")) for c in checkpoints), "skipped": skipped_variants(experiment),
               "result_file": recorded.path, "reused_run": None, "rows": summary_rows(rows)}
    recorder.complete(summary, [recorded])
    return {**summary, "run_id": recorder.run_id, "rows": read_part(settings, recorded.path)}


def read_part(settings: Settings, relative: str) -> list[dict[str, Any]]:
    """The rows of one stored part, JSON-able."""
    return stored.read_part(settings, relative)


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """JSON-able: timestamps as ISO text."""
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}


def record_reuse(settings: Settings, experiment: Experiment, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A rerun of a finished experiment: one run row pointing at the stored results; nothing else
    is written, trained, scored or evaluated."""
    recorder = RunRecorder(settings, RUN_KIND, *_run_fields(experiment))
    summary = {"experiment": experiment.kind, "experiment_id": experiment.id, "checkpoints": checkpoints_of(rows),
               "trained": 0, "skipped": skipped_variants(experiment), "result_file": None,
               "reused_run": rows[0]["run_id"], "rows": summary_rows(rows)}
    recorder.record(summary)
    return {**summary, "run_id": recorder.run_id, "rows": [_plain(r) for r in rows]}
