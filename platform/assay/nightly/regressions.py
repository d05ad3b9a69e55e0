"""Regressions: is a newly evaluated checkpoint significantly worse than the team's best?

After the nightly flow has evaluated a checkpoint on a suite's dataset version (a completed row of
the ledger, :class:`assay.catalog.models.SuiteEvaluation`, naming its ``evaluate`` run), each suite
cell (dataset version x level x statistic) is compared with the team's current best: among the
*other* checkpoints whose ledger row for the same dataset version and suite signature is
completed, the one whose stored correlation is highest (ties: the one evaluated first, the
incumbent). Only correlations computed on the same item set are compared.

Groups. By default the comparison is made on the mean over groups (group ``all``, the "avg" of
the WMT and BLEURT tables), or on the groups themselves when the evaluation has no mean (a single
language pair). ``per_group=True`` compares every group as well; with seven language pairs and two
statistics that is fourteen tests a night, and at alpha = 0.05 a checkpoint as good as the best
would then be flagged somewhere most nights, so per-group verdicts are opt-in.

The test. Both checkpoints' scores of the same segments are compared by the paired test that
:func:`assay.jobs.evaluation.evaluate` applies to every pair of metrics it evaluates together, so a
regression is judged exactly as the leaderboard clusters are:

* segment level, per group (Pearson, Spearman, Kendall): PERM-BOTH, the paired permutation test of
  Deutsch, Dror and Roth (2021), as in mt-metrics-eval (:func:`assay.stats.permutation_tests`);
* system level, Pearson: Williams' test for dependent correlations sharing the human scores
  (Williams 1959; Graham and Baldwin 2014, used by WMT; :func:`assay.stats.williams_test`);
* the ``all`` mean and the other statistics: the paired bootstrap test (Koehn 2004;
  :func:`assay.stats.bootstrap.paired_bootstrap_p_value`) on replicates drawn from the same
  resamples for both checkpoints.

The checkpoint is evaluated once, by the nightly evaluation; the comparison reads what that
evaluation stored. Where its run already evaluated the best checkpoint's signature beside it, the
p-value is read from that run's stored significance rows. Otherwise the pair is tested with
:func:`assay.jobs.evaluation.compare_signatures`, from both checkpoints' stored segment scores: the
cells, shared resamples and paired test that :func:`~assay.jobs.evaluation.evaluate` would apply to
the two signatures together (same protocol, excluded groups, seed and resamples as the checkpoint's
run), so the same numbers, without evaluating again (nothing is written, no run is recorded, nothing
is re-scored). The finding cites the checkpoint's own evaluation run.

A :class:`Finding`'s ``p_value`` is the stored one-sided p-value that the higher-valued checkpoint
correlates better: when the new checkpoint is worse, the p-value of "the best is better" (the
regression test); when it is at least as good, the p-value of its improvement. ``regression`` is
``value < baseline_value and p_value < alpha``.

Catalog. :func:`record` writes one ``regressions`` row per regression; recording a comparison again
replaces the verdicts of the cells it compares (delete, then insert, in one transaction), so the
same comparison recorded twice leaves the same rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, delete, or_, select

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.catalog.models import Checkpoint, DatasetVersion, Regression, Run, SuiteEvaluation
from assay.checkpoints.labels import lineage_text, row_checkpoint
from assay.checkpoints.ref import CheckpointRef
from assay.checkpoints.registry import find, labels_by_digest
from assay.config import DEFAULT_RESAMPLES, DEFAULT_SEED, Settings
from assay.datasets.names import VersionRef
from assay.errors import UsageError
from assay.jobs.evaluation import compare_signatures
from assay.jobs.protocol_wmt24 import LEVELS as WMT24_LEVELS
from assay.nightly.suites import SuiteEntry
from assay.provenance import short
from assay.results import correlations, significance
from assay.stats.levels import statistics_at

__all__ = [
    "Finding",
    "SuiteCell",
    "compare_with_best",
    "evaluated_on",
    "headline_values",
    "list_regressions",
    "record",
    "suite_cells",
]

COMPLETED = "completed"
_SUITE_SIGNATURE = re.compile(r"[0-9A-Za-z._:-]{1,64}")
_RUN_ID = re.compile(r"[0-9a-f-]{1,64}")

CellKey = tuple[str, str, str]
"""(group, aspect, statistic)."""


@dataclass(frozen=True)
class SuiteCell:
    """One cell of a suite: a pinned dataset version (``NAME@NUMBER`` or ``NAME@DIGEST-PREFIX``),
    a level (``seg``/``sys``) and a statistic (as :func:`assay.jobs.evaluation.evaluate` names them)."""

    dataset: str
    level: str
    statistic: str


def suite_cells(datasets: Iterable[str], levels: Iterable[str], statistics: Iterable[str]) -> list[SuiteCell]:
    """Every (dataset, level, statistic) combination, in the given order."""
    stats = list(statistics)
    return [SuiteCell(d, level, s) for d in datasets for level in levels for s in stats]


@dataclass(frozen=True)
class Finding:
    """The comparison of a checkpoint with the team's best on one suite cell."""

    checkpoint_digest: str
    baseline_digest: str
    dataset: str
    """``NAME@NUMBER`` of the dataset version."""
    dataset_version_id: int
    level: str
    group: str
    aspect: str
    statistic: str
    value: float
    baseline_value: float
    p_value: float
    """One-sided: that the higher-valued of the two correlates better (see the module docstring)."""
    test: str
    """``perm-both``, ``williams`` or ``paired-bootstrap``."""
    regression: bool
    signature: str
    baseline_signature: str
    evaluate_run_id: str
    """The checkpoint's evaluation run (the nightly's), whose stored correlations gave its value."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- input checks ---------------------------------------------------------------------------------

def _check_digest(digest: str) -> str:
    return CheckpointRef(digest).digest  # refuses anything but a full sha256 hex digest


def _check_suite_signature(signature: str) -> str:
    if not isinstance(signature, str) or not _SUITE_SIGNATURE.fullmatch(signature):
        raise UsageError(f"suite signature {signature!r} is not valid: expected 1-64 letters, digits, '.', '_', "
                         "':' or '-' (the suite's content hash)")
    return signature


def _cells_of(entries: Iterable[SuiteCell | SuiteEntry]) -> list[tuple[SuiteCell, _Version | None]]:
    """The cells of suite entries, each with its dataset version where the entry carries it: a
    :class:`assay.nightly.suites.SuiteEntry` expanded to its levels x the statistics each level
    accepts, with its pinned version; a :class:`SuiteCell` as it is, its reference still to resolve."""
    cells: list[tuple[SuiteCell, _Version | None]] = []
    for entry in entries:
        if isinstance(entry, SuiteEntry):
            pinned = _Version(entry.version_id, entry.version)
            cells += [(SuiteCell(entry.version.label, level, statistic), pinned)
                      for level in entry.levels for statistic in entry.statistics_for(level)]
        elif isinstance(entry, SuiteCell):
            cells.append((entry, None))
        else:
            raise UsageError(f"suite entry {entry!r} is neither a SuiteCell(dataset, level, statistic) nor a "
                             "suite's SuiteEntry")
    return cells


def _statistics_at(level: str) -> tuple[str, ...]:
    """The statistics a suite cell may name at ``level``: the per-level ones, then the WMT24
    protocol's (:func:`assay.stats.levels.statistics_at`)."""
    return statistics_at(level) + statistics_at(level, WMT24_LEVELS)


