"""Alembic environment for the Assay catalog.

Batch mode (``render_as_batch``) lets one set of migrations alter tables on SQLite, which cannot
``ALTER`` most things in place, and on PostgreSQL alike.
"""

from __future__ import annotations

from alembic import context

from assay.catalog.engine import make_engine
from assay.catalog.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    url = config.get_main_option("sqlalchemy.url")
    assert url is not None  # set by assay.catalog.engine.alembic_config
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
