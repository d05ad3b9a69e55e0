"""Meta-evaluation: how well each metric's scores agree with the human scores.

For a pinned dataset version and a level (``seg`` or ``sys``), every metric scored on that
version (or the ones asked for) is correlated with the human scores per group (language pair,
task) and aspect, and averaged over groups (group ``all``, the plain mean, as the WMT and BLEURT
tables report "avg"). Each number gets a percentile bootstrap confidence interval with a recorded
seed, and metrics are ranked into significance clusters (mt-metrics-eval's rule,
:func:`assay.stats.significance_clusters`) from pairwise tests:

* segment level, per group: the PERM-BOTH paired permutation test (Deutsch et al. 2021, as in
  mt-metrics-eval; :func:`assay.stats.permutation_tests`, one set of permutations per metric pair);
* system level, Pearson: Williams' test for dependent correlations (Graham and Baldwin 2014, used
  by WMT since 2014; :func:`assay.stats.williams_test`);
* everything else (the ``all`` mean, other system-level statistics, DARR Kendall-like): the paired
  bootstrap test (Koehn 2004) on the replicates that give the confidence intervals.

An evaluation is load -> array kernels -> record. The load step
(:mod:`assay.jobs.evaluation_inputs`) reads the version's human scores and each candidate's scores
once, as arrays; the kernels (:mod:`assay.jobs.evaluation_levels` for ``seg`` and ``sys``,
:mod:`assay.jobs.protocol_wmt23`, :mod:`assay.jobs.protocol_wmt24`) turn them into cells, reading
nothing, and every statistic, interval, test and cluster in them and here is computed by the
tested kernels of :mod:`assay.stats`; this module ranks and tests the cells and records the
results. Resamples are drawn once
per group (a named stream, :func:`assay.stats.bootstrap.resample_indices`:
``numpy.random.default_rng([seed, salt])``, the salt from the group key) and shared by every metric
and statistic of the group, so replicates are paired; every replicate is computed from the
resample counts (:class:`assay.stats.resampled.ResampledPairs`).

Segment level follows BLEURT §5 and BERTScore §4 (WMT17: Kendall τ and Pearson r against the DA
z-score per language pair); the human score is :mod:`assay.datasets.human`'s. Tie-calibrated
acc_23 (acc-t, Deutsch et al. 2023) keeps the tie threshold calibrated on the full sample in every
replicate: recalibrating per replicate would widen the interval by the calibration's own variance,
which the point estimate does not carry either. WMT DARR Kendall-like (Ma et al. 2018) comes from
relative-ranking pairs over full test-set outputs, with the year's metric-tie policy.

System level follows WMT and BERTScore Table 1: a system's metric score is the corpus score for
metrics that have one (corpus BLEU, Papineni et al. 2002, from summed sufficient statistics) and
otherwise the mean of its segment scores, over the items every system of the group produced
(``assay score --scope outputs``). Resamples draw items, the systems staying fixed, as WMT's
system-level bootstrap does. Whether a signature is corpus-level is read from what is stored (its
rows carry sufficient statistics), not from the metric registry.

Evaluate writes correlations, significance and, at system level, the system points the report
draws (:mod:`assay.results.correlations`, :mod:`assay.results.significance`,
:mod:`assay.results.system_points`), and records the run (:class:`assay.jobs.runs.RunRecorder`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.config import DEFAULT_RESAMPLES, DEFAULT_SEED, Settings, load_settings
from assay.datasets.names import VersionRef
from assay.errors import UsageError
from assay.jobs import evaluation_inputs, protocol_wmt23, protocol_wmt24
from assay.jobs.evaluation_cells import Cell, Resamples, group_means, item_set_digest
from assay.jobs.evaluation_levels import MIN_SYSTEMS, darr_cells, segment_cells, system_cells
from assay.jobs.judgments import JudgmentFilter
from assay.jobs.protocol_wmt24 import DEFAULT_PERMUTATIONS
from assay.jobs.runs import RecordedFile, RunRecorder, new_run_id, version_inputs
from assay.provenance import code_version
from assay.results import correlations, significance, system_points
from assay.results.external_scores import is_external
from assay.results.headline import side_label
from assay.results.segment_scores import ScoredMetric, scored_signatures, wanted_signatures
from assay.stats import (
    MetricTies,
    SignificanceClusters,
    metric_ties_for_wmt_year,
    permutation_tests,
    ranking_order,
    shared_ranks,
    significance_clusters,
    williams_test,
)
from assay.stats.bootstrap import paired_bootstrap_p_value
from assay.stats.levels import DEFAULT_STATS, LEVELS, SEG_STATS, SYS_STATS, statistics_at
from assay.stats.significance import StatisticName

__all__ = [
    "DEFAULT_STATS",
    "MIN_SYSTEMS",
    "SEG_STATS",
    "SYS_STATS",
    "ScoredMetric",
    "evaluate",
    "item_set_digest",
    "scored_signatures",
    "wanted_signatures",
]

PERMUTATION_NAMES: dict[str, StatisticName] = {
    "pearson": "pearson", "spearman": "spearman", "kendall": "kendall_b", "kendall_c": "kendall_c",
}
"""Segment-level statistics with a PERM-BOTH test, by their name in :mod:`assay.stats.significance`."""

PairKey = tuple[str, str, str, str, str, str]
"""(level, group, aspect, statistic, better signature, worse signature)."""
SlotKey = tuple[str, str, str, str]
"""(level, group, aspect, statistic): the cells ranked together."""
PROTOCOLS = {protocol_wmt24.PROTOCOL: protocol_wmt24.STATISTICS, protocol_wmt23.PROTOCOL: protocol_wmt23.STATISTICS}
"""The protocols that fix their own levels and statistics (``--protocol``), and those statistics."""


# --- the job --------------------------------------------------------------------------------------

def _protocol(info: dict[str, Any], protocol: str | None) -> tuple[str, MetricTies]:
    """(protocol name, DARR metric-tie policy): from the request, else from the dataset's year."""
    if protocol:
        year = int(protocol[3:]) + 2000 if protocol.startswith("wmt") and protocol[3:].isdigit() else None
    else:
        year = int(info["year"]) if str(info.get("year", "")).isdigit() else None
        protocol = f"wmt{year % 100:02d}" if year else "default"
    ties = metric_ties_for_wmt_year(year) if year and year >= 2017 else "discordant"
    return protocol, ties


