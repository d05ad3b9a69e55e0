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

SCHEMA = "optuna"
SQLITE_FILE = "sweeps.sqlite"
_OPEN: dict[str, Any] = {}


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
    import optuna

    url, engine_kwargs = storage_url(settings)
    if url in _OPEN:
        return _OPEN[url]
    if make_url(url).get_backend_name() == "postgresql":
        from assay.catalog.engine import make_engine

        engine = make_engine(settings.catalog_url)
        try:
            with engine.begin() as conn:
                conn.execute(text(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}"))
        finally:
            engine.dispose()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = _OPEN[url] = optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs)
    return storage


def close_storages() -> None:
    """Close every open study storage's connections."""
    while _OPEN:
        _, storage = _OPEN.popitem()
        storage.remove_session()
        storage.engine.dispose()
