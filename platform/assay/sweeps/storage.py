"""Where a sweep's Optuna study lives: beside the catalog, so every worker that reaches the catalog
shares the study (Akiba et al., 2019, "Optuna", §4: distributed optimisation over one RDB storage).

- PostgreSQL catalog (a team): the same database, in its own schema ``optuna``.
- SQLite catalog (one machine): the file ``sweeps.sqlite`` beside ``catalog.sqlite``.

Optuna keeps its own Alembic revision in a table named ``alembic_version``, the table the catalog's
migrations use, so its tables cannot sit in the catalog's own namespace: a schema on PostgreSQL, a
sibling file on SQLite (which has no schemas).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import make_url, text

from assay.config import Settings
from assay.jobs.signature_lock import signature_lock

SCHEMA = "optuna"
SQLITE_FILE = "sweeps.sqlite"
_OPEN: dict[str, Any] = {}
#: the lock every opener of a study storage holds (:func:`assay.jobs.signature_lock.signature_lock`)
OPENING_LOCK = ("sweeps", "open-storage")


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
    under the cross-process lock every opener takes (:data:`OPENING_LOCK`, Assay's one lock,
    :func:`assay.jobs.signature_lock.signature_lock`: a PostgreSQL advisory lock with a PostgreSQL
    catalog, else a lock file under ``ASSAY_HOME/locks``)."""
    import optuna

    url, engine_kwargs = storage_url(settings)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with signature_lock(settings, *OPENING_LOCK):
        if make_url(url).get_backend_name() == "postgresql":
            _create_schema(settings)
        return optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs)


def _create_schema(settings: Settings) -> None:
    """The schema the study's tables live in, in the team's PostgreSQL catalog database."""
    from assay.catalog.engine import make_engine

    engine = make_engine(settings.catalog_url)
    try:
        with engine.connect() as conn:
            conn.execute(text(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}"))
            conn.commit()
    finally:
        engine.dispose()


def close_storages() -> None:
    """Close every open study storage's connections."""
    while _OPEN:
        _, storage = _OPEN.popitem()
        storage.remove_session()
        storage.engine.dispose()
