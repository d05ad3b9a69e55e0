"""Where a sweep's Optuna study lives: beside the catalog, so every worker that reaches the catalog
shares the study (Akiba et al., 2019, "Optuna", §4: distributed optimisation over one RDB storage).

- PostgreSQL catalog (a team): the same database, in its own schema ``optuna``.
- SQLite catalog (one machine): the file ``sweeps.sqlite`` beside ``catalog.sqlite`` (and
  ``sweeps.sqlite.lock``, locked while a process opens it).

Optuna keeps its own Alembic revision in a table named ``alembic_version``, the table the catalog's
migrations use, so its tables cannot sit in the catalog's own namespace: a schema on PostgreSQL, a
sibling file on SQLite (which has no schemas).
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import make_url, text

from assay.config import Settings

SCHEMA = "optuna"
SQLITE_FILE = "sweeps.sqlite"
_OPEN: dict[str, Any] = {}
#: the PostgreSQL advisory lock held while a storage is opened (any fixed 64-bit key of our own)
_ADVISORY_KEY = 0x4153534159535750  # "ASSAYSWP"


def storage_url(settings: Settings) -> tuple[str, dict[str, Any]]:
    """The SQLAlchemy URL of the study storage and the engine arguments it needs."""
    url = make_url(settings.catalog_url)
    backend = url.get_backend_name()
    if backend == "sqlite":
        folder = Path(url.database).parent if url.database and url.database != ":memory:" else settings.home
        return f"sqlite:///{folder / SQLITE_FILE}", {"connect_args": {"timeout": 30}}
    if backend == "postgresql":
        if url.drivername == "postgresql":
            url = url.set(drivername="postgresql+psycopg")
        return (url.render_as_string(hide_password=False),
                {"connect_args": {"options": f"-csearch_path={SCHEMA}"}, "pool_pre_ping": True})
    raise ValueError(f"sweeps need a SQLite or PostgreSQL catalog, not {backend}")


def open_storage(settings: Settings) -> Any:
    """Optuna's ``RDBStorage`` for this catalog (its tables made on first use); one per catalog in a
    process, like the catalog's own engines (:func:`close_storages` disposes of them)."""
    url, _ = storage_url(settings)
    if url not in _OPEN:
        _OPEN[url] = create_storage(settings)
    return _OPEN[url]


def create_storage(settings: Settings) -> Any:
    """A new ``RDBStorage`` for this catalog, making its schema and tables if they are missing.

    Several processes may open a new storage at the same moment (a sweep and ``assay sweep show``,
    or a team's workers starting together). Optuna makes its tables and stamps its Alembic revision
    without a lock, so all but one of them would fail on what another has just made ("table studies
    already exists", "UNIQUE constraint failed: alembic_version"); the opening is therefore done
    under a lock every opener takes: a PostgreSQL advisory lock, or an exclusive lock on a file
    beside the SQLite storage."""
    import optuna

    url, engine_kwargs = storage_url(settings)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with _opening_lock(settings, url):
        return optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs)


@contextmanager
def _opening_lock(settings: Settings, url: str) -> Iterator[None]:
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        assert parsed.database is not None
        with open(f"{parsed.database}.lock", "a") as lock:  # flock: released when the file is closed
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
        return
    from assay.catalog.engine import make_engine

    engine = make_engine(settings.catalog_url)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _ADVISORY_KEY})
            try:
                conn.execute(text(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}"))
                conn.commit()
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _ADVISORY_KEY})
                conn.commit()
    finally:
        engine.dispose()


def close_storages() -> None:
    """Close every open study storage's connections."""
    while _OPEN:
        _, storage = _OPEN.popitem()
        storage.remove_session()
        storage.engine.dispose()