def _check_request(level: str, statistics: Sequence[str] | None) -> list[str]:
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r} (expected seg or sys)")
    allowed = statistics_at(level)
    chosen = list(statistics or DEFAULT_STATS[level])
    unknown = [s for s in chosen if s not in allowed]
    if unknown:
        raise UsageError(f"statistic(s) {unknown} not available at level {level} (choose from {', '.join(allowed)})")
    return chosen


def _level_and_statistics(protocol: str | None, level: str, statistics: Sequence[str] | None) -> tuple[str, list[str]]:
    """A protocol that fixes its own statistics (wmt23, wmt24) runs them all, whatever ``level`` and
    ``statistics`` say; the run's level is then the protocol's name."""
    if protocol is not None and protocol in PROTOCOLS:
        return protocol, list(PROTOCOLS[protocol])
    return level, _check_request(level, statistics)


def check_request(dataset: str, *, level: str = "seg", statistics: Sequence[str] | None = None,
                  protocol: str | None = None, rater: str | None = None,
                  settings: Settings | None = None) -> None:
    """Refuse, before anything is computed, what :func:`evaluate` would refuse for its options: an
    unknown dataset version, level or statistic, or a ``rater`` the version has no scores of (wmt23
    reads no rater). ``assay evaluate`` calls it before its flow starts; the checks are
    :func:`evaluate`'s own (:func:`_level_and_statistics`, :meth:`JudgmentFilter.rater_scores`)."""
    settings = settings or load_settings()
    level, _ = _level_and_statistics(protocol, level, statistics)
    with session_scope(settings) as session:
        store_path = resolve(session, dataset).store_path
    if rater is not None and level != protocol_wmt23.PROTOCOL:
        JudgmentFilter(rater=rater).rater_scores(settings, store_path)


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
             include_human: bool | None = None,
             rater: str | None = None,
             n_permutations: int = DEFAULT_PERMUTATIONS,
             permutation_seed: int | None = None,
             all_submissions: bool = False,
             settings: Settings | None = None,
) -> dict[str, Any]:
    """Evaluate the metrics scored on a dataset version; writes correlations, significance and (at
    system level) system points to the results store and a run to the catalog, and returns the rows.

    ``protocol="wmt24"`` evaluates the WMT24 protocol (:mod:`assay.jobs.protocol_wmt24`: SPA with
    ``n_permutations`` permutations drawn from ``permutation_seed``, None: mt-metrics-eval's 4,
    independent of the bootstrap ``seed``; item-grouped acc-t; their mean), ``protocol="wmt23"`` the
    WMT23 protocol (:mod:`assay.jobs.protocol_wmt23`; ``all_submissions`` adds the contrastive
    submissions to the primary ones), whatever ``level`` and ``statistics`` say. ``include_human``
    (None: the release's or the protocol's default) and ``rater`` choose the judgments
    (:class:`assay.jobs.judgments.JudgmentFilter`)."""
    settings = settings or load_settings()
    started = time.time()
    level, chosen = _level_and_statistics(protocol, level, statistics)
    request = _Request(level, chosen, seed, n_resamples, protocol, tuple(exclude_groups), include_human, rater,
                       n_permutations, permutation_seed, all_submissions)
    computed = _compute(settings, dataset, metrics, request)
    version = computed.version
    protocol_name, cells, skipped, p_values = computed.protocol, computed.cells, computed.skipped, computed.p_values
    run_id = new_run_id()
    version_fields = {"run_id": run_id, "dataset": version.name, "version_number": version.number}
    records = _correlation_records(_ranked_rows(cells, p_values, alpha, level), run_id, version, level,
                                   protocol_name, computed.protocol_signature, computed.side, seed, n_resamples)
    files = _write(settings, version.name, run_id, records, _significance_records(p_values, version_fields),
                   _system_point_records(cells, version_fields, level, chosen[0]))
    recorder = RunRecorder(
        settings, "evaluate",
        inputs=version_inputs(version, signatures=sorted({c.scored.signature for c in cells})),
        parameters={"level": level, "statistics": chosen, "seed": seed, "n_resamples": n_resamples,
                    "alpha": alpha, "protocol": protocol_name, "exclude_groups": sorted(set(exclude_groups)),
                    "metrics": list(metrics or []), "include_human": include_human, "rater": rater,
                    "protocol_signature": computed.protocol_signature, "side": computed.side,
                    **({"n_permutations": n_permutations, "permutation_seed": computed.permutation_seed}
                       if protocol == protocol_wmt24.PROTOCOL else {}),
                    **({"all_submissions": all_submissions} if protocol == protocol_wmt23.PROTOCOL else {})},
        run_id=run_id, started=started)
    seconds = recorder.record({"rows": len(records), "skipped": skipped, "files": [f.path for f in files]}, files)
    public = [{k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in r.items()} for r in records]
    return {"run_id": run_id, "dataset": version.label, "level": level, "protocol": protocol_name,
            "protocol_signature": computed.protocol_signature, "side": computed.side, "rows": public,
            "skipped": skipped,
            "notes": computed.notes, "seconds": seconds}


