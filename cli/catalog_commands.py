"""``assay db``: explicit, idempotent catalog migrations."""

from __future__ import annotations

import click

from assay.config import load_settings


@click.group("db")
def db() -> None:
    """Create or migrate the catalog (SQLite in ASSAY_HOME, or ASSAY_CATALOG_URL)."""


def _echo_migration(before: str | None, after: str | None) -> None:
    """What a migration did, from the revisions before and after it (None: an empty catalog)."""
    if before == after:
        click.echo(f"catalog already at revision {after or 'empty'}")
    else:
        click.echo(f"catalog migrated from {before or 'empty'} to {after or 'empty'}")


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True, help="Alembic revision to reach.")
def upgrade_command(revision: str) -> None:
    """Migrate the catalog up to REVISION (default: the newest). Safe to repeat."""
    from assay.catalog import engine

    before, after = engine.upgrade(load_settings().catalog_url, revision)
    engine.reset_engines()
    _echo_migration(before, after)


@db.command("downgrade")
@click.option("--revision", default="-1", show_default=True, help="'-1' (one step), a revision, or 'base'.")
def downgrade_command(revision: str) -> None:
    """Migrate the catalog down (one step by default). Safe to repeat on an empty catalog."""
    from assay.catalog import engine

    before, after = engine.downgrade(load_settings().catalog_url, revision)
    engine.reset_engines()
    _echo_migration(before, after)


@db.command("current")
def current_command() -> None:
    """Print the catalog's revision and the revision this code needs."""
    from assay.catalog import engine

    settings = load_settings()
    eng = engine.make_engine(settings.catalog_url)
    try:
        current = engine.current_revision(eng)
    finally:
        eng.dispose()
    head = engine.head_revision()
    state = "up to date" if current == head else "out of date: run `assay db upgrade`"
    click.echo(f"catalog revision {current or 'empty'}; code needs {head} ({state})")


def register(cli: click.Group) -> None:
    cli.add_command(db)
