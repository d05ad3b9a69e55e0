"""Verification stamps: a checkpoint folder hashed on one host is not hashed again there while its
files are unchanged.

Hashing a checkpoint (:func:`assay.workers.checkpoint.checkpoint_digest`: every byte of its weights,
JSON and tokenizer files, about 91 MB for the embedded MiniLM) was repeated by every process that
scored it (one per suite dataset on a GPU pool) and by every scan of a watched folder. After a
folder is hashed, a stamp records, for each of its files, the relative path, size, modification
time (``st_mtime_ns``) and inode number, with the digest they hashed to. The next process on the
same host that finds every file with the same four values takes the digest from the stamp; any
difference (a file rewritten, even with its size kept, touched, replaced by a rename, added to or
removed from the file list) invalidates the stamp and the folder is hashed in full again. This is
git's rule for its index ("cached stat information", ``Documentation/technical/index-format.txt``),
with its guard against "racily clean" entries (``Documentation/technical/racy-git.txt``): a file
modified less than :data:`RACY_SECONDS` before the hash began, or changed while it was hashed, is
not stamped, since a second write in the same timestamp tick would leave its stat unchanged. The
status-change time (ctime) is not read: registration hard-links a folder's files into the shared
store, which changes their ctime (the link count) but not their content.

Stamps live beside the shared checkpoint store (:mod:`assay.checkpoints.store`), one folder per
host and one file per checkpoint folder: ``ASSAY_HOME/checkpoint-stamps/<host>/<key>.json``, where
``<host>`` is ``socket.gethostname()`` and ``<key>`` the first 32 hex digits of the sha256 of the
folder's resolved path. They are per host because a path, and what a host sees behind it, is a
fact of that host: ``/scratch/ckpt`` on two machines can be two folders, and one host's network
file-system view can differ from another's. A stamp is written atomically
(:func:`assay.atomic.write_text`); an unreadable, malformed or foreign stamp counts as none, and a
stamp that cannot be written is skipped (the next process hashes again). A stamp only ever saves a
hash; it can confirm a digest but never refuse one (:func:`assay.workers.checkpoint.verified_digest`
hashes again before it refuses a folder).

The stamp file (format version 1)::

    {"format": "assay-checkpoint-stamp", "format_version": 1, "host": "gpu-07",
     "folder": "/abs/path/of/the/checkpoint", "digest": "<sha256 hex>",
     "files": [["assay_checkpoint.json", 2048, 1735689600123456789, 4211], ...],
     "stamped_at": "2025-01-01T00:00:00+00:00"}
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import socket
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assay.atomic import write_text
from assay.config import Settings

__all__ = ["RACY_SECONDS", "STAMP_FORMAT", "FileState", "digest_if_unchanged", "digest_once", "file_states",
           "read_stamp", "stamp_file", "stamps_dir", "this_host", "write_stamp"]

log = logging.getLogger(__name__)

STAMP_FORMAT = "assay-checkpoint-stamp"
STAMP_FORMAT_VERSION = 1
#: a file modified less than this long before its hash began is not stamped (git's "racily clean"
#: entries; 2 s also covers file systems that keep times to the even second, e.g. FAT)
RACY_SECONDS = 2.0

FileState = tuple[str, int, int, int]
"""(relative path, size in bytes, modification time in ns, inode number) of one file"""

_DIGEST = re.compile(r"[0-9a-f]{64}")
_UNSAFE = re.compile(r"[^a-z0-9._-]")


def this_host() -> str:
    """This host's name as a folder name: ``socket.gethostname()`` lower-cased, with characters
    other than letters, digits, ``.``, ``_`` and ``-`` replaced by ``_``."""
    name = _UNSAFE.sub("_", socket.gethostname().strip().lower()).lstrip(".")
    return name or "unknown-host"


def stamps_dir(settings: Settings, host: str | None = None) -> Path:
    """``ASSAY_HOME/checkpoint-stamps/<host>/``: this host's stamps, beside the shared store."""
    return settings.home / "checkpoint-stamps" / (host or this_host())