@dataclass(frozen=True)
class _Computed:
    """What an evaluation computes before it writes anything."""

    version: VersionRef
    protocol: str
    cells: list[Cell]
    skipped: list[str]
    p_values: dict[PairKey, tuple[float, str]]
    notes: list[str]
    protocol_signature: str
    """Every setting the numbers depend on besides the metric and the data (:func:`_signature`)."""
    permutation_seed: int | None = None
    side: str | None = None
    """What makes the run a side evaluation (:func:`assay.results.headline.side_label`); None: the headline."""


@dataclass(frozen=True)
class _Request:
    """What an evaluation was asked for, besides the dataset and metrics."""

    level: str
    statistics: list[str]
    seed: int
    n_resamples: int
    protocol: str | None
    exclude_groups: tuple[str, ...] = ()
    include_human: bool | None = None
    rater: str | None = None
    n_permutations: int = DEFAULT_PERMUTATIONS
    permutation_seed: int | None = None
    """WMT24's SPA permutations; None: mt-metrics-eval's default (:data:`assay.stats.spa.DEFAULT_SEED`)."""
    all_submissions: bool = False
    """WMT23: the contrastive submissions too, not only the primary ones."""


def _compute(settings: Settings, dataset: str | VersionRef, metrics: Sequence[str] | None,
             request: _Request) -> _Computed:
    """The correlation cells (with the group means) and pairwise p-values of the wanted signatures,
    from the stored segment scores; nothing is written."""
    with session_scope(settings) as session:
        version = resolve(session, dataset)
        ref, store_path, info = version.ref, version.store_path, dict(version.info)
    level, chosen, seed, n_resamples = request.level, request.statistics, request.seed, request.n_resamples
    protocol_name, metric_ties = _protocol(info, request.protocol)
    candidates = wanted_signatures(scored_signatures(settings), metrics)
    resamples = Resamples(seed, n_resamples)
    permutation_seed = None
    notes: list[str] = []
    if level == protocol_wmt24.PROTOCOL:
        rows = JudgmentFilter.of(info, exclude_groups=request.exclude_groups, include_human=request.include_human,
                                 rater=request.rater)
        permutation_seed = protocol_wmt24.DEFAULT_PERMUTATION_SEED if request.permutation_seed is None \
            else request.permutation_seed
        wmt24 = evaluation_inputs.load_wmt24(settings, store_path, info, candidates, rows, dataset=ref.label)
        cells = protocol_wmt24.wmt24_cells(wmt24.grids, wmt24.scores, resamples, n_permutations=request.n_permutations,
                                           seed=permutation_seed)
        skipped = wmt24.skipped
        settings_text = protocol_wmt24.signature(request.n_permutations, permutation_seed)
    elif level == protocol_wmt23.PROTOCOL:
        # the version's official submissions, with segment scores or not (some are system-level only)
        stored = {c.signature for c in candidates}
        candidates += [c for c in wanted_signatures(protocol_wmt23.official_candidates(info), metrics)
                       if c.signature not in stored]
        all_submissions = request.all_submissions or bool(metrics)
        wmt23 = evaluation_inputs.load_wmt23(settings, store_path, info, candidates,
                                             exclude_groups=request.exclude_groups,
                                             include_human=request.include_human, all_submissions=all_submissions)
        evaluated = protocol_wmt23.wmt23_cells(wmt23.pairs, wmt23.scores, resamples, all_submissions=all_submissions)
        cells, skipped, notes, settings_text = evaluated.cells, wmt23.skipped, evaluated.notes, evaluated.signature
        rows = None
    else:
        rows = JudgmentFilter.of(info, exclude_groups=request.exclude_groups, include_human=request.include_human,
                                 rater=request.rater)
        if level == "seg":
            segment_level = evaluation_inputs.load_segment_level(settings, store_path, info, candidates, rows,
                                                                 rankings="kendall_like" in chosen)
            cells, skipped = _segment_level_cells(segment_level, chosen, metric_ties, resamples), segment_level.skipped
        else:
            system_level = evaluation_inputs.load_system_level(settings, store_path, info, candidates, rows)
            cells = [c for scored, slots in system_level.scores for c in system_cells(scored, slots, chosen, resamples)]
            skipped = system_level.skipped
        settings_text = f"level:{level}" + (f"|darr_ties:{metric_ties}" if "kendall_like" in chosen else "")
    if rows is not None and rows.drop_human:
        notes.append("human translations (is_human) are not candidates; include them with --include-human")
    if not cells:
        raise UsageError(_nothing_to_evaluate(ref, str(dataset), level, skipped))
    if level not in PROTOCOLS:  # a protocol computes its own mean over language pairs
        cells += group_means(cells)
    p_values = _significance(cells, level, seed, n_resamples)
    side = side_label(rater=request.rater, human_included=request.include_human,
                      human_included_by_default=not info.get("exclude_human_by_default"),
                      spa_permutations=(request.n_permutations, permutation_seed) if permutation_seed is not None
                      else None,
                      spa_default=(DEFAULT_PERMUTATIONS, protocol_wmt24.DEFAULT_PERMUTATION_SEED))
    return _Computed(ref, protocol_name, cells, skipped, p_values, notes,
                     _signature(protocol_name, settings_text, request, rows), permutation_seed, side)


