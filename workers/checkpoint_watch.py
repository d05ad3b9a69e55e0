"""Scanning the watched folders (:mod:`assay.nightly.watched_folders`) and registering new checkpoints.

Each immediate subfolder of a watched folder that holds ``assay_checkpoint.json`` is a candidate.
It is left for a later scan when it may still be in the making:

* its name is temporary: it starts with ``.`` (the ``.tmp-``/``.old-`` names of
  :func:`assay.atomic.atomic_path`, which ``save_checkpoint`` and ``assay checkpoints export`` write
  under before one atomic rename) or ends with ``.tmp`` or ``.partial`` (other tools' convention);
* any of its files or folders changed (modification or status-change time) within the last
  ``settle_seconds``: a copy that is not atomic is still being written. The status-change time
  counts too because ``cp -a`` and ``rsync -t`` restore old modification times.

Otherwise its content digest is computed (cheap: file hashes only); a digest already in the
registry is known and nothing else is done, so a nightly scan does not load every model again.
A new digest is verified end to end and registered
(:func:`assay.workers.checkpoint_registry.register_folder`); a folder that fails verification is
skipped with the reason (logged as a warning and returned), never fatal to the scan.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select

from assay.catalog.engine import session_scope
from assay.catalog.models import Checkpoint
from assay.config import Settings
from assay.errors import AssayError, UsageError
from assay.nightly.watched_folders import watched
from assay.workers.checkpoint import CONFIG_FILE, checkpoint_digest
from assay.workers.checkpoint_registry import register_folder

__all__ = ["DEFAULT_SETTLE_SECONDS", "ScanReport", "scan_folder", "scan_watched"]

log = logging.getLogger(__name__)

DEFAULT_SETTLE_SECONDS = 60.0
TEMPORARY_SUFFIXES = (".tmp", ".partial")


@dataclass
class ScanReport:
    """What one scan found: newly registered checkpoints, known ones, and folders left alone."""

    registered: list[dict[str, Any]] = field(default_factory=list)
    """name, digest, path (the watched folder) and stored (its folder in the shared store) of each
    checkpoint registered by this scan"""
    known: list[str] = field(default_factory=list)
    """folders whose content was registered before (a no-op)"""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(folder, reason): still being written, a temporary name, or failed verification"""

    def as_dict(self) -> dict[str, Any]:
        return {"registered": list(self.registered), "known": list(self.known),
                "skipped": [{"path": p, "reason": r} for p, r in self.skipped]}


def last_change(folder: Path) -> float:
    """The latest modification or status-change time of ``folder`` and of everything under it."""
    latest = 0.0
    for root, dirs, files in os.walk(folder):
        for name in [*dirs, *files, "."]:
            try:
                stat = (Path(root) / name).stat()
            except OSError:  # vanished while we looked: it is changing
                return time.time()
            latest = max(latest, stat.st_mtime, stat.st_ctime)
    return latest


def _temporary(name: str) -> bool:
    return name.startswith(".") or name.endswith(TEMPORARY_SUFFIXES)


def _known_digests(settings: Settings) -> set[str]:
    with session_scope(settings) as session:
        return set(session.scalars(select(Checkpoint.digest)))


def scan_folder(settings: Settings, folder: Path, report: ScanReport, *, settle_seconds: float, now: float,
                known: set[str]) -> None:
    """Scan one watched folder into ``report`` (see the module docstring)."""
    if not folder.is_dir():
        report.skipped.append((str(folder), "the watched folder does not exist (any more)"))
        return
    for candidate in sorted(folder.iterdir()):
        if not candidate.is_dir() or not (candidate / CONFIG_FILE).is_file():
            continue
        path = str(candidate)
        if _temporary(candidate.name):
            report.skipped.append((path, "temporary name: a checkpoint still being written (or left by a crash)"))
            continue
        age = now - last_change(candidate)
        if age < settle_seconds:
            report.skipped.append((path, f"still being written: changed {max(age, 0.0):.0f} s ago, "
                                         f"registered once unchanged for {settle_seconds:.0f} s"))
            continue
        try:
            digest = checkpoint_digest(candidate)
            if digest in known:
                report.known.append(path)
                continue
            registered = register_folder(settings, candidate, digest=digest)  # hashed once, just above
        except (AssayError, OSError, ValueError, RuntimeError) as exc:
            log.warning("checkpoint folder %s skipped: %s", path, exc)
            report.skipped.append((path, f"not registered: {exc}"))
            continue
        known.add(registered.digest)
        if registered.created:
            report.registered.append({"name": registered.name, "digest": registered.digest, "path": path,
                                      "stored": registered.path})
        else:  # registered between our look at the registry and now
            report.known.append(path)


def scan_watched(settings: Settings, *, settle_seconds: float = DEFAULT_SETTLE_SECONDS,
                 now: float | None = None) -> ScanReport:
    """Scan every watched folder and register the settled, valid checkpoint folders in them."""
    if settle_seconds < 0:
        raise UsageError(f"the settle time must be 0 seconds or more, got {settle_seconds}")
    report = ScanReport()
    known = _known_digests(settings)
    current = time.time() if now is None else now
    for folder in watched(settings):
        scan_folder(settings, Path(folder), report, settle_seconds=settle_seconds, now=current, known=known)
    return report
