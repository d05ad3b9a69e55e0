"""Watched checkpoint folders: where the nightly flow looks for new checkpoints.

A team drops finished checkpoint folders (one per checkpoint, see ``docs/CHECKPOINTS.md``) into a
few shared folders; ``assay checkpoints watch DIR`` records such a folder in the catalog table
``watched_folders``, so every member's and every worker's scan sees the same list. Paths are stored
absolute with symbolic links resolved, so one folder is recorded once however it was named. The
scan itself (verifying and registering what it finds) needs the model code and lives in
:mod:`assay.workers.checkpoint_watch`.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from assay.catalog.engine import session_scope
from assay.catalog.models import WatchedFolder
from assay.config import Settings
from assay.errors import UsageError

__all__ = ["normalise", "unwatch", "watch", "watched"]


def normalise(path: str | Path, *, must_exist: bool = True) -> Path:
    """``path`` made absolute with ``~`` expanded and links resolved; with ``must_exist``, it must
    be an existing folder. Control characters are refused (a path reaches logs and HTML)."""
    text = str(path)
    if not text.strip() or any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise UsageError(f"invalid folder path {text!r}: expected a folder path without control characters")
    resolved = Path(text).expanduser().resolve()
    if must_exist and not resolved.is_dir():
        what = "is not a folder" if resolved.exists() else "does not exist"
        raise UsageError(f"{resolved} {what}: expected an existing folder that checkpoint folders are put in")
    return resolved


def watch(settings: Settings, path: str | Path) -> tuple[str, bool]:
    """Record ``path`` (an existing folder) as watched: (stored path, created). Watching a watched
    folder again is a no-op."""
    folder = str(normalise(path))
    try:
        with session_scope(settings) as session:
            if session.scalar(select(WatchedFolder.id).where(WatchedFolder.path == folder)) is not None:
                return folder, False
            session.add(WatchedFolder(path=folder))
            session.flush()
    except IntegrityError:  # a concurrent `watch` of the same folder won
        return folder, False
    return folder, True


def unwatch(settings: Settings, path: str | Path) -> bool:
    """Stop watching ``path`` (which may no longer exist); False when it was not watched."""
    folder = str(normalise(path, must_exist=False))
    with session_scope(settings) as session:
        result = session.execute(delete(WatchedFolder).where(WatchedFolder.path == folder))
        return bool(getattr(result, "rowcount", 0))


def watched(settings: Settings) -> list[str]:
    """The watched folders, in the order they were added."""
    with session_scope(settings) as session:
        return list(session.scalars(select(WatchedFolder.path).order_by(WatchedFolder.added_at, WatchedFolder.id)))