def _segment_level_cells(loaded: evaluation_inputs.SegmentLevelInputs, statistics: Sequence[str],
                         metric_ties: MetricTies, resamples: Resamples) -> list[Cell]:
    """The segment-level kernels on what was loaded: every metric's correlations, then every metric's
    WMT DARR Kendall-like."""
    cells: list[Cell] = []
    if loaded.segments is not None:
        segments = loaded.segments
        cells += [c for scored, scores in loaded.scores
                  for c in segment_cells(scored, segments, scores, statistics, resamples)]
    if loaded.rankings is not None:
        rankings = loaded.rankings
        cells += [c for scored, better, worse in loaded.ranked_scores
                  for c in darr_cells(scored, rankings, better, worse, metric_ties, resamples)]
    return cells


def _nothing_to_evaluate(version: VersionRef, dataset: str, level: str, skipped: list[str]) -> str:
    """Why no metric could be evaluated, and what to run."""
    if level == "seg":
        hint = "score it first, e.g. `assay score --dataset " + dataset + " --metric sentbleu`"
    elif level == "sys":
        hint = ("system level needs full test-set scores: `assay score --dataset " + dataset
                + " --metric bleu --scope outputs`")
    else:
        hint = "score it first, e.g. `assay score --dataset " + dataset + " --metric sentbleu`"
    return (f"no metric scores cover {version.label} at level {level}; {hint}"
            + (f" (incomplete: {', '.join(skipped)})" if skipped else ""))


