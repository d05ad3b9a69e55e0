"""What the report shows, gathered from the catalog and the results store.

* Dataset versions come from the catalog (name, number, digest, format, derivation).
* Correlations come from the correlation store (:mod:`assay.results.correlations`, what ``assay
  evaluate`` writes), read with DuckDB. For each dataset and level the report shows the *latest
  evaluation*: the newest evaluated version of the dataset and, per statistic, the newest run on it.
  A run ranks and clusters all the metrics it evaluated together, so taking whole runs (never rows
  from different runs side by side) keeps ranks and clusters meaningful.
* Versions derived for the quality-drift benchmark (derivation kind ``quality-drift``) are one
  sample each; they are kept apart (one evaluation per version) for the drift section and left out
  of the correlation section.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from assay.catalog.dataset_versions import list_versions
from assay.catalog.engine import session_scope
from assay.catalog.models import Run
from assay.config import Settings
from assay.datasets.names import VersionRef
from assay.results import correlations
from assay.results.headline import COLUMN, SIDE_SQL
from assay.results.newest_run import newest_run_by_cell

DRIFT_KIND = "quality-drift"
#: derived versions that only exist as a robustness experiment's train/test samples (shown with
#: the experiment, never as datasets of their own)
EXPERIMENT_SAMPLE_KINDS = ("webnlg-split",)


@dataclass(frozen=True)
class VersionInfo:
    """One dataset version as the report cites it."""

    ref: VersionRef
    format: str
    store_path: str
    year: int | None
    row_counts: dict[str, int]
    derivation: dict[str, Any] | None
    created_at: datetime | None

    @property
    def label(self) -> str:
        return self.ref.label

    @property
    def is_drift(self) -> bool:
        return bool(self.derivation) and (self.derivation or {}).get("kind") == DRIFT_KIND

    @property
    def is_experiment_sample(self) -> bool:
        return bool(self.derivation) and (self.derivation or {}).get("kind") in EXPERIMENT_SAMPLE_KINDS


@dataclass(frozen=True)
class CorrelationRow:
    """One stored correlation (:mod:`assay.results.correlations`)."""

    run_id: str
    dataset: str
    version_number: int
    version_digest: str
    level: str
    group: str
    aspect: str
    metric: str
    signature: str
    statistic: str
    value: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    rank: int | None
    cluster: int | None
    protocol: str
    seed: int
    n_resamples: int
    code_version: str
    created_at: datetime
    unit: str | None = None
    """What ``n`` counts (segments, items, systems, pairs); None in rows stored before it was recorded."""
    epsilon: float | None = None
    degenerate: str | None = None
    official: bool | None = None
    side: str | None = None
    """The side evaluation the row belongs to (:mod:`assay.results.headline`); None: a headline one."""


@dataclass
class Evaluation:
    """The latest evaluation of one dataset version at one level (one run per statistic)."""

    version: VersionInfo
    level: str
    rows: list[CorrelationRow] = field(default_factory=list)
    _index: dict[tuple[str, str, str, str], CorrelationRow] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._index = {(r.group, r.aspect, r.statistic, r.signature): r for r in self.rows}

    def cell(self, group: str, aspect: str, statistic: str, signature: str) -> CorrelationRow | None:
        return self._index.get((group, aspect, statistic, signature))

    @property
    def statistics(self) -> list[str]:
        order = ("pearson", "kendall", "spearman", "kendall_c", "kendall_like", "pairwise_accuracy")
        found = {r.statistic for r in self.rows}
        return [s for s in order if s in found] + sorted(found - set(order))

    @property
    def aspects(self) -> list[str]:
        return sorted({r.aspect for r in self.rows})

    def groups(self, aspect: str | None = None) -> list[str]:
        """Groups in alphabetical order, the mean over groups (``all``) first."""
        found = {r.group for r in self.rows if aspect is None or r.aspect == aspect}
        return (["all"] if "all" in found else []) + sorted(found - {"all"})

    @property
    def signatures(self) -> list[str]:
        return sorted({r.signature for r in self.rows})

    @property
    def run_ids(self) -> list[str]:
        return sorted({r.run_id for r in self.rows})

    def metric_of(self, signature: str) -> str:
        return next(r.metric for r in self.rows if r.signature == signature)


def dataset_versions(settings: Settings) -> list[VersionInfo]:
    """Every dataset version in the catalog, by name and number."""
    with session_scope(settings) as session:
        versions = list_versions(session, all_versions=True)
        return [VersionInfo(
            ref=v.ref, format=v.format, store_path=v.store_path,
            year=int(v.info["year"]) if str((v.info or {}).get("year", "")).isdigit() else None,
            row_counts=dict(v.row_counts or {}), derivation=dict(v.derivation) if v.derivation else None,
            created_at=v.created_at,
        ) for v in versions]


_COLUMNS = [f.name for f in correlations.SCHEMA if f.name in CorrelationRow.__dataclass_fields__]


def correlation_rows(settings: Settings) -> list[CorrelationRow]:
    """Every stored correlation row (empty when nothing was evaluated yet)."""
    columns = ", ".join(f'({SIDE_SQL}) AS side' if c == COLUMN else f'"{c}"' for c in _COLUMNS)
    with duckdb.connect() as con:
        source = correlations.sql_source(con, settings)
        if source is None:
            return []
        found = con.execute(f"SELECT {columns} FROM {source}").fetchall()
    return [CorrelationRow(**dict(zip(_COLUMNS, row, strict=True))) for row in found]


def _latest_runs(rows: Iterable[CorrelationRow]) -> list[CorrelationRow]:
    """Per statistic (of one dataset version and level), the rows of the newest run
    (:func:`assay.results.newest_run.newest_run_by_cell`), statistics in the order they first appear."""
    return [r for chosen in newest_run_by_cell(rows, ("statistic",)).values() for r in chosen]


def latest_evaluations(rows: list[CorrelationRow], versions: list[VersionInfo],
                       experiment_runs: Iterable[str] = ()) -> tuple[list[Evaluation], list[Evaluation]]:
    """(evaluations of ordinary datasets, evaluations of quality-drift versions).

    Ordinary: per (dataset, level) the newest evaluated version. Drift: one per (version, level).
    Only headline evaluations are taken (:mod:`assay.results.headline`): a side evaluation (one
    rater, human translations included, ...) never stands in for the headline, however new it is
    (:func:`side_evaluations` lists them).
    Rows of versions no longer in the catalog are skipped, and so are the evaluations a robustness
    experiment made (``experiment_runs``) and its WebNLG split samples: the report shows those
    with the experiment, where each point has its own freshly trained checkpoint.
    """
    known = {(v.ref.name, v.ref.number, v.ref.digest): v for v in versions}
    skip = set(experiment_runs)
    keyed: dict[tuple[str, int, str, str], list[CorrelationRow]] = {}
    for r in rows:
        if r.run_id in skip or r.side is not None:
            continue
        keyed.setdefault((r.dataset, r.version_number, r.version_digest, r.level), []).append(r)
    ordinary: dict[tuple[str, str], tuple[VersionInfo, list[CorrelationRow]]] = {}
    drift: list[Evaluation] = []
    for (name, number, digest, level), group in keyed.items():
        version = known.get((name, number, digest))
        if version is None or version.is_experiment_sample:
            continue
        if version.is_drift:
            drift.append(Evaluation(version, level, _latest_runs(group)))
            continue
        current = ordinary.get((name, level))
        if current is None or current[0].ref.number < number:
            ordinary[(name, level)] = (version, group)
    evaluations = [Evaluation(v, level, _latest_runs(group)) for (_, level), (v, group) in ordinary.items()]
    evaluations.sort(key=lambda e: (e.version.ref.name, e.level != "seg"))
    drift.sort(key=lambda e: (e.version.ref.name, e.version.ref.number, e.level))
    return evaluations, drift


def side_evaluations(rows: Iterable[CorrelationRow]) -> list[tuple[str, str, str]]:
    """The side evaluations stored, as (dataset version label, level, side label), sorted: what the
    report names without showing (``assay leaderboard --side LABEL`` shows one)."""
    found = {(VersionRef.from_columns(asdict(r)).label, r.level, r.side) for r in rows if r.side is not None}
    return sorted((label, level, str(side)) for label, level, side in found)


def skipped_by_runs(settings: Settings, run_ids: Iterable[str]) -> list[str]:
    """What the given evaluation runs left out for incomplete scores (from their catalog summary)."""
    skipped: list[str] = []
    with session_scope(settings) as session:
        for run_id in sorted(set(run_ids)):
            run = session.get(Run, run_id)
            for note in (run.summary or {}).get("skipped", []) if run is not None else []:
                if note not in skipped:
                    skipped.append(str(note))
    return skipped