def _check_cells(cells: Sequence[SuiteCell]) -> None:
    for cell in cells:
        allowed = _statistics_at(cell.level)
        if not allowed:
            raise UsageError(f"suite entry {cell.dataset}: unknown level {cell.level!r} (expected seg, sys or avg)")
        if cell.statistic not in allowed:
            raise UsageError(f"suite entry {cell.dataset}: statistic {cell.statistic!r} is not available at level "
                             f"{cell.level} (choose from {', '.join(allowed)})")


# --- reading the ledger and the stored results ----------------------------------------------------

@dataclass(frozen=True)
class _Version:
    """A dataset version and its catalog row id."""

    id: int
    ref: VersionRef

    @property
    def label(self) -> str:
        return self.ref.label


@dataclass(frozen=True)
class Evaluated:
    """A ledger row: a checkpoint evaluated on the dataset version, and its evaluation run."""

    checkpoint_digest: str
    status: str
    evaluate_run_id: str
    finished_at: datetime | None


def evaluated_on(settings: Settings, dataset_digest: str, suite_signature: str) -> list[Evaluated]:
    """The ledger rows of a dataset version (by digest) and suite signature that name their
    evaluation run, in the order they finished (any status: the caller picks)."""
    with session_scope(settings) as session:
        rows = session.scalars(select(SuiteEvaluation).where(
            SuiteEvaluation.dataset_digest == dataset_digest,
            SuiteEvaluation.suite_signature == suite_signature,
            SuiteEvaluation.evaluate_run_id.is_not(None),
        ).order_by(SuiteEvaluation.finished_at, SuiteEvaluation.id))
        return [Evaluated(r.checkpoint_digest, r.status, str(r.evaluate_run_id), r.finished_at) for r in rows
                if _RUN_ID.fullmatch(str(r.evaluate_run_id))]