def _signature(protocol: str, settings_text: str, request: _Request, rows: JudgmentFilter | None) -> str:
    """The run's protocol signature: the protocol, the settings its statistics were computed with
    (their defaults included), the judgments chosen and the bootstrap; stored on every row, so
    each number says how it was obtained (the metric's own signature is beside it)."""
    judged = ""
    if rows is not None:
        judged = f"|human:{'out' if rows.drop_human else 'in'}"
        if rows.rater:
            judged += f"|rater:{rows.rater}"
        if rows.excluded_groups:
            judged += f"|exclude:{','.join(sorted(rows.excluded_groups))}"
    return f"{protocol}|{settings_text}{judged}|bootstrap:seed={request.seed},resamples={request.n_resamples}"


@dataclass(frozen=True)
class PairedComparison:
    """Correlations and pairwise p-values of signatures evaluated together, not recorded."""

    values: dict[tuple[str, str, str, str], float | None]
    """(group, aspect, statistic, signature) -> the correlation"""
    p_values: dict[tuple[str, str, str, str, str], tuple[float, str]]
    """(group, aspect, statistic, better, worse) -> (one-sided p-value, test)"""


def compare_signatures(dataset: str | VersionRef, *, level: str, signatures: Sequence[str], statistics: Sequence[str],
                       seed: int = DEFAULT_SEED, n_resamples: int = DEFAULT_RESAMPLES, protocol: str | None = None,
                       exclude_groups: Sequence[str] = (), n_permutations: int = DEFAULT_PERMUTATIONS,
                       permutation_seed: int | None = None, settings: Settings | None = None) -> PairedComparison:
    """What :func:`evaluate` would store for ``signatures`` evaluated together (the same cells,
    resamples and paired tests, so the same numbers), computed from their stored segment scores
    without writing to the results store or recording a run: a comparison of already evaluated
    metrics (the nightly regression test) is not another evaluation. Under a protocol (wmt23,
    wmt24) every statistic of the protocol is computed, whatever ``statistics`` says, as
    :func:`evaluate` does; where the protocol has one statistic at two levels (WMT23's Pearson),
    the cells of ``level`` are returned."""
    settings = settings or load_settings()
    run_level, chosen = _level_and_statistics(protocol, level, statistics)
    computed = _compute(settings, dataset, signatures,
                        _Request(run_level, chosen, seed, n_resamples, protocol, tuple(exclude_groups),
                                 n_permutations=n_permutations, permutation_seed=permutation_seed))
    cells = computed.cells
    if protocol == protocol_wmt23.PROTOCOL:
        cells = [c for c in cells if (c.level or run_level) == level]
    wanted = {(c.level or run_level) for c in cells}
    return PairedComparison({(c.group, c.aspect, c.statistic, c.scored.signature): c.value for c in cells},
                            {(g, a, st, b, w): p for (lv, g, a, st, b, w), p in computed.p_values.items()
                             if lv in wanted})


