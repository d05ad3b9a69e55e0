"""Evaluation suites: what the nightly evaluation measures every checkpoint on.

A suite is a named, versioned list of entries; each entry pins one dataset version (by number and
content digest) and says at which levels (``seg``, ``sys``) and with which statistics it is
evaluated (:mod:`assay.stats.levels`: the levels and statistics that evaluation accepts), optionally restricted to
some groups (language pairs, tasks). A statistic of an entry is computed at every level of the
entry that accepts it (``acc_t`` only at ``seg``, ``pairwise_accuracy`` only at ``sys``); each level
must get at least one.

MQM entries. ``"protocol": "wmt24"`` evaluates the entry with the WMT24 protocol instead
(:mod:`assay.jobs.protocol_wmt24`): its levels are fixed (``sys`` SPA, ``seg`` item-grouped acc-t,
``avg`` their mean), and ``statistics`` may name a subset of them to compare against the team's
best. ``"errors": true`` (a version with an MQM ``errors`` table) also runs the error analysis
(``assay errors``) for every checkpoint and flags a checkpoint that is significantly blinder than
the team's best on an error category the raters penalise (:mod:`assay.nightly.regressions`). Both
keys appear in the canonical definition only when set, so older suites keep their signatures.

The definition is stored as canonical JSON (keys sorted, no spaces; entries sorted by dataset name
and version number; levels and statistics in :mod:`assay.stats.levels`' order), for example::

    {"entries": [{"dataset": "wmt17@1", "digest": "f601...", "groups": null,
                  "levels": ["seg"], "statistics": ["pearson", "kendall"]}],
     "format": "assay-suite", "format_version": 1}

Its **signature** is the full sha256 hex digest (64 digits) of that JSON. The suite's name and
version number are not part of it: the same definition under two names, or redefined later, has
the same signature, which keys the nightly ledger (:mod:`assay.nightly.ledger`), so identical
work is never done twice. Defining a suite whose definition equals its latest version is a no-op;
a different definition is a new version, never an edit. A bare dataset name pins the version that
is latest when the suite is defined.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from assay.catalog.dataset_versions import find_version_by_digest, list_versions, resolve
from assay.catalog.engine import session_scope
from assay.catalog.models import DatasetVersion, System
from assay.catalog.models import Suite as SuiteRow
from assay.config import Settings
from assay.datasets.names import DatasetRef, VersionRef, split_reference
from assay.errors import CatalogError, SuiteNotFound, UsageError
from assay.jobs.protocol_wmt24 import LEVELS as WMT24_LEVELS
from assay.jobs.protocol_wmt24 import PROTOCOL as WMT24
from assay.provenance import json_digest, short
from assay.stats.levels import DEFAULT_STATS, LEVELS, SEG_STATS, STATISTIC_ORDER, statistics_at

__all__ = [
    "DEFAULT_SUITE",
    "LEVELS",
    "Suite",
    "SuiteEntry",
    "default_entries",
    "define_suite",
    "get_suite",
    "list_suites",
    "validate_suite_name",
]

DEFAULT_SUITE = "nightly"
"""The suite the nightly flow evaluates when none is named."""
PROTOCOLS = (WMT24,)
#: the WMT24 protocol's levels, in suite order, and the statistic each one reports
WMT24_STATISTICS_BY_LEVEL: dict[str, tuple[str, ...]] = {
    level: statistics_at(level, WMT24_LEVELS) for level in ("seg", "sys", "avg")}
FORMAT = "assay-suite"
FORMAT_VERSION = 1
MAX_ENTRIES = 200
DEFINE_ATTEMPTS = 100
"""Each round of a race on the next version number has a winner: N concurrent definers need N rounds."""
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")
_GROUP = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")
_ENTRY_KEYS = frozenset({"dataset", "levels", "statistics", "groups", "protocol", "errors"})


def validate_suite_name(name: str) -> str:
    """A suite name: a lowercase letter, then up to 63 lowercase letters, digits, ``_`` or ``-``
    (names reach SQL, file names and HTML)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise UsageError(f"invalid suite name {name!r}: use a lowercase letter followed by up to 63 lowercase "
                         "letters, digits, '_' or '-' (e.g. 'nightly', 'wmt-seg')")
    return name