def _correlation_rows(settings: Settings, dataset: str, run_id: str, level: str) -> list[dict[str, Any]]:
    return [r for r in correlations.read_run(settings, dataset, run_id) if r["level"] == level]


def _of_checkpoint(rows: list[dict[str, Any]], digest: str) -> dict[CellKey, dict[str, Any]]:
    """The rows scored with checkpoint ``digest`` (:func:`assay.checkpoints.labels.row_checkpoint`), by
    (group, aspect, statistic)."""
    checkpoint = CheckpointRef(digest)
    return {(r["group"], r["aspect"], r["statistic"]): r for r in rows if checkpoint.matches(row_checkpoint(r))}


def _compared_keys(own: dict[CellKey, dict[str, Any]], statistics: set[str], per_group: bool) -> list[CellKey]:
    keys = [k for k in own if k[2] in statistics and own[k]["value"] is not None]
    if per_group:
        return sorted(keys)
    kept = correlations.mean_else_each_group([own[k] for k in keys], ("aspect", "statistic"))
    return sorted((r["group"], r["aspect"], r["statistic"]) for r in kept)


def headline_values(settings: Settings, entry: SuiteEntry, evaluated: Sequence[tuple[str, str]]
                    ) -> dict[str, tuple[float, str]]:
    """Per checkpoint digest of ``evaluated`` ((digest, evaluation run) pairs, in ledger order), its
    headline number on ``entry`` and its signature: the entry's first statistic at its first level
    (with a protocol, at ``avg``, e.g. the WMT24 mean of SPA and acc-t), on the mean over groups
    (``all``; else the first group), first aspect. Checkpoints without that number are left out."""
    level = "avg" if "avg" in entry.levels else entry.levels[0]
    statistic = entry.statistics_for(level)[0]
    found: dict[str, tuple[float, str]] = {}
    for digest, run_id in evaluated:
        rows = _of_checkpoint(_correlation_rows(settings, entry.version.name, run_id, level), digest)
        keys = sorted((k for k, r in rows.items() if k[2] == statistic and r["value"] is not None),
                      key=lambda k: (k[0] != correlations.MEAN_GROUP, k[0], k[1]))
        if keys:
            found[digest] = (float(rows[keys[0]]["value"]), str(rows[keys[0]]["signature"]))
    return found


# --- the comparison -------------------------------------------------------------------------------

def compare_with_best(settings: Settings, *, checkpoint_digest: str, suite_signature: str,
                      entries: Iterable[SuiteCell | SuiteEntry], alpha: float = 0.05,
                      n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                      per_group: bool = False) -> list[Finding]:
    """Compare ``checkpoint_digest`` with the team's best on every suite cell in ``entries``
    (:class:`SuiteCell` items, or a suite's :class:`assay.nightly.suites.SuiteEntry` items).

    The checkpoint's ledger row for each dataset version must name its evaluation run (any
    status: the flow may compare before it closes the row); baselines are the completed rows.
    No baseline (the first checkpoint evaluated on a dataset) gives no findings for that dataset.
    """
    _check_digest(checkpoint_digest)
    _check_suite_signature(suite_signature)
    if not 0 < alpha < 1:
        raise UsageError(f"alpha must lie strictly between 0 and 1 (got {alpha})")
    if n_resamples < 1:
        raise UsageError(f"n_resamples must be at least 1 (got {n_resamples})")
    cells = _cells_of(entries)
    _check_cells([cell for cell, _ in cells])
    wanted: dict[tuple[_Version, str], set[str]] = {}
    with session_scope(settings) as session:
        for cell, version in cells:
            if version is None:
                v = resolve(session, cell.dataset)
                version = _Version(v.id, v.ref)
            wanted.setdefault((version, cell.level), set()).add(cell.statistic)
    findings: list[Finding] = []
    for (version, level), statistics in wanted.items():
        findings += _compare_on(settings, version, level, statistics, checkpoint_digest, suite_signature,
                                alpha=alpha, n_resamples=n_resamples, seed=seed, per_group=per_group)
    return findings