def _correlation_records(rows: list[tuple[Cell, int | None, int | None]], run_id: str, version: VersionRef,
                         level: str, protocol: str, protocol_signature: str, side: str | None, seed: int,
                         n_resamples: int) -> list[dict[str, Any]]:
    now = datetime.now(UTC)
    records = []
    for c, rank, cluster in rows:
        ci_low, ci_high = c.interval()
        records.append({
            "run_id": run_id, **version.columns(), "level": c.level or level, "group": c.group, "aspect": c.aspect,
            "metric": c.scored.metric, "signature": c.scored.signature,
            "checkpoint_digest": c.scored.checkpoint_digest, "statistic": c.statistic, "value": c.value,
            "ci_low": ci_low, "ci_high": ci_high, "n": c.n, "unit": c.unit, "n_excluded": c.n_excluded,
            "item_set": c.item_set, "protocol": protocol, "rank": rank, "cluster": cluster,
            "epsilon": c.epsilon, "degenerate": c.degenerate, "official": is_external(c.scored.signature),
            "protocol_signature": protocol_signature, "side": side, "seed": seed, "n_resamples": n_resamples,
            "code_version": code_version(), "created_at": now,
        })
    return records


def _significance_records(p_values: dict[PairKey, tuple[float, str]], version_fields: dict[str, Any]
                          ) -> list[dict[str, Any]]:
    return [{**version_fields, "level": lv, "group": g, "aspect": a, "statistic": s, "better": b, "worse": w,
             "p_value": p, "test": t} for (lv, g, a, s, b, w), (p, t) in p_values.items()]


def _system_point_records(cells: list[Cell], version_fields: dict[str, Any], level: str, statistic: str
                          ) -> list[dict[str, Any]]:
    """The system-level points behind the correlations (the same for every statistic: the first's)."""
    return [{**version_fields, "level": c.level or level, "group": c.group, "aspect": c.aspect,
             "metric": c.scored.metric,
             "signature": c.scored.signature, "system": system, "human": float(h), "metric_score": float(m)}
            for c in cells if c.systems is not None and c.human is not None and c.metric_values is not None
            and c.statistic == statistic
            for system, h, m in zip(c.systems, c.human, c.metric_values, strict=True)]


def _write(settings: Settings, dataset: str, run_id: str, records: list[dict[str, Any]],
           p_values: list[dict[str, Any]], points: list[dict[str, Any]]) -> list[RecordedFile]:
    """One immutable part per store (correlations and significance always; system points when any)."""
    written = [(correlations.write(settings, dataset, run_id, records), correlations.STORE, len(records)),
               (significance.write(settings, dataset, run_id, p_values), significance.STORE, len(p_values))]
    if points:
        written.append((system_points.write(settings, dataset, run_id, points), system_points.STORE, len(points)))
    return [RecordedFile.of(settings, path, kind, rows) for path, kind, rows in written]


# --- ranks, significance and clusters -------------------------------------------------------------

def _defined(slot: list[Cell]) -> dict[str, Cell]:
    """The cells of a slot that take part in ranks and tests (a defined, non-degenerate value), by
    signature."""
    return {c.scored.signature: c for c in slot if c.ranked}


def _values(defined: dict[str, Cell]) -> dict[str, float]:
    return {signature: c.value for signature, c in defined.items() if c.value is not None}


def _ranked(slot: list[Cell]) -> list[Cell]:
    """The ranked cells of a slot by decreasing value (ties keep their order)."""
    defined = _defined(slot)
    return [defined[signature] for signature in ranking_order(_values(defined))]


def _permutation_p_values(requests: dict[tuple[str, str, str, str, str], dict[str, tuple[Cell, Cell]]],
                          seed: int, n_resamples: int) -> dict[PairKey, tuple[float, str]]:
    """PERM-BOTH p-values, one set of permutations per (level, group, aspect, metric pair) for all
    its statistics and both directions (:func:`assay.stats.significance.permutation_tests`: each
    p-value equals :func:`assay.stats.permutation_test` with the better metric first)."""
    result: dict[PairKey, tuple[float, str]] = {}
    for (level, group, aspect, first, _), by_statistic in requests.items():
        statistics = sorted(by_statistic)
        x = next(c for pair in by_statistic.values() for c in pair if c.scored.signature == first)
        y = next(c for pair in by_statistic.values() for c in pair if c.scored.signature != first)
        if x.human is None or x.metric_values is None or y.metric_values is None:
            continue
        tests = permutation_tests(x.human, x.metric_values, y.metric_values,
                                  statistics=[PERMUTATION_NAMES[s] for s in statistics], n_resamples=n_resamples,
                                  seed=seed)
        for statistic, (x_over_y, y_over_x) in zip(statistics, tests, strict=True):
            better, worse = by_statistic[statistic]
            test = x_over_y if better.scored.signature == first else y_over_x
            result[(level, group, aspect, statistic, better.scored.signature, worse.scored.signature)] = \
                (test.p_value, "perm-both")
    return result


