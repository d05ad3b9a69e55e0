"""One scoring request per (metric, signature) at a time, across processes and hosts.

A scoring request plans against the results store (the keys already stored under its signature),
then writes one Parquet part per shard. Two identical requests planned at the same moment would
both compute the same keys and store them twice, so a request holds an exclusive lock on its
(metric name, signature) from its final plan to its recorded run (:mod:`assay.jobs.scoring`); a second
identical request waits, then plans again and finds the first one's parts.

Why a lock and not a "claim" row in the catalog: a claim row outlives a process that is killed
(SIGKILL, OOM, a lost node) and needs a lease, heartbeats and a sweeper to be taken back. The two
locks used here are released by the operating system or the database server the moment their
holder dies, with nothing to clean up:

* PostgreSQL catalog (a team, several hosts): a session-level advisory lock,
  ``pg_advisory_lock(bigint)`` on a key hashed from the metric name and signature, held on a
  connection of its own (PostgreSQL docs, "Advisory Locks": a session-level lock is held until
  released or the session ends). A dead holder's socket closes and the server ends its session,
  releasing the lock. A host that vanishes without closing its socket is noticed through TCP
  keepalives, which the lock's session sets short (:data:`KEEPALIVES`).
* SQLite catalog (one machine): ``fcntl.flock`` on a lock file under ``ASSAY_HOME/locks/``; the
  kernel drops the lock when the holder's file descriptor closes, which death does.

So "a run row is ``running`` but nobody holds its signature's lock" proves its process died: the
scorer that takes the lock marks such rows ``crashed`` (:func:`assay.jobs.runs.mark_crashed`).

The lock is not re-entrant: taking a lock this thread already holds raises instead of waiting for
itself forever. Other threads and processes wait (or time out with :class:`~assay.errors.LockTimeout`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from assay.config import Settings
from assay.errors import LockTimeout

log = logging.getLogger(__name__)

#: lock files of the SQLite (single-machine) backend, under ``ASSAY_HOME``
LOCKS_DIR = "locks"
#: how often a waiter with a timeout polls a busy lock file (seconds)
POLL_S = 0.05
#: server-side TCP keepalives of the lock's PostgreSQL session: a holder whose host vanished
#: without closing its socket is dropped (and its lock released) after about idle + interval x count
KEEPALIVES = {"tcp_keepalives_idle": "30", "tcp_keepalives_interval": "10", "tcp_keepalives_count": "3"}
#: PostgreSQL's SQLSTATE for "lock_not_available" (what ``lock_timeout`` raises)
LOCK_NOT_AVAILABLE = "55P03"

_SAFE = re.compile(r"[^a-z0-9._-]+")
_held = threading.local()


def lock_key(namespace: str, signature: str) -> int:
    """The advisory-lock key of (namespace, signature): the first 8 bytes of their sha256, as the
    signed 64-bit integer ``pg_advisory_lock(bigint)`` takes. A collision only serialises two
    unrelated requests; it never lets two identical ones run together."""
    digest = hashlib.sha256(f"{namespace}\0{signature}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def lock_file(settings: Settings, namespace: str, signature: str) -> Path:
    """The SQLite backend's lock file: ``ASSAY_HOME/locks/<namespace>-<sha256[:32]>.lock`` (the
    namespace cleaned to ``[a-z0-9._-]``, so a metric name cannot leave the folder)."""
    digest = hashlib.sha256(f"{namespace}\0{signature}".encode()).hexdigest()[:32]
    name = _SAFE.sub("-", namespace.lower()).strip("-.")[:64] or "lock"
    return settings.home / LOCKS_DIR / f"{name}-{digest}.lock"


def uses_postgres(settings: Settings) -> bool:
    return make_url(settings.catalog_url).get_backend_name() == "postgresql"


@contextlib.contextmanager
def signature_lock(settings: Settings, namespace: str, signature: str,
                   timeout_s: float | None = None) -> Iterator[None]:
    """Hold the exclusive lock of (``namespace``, ``signature``) for the ``with`` block.

    ``namespace`` is the metric name for scoring (any other job that needs exactly-once writes
    uses its own). Waits for another holder; with ``timeout_s`` gives up after that many seconds
    with :class:`~assay.errors.LockTimeout`. The lock lives in the catalog's PostgreSQL server when the catalog
    is PostgreSQL, else in a lock file under ``ASSAY_HOME/locks``.
    """
    if timeout_s is not None and timeout_s < 0:
        raise ValueError(f"timeout_s must be >= 0 or None, got {timeout_s!r}")
    token = (settings.catalog_url, namespace, signature)
    held: set[tuple[str, str, str]] = _held.__dict__.setdefault("keys", set())
    if token in held:
        raise RuntimeError(f"this thread already holds the lock of {namespace} {signature}")
    backend = _postgres_lock if uses_postgres(settings) else _file_lock
    with backend(settings, namespace, signature, timeout_s):
        held.add(token)
        try:
            yield
        finally:
            held.discard(token)


def _waiting(namespace: str, signature: str) -> None:
    log.info("waiting for another request that holds the lock of %s %s", namespace, signature)


@contextlib.contextmanager
def _file_lock(settings: Settings, namespace: str, signature: str, timeout_s: float | None) -> Iterator[None]:
    path = lock_file(settings, namespace, signature)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _flock(fd, namespace, signature, timeout_s)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)  # the file stays: removing it would race with a waiter that has it open


def _flock(fd: int, namespace: str, signature: str, timeout_s: float | None) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        _waiting(namespace, signature)
    if timeout_s is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LockTimeout(f"another request still holds the lock of {namespace} {signature} "
                                  f"after {timeout_s:g} s") from None
            time.sleep(POLL_S)


@contextlib.contextmanager
def _postgres_lock(settings: Settings, namespace: str, signature: str, timeout_s: float | None) -> Iterator[None]:
    from assay.catalog.engine import make_engine

    key = lock_key(namespace, signature)
    # a connection of its own, in autocommit: the lock is the session's, never a transaction's,
    # and no transaction stays open while the request computes. Its engine is its own too: an
    # advisory lock needs no table, so it is taken before the catalog has its schema as well (a
    # sweep's study storage is opened under it, :mod:`assay.sweeps.storage`)
    engine = make_engine(settings.catalog_url)
    conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    try:
        for name, value in KEEPALIVES.items():
            conn.execute(text("SELECT set_config(:name, :value, false)"), {"name": name, "value": value})
        if not conn.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": key}).scalar():
            _waiting(namespace, signature)
            _pg_wait(conn, key, namespace, signature, timeout_s)
        try:
            yield
        finally:
            with contextlib.suppress(DBAPIError):  # a lost session has released it already
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
    finally:
        # never hand a session with changed settings (or, after an error, a held lock) back to the
        # pool: closing the connection ends the session, which releases whatever it still holds
        conn.invalidate()
        conn.close()
        engine.dispose()


def _pg_wait(conn: Any, key: int, namespace: str, signature: str, timeout_s: float | None) -> None:
    if timeout_s is None:
        conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})
        return
    # lock_timeout bounds the wait of any lock, advisory ones included; 0 would mean "no limit"
    milliseconds = max(1, int(timeout_s * 1000))
    conn.execute(text("SELECT set_config('lock_timeout', :ms, false)"), {"ms": f"{milliseconds}ms"})
    try:
        conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})
    except DBAPIError as exc:
        if getattr(exc.orig, "sqlstate", None) == LOCK_NOT_AVAILABLE:
            raise LockTimeout(f"another request still holds the lock of {namespace} {signature} "
                              f"after {timeout_s:g} s") from None
        raise