@dataclass(frozen=True)
class SuiteEntry:
    """One dataset version of a suite, with the levels, statistics and groups it is evaluated at."""

    version: VersionRef
    version_id: int
    """The version's row id in the catalog (``dataset_versions.id``)."""
    levels: tuple[str, ...]
    statistics: tuple[str, ...]
    groups: tuple[str, ...] | None
    """Only these groups are evaluated; None: every group."""
    exclude_groups: tuple[str, ...] = ()
    """The version's other groups (what :func:`assay.jobs.evaluation.evaluate` takes as
    ``exclude_groups``); derived from ``groups``, not part of the definition."""
    protocol: str | None = None
    """``wmt24``: evaluated with the WMT24 protocol (levels seg, sys and avg); None: per level."""
    errors: bool = False
    """Run the error analysis too, and flag blindness against the team's best (MQM versions)."""

    def statistics_for(self, level: str) -> tuple[str, ...]:
        """The entry's statistics that ``level`` accepts, in canonical order."""
        allowed = statistics_at(level, WMT24_LEVELS if self.protocol == WMT24 else None)
        return tuple(s for s in self.statistics if s in allowed) if level in self.levels else ()

    def definition(self) -> dict[str, Any]:
        """The entry as it appears in the canonical definition (what the signature covers);
        ``protocol`` and ``errors`` only when set."""
        found: dict[str, Any] = {
            "dataset": self.version.label, "digest": self.version.digest, "levels": list(self.levels),
            "statistics": list(self.statistics), "groups": list(self.groups) if self.groups is not None else None}
        if self.protocol is not None:
            found["protocol"] = self.protocol
        if self.errors:
            found["errors"] = True
        return found

    def as_dict(self) -> dict[str, Any]:
        return {**self.definition(), "dataset_version_id": self.version_id,
                "statistics_by_level": {level: list(self.statistics_for(level)) for level in self.levels},
                "exclude_groups": list(self.exclude_groups)}


@dataclass(frozen=True)
class Suite:
    """A stored suite version."""

    id: int
    name: str
    version: int
    entries: tuple[SuiteEntry, ...]
    signature: str
    """sha256 hex (64 digits) of the canonical definition; name and version excluded."""
    created_at: str | None = None

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"

    def definition(self) -> dict[str, Any]:
        return _definition([e.definition() for e in self.entries])

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "version": self.version, "ref": self.ref,
                "signature": self.signature, "created_at": self.created_at,
                "entries": [e.as_dict() for e in self.entries]}


def _definition(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "entries": entries}


def signature_of(definition: Mapping[str, Any]) -> str:
    """sha256 of the definition as canonical JSON (:func:`assay.provenance.json_digest`)."""
    return json_digest(definition)


# --- defining ---------------------------------------------------------------------------------------


def _as_strings(value: Any, what: str, where: str) -> list[str]:
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{where}: {what} must be a list of strings (or one comma-separated string), "
                         f"got {value!r}")
    return list(dict.fromkeys(value))


def _version_groups(session: Session, version_id: int) -> list[str]:
    return list(session.scalars(select(System.group).where(System.version_id == version_id)
                                .distinct().order_by(System.group)))


def _resolve_entry(session: Session, raw: Any, index: int) -> SuiteEntry:
    where = f"suite entry {index}"
    if not isinstance(raw, Mapping):
        raise UsageError(f"{where}: expected an object with 'dataset', 'levels' and optionally 'statistics' "
                         f"and 'groups', got {raw!r}")
    unknown = sorted(set(raw) - _ENTRY_KEYS)
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {unknown} (expected {', '.join(sorted(_ENTRY_KEYS))})")
    ref_text = raw.get("dataset")
    if not isinstance(ref_text, str) or not ref_text:
        raise UsageError(f"{where}: 'dataset' must be a dataset reference NAME or NAME@VERSION")
    ref = DatasetRef.parse(ref_text)
    version = resolve(session, ref)
    label = version.label
    where = f"suite entry {index} ({label})"
    errors = raw.get("errors", False)
    if not isinstance(errors, bool):
        raise UsageError(f"{where}: 'errors' must be true or false, got {errors!r}")
    if errors and not (version.row_counts or {}).get("errors"):
        raise UsageError(f"{where}: 'errors' needs MQM error spans, and {label} has no errors table "
                         "(ingest an MQM release, e.g. ../shared/data/mqm-wmt23-ende)")
    protocol = raw.get("protocol")
    if protocol is not None:
        levels, statistics = _protocol_levels(raw, protocol, version, where)
    else:
        levels, statistics = _levels_and_statistics(raw, version, where)
    groups, exclude = _groups(session, raw, version, where)
    return SuiteEntry(version=version.ref, version_id=version.id, levels=tuple(levels), statistics=tuple(statistics),
                      groups=groups, exclude_groups=exclude, protocol=protocol, errors=errors)


