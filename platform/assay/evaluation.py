"""Meta-evaluation: how well each metric's scores agree with the human scores.

For a pinned dataset version and a level (``seg`` or ``sys``), every metric scored on that
version (or the ones asked for) is correlated with the human scores per group (language pair,
task) and aspect, and averaged over groups (group ``all``, the plain mean, as the WMT and BLEURT
tables report "avg"). Each number gets a percentile bootstrap confidence interval with a recorded
seed, and metrics are ranked into significance clusters (mt-metrics-eval's rule, see
:mod:`assay.stats.clusters`) from pairwise tests:

* segment level, per group: the PERM-BOTH paired permutation test (Deutsch et al., 2021, as in
  mt-metrics-eval);
* system level, Pearson: Williams' test for dependent correlations (Graham & Baldwin, 2014, used
  by WMT since 2014);
* everything else (the ``all`` mean, other system-level statistics, DARR Kendall-like): a paired
  bootstrap test on the same resamples that give the confidence intervals.

Segment level follows BLEURT §5 / BERTScore §4 (WMT17: Kendall τ and Pearson r against DA z
per language pair). System level follows WMT and BERTScore Table 1: a system's metric score is the
corpus score for metrics that have one (BLEU, from summed sufficient statistics) and otherwise the
mean of its segment scores over the full test set (``assay score --scope outputs``).
"""

from __future__ import annotations

import hashlib
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.config import DEFAULT_RESAMPLES, DEFAULT_SEED, Settings, load_settings
from assay.datasets import store
from assay.errors import UsageError
from assay.metrics.registry import metric_class
from assay.provenance import code_version
from assay.results import correlations, segment_scores
from assay.runs import RecordedFile, RunRecorder, new_run_id
from assay.stats import (
    acc_23,
    assign_clusters,
    kendall_like_from_pairs,
    metric_ties_for_wmt_year,
    permutation_test,
    tie_calibration,
    williams_test,
)
from assay.stats.bootstrap import paired_bootstrap_p_value, percentile_interval, resample_indices
from assay.stats.resampled import (
    resample_counts,
    resampled_pair_share,
    resampled_statistic,
    rowwise,
    scalar_statistic,
)
from assay.stats.system_level import resampled_corpus_scores, resampled_system_scores, system_scores

SEG_STATS = ("pearson", "spearman", "kendall", "kendall_c", "kendall_like", "tau23", "acc23", "acc_t")
SYS_STATS = ("pearson", "spearman", "kendall", "pairwise_accuracy")
DEFAULT_STATS = {"seg": ("pearson", "kendall"), "sys": ("pearson", "kendall")}
PERMUTATION_NAMES = {"pearson": "pearson", "spearman": "spearman", "kendall": "kendall_b", "kendall_c": "kendall_c"}


@dataclass(frozen=True)
class ScoredMetric:
    metric: str
    signature: str


