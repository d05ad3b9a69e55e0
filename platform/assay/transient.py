"""Which failures are transient: worth retrying because the same call may well succeed later.

Transient: the catalog's connection failed or was dropped (a PostgreSQL restart or fail-over, a
network hiccup, the server refusing connections for a moment), the server rolled a transaction
back to resolve a conflict (serialization failure, deadlock), or SQLite's file was busy past its
timeout. These are what a retry helps: catalog reads and writes are short and can be repeated.

Never transient: anything Assay reports to its user (:class:`assay.errors.AssayError`: bad input,
a missing dataset, unstorable metric output), programming errors, and database errors that say
the statement itself is wrong (a constraint, a missing table): they fail the same way every time.

The flow layer hands :func:`is_transient` to Prefect's ``retry_condition_fn``
(``assay.flows.retry_policy``).
"""

from __future__ import annotations

import sqlite3

from sqlalchemy import exc as sa

from assay.errors import AssayError

#: SQLSTATE classes and codes of PostgreSQL errors that a retry may clear (PostgreSQL docs,
#: Appendix A "PostgreSQL Error Codes"): 08 connection exception, 40 transaction rollback
#: (serialization failure, deadlock), 53300 too_many_connections, 57P01 admin_shutdown,
#: 57P02 crash_shutdown, 57P03 cannot_connect_now, 55P03 lock_not_available (a lock timeout)
TRANSIENT_SQLSTATE_CLASSES = ("08", "40")
TRANSIENT_SQLSTATES = frozenset({"53300", "57P01", "57P02", "57P03", "55P03"})
#: SQLite's messages for a database file another connection holds past the busy timeout
SQLITE_BUSY = ("database is locked", "database table is locked", "database is busy")
#: what PostgreSQL says, before any SQLSTATE reaches psycopg, when the connection settings are wrong:
#: these are set-up errors, never worth a retry
PERMANENT_CONNECT_MESSAGES = ("does not exist", "password authentication failed", "no password supplied",
                              "no pg_hba.conf entry", "authentication failed")


def is_transient(exc: BaseException) -> bool:
    """Whether retrying the call that raised ``exc`` may succeed (see the module doc).

    The exception's explicit cause chain is followed (a wrapper raised ``from`` a dropped
    connection is transient), but an :class:`~assay.errors.AssayError` anywhere on it is final.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, AssayError):
            return False
        if _transient_here(current):
            return True
        current = current.__cause__
    return False


def _transient_here(exc: BaseException) -> bool:
    if isinstance(exc, sa.DBAPIError):
        if exc.connection_invalidated:
            return True
        return _transient_driver_error(exc.orig)
    # the pool could not hand out a connection in time, or a pre-ping found it dead
    if isinstance(exc, sa.TimeoutError | sa.DisconnectionError):
        return True
    if isinstance(exc, ConnectionError):  # refused, reset or aborted sockets
        return True
    return _transient_driver_error(exc)


def _transient_driver_error(orig: BaseException | None) -> bool:
    """A DB-API driver's own exception: psycopg's carries a SQLSTATE; sqlite3's only a message."""
    if orig is None:
        return False
    if isinstance(orig, sqlite3.OperationalError):
        message = str(orig).lower()
        return any(busy in message for busy in SQLITE_BUSY)
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return False
    if not isinstance(orig, psycopg.Error):
        return False
    sqlstate = orig.sqlstate
    if sqlstate is None:
        # no answer from a server at all (refused, reset or closed connections) is transient; a
        # server that answered that the database or role does not exist, or refused the password, is not
        if any(message in str(orig).lower() for message in PERMANENT_CONNECT_MESSAGES):
            return False
        return isinstance(orig, psycopg.OperationalError | psycopg.InterfaceError)
    return sqlstate[:2] in TRANSIENT_SQLSTATE_CLASSES or sqlstate in TRANSIENT_SQLSTATES