def _protocol_levels(raw: Mapping[str, Any], protocol: Any, version: DatasetVersion, where: str
                     ) -> tuple[list[str], list[str]]:
    """The levels and statistics of a protocol entry: the protocol's, or the named subset of its statistics."""
    if protocol not in PROTOCOLS:
        raise UsageError(f"{where}: unknown protocol {protocol!r} (expected {', '.join(PROTOCOLS)}, or leave "
                         "'protocol' out for per-level statistics)")
    if raw.get("levels") is not None:
        raise UsageError(f"{where}: the {protocol} protocol fixes its levels (seg, sys and avg); leave 'levels' "
                         "out and name its statistics instead")
    offered = [s for lv in WMT24_STATISTICS_BY_LEVEL.values() for s in lv]
    wanted = offered if raw.get("statistics") is None else _as_strings(raw["statistics"], "statistics", where)
    unknown = [s for s in wanted if s not in offered]
    if not wanted or unknown:
        raise UsageError(f"{where}: statistic(s) {unknown or wanted} are not the {protocol} protocol's "
                         f"(choose from {', '.join(offered)})")
    if not (version.row_counts or {}).get("segments"):
        raise UsageError(f"{where}: the {protocol} protocol needs segment-level judgments, and {version.label} "
                         "has none")
    levels = [lv for lv, stats in WMT24_STATISTICS_BY_LEVEL.items() if set(stats) & set(wanted)]
    return levels, [s for s in offered if s in wanted]


def _levels_and_statistics(raw: Mapping[str, Any], version: DatasetVersion, where: str
                           ) -> tuple[list[str], list[str]]:
    levels = _as_strings(raw.get("levels"), "levels", where)
    bad = [lv for lv in levels if lv not in LEVELS]
    if not levels or bad:
        raise UsageError(f"{where}: levels {bad or levels} (expected one or more of {', '.join(LEVELS)})")
    levels = [lv for lv in LEVELS if lv in levels]

    if raw.get("statistics") is None:
        wanted = [s for lv in levels for s in DEFAULT_STATS[lv]]
    else:
        wanted = _as_strings(raw["statistics"], "statistics", where)
        if not wanted:
            raise UsageError(f"{where}: no statistics given")
    for stat in wanted:
        if not any(stat in statistics_at(lv) for lv in levels):
            choices = "; ".join(f"{lv}: {', '.join(statistics_at(lv))}" for lv in levels)
            raise UsageError(f"{where}: statistic {stat!r} is not available at level(s) {', '.join(levels)} "
                             f"(choose from {choices})")
    statistics = [s for s in STATISTIC_ORDER if s in wanted]
    for lv in levels:
        if not any(s in statistics_at(lv) for s in statistics):
            raise UsageError(f"{where}: none of the statistics {statistics} is available at level {lv} "
                             f"(choose from {', '.join(statistics_at(lv))})")
    _check_data(version, levels, statistics, where)
    return levels, statistics


def _groups(session: Session, raw: Mapping[str, Any], version: DatasetVersion, where: str
            ) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """(the groups an entry keeps, or None for all; the version's other groups)."""
    label = version.label
    groups: list[str] | None = None
    exclude: tuple[str, ...] = ()
    if raw.get("groups") is not None:
        groups = sorted(_as_strings(raw["groups"], "groups", where))
        invalid = [g for g in groups if not _GROUP.fullmatch(g)]
        if invalid or not groups:
            raise UsageError(f"{where}: invalid group name(s) {invalid or groups} (expected names such as 'de-en')")
        known = _version_groups(session, version.id)
        missing = [g for g in groups if g not in known]
        if missing:
            raise UsageError(f"{where}: no group(s) {missing} in {label} (its groups: {', '.join(known)})")
        exclude = tuple(g for g in known if g not in groups)
    return (tuple(groups) if groups is not None else None), exclude


