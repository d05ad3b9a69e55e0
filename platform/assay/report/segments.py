"""Segment- and system-level points behind the scatter plots, read from the dataset store and the
segment-score store (nothing is rescored).

Segment level: the human score is the one the evaluation correlates (``human_z`` where the dataset
has it, else ``human_raw``); a plot shows a uniform random sample of at most ``limit`` segments,
the same segments for every metric.

System level: the points are read from what :func:`assay.jobs.evaluation.evaluate` stored with its
run (:mod:`assay.results.system_points`); the report recomputes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from assay.config import Settings
from assay.datasets import store
from assay.datasets.human import human_array
from assay.datasets.rater_scores import human_score_name
from assay.report.collect import VersionInfo
from assay.results import segment_scores, system_points


@dataclass
class SegmentSample:
    """Human scores of sampled segments and, per signature, the metric's scores of them."""

    version: VersionInfo
    total: int
    human_kind: str
    """What the human scores are, named from the data (:func:`assay.datasets.rater_scores.human_score_name`)."""
    groups: list[str]
    human: np.ndarray
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)  # signature -> sampled segments without a score
    seed: int = 0


def segment_sample(settings: Settings, version: VersionInfo, scored: Sequence[tuple[str, str]],
                   limit: int = 2000, seed: int = 0) -> SegmentSample:
    """A sample of ``version``'s judged segments with each (metric, signature)'s scores."""
    table = store.read_table(settings, version.store_path, "segments")
    seg = table.select(["group", "aspect", "source", "references", "candidate", "human_z", "human_raw"]).to_pydict()
    total = table.num_rows
    rng = np.random.default_rng(seed)
    index = np.arange(total) if total <= limit else np.sort(rng.choice(total, size=limit, replace=False))
    has_z = any(z is not None for z in seg["human_z"])
    human = human_array(seg)[index]
    keys = segment_scores.segment_keys(seg, index)
    aspects = sorted(set(seg["aspect"]))
    kind = human_score_name(aspects[0]) if len(aspects) == 1 else ", ".join(aspects)
    if kind == "DA z" and not has_z:
        kind = "DA, raw"
    sample = SegmentSample(version, total, kind, [seg["group"][i] for i in index], human, seed=seed)
    for metric, signature in scored:
        stored = segment_scores.read_scores(settings, metric, signature, set(keys))
        lookup = dict(zip(stored.column("key").to_pylist(), stored.column("score").to_pylist(), strict=True))
        values = np.array([np.nan if lookup.get(k) is None else lookup[k] for k in keys], dtype=np.float64)
        absent = sum(1 for k in keys if k not in lookup)
        if absent:
            sample.missing[signature] = absent
        else:
            sample.scores[signature] = values
    return sample


@dataclass(frozen=True)
class SystemPoints:
    """One group's systems as the evaluation stored them: human score and metric system score."""

    group: str
    aspect: str
    systems: list[str]
    human: np.ndarray
    metric: np.ndarray


def stored_system_points(settings: Settings, dataset: str, run_id: str, signature: str) -> list[SystemPoints]:
    """The system-level points ``assay evaluate --level sys`` stored for ``signature`` in run
    ``run_id`` (:mod:`assay.results.system_points`), per (group, aspect). Nothing is recomputed here."""
    cells: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in system_points.read(settings, dataset, run_id, signature):
        cells.setdefault((row["group"], row["aspect"]), []).append(row)
    return [SystemPoints(group, aspect, [r["system"] for r in rows],
                         np.array([r["human"] for r in rows], dtype=np.float64),
                         np.array([r["metric_score"] for r in rows], dtype=np.float64))
            for (group, aspect), rows in sorted(cells.items())]