def _compare_on(settings: Settings, version: _Version, level: str, statistics: set[str], digest: str,
                suite_signature: str, *, alpha: float, n_resamples: int, seed: int, per_group: bool
                ) -> list[Finding]:
    ledger = evaluated_on(settings, version.ref.digest, suite_signature)
    own_entry = next((e for e in ledger if e.checkpoint_digest == digest), None)
    if own_entry is None:
        raise UsageError(f"checkpoint {short(digest)} has no evaluation of {version.label} under suite signature "
                         f"{suite_signature} in the ledger; evaluate it first (the nightly flow does)")
    own_rows = _of_checkpoint(_correlation_rows(settings, version.ref.name, own_entry.evaluate_run_id, level), digest)
    if not own_rows:
        raise UsageError(f"evaluation run {own_entry.evaluate_run_id} of {version.label} has no {level}-level "
                         f"correlations of checkpoint {short(digest)}")
    baselines = [e for e in ledger if e.checkpoint_digest != digest and e.status == COMPLETED]
    candidates = [(e, _of_checkpoint(_correlation_rows(settings, version.ref.name, e.evaluate_run_id, level),
                                     e.checkpoint_digest)) for e in baselines]
    best: dict[CellKey, tuple[Evaluated, dict[str, Any]]] = {}
    for key in _compared_keys(own_rows, statistics, per_group):
        found = [(e, rows[key]) for e, rows in candidates if key in rows and rows[key]["value"] is not None
                 and rows[key]["item_set"] == own_rows[key]["item_set"]]
        if found:  # the highest value; among equals, the one evaluated first (the incumbent)
            best[key] = max(enumerate(found), key=lambda pair: (pair[1][1]["value"], -pair[0]))[1]
    if not best:
        return []
    own_run = own_entry.evaluate_run_id
    own_stored = _Stored(_correlation_rows(settings, version.ref.name, own_run, level),
                         significance.stored_tests(settings, version.ref.name, own_run, level))
    own_signatures = {r["signature"] for r in own_stored.rows}
    missing = {k: v for k, v in best.items() if v[1]["signature"] not in own_signatures}
    paired = _paired_comparison(settings, version, level, own_entry, own_rows, missing, n_resamples, seed) \
        if missing else None
    findings = []
    for key, (entry, best_row) in sorted(best.items()):
        stored = paired if key in missing and paired is not None else own_stored
        finding = _finding(version, level, key, digest, own_rows[key]["signature"], entry, best_row["signature"],
                           own_run, stored, alpha)
        if finding is not None:
            findings.append(finding)
    return findings


def _paired_comparison(settings: Settings, version: _Version, level: str, own: Evaluated,
                       own_rows: dict[CellKey, dict[str, Any]], best: dict[CellKey, tuple[Evaluated, dict[str, Any]]],
                       n_resamples: int, seed: int) -> _Stored:
    """The checkpoint's signature beside its baselines', tested from their stored segment scores
    (same protocol and excluded groups as its own run; nothing is evaluated again or recorded)."""
    with session_scope(settings) as session:
        run = session.get(Run, own.evaluate_run_id)
        parameters = dict(run.parameters or {}) if run is not None else {}
    own_signature = next(iter(own_rows.values()))["signature"]
    signatures = [own_signature, *sorted({row["signature"] for _, row in best.values()})]
    permutations = {"n_permutations": int(parameters["n_permutations"])} if parameters.get("n_permutations") else {}
    compared = compare_signatures(version.ref, level=level, signatures=signatures,
                                  statistics=sorted({k[2] for k in best}), seed=seed, n_resamples=n_resamples,
                                  protocol=parameters.get("protocol"),
                                  exclude_groups=list(parameters.get("exclude_groups") or []), settings=settings,
                                  **permutations)
    rows = [{"group": g, "aspect": a, "statistic": st, "signature": sig, "value": value}
            for (g, a, st, sig), value in compared.values.items()]
    return _Stored(rows, compared.p_values)


@dataclass(frozen=True)
class _Stored:
    """What one evaluation run stored at one level: correlation rows and pairwise p-values."""

    rows: list[dict[str, Any]]
    p_values: dict[tuple[str, str, str, str, str], tuple[float, str]]


def _finding(version: _Version, level: str, key: CellKey, digest: str, signature: str, baseline: Evaluated,
             baseline_signature: str, run_id: str, stored: _Stored, alpha: float) -> Finding | None:
    """The comparison of one cell from the stored rows of ``run_id``; None when either value or
    the pair's test is undefined there."""
    values = {r["signature"]: r["value"] for r in stored.rows if (r["group"], r["aspect"], r["statistic"]) == key}
    value, baseline_value = values.get(signature), values.get(baseline_signature)
    if value is None or baseline_value is None:
        return None
    p_values = stored.p_values
    group, aspect, statistic = key
    worse = value < baseline_value
    higher, lower = (baseline_signature, signature) if worse else (signature, baseline_signature)
    # equal values: evaluate ranks ties in either order
    found = p_values.get((group, aspect, statistic, higher, lower)) or \
        p_values.get((group, aspect, statistic, lower, higher))
    if found is None:
        return None
    p_value, test = found
    return Finding(
        checkpoint_digest=digest, baseline_digest=baseline.checkpoint_digest, dataset=version.label,
        dataset_version_id=version.id, level=level, group=group, aspect=aspect, statistic=statistic,
        value=float(value), baseline_value=float(baseline_value), p_value=float(p_value), test=str(test),
        regression=bool(worse and p_value < alpha), signature=signature, baseline_signature=baseline_signature,
        evaluate_run_id=run_id,
    )


