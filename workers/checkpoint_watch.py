"""Scanning the watched folders (:mod:`assay.nightly.watched_folders`) and registering new checkpoints.

Every entry of a watched folder gets one outcome, each with its reason, in a :class:`ScanReport`
and in the log (the nightly sweep hands in its Prefect run logger, so the reasons are in the flow
run's logs; in-process, this module's logger):

* **registered**: a new checkpoint folder, verified end to end and registered
  (:func:`assay.checkpoints.registry.register`, which places it in the shared store);
* **already registered**: a folder whose content digest is in the registry (cheap: nothing else is
  done, so a nightly scan does not load every model again; and a folder this host hashed before,
  whose files kept their size, modification time and inode, is not even hashed: its verification
  stamp holds the digest, :mod:`assay.checkpoints.stamps`);
* **skipped**, with the kind and reason:

  - ``not-a-checkpoint``: a file, or a folder without ``assay_checkpoint.json``;
  - ``temporary-name``: it starts with ``.`` (the ``.tmp-``/``.old-`` names of
    :func:`assay.atomic.atomic_path`, which ``save_checkpoint`` and ``assay checkpoints export``
    write under before one atomic rename) or ends with ``.tmp`` or ``.partial`` (other tools'
    convention);
  - ``being-written``: the newest modification time of anything in it is less than
    ``settle_seconds`` ago (the settle rule below); the reason says how long ago and how long is left;
  - ``damaged``: its manifest or files fail verification (the reason names the file);
  - ``not-registered``: it verified, but recording it failed (the catalog or the store);
  - ``folder-missing``: the watched folder itself is gone.

The settle rule reads **modification times only**: the folder's own, and those of every file and
folder inside it, recursively. A folder whose newest modification time is older than
``settle_seconds`` is complete, even if its status-change time (ctime) is recent: ``touch -d``,
``os.utime``, ``cp -a`` and ``rsync -t`` set ctime to now when they set a modification time back,
so ctime would keep a finished copy "being written" for another settle period. A copy still in
progress is seen all the same: creating, renaming or removing an entry updates the modification
time of the folder that holds it, and copying tools restore a folder's time only after its last
entry is written.

Nothing found in a folder is fatal to the scan; the next scan looks at every entry again.
"""

from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select

from assay.catalog.engine import session_scope
from assay.catalog.models import Checkpoint
from assay.checkpoints.folder import CONFIG_FILE, digest_from_stamp, stamped_digest
from assay.checkpoints.registry import register
from assay.config import Settings
from assay.errors import AssayError, CheckpointError, UsageError
from assay.nightly.watched_folders import watched
from assay.provenance import short

__all__ = ["DEFAULT_SETTLE_SECONDS", "ScanEntry", "ScanReport", "newest_change", "scan_folder", "scan_watched"]

log = logging.getLogger(__name__)
# without a configured handler the lines go nowhere (not to stderr as Python's last resort): the
# CLI prints the report itself, and a flow run logs to its run logger
log.addHandler(logging.NullHandler())

DEFAULT_SETTLE_SECONDS = 60.0
TEMPORARY_SUFFIXES = (".tmp", ".partial")
#: what ``damaged`` covers: the checkpoint's own errors, unreadable files, and what loading raises
_DAMAGE = (CheckpointError, OSError, ValueError, RuntimeError)
#: skipped kinds logged as warnings: someone has to act on them
_WARN = frozenset({"damaged", "not-registered", "folder-missing"})

Logger = logging.Logger | logging.LoggerAdapter[Any]


@dataclass(frozen=True)
class ScanEntry:
    """One entry of a watched folder and what the scan did with it."""

    path: str
    status: str
    """``registered``, ``already registered`` or ``skipped``"""
    reason: str
    """why it was skipped (``not a checkpoint (no assay_checkpoint.json)``, ...), or which
    checkpoint it is (``as NAME (DIGEST12)``)"""
    kind: str | None = None
    """for a skipped entry: ``not-a-checkpoint``, ``temporary-name``, ``being-written``,
    ``damaged``, ``not-registered`` or ``folder-missing``"""
    seconds_left: float | None = None
    """for ``being-written``: how long it must stay unchanged before a scan takes it"""
    name: str | None = None
    digest: str | None = None
    stored: str | None = None
    """a registered checkpoint's folder in the shared store"""

    def line(self) -> str:
        return f"{self.status} {self.path}: {self.reason}"


@dataclass
class ScanReport:
    """What one scan found: every entry of the watched folders, in scan order."""

    entries: list[ScanEntry] = field(default_factory=list)

    @property
    def registered(self) -> list[dict[str, Any]]:
        """name, digest, path (in the watched folder) and stored (in the shared store) of each
        checkpoint registered by this scan"""
        return [{"name": e.name, "digest": e.digest, "path": e.path, "stored": e.stored}
                for e in self.entries if e.status == "registered"]

    @property
    def known(self) -> list[str]:
        """folders whose content was registered before (a no-op)"""
        return [e.path for e in self.entries if e.status == "already registered"]

    @property
    def skipped(self) -> list[tuple[str, str]]:
        """(path, reason) of every entry left alone"""
        return [(e.path, e.reason) for e in self.entries if e.status == "skipped"]

    def summary(self) -> str:
        return f"{len(self.registered)} registered, {len(self.known)} already registered, {len(self.skipped)} skipped"

    def as_dict(self) -> dict[str, Any]:
        """``registered``, ``known`` (already registered) and ``skipped`` (path, reason, kind,
        seconds_left), each in scan order."""
        return {"registered": self.registered, "known": self.known,
                "skipped": [{"path": e.path, "reason": e.reason, "kind": e.kind, "seconds_left": e.seconds_left}
                            for e in self.entries if e.status == "skipped"]}


