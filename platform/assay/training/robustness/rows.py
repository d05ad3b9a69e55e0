"""The result rows of a robustness experiment, and where they are stored
(:mod:`assay.results.robustness`: one row per experiment id, variant, point, aspect and statistic)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from assay.config import Settings
from assay.jobs.runs import RecordedFile
from assay.provenance import code_version
from assay.results import correlations
from assay.results import robustness as stored
from assay.results.newest_run import newest_run_rows
from assay.training.robustness.experiment import Experiment

ROOT = stored.ROOT
RESULTS = stored.SCHEMA
EXPERIMENTS = stored.EXPERIMENTS


@dataclass(frozen=True)
class Scored:
    """One metric scored on one test version: a variant's checkpoint, or a baseline."""

    variant: str
    kind: str  # learned | baseline
    metric: str
    signature: str
    aspect: str | None = None
    """learned on this aspect: only its rows count (None: every aspect)"""
    init: str | None = None
    init_digest: str | None = None
    checkpoint: str | None = None
    checkpoint_digest: str | None = None
    trained_run_id: str | None = None
    train_dataset: str | None = None
    train_digest: str | None = None
    n_train: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Scored:
        return cls(**data)


def headline_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (signature, aspect, statistic), in the order the cells first appear: the ``all`` row (mean
    over groups), else the only group (:func:`assay.results.correlations.mean_else_each_group`); a
    cell of several groups and no mean has no single number, and is left out."""
    cell = ("signature", "aspect", "statistic")
    kept: dict[tuple[Any, ...], list[dict[str, Any]]] = {tuple(r[c] for c in cell): [] for r in rows}
    for row in correlations.mean_else_each_group(rows, cell):
        kept[tuple(row[c] for c in cell)].append(row)
    return [found[0] for found in kept.values()
            if len(found) == 1 or (found and found[0]["group"] == correlations.MEAN_GROUP)]


def point_rows(point: dict[str, Any], scored: Sequence[Scored], evaluation: dict[str, Any],
               aspects: Sequence[str]) -> list[dict[str, Any]]:
    """The result rows of one test version on the experiment's ``aspects``: ``evaluation`` is
    :func:`assay.jobs.evaluation.evaluate`'s answer on it, ``point`` the point's columns (``alpha`` or
    ``share``, ``share_actual``, ``split_by``, ``test_dataset``, ``test_digest``)."""
    by_signature: dict[str, list[Scored]] = {}
    for s in scored:
        by_signature.setdefault(s.signature, []).append(s)
    out = []
    for row in headline_rows([r for r in evaluation["rows"] if r["aspect"] in aspects]):
        for s in by_signature.get(row["signature"], []):
            if s.aspect is not None and s.aspect != row["aspect"]:
                continue
            out.append({
                **{k: point.get(k) for k in ("alpha", "share", "share_actual", "split_by", "test_dataset",
                                             "test_digest")},
                "variant": s.variant, "kind": s.kind, "init": s.init, "init_digest": s.init_digest,
                "aspect": row["aspect"], "train_dataset": s.train_dataset, "train_digest": s.train_digest,
                "n_train": s.n_train, "checkpoint": s.checkpoint, "checkpoint_digest": s.checkpoint_digest,
                "trained_run_id": s.trained_run_id, "metric": s.metric, "signature": s.signature,
                "statistic": row["statistic"], "group": row["group"], "value": row["value"],
                "ci_low": row["ci_low"], "ci_high": row["ci_high"], "n": row["n"], "unit": row.get("unit"),
                "evaluate_run_id": evaluation["run_id"],
            })
    return out


def stored_rows_of(experiment: Experiment, run_id: str, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with the experiment's common columns, as the robustness store keeps them."""
    now = datetime.now(UTC)
    common = {"run_id": run_id, "experiment": experiment.kind, "experiment_id": experiment.id,
              "dataset": experiment.version.label, "version_digest": experiment.version.digest, "seed": experiment.seed,
              "n_resamples": experiment.n_resamples, "code_version": code_version(), "created_at": now}
    return [{**common, **r} for r in rows]


def write_results(settings: Settings, experiment: Experiment, run_id: str,
                  rows: Sequence[dict[str, Any]]) -> RecordedFile:
    """Write one immutable part (atomically); returns it as the run records it."""
    relative = stored.write(settings, experiment.kind, run_id, stored_rows_of(experiment, run_id, rows))
    return RecordedFile.of(settings, relative, stored.STORE, len(rows))


def read_results(settings: Settings, experiment: str | None = None) -> list[dict[str, Any]]:
    """Every stored row (of one experiment kind, or of both), oldest part first."""
    return stored.read(settings, experiment)


def latest_results(rows: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """experiment id -> the rows of the newest run that wrote it
    (:func:`assay.results.newest_run.newest_run_rows`, the cell being the experiment id)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in newest_run_rows(rows, ("experiment_id",)):
        out.setdefault(row["experiment_id"], []).append(row)
    return out


def stored_rows(settings: Settings, experiment: Experiment) -> list[dict[str, Any]]:
    """The rows of this experiment's newest completed run, if any run wrote them."""
    return latest_results(read_results(settings, experiment.kind)).get(experiment.id, [])

