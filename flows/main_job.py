"""The main job (``assay run``): ingest what the data directory holds, score the default metrics,
evaluate, and write the report. Each step is a subflow; everything already done is a no-op
(identical datasets are not re-ingested, scored segments are not rescored).

A model-based default metric declares the languages its model covers (the embedded MiniLM:
English). Language pairs whose target language it does not cover (WMT16's en-ru) are left out
of that dataset's evaluation for every metric, so the average over groups (``all``) compares
every metric on the same items; the job says so in one line per dataset (``notes``)."""

from __future__ import annotations

from typing import Any

from prefect import flow, task

from assay.config import DEFAULT_RESAMPLES
from assay.flows.evaluate import evaluate_flow
from assay.flows.hooks import install_flow_hooks
from assay.flows.ingest import ingest_directory_flow
from assay.flows.score import score_flow
from assay.jobs.evaluation import MIN_SYSTEMS

#: segment-level defaults for datasets with references; BERTScore uses the embedded MiniLM, layer 4
REFERENCE_METRICS: list[dict[str, Any]] = [
    {"name": "sentbleu", "params": {}},
    {"name": "chrf", "params": {}},
    {"name": "bertscore", "params": {"layer": 4}},
]
#: reference-less datasets (HUSE) get the estimator
REFERENCE_LESS_METRICS: list[dict[str, Any]] = [{"name": "bleu-neighbors", "params": {}}]
#: system level, over full test sets
SYSTEM_METRICS: list[dict[str, Any]] = [{"name": "bleu", "params": {}}]


@task(name="profile-dataset")
def profile_task(dataset: str) -> dict[str, Any]:
    from assay.datasets.profile import profile

    return profile(dataset)


@flow(name="assay-run", on_running=[install_flow_hooks])
def main_job_flow(data_dir: str, report_dir: str | None = None, system_level: bool = True,
                  n_resamples: int = DEFAULT_RESAMPLES) -> dict[str, Any]:
    ingested = ingest_directory_flow(data_dir)
    summary: dict[str, Any] = {"datasets": [], "report": None}
    for result in ingested:
        label = result["label"]
        info = profile_task(label)
        entry: dict[str, Any] = {"dataset": label, "scored": [], "evaluated": [], "notes": []}
        if info["segments"]:
            metrics = REFERENCE_METRICS if info["has_references"] else REFERENCE_LESS_METRICS
            left_out: dict[str, list[str]] = {}
            for metric in metrics:
                scored = score_flow(label, metric, scope="judged", progress=False)
                entry["scored"].append(scored)
                for group in scored.get("excluded_groups") or {}:
                    left_out.setdefault(group, []).append(metric["name"])
            if left_out:
                entry["notes"].append(
                    f"{label}: left out {', '.join(sorted(left_out))}: the model of "
                    f"{', '.join(sorted({m for ms in left_out.values() for m in ms}))} does not cover the target "
                    "language (`assay score --any-language` scores it anyway)")
            entry["evaluated"].append(evaluate_flow(label, level="seg", n_resamples=n_resamples,
                                                    exclude_groups=sorted(left_out))["run_id"])
        if system_level and info["systems_with_outputs"] >= MIN_SYSTEMS:  # fewer are not correlated
            for metric in SYSTEM_METRICS:
                entry["scored"].append(score_flow(label, metric, scope="outputs", progress=False))
            entry["evaluated"].append(evaluate_flow(label, level="sys", n_resamples=n_resamples)["run_id"])
        summary["datasets"].append(entry)
    if report_dir:
        from assay.flows.report import report_flow

        summary["report"] = report_flow(report_dir)
    return summary
