"""Connecting to the catalog, and keeping its schema at the Alembic head.

The embedded SQLite catalog (the default, in ``ASSAY_HOME``) is created and migrated by the first
command that needs it. Any other catalog (PostgreSQL for a team, or an explicit SQLite URL) is
migrated only by ``assay db upgrade``: workers never change a shared schema, and a command run
against an out-of-date catalog stops with :class:`CatalogOutOfDate`.
"""

from __future__ import annotations

import importlib.metadata
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import QueuePool

from assay.config import Settings, load_settings
from assay.errors import CatalogError, CatalogOutOfDate

if TYPE_CHECKING:
    from alembic.config import Config

SQLITE_BUSY_TIMEOUT_MS = 30_000


#: Where the Alembic scripts are registered: the migrations import the catalog (``migrations/env.py``),
#: so they sit above it, and the catalog finds them through installed metadata (an entry point in
#: ``pyproject.toml``), as the metric registry finds the worker layer's metrics: no arrow up.
MIGRATIONS_ENTRY_POINT_GROUP = "assay.catalog"
MIGRATIONS_ENTRY_POINT = "migrations"


@cache
def migrations_dir() -> Path:
    """The folder of the Alembic scripts: the package that the ``migrations`` entry point of the
    ``assay.catalog`` group names."""
    found = [entry for entry in importlib.metadata.entry_points(group=MIGRATIONS_ENTRY_POINT_GROUP)
             if entry.name == MIGRATIONS_ENTRY_POINT]
    if len({entry.value for entry in found}) != 1:
        raise CatalogError(
            f"expected one {MIGRATIONS_ENTRY_POINT!r} entry point in the group {MIGRATIONS_ENTRY_POINT_GROUP!r}, "
            f"found {sorted(entry.value for entry in found) or 'none'}; reinstall Assay (`pip install -e .`)"
        )
    package = found[0].load()
    return Path(package.__file__).resolve().parent


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    # '%' is ConfigParser's interpolation character; URLs may contain it (escaped passwords)
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    cfg.attributes["configure_logger"] = False
    return cfg


@cache
def head_revision() -> str:
    from alembic.script import ScriptDirectory

    heads = ScriptDirectory.from_config(alembic_config("sqlite://")).get_heads()
    if len(heads) != 1:
        raise CatalogError(f"the migrations have {len(heads)} heads, expected one: {heads}")
    return heads[0]


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    if isinstance(dbapi_connection, sqlite3.Connection):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()


def _sqlite_read_only_pragmas(dbapi_connection: Any, _record: Any) -> None:
    if isinstance(dbapi_connection, sqlite3.Connection):
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA query_only=ON")
        cursor.close()


def make_engine(url: str, *, read_only: bool = False) -> Engine:
    """An engine for ``url``; SQLite gets WAL, foreign keys and a busy timeout.

    ``read_only``: every connection refuses writes in the database itself. SQLite opens the file
    with ``mode=ro`` (a URI connection, so a missing file is an error, not a new catalog) and
    ``query_only``; PostgreSQL sets ``default_transaction_read_only`` for the session."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if read_only and parsed.database and parsed.database != ":memory:":
            location = Path(parsed.database).resolve().as_uri()  # file:///... (quoted)
            # a pool of its own connections: "sqlite://" alone would get SQLAlchemy's pool for an
            # in-memory database, one connection per thread, closed under another thread's feet
            engine = create_engine("sqlite://", poolclass=QueuePool, creator=lambda: sqlite3.connect(
                f"{location}?mode=ro", uri=True, timeout=SQLITE_BUSY_TIMEOUT_MS / 1000, check_same_thread=False))
            event.listen(engine, "connect", _sqlite_read_only_pragmas)
            return engine
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if parsed.get_backend_name() == "postgresql" and parsed.drivername == "postgresql":
        # plain postgresql:// means psycopg2 to SQLAlchemy; Assay ships psycopg 3
        url = parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    if read_only and parsed.get_backend_name() == "postgresql":
        return create_engine(url, pool_pre_ping=True,
                             connect_args={"options": "-c default_transaction_read_only=on"})
    return create_engine(url, pool_pre_ping=True)


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


#: a migration script's own revision and the one it follows (the lines Alembic's template writes)
_REVISION_LINE = re.compile(r"^revision\s*(?::\s*str\s*)?=\s*[\"'](\w+)[\"']", re.MULTILINE)
_DOWN_REVISION_LINE = re.compile(r"^down_revision\s*(?::[^=]*)?=\s*(.+)$", re.MULTILINE)


@cache
def _head_in_scripts() -> str | None:
    """The head revision read from the scripts' ``revision`` and ``down_revision`` lines, without
    importing Alembic (a quarter of a second): None when any script reads otherwise or there is
    not exactly one head. Only a shortcut: :func:`_at_head` trusts a match, anything else goes to
    Alembic (:func:`head_revision`)."""
    revisions, followed = set(), set()
    for script in (migrations_dir() / "versions").glob("*.py"):
        source = script.read_text(encoding="utf-8")
        found, down = _REVISION_LINE.findall(source), _DOWN_REVISION_LINE.findall(source)
        if len(found) != 1 or len(down) != 1:
            return None
        revisions.add(found[0])
        followed.update(re.findall(r"[\"'](\w+)[\"']", down[0]))
    heads = revisions - followed
    return heads.pop() if len(heads) == 1 else None


def _at_head(engine: Engine) -> bool:
    """Whether the catalog's recorded revision (Alembic's ``alembic_version`` table, read with plain
    SQL) is the scripts' head (:func:`_head_in_scripts`); False when either is not known this way."""
    head = _head_in_scripts()
    if head is None:
        return False
    try:
        with engine.connect() as conn:
            if not inspect(conn).has_table("alembic_version"):
                return False
            recorded = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    except Exception:  # let Alembic's own path say what is wrong
        return False
    return recorded == [head]