def _check_data(version: DatasetVersion, levels: list[str], statistics: list[str], where: str) -> None:
    """Refuse a level the version has no judgments for (evaluation would find nothing)."""
    counts = version.row_counts or {}
    if "seg" in levels and not counts.get("segments"):
        if not counts.get("rankings"):
            raise UsageError(f"{where}: level seg needs segment-level judgments, and {version.label} has none")
        if [s for s in statistics if s in SEG_STATS] != ["kendall_like"]:
            raise UsageError(f"{where}: {version.label} has only relative-ranking pairs at segment level: "
                             "use the statistic kendall_like there")
    if "sys" in levels and not (counts.get("systems") and counts.get("outputs")):
        raise UsageError(f"{where}: level sys needs system-level judgments and system outputs, and "
                         f"{version.label} has {counts.get('systems', 0)} and {counts.get('outputs', 0)}")


def _resolve_entries(session: Session, entries: Sequence[Mapping[str, Any]]) -> list[SuiteEntry]:
    if isinstance(entries, str | bytes) or not isinstance(entries, Sequence) or not entries:
        raise UsageError("a suite needs at least one entry (a dataset with its levels and statistics)")
    if len(entries) > MAX_ENTRIES:
        raise UsageError(f"a suite has at most {MAX_ENTRIES} entries, got {len(entries)}")
    resolved = [_resolve_entry(session, raw, i) for i, raw in enumerate(entries, start=1)]
    seen: dict[str, str] = {}
    for entry in resolved:
        if entry.version.digest in seen:
            other = seen[entry.version.digest]
            same = "is listed twice" if other == entry.version.label else f"has the same content as {other}"
            raise UsageError(f"{entry.version.label} {same}: list each dataset version once, with all its levels "
                             "and statistics in one entry")
        seen[entry.version.digest] = entry.version.label
    return sorted(resolved, key=lambda e: (e.version.name, e.version.number))


def define_suite(settings: Settings, name: str, entries: Sequence[Mapping[str, Any]]) -> tuple[Suite, bool]:
    """Store ``entries`` as suite ``name``: (the suite, created). A definition equal to the latest
    version's returns that version (created False); a different one becomes the next version.

    Each entry is ``{"dataset": "wmt17@1", "levels": ["seg"], "statistics": ["kendall"],
    "groups": ["de-en"]}`` (``statistics`` default to Pearson and Kendall, ``groups`` to all).
    Everything is validated before anything is written. Two processes defining the same suite at
    once end with one version: the loser of the race on the (name, version) constraint re-reads.
    """
    validate_suite_name(name)
    with session_scope(settings) as session:
        resolved = _resolve_entries(session, entries)
    definition = _definition([e.definition() for e in resolved])
    signature = signature_of(definition)
    for attempt in range(DEFINE_ATTEMPTS):
        with session_scope(settings) as session:
            latest = _latest_row(session, name)
            if latest is not None and latest.signature == signature:
                return _suite_from_row(session, latest), False
            row = SuiteRow(name=name, version=(latest.version if latest else 0) + 1, definition=definition,
                           signature=signature)
            session.add(row)
            try:
                session.flush()
            except IntegrityError:  # another process stored this version number first: look again
                session.rollback()
                time.sleep(random.uniform(0, 0.01 * min(attempt + 1, 10)))
                continue
            return _suite_from_row(session, row, resolved), True
    raise CatalogError(f"could not store suite {name!r}: other processes kept defining new versions of it")


# --- reading ----------------------------------------------------------------------------------------


def _latest_row(session: Session, name: str) -> SuiteRow | None:
    return session.scalars(select(SuiteRow).where(SuiteRow.name == name)
                           .order_by(SuiteRow.version.desc()).limit(1)).one_or_none()


def _suite_from_row(session: Session, row: SuiteRow, resolved: list[SuiteEntry] | None = None) -> Suite:
    if resolved is None:
        resolved = [_stored_entry(session, row, raw) for raw in row.definition.get("entries", [])]
    return Suite(id=row.id, name=row.name, version=row.version, entries=tuple(resolved), signature=row.signature,
                 created_at=row.created_at.isoformat() if row.created_at else None)