def newest_change(folder: Path) -> float:
    """The newest modification time of ``folder`` and of every file and folder under it (links
    are not followed: a link's own time counts). Status-change times are not read (module doc)."""
    try:
        newest = folder.stat().st_mtime
        for root, dirs, files in os.walk(folder):
            for name in (*dirs, *files):
                newest = max(newest, os.lstat(os.path.join(root, name)).st_mtime)
    except FileNotFoundError:  # something vanished while we looked: it is changing now
        return time.time()
    return newest


def _temporary(name: str) -> bool:
    return name.startswith(".") or name.endswith(TEMPORARY_SUFFIXES)


def _known_digests(settings: Settings) -> dict[str, str]:
    """digest -> name of every registered checkpoint"""
    with session_scope(settings) as session:
        return {digest: name for digest, name in session.execute(select(Checkpoint.digest, Checkpoint.name))}


def _what_failed(candidate: Path, exc: Exception) -> str:
    """``exc`` in words, with paths inside ``candidate`` relative to it (the entry is named beside it)."""
    if isinstance(exc, OSError) and exc.filename:
        text = f"{exc.filename}: {exc.strerror or exc}"
    else:
        text = str(exc) or type(exc).__name__
    text = text.removeprefix(f"{candidate}: ")
    return text.replace(f"{candidate}{os.sep}", "")


def _being_written(path: str, age: float, settle_seconds: float) -> ScanEntry:
    left = settle_seconds - age
    return ScanEntry(path, "skipped", f"still being written (newest change {math.floor(max(age, 0.0))} s ago; "
                                      f"complete in {math.ceil(left)} s)",
                     kind="being-written", seconds_left=round(left, 3))


def _entry(settings: Settings, candidate: Path, *, settle_seconds: float, now: float,
           known: dict[str, str]) -> ScanEntry:
    """What to do with one entry of a watched folder (see the module doc), done."""
    path = str(candidate)
    if not candidate.is_dir():
        return ScanEntry(path, "skipped", "not a checkpoint (not a folder)", kind="not-a-checkpoint")
    if _temporary(candidate.name):
        return ScanEntry(path, "skipped", "temporary name (a checkpoint still being written under it, or left by "
                                          "a crash; it is scanned once renamed)", kind="temporary-name")
    if not (candidate / CONFIG_FILE).is_file():
        return ScanEntry(path, "skipped", f"not a checkpoint (no {CONFIG_FILE})", kind="not-a-checkpoint")
    age = now - newest_change(candidate)
    if age < settle_seconds:
        return _being_written(path, age, settle_seconds)
    try:
        # a registered folder unchanged since this host hashed it is not hashed again (its stamp);
        # a stamp never registers a folder on its word: that needs the full hash
        digest = digest_from_stamp(candidate, settings)
        if digest not in known:
            digest = stamped_digest(candidate, settings, reuse=False)
        if digest in known:
            return ScanEntry(path, "already registered", f"as {known[digest]} ({short(digest)})",
                             name=known[digest], digest=digest)
        # verified end to end (loads the model: torch is imported only for a folder to register)
        from assay.workers.checkpoint_registration import facts_of

        facts = facts_of(candidate, digest)  # hashed once, just above
    except _DAMAGE as exc:
        return ScanEntry(path, "skipped", f"damaged ({_what_failed(candidate, exc)})", kind="damaged")
    try:
        registered = register(settings, facts)
    except (AssayError, OSError) as exc:
        return ScanEntry(path, "skipped", f"not registered ({_what_failed(candidate, exc)})", kind="not-registered")
    known[registered.digest] = registered.name
    status = "registered" if registered.created else "already registered"  # else: registered meanwhile
    return ScanEntry(path, status, f"as {registered.name} ({registered.ref.short})", name=registered.name,
                     digest=registered.digest, stored=registered.path)


def _add(report: ScanReport, entry: ScanEntry, logger: Logger) -> None:
    report.entries.append(entry)
    logger.log(logging.WARNING if entry.kind in _WARN else logging.INFO, "%s", entry.line())


def scan_folder(settings: Settings, folder: Path, report: ScanReport, *, settle_seconds: float, now: float,
                known: dict[str, str], logger: Logger = log) -> None:
    """Scan one watched folder into ``report``, every entry in name order (see the module doc)."""
    if not folder.is_dir():
        _add(report, ScanEntry(str(folder), "skipped", "the watched folder does not exist (any more)",
                               kind="folder-missing"), logger)
        return
    for candidate in sorted(folder.iterdir()):
        _add(report, _entry(settings, candidate, settle_seconds=settle_seconds, now=now, known=known), logger)


def scan_watched(settings: Settings, *, settle_seconds: float = DEFAULT_SETTLE_SECONDS, now: float | None = None,
                 logger: Logger | None = None) -> ScanReport:
    """Scan every watched folder: register the settled, valid checkpoint folders in them, and
    report (and log, to ``logger`` or this module's) every entry with what was done and why."""
    if settle_seconds < 0:
        raise UsageError(f"the settle time must be 0 seconds or more, got {settle_seconds}")
    logger = logger or log
    report = ScanReport()
    known = _known_digests(settings)
    current = time.time() if now is None else now
    folders = watched(settings)
    for folder in folders:
        scan_folder(settings, Path(folder), report, settle_seconds=settle_seconds, now=current, known=known,
                    logger=logger)
    logger.info("scanned %d watched folder(s) (settle time %g s): %s", len(folders), settle_seconds, report.summary())
    return report
