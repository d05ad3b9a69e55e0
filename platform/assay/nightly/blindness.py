"""Blindness regressions: is a new checkpoint significantly blinder than the team's best to an error
the raters penalise?

For every suite entry with ``errors`` (an MQM version, :mod:`assay.nightly.suites`), the checkpoint
is compared with the team's best on that version: the other checkpoint whose completed ledger row
(same dataset version and suite signature) has the highest value of the entry's headline number,
the first compared cell of :func:`assay.nightly.regressions.compare_with_best` (with the WMT24
protocol, the mean of SPA and acc-t over groups; ties: the one evaluated first, the incumbent).

Per error category, both checkpoints' standardised drop per error is estimated on the same rated
outputs and item resamples (:func:`assay.jobs.error_analysis.compare_on_errors`, the paired
bootstrap of :mod:`assay.mqm.sensitivity_comparison`; Koehn 2004), for the categories the raters
clearly penalise (their drop's interval lies above zero). With some fifteen categories a night, a
checkpoint as good as the best would be flagged somewhere most nights at alpha = 0.05, so the
one-sided p-values are adjusted for the family by Holm's step-down method (Holm 1979), which keeps
the chance of any false flag at alpha. A category is a regression when the checkpoint's drop is
smaller than the best's and its adjusted p-value is below alpha.

Findings use the shape of :class:`assay.nightly.regressions.Finding`: level ``errors``, the
category as the group, statistic ``drop_std`` (standardised drop per error), test
``paired-bootstrap-holm``; :func:`assay.nightly.regressions.record` stores them beside the
correlation regressions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from assay.config import DEFAULT_SEED, Settings
from assay.errors import UsageError
from assay.jobs.error_analysis import compare_on_errors
from assay.mqm.sensitivity_comparison import CellComparison
from assay.nightly.regressions import COMPLETED, Finding, evaluated_on, headline_values
from assay.nightly.suites import SuiteEntry

__all__ = ["LEVEL", "STATISTIC", "TEST", "blindness_findings", "holm_adjusted"]

LEVEL = "errors"
STATISTIC = "drop_std"
TEST = "paired-bootstrap-holm"
DEFAULT_RESAMPLES = 1000


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm's (1979) step-down adjusted p-values, in the input order: the k-th smallest of m is
    multiplied by (m - k + 1), made monotone, and capped at 1."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(p_values[i])))
        adjusted[i] = running
    return adjusted


def blindness_findings(settings: Settings, *, checkpoint_digest: str, suite_signature: str,
                       entries: Iterable[SuiteEntry], alpha: float = 0.05, n_resamples: int = DEFAULT_RESAMPLES,
                       seed: int = DEFAULT_SEED) -> list[Finding]:
    """The comparisons of every penalised error category with the team's best, for each entry
    with ``errors`` (none for an entry without a completed baseline or without the checkpoint's
    evaluation)."""
    if not 0 < alpha < 1:
        raise UsageError(f"alpha must lie strictly between 0 and 1 (got {alpha})")
    findings: list[Finding] = []
    for entry in entries:
        if not entry.errors:
            continue
        best = _team_best(settings, entry, checkpoint_digest, suite_signature)
        if best is None:
            continue
        own_signature, best_digest, best_signature, run_id = best
        facts, comparison = compare_on_errors(entry.version, own_signature, best_signature,
                                              n_resamples=n_resamples, seed=seed, settings=settings)
        version_id = entry.version_id
        penalised = [c for c in comparison.cells if c.human_penalises]
        adjusted = holm_adjusted([c.p_value for c in penalised])
        findings += [_finding(c, p, checkpoint_digest, best_digest, own_signature, best_signature, facts,
                              version_id, run_id, alpha) for c, p in zip(penalised, adjusted, strict=True)]
    return findings


def _team_best(settings: Settings, entry: SuiteEntry, digest: str, suite_signature: str
               ) -> tuple[str, str, str, str] | None:
    """(the checkpoint's signature, the best's digest and signature, the checkpoint's evaluation
    run) by the entry's headline number, or None without a baseline."""
    ledger = [(e.checkpoint_digest, e.status, e.evaluate_run_id)
              for e in evaluated_on(settings, entry.version.digest, suite_signature)]
    own = next((run for d, _, run in ledger if d == digest), None)
    if own is None:
        return None
    values = headline_values(settings, entry, [(d, run) for d, status, run in ledger
                                               if d == digest or status == COMPLETED])
    if digest not in values:
        return None
    others = [(d, v) for d, v in values.items() if d != digest]
    if not others:
        return None
    # the highest headline value; among equals the incumbent (the first evaluated: dicts keep ledger order)
    best_digest, (_, best_signature) = max(enumerate(others), key=lambda pair: (pair[1][1][0], -pair[0]))[1]
    return values[digest][1], best_digest, best_signature, own


def _finding(cell: CellComparison, adjusted_p: float, digest: str, best_digest: str, signature: str,
             best_signature: str, facts: dict[str, Any], version_id: int, run_id: str, alpha: float) -> Finding:
    value, baseline = cell.child_drop_std.value, cell.parent_drop_std.value
    return Finding(checkpoint_digest=digest, baseline_digest=best_digest,
                   dataset=facts["version"].label, dataset_version_id=version_id, level=LEVEL,
                   group=cell.name, aspect=str(facts["aspect"]), statistic=STATISTIC, value=float(value),
                   baseline_value=float(baseline), p_value=float(adjusted_p), test=TEST,
                   regression=bool(value < baseline and adjusted_p < alpha), signature=signature,
                   baseline_signature=best_signature, evaluate_run_id=run_id)
