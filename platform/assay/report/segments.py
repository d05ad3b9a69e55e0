"""Segment- and system-level points behind the scatter plots, read from the dataset store and the
segment-score store (nothing is rescored).

Segment level: the human score is the one the evaluation correlates (``human_z`` where the dataset
has it, else ``human_raw``); a plot shows a uniform random sample of at most ``limit`` segments,
the same segments for every metric.

System level: system scores are recomputed exactly as :func:`assay.evaluation.evaluate` computes
them, from the stored segment scores of each system's full test-set outputs over the segments
every system of the group has: the corpus score from summed sufficient statistics for metrics that
store them (BLEU), otherwise the mean segment score. The human score is the system's DA z-score.
The report checks its recomputed Pearson r against the evaluation's before showing it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from assay.config import Settings
from assay.datasets import store
from assay.report.collect import VersionInfo
from assay.results import segment_scores


@dataclass
class SegmentSample:
    """Human scores of sampled segments and, per signature, the metric's scores of them."""

    version: VersionInfo
    total: int
    human_kind: str  # "DA z" or "raw"
    groups: list[str]
    human: np.ndarray
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)  # signature -> sampled segments without a score
    seed: int = 0


def segment_sample(settings: Settings, version: VersionInfo, scored: Sequence[tuple[str, str]],
                   limit: int = 2000, seed: int = 0) -> SegmentSample:
    """A sample of ``version``'s judged segments with each (metric, signature)'s scores."""
    table = store.read_table(settings, version.store_path, "segments")
    seg = table.select(["group", "source", "references", "candidate", "human_z", "human_raw"]).to_pydict()
    total = table.num_rows
    rng = np.random.default_rng(seed)
    index = np.arange(total) if total <= limit else np.sort(rng.choice(total, size=limit, replace=False))
    has_z = any(z is not None for z in seg["human_z"])
    human = np.array([seg["human_z"][i] if seg["human_z"][i] is not None else seg["human_raw"][i] for i in index],
                     dtype=np.float64)
    keys = [segment_scores.segment_key(seg["source"][i], seg["references"][i], seg["candidate"][i]) for i in index]
    sample = SegmentSample(version, total, "DA z" if has_z else "raw", [seg["group"][i] for i in index], human,
                           seed=seed)
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
    """One group's systems: human z and recomputed metric system scores."""

    group: str
    aspect: str
    systems: list[str]
    human: np.ndarray
    metric: np.ndarray
    items: int
    corpus: bool

    @property
    def pearson(self) -> float | None:
        if len(self.human) < 2 or np.ptp(self.human) == 0 or np.ptp(self.metric) == 0:
            return None
        return float(np.corrcoef(self.human, self.metric)[0, 1])


def _corpus_scorer(metric: str) -> Any:
    """An instance of the metric's class, for ``corpus_score`` (default parameters, as the evaluation)."""
    from assay.metrics.registry import metric_class

    return metric_class(metric)()


@dataclass(frozen=True)
class SystemLayout:
    """Which stored outputs make up each judged system of a version: (group, aspect) -> the judged
    systems' rows, and (group, output system) -> segment id -> segment key."""

    groups: dict[tuple[str, str], list[dict[str, Any]]]
    keys: dict[tuple[str, str], dict[str, str]]

    def wanted(self) -> set[str]:
        return {k for rows in self.groups.values() for r in rows
                for k in self.keys[(r["group"], r["output_system"])].values()}


def system_layout(settings: Settings, version: VersionInfo) -> SystemLayout:
    """The judged systems (with a human z-score and stored outputs) of ``version``."""
    systems = store.read_table(settings, version.store_path, "systems").to_pylist()
    judged = {(r["group"], r["output_system"]) for r in systems if r["output_system"] and r["human_z"] is not None}
    outputs = store.read_table(settings, version.store_path, "outputs")
    keys: dict[tuple[str, str], dict[str, str]] = {}
    if judged and outputs.num_rows:
        out = outputs.select(["group", "system", "segment_id", "source", "references", "candidate"]).to_pydict()
        for g, s, sid, src, refs, cand in zip(out["group"], out["system"], out["segment_id"], out["source"],
                                             out["references"], out["candidate"], strict=True):
            if (g, s) in judged:
                keys.setdefault((g, s), {})[sid] = segment_scores.segment_key(src, refs, cand)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in systems:
        if row["output_system"] and row["human_z"] is not None and (row["group"], row["output_system"]) in keys:
            groups.setdefault((row["group"], row["aspect"]), []).append(row)
    return SystemLayout(groups, keys)


def system_points(settings: Settings, layout: SystemLayout, metric: str, signature: str) -> list[SystemPoints]:
    """Per (group, aspect) with at least 3 judged systems whose outputs are all scored."""
    wanted = layout.wanted()
    if not wanted:
        return []
    stored = segment_scores.read_scores(settings, metric, signature, wanted)
    lookup = {k: (s, st) for k, s, st in zip(stored.column("key").to_pylist(), stored.column("score").to_pylist(),
                                             stored.column("stats").to_pylist(), strict=True)}
    if not wanted <= lookup.keys():
        return []
    corpus = any(st is not None for _, st in lookup.values())
    scorer = _corpus_scorer(metric) if corpus else None  # only corpus metrics store statistics
    found = []
    for (group, aspect), rows in sorted(layout.groups.items()):
        if len(rows) < 3:
            continue
        by_system = [layout.keys[(group, r["output_system"])] for r in rows]
        items = sorted(set.intersection(*(set(k) for k in by_system)), key=lambda s: (len(s), s))
        keys = [[ks[i] for i in items] for ks in by_system]
        if scorer is not None:
            scores = [scorer.corpus_score(np.array([lookup[k][1] for k in ks], dtype=np.float64)) for ks in keys]
        else:
            scores = [float(np.mean(np.array([lookup[k][0] for k in ks], dtype=np.float64))) for ks in keys]
        found.append(SystemPoints(group, aspect, [r["system"] for r in rows],
                                  np.array([r["human_z"] for r in rows], dtype=np.float64),
                                  np.array(scores, dtype=np.float64), len(items), corpus))
    return found