# --- the catalog ----------------------------------------------------------------------------------

def record(settings: Settings, findings: Iterable[Finding], *, suite_signature: str, run_id: str | None) -> int:
    """Write the regressions among ``findings``; returns how many rows were written.

    Every compared cell's earlier verdict for this checkpoint and suite signature is replaced (one
    transaction: delete, then insert), so recording the same comparison twice writes no duplicate
    and a cell that is no longer a regression loses its row. The checkpoint's ledger rows are
    locked for the transaction (``SELECT ... FOR UPDATE`` on PostgreSQL) so two recorders of one
    checkpoint take turns.
    """
    _check_suite_signature(suite_signature)
    if run_id is not None and not _RUN_ID.fullmatch(str(run_id)):
        raise UsageError(f"run id {run_id!r} is not a run id (hex digits and '-')")
    chosen = list(findings)
    for f in chosen:
        if not isinstance(f, Finding):
            raise UsageError(f"{f!r} is not a Finding (from compare_with_best)")
        _check_digest(f.checkpoint_digest)
        _check_digest(f.baseline_digest)
    if not chosen:
        return 0
    written = 0
    with session_scope(settings) as session:
        digests = sorted({f.checkpoint_digest for f in chosen})
        session.execute(select(SuiteEvaluation.id).where(
            SuiteEvaluation.checkpoint_digest.in_(digests),
            SuiteEvaluation.suite_signature == suite_signature).with_for_update()).all()
        cells = [and_(Regression.checkpoint_digest == f.checkpoint_digest,
                      Regression.dataset_version_id == f.dataset_version_id, Regression.level == f.level,
                      Regression.group == f.group, Regression.aspect == f.aspect,
                      Regression.statistic == f.statistic)
                 for f in chosen]
        session.execute(delete(Regression).where(Regression.suite_signature == suite_signature, or_(*cells)))
        for f in chosen:
            if f.regression:
                session.add(Regression(
                    checkpoint_digest=f.checkpoint_digest, baseline_digest=f.baseline_digest,
                    suite_signature=suite_signature, dataset_version_id=f.dataset_version_id, level=f.level,
                    group=f.group, aspect=f.aspect, statistic=f.statistic, value=f.value,
                    baseline_value=f.baseline_value, p_value=f.p_value, test=f.test, run_id=run_id))
                written += 1
    return written


def list_regressions(settings: Settings, *, checkpoint: str | None = None) -> list[dict[str, Any]]:
    """Recorded regressions, newest first, with the checkpoints' and baselines' names (lineage
    text) and the dataset version's label; ``checkpoint`` (a name or digest prefix, resolved by
    :func:`assay.checkpoints.registry.find`) keeps one checkpoint's."""
    labels = labels_by_digest(settings)
    with session_scope(settings) as session:
        query = select(Regression, DatasetVersion).join(DatasetVersion,
                                                        DatasetVersion.id == Regression.dataset_version_id)
        if checkpoint is not None:
            row: Checkpoint = find(session, checkpoint)
            query = query.where(Regression.checkpoint_digest == row.digest)
        found = session.execute(query.order_by(Regression.created_at.desc(), Regression.id.desc())).all()
        out = []
        for reg, version in found:
            mine, base = labels.get(reg.checkpoint_digest), labels.get(reg.baseline_digest)
            out.append({
                "checkpoint": mine["name"] if mine else None,
                "checkpoint_lineage": lineage_text(mine) if mine else None,
                "checkpoint_digest": reg.checkpoint_digest,
                "baseline": base["name"] if base else None,
                "baseline_lineage": lineage_text(base) if base else None,
                "baseline_digest": reg.baseline_digest,
                "suite_signature": reg.suite_signature,
                "dataset": version.label, "dataset_version_id": reg.dataset_version_id,
                "dataset_digest": version.ref.digest, "level": reg.level, "group": reg.group, "aspect": reg.aspect,
                "statistic": reg.statistic, "value": reg.value, "baseline_value": reg.baseline_value,
                "p_value": reg.p_value, "test": reg.test, "run_id": reg.run_id,
                "created_at": reg.created_at.isoformat() if reg.created_at else None,
            })
        return out