def _pair_p_value(better: Cell, worse: Cell, level: str) -> tuple[float, str]:
    """(p-value, test) that ``better`` correlates better than ``worse``, for the tests that are not
    permutation tests."""
    if level == "sys" and better.statistic == "pearson" and better.paired_with(worse) \
            and better.human is not None and len(better.human) > 3 \
            and better.metric_values is not None and worse.metric_values is not None:
        with np.errstate(invalid="ignore", divide="ignore"):  # two metrics correlating perfectly: p is NaN
            return williams_test(better.human, better.metric_values, worse.metric_values).p_value, "williams"
    return paired_bootstrap_p_value(better.replicates, worse.replicates), "paired-bootstrap"


def _slots(cells: list[Cell], level: str) -> dict[SlotKey, list[Cell]]:
    """The cells ranked together: one (level, group, aspect, statistic) each (a protocol stores
    cells at several levels, each cell under its own)."""
    by_slot: dict[SlotKey, list[Cell]] = {}
    for c in cells:
        by_slot.setdefault((c.level or level, c.group, c.aspect, c.statistic), []).append(c)
    return by_slot


def _significance(cells: list[Cell], level: str, seed: int, n_resamples: int) -> dict[PairKey, tuple[float, str]]:
    """p-values that the higher-valued metric of each pair truly correlates better (ranked cells
    only: an undefined or degenerate value is not tested)."""
    result: dict[PairKey, tuple[float, str]] = {}
    permutations: dict[tuple[str, str, str, str, str], dict[str, tuple[Cell, Cell]]] = {}
    for (cell_level, group, aspect, statistic), slot in _slots(cells, level).items():
        ranked = _ranked(slot)
        for i, better in enumerate(ranked):
            for worse in ranked[i + 1:]:
                if level == "seg" and statistic in PERMUTATION_NAMES and better.paired_with(worse):
                    first, second = sorted((better.scored.signature, worse.scored.signature))
                    permutations.setdefault((cell_level, group, aspect, first, second), {})[statistic] = \
                        (better, worse)
                else:
                    key = (cell_level, group, aspect, statistic, better.scored.signature, worse.scored.signature)
                    result[key] = _pair_p_value(better, worse, cell_level)
    return {**result, **_permutation_p_values(permutations, seed, n_resamples)}


def _ranked_rows(cells: list[Cell], p_values: dict[PairKey, tuple[float, str]], alpha: float, level: str
                ) -> list[tuple[Cell, int | None, int | None]]:
    """Every cell with its rank and significance cluster in its slot. Equal values share a rank
    (:func:`assay.stats.shared_ranks`); an undefined or degenerate value has neither (None, None)."""
    rows: list[tuple[Cell, int | None, int | None]] = []
    for slot_key, slot in sorted(_slots(cells, level).items()):
        defined = _defined(slot)
        if defined:
            ranking = _slot_clusters(slot_key, defined, p_values, alpha)
            ranks = shared_ranks([m.value for m in ranking.ranking])
            rows += [(defined[m.name], rank, m.cluster) for rank, m in zip(ranks, ranking.ranking, strict=True)]
        rows += [(c, None, None) for c in slot if not c.ranked]
    return rows


def _slot_clusters(slot_key: SlotKey, defined: dict[str, Cell], p_values: dict[PairKey, tuple[float, str]],
                   alpha: float) -> SignificanceClusters:
    """The significance clusters of one (level, group, aspect, statistic) slot from its pairs'
    p-values (:func:`assay.stats.significance_clusters`; 1 where no test applied)."""
    level, group, aspect, statistic = slot_key

    def p_value(better: str, worse: str) -> float:
        return p_values.get((level, group, aspect, statistic, better, worse), (1.0, ""))[0]

    return significance_clusters(_values(defined), p_value, alpha=alpha, test="stored")