def _replicates(statistic: str, human: np.ndarray, metric: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Every bootstrap replicate of ``statistic``, vectorised (:mod:`assay.stats.resampled`).

    Tie-calibrated accuracy (acc-t, Deutsch et al. 2023) keeps the tie threshold calibrated on the
    full sample: recalibrating per replicate costs a threshold search each time and would widen
    the interval by the calibration's own variance, which the point estimate does not carry either.
    """
    if statistic == "acc_t":
        epsilon = tie_calibration(human, metric, statistic="acc_23").epsilon if len(human) > 1 else 0.0
        return resampled_statistic("acc23", human, metric, index, epsilon=epsilon,
                                   scalar=lambda x, y: float(acc_23(x, y, epsilon=epsilon).value))
    return resampled_statistic(statistic, human, metric, index, scalar=scalar_statistic(statistic))


def _point(statistic: str, human: np.ndarray, metric: np.ndarray) -> float:
    if statistic == "acc_t":
        return float(tie_calibration(human, metric, statistic="acc_23").value)
    return scalar_statistic(statistic)(human, metric)


def digest_of(values: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(sorted(values)).encode()).hexdigest()[:16]


def scored_signatures(settings: Settings) -> list[ScoredMetric]:
    """Every (metric, signature) with scores in the results store."""
    root = settings.home / segment_scores.ROOT
    found = []
    for folder in sorted(root.glob("metric=*/sig=*")) if root.is_dir() else []:
        parts = sorted(folder.glob("part-*.parquet"))
        if parts:
            signature = pq.read_table(parts[0], columns=["signature"]).column("signature")[0].as_py()
            found.append(ScoredMetric(folder.parent.name.split("=", 1)[1], signature))
    return found


def wanted_signatures(candidates: list[ScoredMetric], metrics: Sequence[str] | None) -> list[ScoredMetric]:
    if not metrics:
        return candidates
    return [c for c in candidates if any(c.metric == m or c.signature == m or c.signature.startswith(m + "|")
                                         for m in metrics)]


def _protocol(info: dict[str, Any], protocol: str | None) -> tuple[str, str]:
    """(protocol name, DARR metric-tie policy)."""
    if protocol:
        year = int(protocol[3:]) + 2000 if protocol.startswith("wmt") and protocol[3:].isdigit() else None
    else:
        year = int(info["year"]) if str(info.get("year", "")).isdigit() else None
        protocol = f"wmt{year % 100:02d}" if year else "default"
    ties = metric_ties_for_wmt_year(year) if year and year >= 2017 else "discordant"
    return protocol, ties


class _Resampler:
    """Bootstrap resample indices shared by every metric of a group, so replicates are paired
    (:func:`assay.stats.bootstrap.resample_indices`, one stream per group)."""

    def __init__(self, seed: int, n_resamples: int) -> None:
        self.seed, self.n_resamples = seed, n_resamples
        self._cache: dict[tuple[str, int], np.ndarray] = {}

    def indices(self, group_key: str, size: int) -> np.ndarray:
        key = (group_key, size)
        if key not in self._cache:
            self._cache[key] = resample_indices(self.seed, group_key, self.n_resamples, size)
        return self._cache[key]


def _array(values: np.ndarray | None) -> np.ndarray:
    return np.empty(0) if values is None else values


def _ci(replicates: np.ndarray) -> tuple[float | None, float | None]:
    low, high = percentile_interval(replicates)
    return (None, None) if np.isnan(low) else (low, high)


@dataclass
class _Cell:
    """One (group, aspect, statistic, metric) correlation with its replicates."""

    group: str
    aspect: str
    statistic: str
    scored: ScoredMetric
    value: float | None
    replicates: np.ndarray
    n: int
    n_excluded: int
    item_set: str
    human: np.ndarray | None = None
    metric_values: np.ndarray | None = None
    systems: list[str] | None = None
    """System level: the system of each entry of ``human``/``metric_values`` (the stored points)."""


def evaluate(
    dataset: str,
    *,
    level: str = "seg",
    metrics: Sequence[str] | None = None,
    statistics: Sequence[str] | None = None,
    seed: int = DEFAULT_SEED,
    n_resamples: int = DEFAULT_RESAMPLES,
    alpha: float = 0.05,
    protocol: str | None = None,
    exclude_groups: Sequence[str] = (),
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Evaluate the metrics scored on a dataset version; writes correlations and significance
    parts to the results store and a run to the catalog, and returns the rows."""
    settings = settings or load_settings()
    started = time.time()
    if level not in ("seg", "sys"):
        raise UsageError(f"unknown level {level!r} (expected seg or sys)")
    allowed = SEG_STATS if level == "seg" else SYS_STATS
    statistics = list(statistics or DEFAULT_STATS[level])
    unknown = [s for s in statistics if s not in allowed]
    if unknown:
        raise UsageError(f"statistic(s) {unknown} not available at level {level} (choose from {', '.join(allowed)})")
    with session_scope(settings) as session:
        version = resolve(session, dataset)
        name, number, digest, store_path, info = (version.dataset.name, version.number, version.digest,
                                                  version.store_path, dict(version.info))
    protocol_name, metric_ties = _protocol(info, protocol)
    candidates = wanted_signatures(scored_signatures(settings), metrics)
    resampler = _Resampler(seed, n_resamples)
    excluded = frozenset(exclude_groups)
    if level == "seg":
        cells, skipped = _segment_cells(settings, store_path, candidates, statistics, metric_ties, resampler,
                                        excluded)
    else:
        cells, skipped = _system_cells(settings, store_path, candidates, statistics, resampler, excluded)
    if not cells:
        hint = ("score it first, e.g. `assay score --dataset " + dataset + " --metric sentbleu`" if level == "seg"
                else "system level needs full test-set scores: `assay score --dataset " + dataset
                + " --metric bleu --scope outputs`")
        raise UsageError(f"no metric scores cover {name}@{number} at level {level}; {hint}"
                         + (f" (incomplete: {', '.join(skipped)})" if skipped else ""))
    cells += _group_means(cells)
    significance = _significance(cells, level, seed, n_resamples)
    run_id = new_run_id()
    now = datetime.now(UTC)
    rows = _ranked_rows(cells, significance, alpha)
    records = [{
        "run_id": run_id, "dataset": name, "dataset_version": number, "dataset_digest": digest, "level": level,
        "group": c.group, "aspect": c.aspect, "metric": c.scored.metric, "signature": c.scored.signature,
        "statistic": c.statistic, "value": c.value, "ci_low": _ci(c.replicates)[0], "ci_high": _ci(c.replicates)[1],
        "n": c.n, "n_excluded": c.n_excluded, "item_set": c.item_set, "protocol": protocol_name,
        "rank": rank, "cluster": cluster, "seed": seed, "n_resamples": n_resamples,
        "code_version": code_version(), "created_at": now,
    } for c, rank, cluster in rows]
    sig_records = [{"run_id": run_id, "dataset": name, "dataset_version": number, "level": level, "group": g,
                    "aspect": a, "statistic": s, "better": b, "worse": w, "p_value": p, "test": t}
                   for (g, a, s, b, w), (p, t) in significance.items()]
    point_records = [{"run_id": run_id, "dataset": name, "dataset_version": number, "level": level,
                      "group": c.group, "aspect": c.aspect, "metric": c.scored.metric, "signature": c.scored.signature,
                      "system": system, "human": float(h), "metric_score": float(m)}
                     for c in cells if c.systems is not None and c.statistic == statistics[0]
                     for system, h, m in zip(c.systems, _array(c.human), _array(c.metric_values), strict=True)]
    tables: list[tuple[str, pa.Schema, list[dict[str, Any]]]] = [
              (correlations.CORRELATIONS_ROOT, correlations.CORRELATIONS, records),
              (correlations.SIGNIFICANCE_ROOT, correlations.SIGNIFICANCE, sig_records),
              (correlations.SYSTEM_POINTS_ROOT, correlations.SYSTEM_POINTS, point_records)]
    files = []
    for root, schema, table_rows in tables:
        if table_rows or root != correlations.SYSTEM_POINTS_ROOT:
            table = pa.Table.from_pylist(table_rows, schema=schema)
            path = correlations.write_part(settings, root, name, run_id, table, schema)
            files.append(RecordedFile.of(settings, path, path.parts[1], len(table_rows)))
    recorder = RunRecorder(
        settings, "evaluate",
        inputs={"dataset": name, "version": number, "dataset_digest": digest,
                "signatures": sorted({c.scored.signature for c in cells})},
        parameters={"level": level, "statistics": statistics, "seed": seed, "n_resamples": n_resamples,
                    "alpha": alpha, "protocol": protocol_name, "exclude_groups": sorted(excluded),
                    "metrics": list(metrics or [])},
        run_id=run_id, started=started)
    seconds = recorder.record({"rows": len(records), "skipped": skipped, "files": [f.path for f in files]}, files)
    public = [{k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in r.items()} for r in records]
    return {"run_id": run_id, "dataset": f"{name}@{number}", "level": level, "protocol": protocol_name,
            "rows": public, "skipped": skipped, "seconds": seconds}


def score_lookup(settings: Settings, scored: ScoredMetric, keys: set[str]) -> dict[str, tuple[float | None, Any]]:
    table = segment_scores.read_scores(settings, scored.metric, scored.signature, keys)
    return {k: (s, st) for k, s, st in zip(table.column("key").to_pylist(), table.column("score").to_pylist(),
                                           table.column("stats").to_pylist(), strict=True)}


def _table(settings: Settings, store_path: str, name: str, excluded: frozenset[str]) -> pa.Table:
    """A stored table without the groups the request leaves out (e.g. language pairs a model-based
    metric does not cover, so every metric is evaluated on the same items)."""
    table = store.read_table(settings, store_path, name)
    if not excluded or table.num_rows == 0:
        return table
    keep = [g not in excluded for g in table.column("group").to_pylist()]
    return table.filter(pa.array(keep, pa.bool_()))


def _segment_cells(settings: Settings, store_path: str, candidates: list[ScoredMetric], statistics: list[str],
                   metric_ties: str, resampler: _Resampler, excluded: frozenset[str]) -> tuple[list[_Cell], list[str]]:
    segments = _table(settings, store_path, "segments", excluded)
    darr = (_darr_cells(settings, store_path, candidates, metric_ties, resampler, excluded)
            if "kendall_like" in statistics else [])
    if segments.num_rows == 0:
        return darr, []  # e.g. WMT18: relative rankings only
    seg = segments.to_pydict()
    keys = [segment_scores.segment_key(s, r, c)
            for s, r, c in zip(seg["source"], seg["references"], seg["candidate"], strict=True)]
    human = np.array([z if z is not None else (r if r is not None else np.nan)
                      for z, r in zip(seg["human_z"], seg["human_raw"], strict=True)], dtype=np.float64)
    groups: dict[tuple[str, str], list[int]] = {}
    for i, (g, a) in enumerate(zip(seg["group"], seg["aspect"], strict=True)):
        groups.setdefault((g, a), []).append(i)
    cells: list[_Cell] = []
    skipped: list[str] = []
    key_set = set(keys)
    for scored in candidates:
        if metric_class(scored.metric).has_sufficient_statistics:
            continue  # a corpus-level metric (BLEU): its segment scores are another metric's (sentbleu)
        lookup = score_lookup(settings, scored, key_set)
        if not key_set <= lookup.keys():
            if lookup:
                skipped.append(f"{scored.signature} ({len(key_set - lookup.keys())} segments unscored)")
            continue
        scores = np.array([np.nan if lookup[k][0] is None else lookup[k][0] for k in keys], dtype=np.float64)
        for (group, aspect), index in sorted(groups.items()):
            idx = np.array(index)
            ok = idx[~np.isnan(human[idx]) & ~np.isnan(scores[idx])]
            item_set = digest_of([keys[i] for i in ok])
            for statistic in statistics:
                if statistic == "kendall_like":
                    continue  # from DARR pairs below
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    value = _point(statistic, human[ok], scores[ok]) if len(ok) > 1 else float("nan")
                replicates = _replicates(statistic, human[ok], scores[ok],
                                         resampler.indices(f"seg/{group}/{aspect}", len(ok)))
                cells.append(_Cell(group, aspect, statistic, scored, None if np.isnan(value) else value, replicates,
                                   len(ok), len(idx) - len(ok), item_set, human[ok], scores[ok]))
    return cells + darr, skipped


def _darr_cells(settings: Settings, store_path: str, candidates: list[ScoredMetric], metric_ties: str,
                resampler: _Resampler, excluded: frozenset[str]) -> list[_Cell]:
    """WMT DARR Kendall-like from relative-ranking pairs over full test-set outputs."""
    rankings = _table(settings, store_path, "rankings", excluded).to_pylist()
    if not rankings:
        return []
    outputs = _table(settings, store_path, "outputs", excluded).to_pylist()
    key_of = {(o["group"], o["system"], o["segment_id"]): segment_scores.segment_key(o["source"], o["references"],
                                                                                       o["candidate"])
              for o in outputs}
    pairs = [(r["group"], key_of.get((r["group"], r["better_system"], r["segment_id"])),
              key_of.get((r["group"], r["worse_system"], r["segment_id"]))) for r in rankings]
    pairs_found = [(g, b, w) for g, b, w in pairs if b and w]
    cells = []
    keys: set[str] = {k for _, b, w in pairs_found for k in (b, w)}
    for scored in candidates:
        if metric_class(scored.metric).has_sufficient_statistics:
            continue  # corpus-level metric: not a segment-level metric
        lookup = score_lookup(settings, scored, keys)
        if not keys <= lookup.keys():
            continue
        by_group: dict[str, list[tuple[float | None, float | None]]] = {}
        for group, better, worse in pairs_found:
            by_group.setdefault(group, []).append((lookup[better][0], lookup[worse][0]))
        for group, values in sorted(by_group.items()):
            b = np.array([v[0] for v in values], dtype=np.float64)
            w = np.array([v[1] for v in values], dtype=np.float64)
            result = kendall_like_from_pairs(b, w, metric_ties=metric_ties)  # type: ignore[arg-type]
            index = resampler.indices(f"darr/{group}", len(b))
            replicates = resampled_pair_share(b, w, index, ties_are_discordant=metric_ties == "discordant")
            cells.append(_Cell(group, "darr", "kendall_like", scored, result.value, replicates, len(b), 0,
                               digest_of([f"{x}>{y}" for g, x, y in pairs_found if g == group])))
    return cells


def _system_cells(settings: Settings, store_path: str, candidates: list[ScoredMetric], statistics: list[str],
                  resampler: _Resampler, excluded: frozenset[str]) -> tuple[list[_Cell], list[str]]:
    systems = _table(settings, store_path, "systems", excluded).to_pylist()
    outputs = _table(settings, store_path, "outputs", excluded)
    if not systems or outputs.num_rows == 0:
        return [], []
    out = outputs.to_pydict()
    by_system: dict[tuple[str, str], dict[str, str]] = {}
    for g, s, sid, src, refs, cand in zip(out["group"], out["system"], out["segment_id"], out["source"],
                                         out["references"], out["candidate"], strict=True):
        by_system.setdefault((g, s), {})[sid] = segment_scores.segment_key(src, refs, cand)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in systems:
        if row["output_system"] and row["human_z"] is not None and (row["group"], row["output_system"]) in by_system:
            groups.setdefault((row["group"], row["aspect"]), []).append(row)
    all_keys = {k for rows in groups.values() for r in rows
                for k in by_system[(r["group"], r["output_system"])].values()}
    cells: list[_Cell] = []
    skipped: list[str] = []
    for scored in candidates:
        lookup = score_lookup(settings, scored, all_keys)
        if not all_keys <= lookup.keys():
            if lookup:
                skipped.append(f"{scored.signature} ({len(all_keys - lookup.keys())} outputs unscored)")
            continue
        metric = metric_class(scored.metric)
        corpus = metric.has_sufficient_statistics
        corpus_score = metric().corpus_score if corpus else None
        for (group, aspect), rows in sorted(groups.items()):
            if len(rows) < 3:
                continue
            items = sorted(set.intersection(*(set(by_system[(group, r["output_system"])]) for r in rows)),
                           key=lambda s: (len(s), s))
            human = np.array([r["human_z"] for r in rows], dtype=np.float64)
            keys = [[by_system[(group, r["output_system"])][i] for i in items] for r in rows]
            counts = resample_counts(resampler.indices(f"sys/{group}/{aspect}", len(items)), len(items))
            if corpus_score is not None:
                # systems x items x sufficient statistics; the system score is the corpus score
                stats = np.array([[lookup[k][1] for k in row] for row in keys], dtype=np.float64)
                metric_sys = resampled_corpus_scores(stats, np.ones((1, len(items))), corpus_score)[0]
                resampled = resampled_corpus_scores(stats, counts, corpus_score)
            else:
                matrix = np.array([[lookup[k][0] for k in row] for row in keys], dtype=np.float64)
                metric_sys = system_scores(matrix)
                resampled = resampled_system_scores(matrix, counts)  # replicates x systems
            item_set = digest_of([r["system"] for r in rows] + [f"items:{len(items)}"])
            for statistic in statistics:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    value = _point(statistic, human, metric_sys)
                replicates = rowwise(statistic, human, resampled)
                cells.append(_Cell(group, aspect, statistic, scored, None if np.isnan(value) else value,
                                   replicates, len(rows), 0, item_set, human, metric_sys,
                                   [r["system"] for r in rows]))
    return cells, skipped


def _group_means(cells: list[_Cell]) -> list[_Cell]:
    """Group ``all``: the plain mean over groups, its replicates the mean of paired replicates."""
    means = []
    keyed: dict[tuple[str, str, str], list[_Cell]] = {}
    for c in cells:
        keyed.setdefault((c.aspect, c.statistic, c.scored.signature), []).append(c)
    for (aspect, statistic, _), group_cells in sorted(keyed.items()):
        if len(group_cells) < 2 or any(c.value is None for c in group_cells):
            continue
        means.append(_Cell(
            "all", aspect, statistic, group_cells[0].scored, float(np.mean([c.value for c in group_cells])),
            np.mean(np.vstack([c.replicates for c in group_cells]), axis=0), sum(c.n for c in group_cells),
            sum(c.n_excluded for c in group_cells), digest_of([c.item_set for c in group_cells])))
    return means


def _significance(cells: list[_Cell], level: str, seed: int, n_resamples: int
                  ) -> dict[tuple[str, str, str, str, str], tuple[float, str]]:
    """p-values that the higher-valued metric of each pair truly correlates better."""
    by_slot: dict[tuple[str, str, str], list[_Cell]] = {}
    for c in cells:
        if c.value is not None:
            by_slot.setdefault((c.group, c.aspect, c.statistic), []).append(c)
    result = {}
    for (group, aspect, statistic), slot in by_slot.items():
        slot.sort(key=lambda c: -float(c.value))  # type: ignore[arg-type]
        for i, better in enumerate(slot):
            for worse in slot[i + 1:]:
                p, test = _pair_p_value(better, worse, level, statistic, seed, n_resamples)
                result[(group, aspect, statistic, better.scored.signature, worse.scored.signature)] = (p, test)
    return result


def _pair_p_value(better: _Cell, worse: _Cell, level: str, statistic: str, seed: int,
                  n_resamples: int) -> tuple[float, str]:
    paired = better.human is not None and worse.human is not None and better.item_set == worse.item_set
    if paired and level == "seg" and statistic in PERMUTATION_NAMES:
        result = permutation_test(better.human, better.metric_values, worse.metric_values,  # type: ignore[arg-type]
                                  statistic=PERMUTATION_NAMES[statistic], n_resamples=n_resamples,  # type: ignore[arg-type]
                                  seed=seed)
        return result.p_value, "perm-both"
    if paired and level == "sys" and statistic == "pearson" and len(better.human) > 3:  # type: ignore[arg-type]
        return williams_test(better.human, better.metric_values, worse.metric_values).p_value, "williams"  # type: ignore[arg-type]
    return paired_bootstrap_p_value(better.replicates, worse.replicates), "paired-bootstrap"


def _ranked_rows(cells: list[_Cell], significance: dict[tuple[str, str, str, str, str], tuple[float, str]],
                 alpha: float) -> list[tuple[_Cell, int | None, int | None]]:
    rows: list[tuple[_Cell, int | None, int | None]] = []
    by_slot: dict[tuple[str, str, str], list[_Cell]] = {}
    for c in cells:
        by_slot.setdefault((c.group, c.aspect, c.statistic), []).append(c)
    for (group, aspect, statistic), slot in sorted(by_slot.items()):
        defined = sorted((c for c in slot if c.value is not None), key=lambda c: -float(c.value))  # type: ignore[arg-type]
        p = np.ones((len(defined), len(defined)))
        for i, a in enumerate(defined):
            for j, b in enumerate(defined):
                if i < j:
                    p[i, j] = significance.get((group, aspect, statistic, a.scored.signature, b.scored.signature),
                                               (1.0, ""))[0]
        clusters = assign_clusters(p, alpha=alpha) if defined else []
        rows += [(c, i + 1, clusters[i]) for i, c in enumerate(defined)]
        rows += [(c, None, None) for c in slot if c.value is None]
    return rows