def stamp_file(settings: Settings, folder: Path) -> Path:
    """This host's stamp of ``folder`` (resolved: one stamp however the folder is named)."""
    key = hashlib.sha256(str(folder.resolve()).encode("utf-8")).hexdigest()[:32]
    return stamps_dir(settings) / f"{key}.json"


def file_states(folder: Path, names: Sequence[str]) -> tuple[FileState, ...]:
    """The :data:`FileState` of each of ``names`` in ``folder`` (links followed: the state of the
    file that is read), in the order given. Raises ``OSError`` for a missing file."""
    states = []
    for name in names:
        stat = os.stat(folder / name)
        states.append((name, stat.st_size, stat.st_mtime_ns, stat.st_ino))
    return tuple(states)


def read_stamp(settings: Settings, folder: Path, states: tuple[FileState, ...]) -> str | None:
    """The digest this host's stamp of ``folder`` holds when its files are exactly ``states``;
    None when there is no stamp, it is malformed, or any file differs."""
    try:
        data: Any = json.loads(stamp_file(settings, folder).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != STAMP_FORMAT \
            or data.get("format_version") != STAMP_FORMAT_VERSION:
        return None
    digest = data.get("digest")
    if data.get("folder") != str(folder.resolve()) or not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        return None
    files = data.get("files")
    if not isinstance(files, list) or [tuple(f) if isinstance(f, list) else f for f in files] != list(states):
        return None
    return digest


def write_stamp(settings: Settings, folder: Path, states: tuple[FileState, ...], digest: str) -> Path | None:
    """Record that ``folder``'s files, in ``states``, hash to ``digest`` (atomically); returns the
    stamp, or None when it could not be written (the next process then hashes again)."""
    target = stamp_file(settings, folder)
    stamp = {"format": STAMP_FORMAT, "format_version": STAMP_FORMAT_VERSION, "host": this_host(),
             "folder": str(folder.resolve()), "digest": digest, "files": [list(s) for s in states],
             "stamped_at": datetime.now(UTC).isoformat(timespec="seconds")}
    try:
        return write_text(json.dumps(stamp, indent=1), target)
    except OSError as exc:
        log.debug("cannot write the checkpoint stamp %s: %s", target, exc)
        return None


def digest_if_unchanged(settings: Settings, folder: Path, names: Sequence[str]) -> str | None:
    """The digest this host's stamp of ``folder`` holds, when every file of ``names`` is unchanged
    since it was stamped; None otherwise (nothing is hashed)."""
    try:
        return read_stamp(settings, folder, file_states(folder, names))
    except OSError:
        return None


def digest_once(settings: Settings, folder: Path, names: Sequence[str], digest_of: Callable[[Path], str], *,
                reuse: bool = True) -> str:
    """``digest_of(folder)``, computed at most once on this host while the files ``names`` are
    unchanged: taken from this host's stamp when it matches (``reuse``), else computed and stamped
    unless a file changed during the hash or was modified less than :data:`RACY_SECONDS` before it
    began (the module doc)."""
    try:
        before = file_states(folder, names)
    except OSError:  # a file is missing or unreadable: the hash refuses it, in its own words
        return digest_of(folder)
    if reuse:
        stamped = read_stamp(settings, folder, before)
        if stamped is not None:
            return stamped
    started_ns = time.time_ns()
    digest = digest_of(folder)
    try:
        after = file_states(folder, names)
    except OSError:  # a file vanished after it was hashed: nothing to stamp
        return digest
    settled_ns = started_ns - int(RACY_SECONDS * 1e9)
    if after == before and all(mtime_ns < settled_ns for _, _, mtime_ns, _ in before):
        write_stamp(settings, folder, before, digest)
    return digest