def _stored_entry(session: Session, row: SuiteRow, raw: Mapping[str, Any]) -> SuiteEntry:
    pinned = VersionRef.parse(str(raw["dataset"]), str(raw["digest"]))  # as SuiteEntry.definition stores it
    version = find_version_by_digest(session, pinned.name, pinned.digest)
    if version is None:
        raise CatalogError(f"suite {row.name}@{row.version} pins {pinned.label} ({short(pinned.digest)}), "
                           "which is not in this catalog")
    groups = tuple(raw["groups"]) if raw.get("groups") is not None else None
    exclude = tuple(g for g in _version_groups(session, version.id) if g not in groups) if groups else ()
    return SuiteEntry(version=pinned, version_id=version.id,
                      levels=tuple(raw["levels"]), statistics=tuple(raw["statistics"]), groups=groups,
                      exclude_groups=exclude, protocol=raw.get("protocol"), errors=bool(raw.get("errors", False)))


def _parse_ref(ref: str) -> tuple[str, int | None]:
    name, number = split_reference(ref) if isinstance(ref, str) else ("", None)
    validate_suite_name(name)
    if number is not None and not (number.isdigit() and 0 < len(number) < 10):
        raise UsageError(f"invalid suite reference {ref!r}: expected NAME or NAME@VERSION (a version number)")
    return name, int(number) if number is not None else None


def get_suite(settings: Settings, ref: str) -> Suite:
    """The suite ``ref`` names: ``name`` (its latest version) or ``name@3``."""
    name, number = _parse_ref(ref)
    with session_scope(settings) as session:
        query = select(SuiteRow).where(SuiteRow.name == name)
        query = (query.where(SuiteRow.version == number) if number is not None
                 else query.order_by(SuiteRow.version.desc()).limit(1))
        row = session.scalars(query).one_or_none()
        if row is None:
            known = list(session.execute(select(SuiteRow.name, func.max(SuiteRow.version))
                                         .group_by(SuiteRow.name).order_by(SuiteRow.name)))
            listed = ", ".join(f"{n} (versions 1-{v})" for n, v in known) or "none"
            if number is not None and any(n == name for n, _ in known):
                raise SuiteNotFound(f"no version {number} of suite {name!r} (known suites: {listed}); "
                                    "`assay suite define` makes a new version")
            raise SuiteNotFound(f"no suite named {name!r} (known suites: {listed}); define it with "
                                f"`assay suite define {name} --all-datasets` (every ingested dataset) or "
                                f"`assay suite define {name} --entry DATASET:LEVELS[:STATISTICS]` "
                                "(e.g. --entry wmt17@1:seg:kendall,pearson)")
        return _suite_from_row(session, row)


def list_suites(settings: Settings) -> list[dict[str, Any]]:
    """Every stored suite version (by name, then version): ref, signature, datasets, latest flag."""
    with session_scope(settings) as session:
        rows = list(session.scalars(select(SuiteRow).order_by(SuiteRow.name, SuiteRow.version)))
        latest = {r.name: r.version for r in rows}
        return [{"name": r.name, "version": r.version, "ref": f"{r.name}@{r.version}", "signature": r.signature,
                 "latest": latest[r.name] == r.version,
                 "datasets": [e["dataset"] for e in r.definition.get("entries", [])],
                 "entries": [{k: e.get(k) for k in ("dataset", "levels", "statistics", "groups", "protocol",
                                                     "errors") if k in e or k not in ("protocol", "errors")}
                             for e in r.definition.get("entries", [])],
                 "created_at": r.created_at.isoformat() if r.created_at else None} for r in rows]


def default_entries(settings: Settings) -> list[dict[str, Any]]:
    """A sensible default suite: the latest version of every ingested (not derived, not synthetic)
    dataset, at each level it has judgments for, with Pearson and Kendall (BLEURT §5, BERTScore §4
    report these); an MQM release with error spans gets the WMT24 protocol and the error analysis
    instead, as the WMT24 metrics task ranks metrics. Pass the result to :func:`define_suite`."""
    entries: list[dict[str, Any]] = []
    with session_scope(settings) as session:
        for version in list_versions(session):
            if version.format in ("derived", "synthetic"):
                continue
            counts = version.row_counts or {}
            if counts.get("errors") and counts.get("segments"):
                entries.append({"dataset": version.label, "protocol": WMT24, "errors": True})
                continue
            levels = (["seg"] if counts.get("segments") else []) + (
                ["sys"] if counts.get("systems") and counts.get("outputs") else [])
            if levels:
                entries.append({"dataset": version.label, "levels": levels, "statistics": ["pearson", "kendall"]})
    if not entries:
        raise UsageError("no ingested dataset has human judgments to evaluate on; ingest one with `assay ingest`")
    return entries
