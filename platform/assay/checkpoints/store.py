"""The shared checkpoint store: each registered checkpoint under ``ASSAY_HOME/checkpoints/<digest>/``.

Registration places a checkpoint's files here (hard links where the file system allows, copies
otherwise), so that every host that mounts the shared ``ASSAY_HOME`` (``docs/TEAM.md`` §2) reads
the same folder, and the catalog records the path relative to ``ASSAY_HOME``
(``checkpoints/<digest>``). The folder is content-addressed: its name is the digest the caller
computed once (:func:`assay.workers.checkpoint.checkpoint_digest`, when training exported it or
when a folder was first registered); it is not hashed again here. The scorer verifies it when it
loads it, hashing it once per host while its files are unchanged (:mod:`assay.checkpoints.stamps`,
whose stamps live beside this store).

Rows registered before the store existed hold absolute paths; :func:`stored_folder` reads both
(tolerant resolution, no migration): a relative path is under ``ASSAY_HOME``, an absolute one is
taken as it is.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from assay.atomic import atomic_path
from assay.config import Settings

__all__ = ["place", "relative_path", "store_path", "stored_folder"]

#: errors of os.link that mean "this file system (or pair of them) cannot hard-link: copy instead"
_NO_LINK = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EACCES}


def store_path(digest: str) -> str:
    """The catalog path of a checkpoint, relative to ``ASSAY_HOME``: ``checkpoints/<digest>``."""
    return f"checkpoints/{digest}"


def stored_folder(settings: Settings, path: str) -> Path:
    """The folder a catalog path names on this host: relative paths are under ``ASSAY_HOME``;
    absolute ones (rows registered before the shared store) are taken as they are."""
    folder = Path(path)
    return folder if folder.is_absolute() else settings.home / folder


def relative_path(settings: Settings, folder: Path) -> str | None:
    """``folder`` relative to ``ASSAY_HOME`` (POSIX separators), or None when it lies outside."""
    try:
        return folder.resolve().relative_to(settings.home.resolve()).as_posix()
    except ValueError:
        return None


def _link_or_copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError as exc:
        if exc.errno not in _NO_LINK:
            raise
        shutil.copy2(source, target)


def place(settings: Settings, source: Path, digest: str, files: Iterable[str]) -> str:
    """Put the checkpoint ``files`` of ``source`` into the store under ``digest`` and return its
    catalog path. A folder already there is kept (same digest, same content: a repeated or
    concurrent registration); otherwise the files are linked or copied beside it and renamed into
    place, so a reader never sees a partial folder."""
    path = store_path(digest)
    target = stored_folder(settings, path)
    if target.is_dir():
        return path
    try:
        with atomic_path(target, replace=False) as tmp:
            tmp.mkdir(parents=True)
            for name in files:
                _link_or_copy(source / name, tmp / name)
    except FileExistsError:  # another registration placed it first
        pass
    return path