def upgrade(url: str, revision: str = "head") -> tuple[str | None, str | None]:
    """Migrate the catalog at ``url`` up to ``revision``; returns (before, after). Idempotent."""
    from alembic import command

    engine = make_engine(url)
    try:
        before = current_revision(engine)
        command.upgrade(alembic_config(url), revision)
        return before, current_revision(engine)
    finally:
        engine.dispose()


def downgrade(url: str, revision: str = "-1") -> tuple[str | None, str | None]:
    """Migrate the catalog at ``url`` down to ``revision`` (``-1``: one step; ``base``: empty).

    Downgrading an empty catalog (no revision) does nothing, so the command is idempotent.
    """
    from alembic import command

    engine = make_engine(url)
    try:
        before = current_revision(engine)
        if before is not None:
            command.downgrade(alembic_config(url), revision)
        return before, current_revision(engine)
    finally:
        engine.dispose()


def check_schema(engine: Engine, url: str) -> None:
    current = current_revision(engine)
    head = head_revision()
    if current == head:
        return
    shown = make_url(url).render_as_string(hide_password=True)
    if current is None:
        raise CatalogOutOfDate(
            f"the catalog at {shown} has no Assay schema yet (this code needs revision {head}); "
            "run `assay db upgrade` first"
        )
    raise CatalogOutOfDate(
        f"the catalog at {shown} is at revision {current}, but this code needs revision {head}; "
        "run `assay db upgrade` (or install the matching Assay version)"
    )


_ENGINES: dict[tuple[str, bool, bool], Engine] = {}


def get_engine(settings: Settings | None = None) -> Engine:
    """The catalog engine for the current settings, migrated (embedded) or checked (shared)."""
    settings = settings or load_settings()
    key = (settings.catalog_url, settings.catalog_is_embedded, settings.catalog_read_only)
    engine = _ENGINES.get(key)
    if engine is None:
        engine = make_engine(settings.catalog_url, read_only=settings.catalog_read_only)
        try:
            if not _at_head(engine):  # the usual case needs no Alembic
                if (settings.catalog_is_embedded and not settings.catalog_read_only
                        and current_revision(engine) != head_revision()):
                    upgrade(settings.catalog_url)
                check_schema(engine, settings.catalog_url)
        except BaseException:
            engine.dispose()  # a refused catalog leaves no open connection behind
            raise
        _ENGINES[key] = engine
    return engine


def reset_engines() -> None:
    """Dispose of cached engines (after a migration, or when tests switch ASSAY_HOME)."""
    while _ENGINES:
        _, engine = _ENGINES.popitem()
        engine.dispose()


@contextmanager
def session_scope(settings: Settings | None = None) -> Iterator[Session]:
    """A transaction: committed when the block ends normally, rolled back on any exception."""
    factory = sessionmaker(get_engine(settings), expire_on_commit=False)
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
