"""The catalog's shortcut past Alembic (:func:`assay.catalog.engine._at_head`): the head read from the
migration scripts is Alembic's head, a catalog at the head needs no Alembic import, and a catalog
behind it still goes to Alembic and is migrated."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sqlalchemy import text

from assay.catalog import engine as catalog_engine


def test_the_head_in_the_scripts_is_alembics_head() -> None:
    assert catalog_engine._head_in_scripts() == catalog_engine.head_revision()


def test_a_catalog_behind_the_head_is_still_migrated(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'catalog.sqlite'}"
    catalog_engine.upgrade(url, "0001")
    engine = catalog_engine.make_engine(url)
    try:
        assert not catalog_engine._at_head(engine)
    finally:
        engine.dispose()
    catalog_engine.upgrade(url)
    engine = catalog_engine.make_engine(url)
    try:
        assert catalog_engine._at_head(engine)
        with engine.connect() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = '0001'"))
            conn.commit()
        assert not catalog_engine._at_head(engine)
    finally:
        engine.dispose()


def test_opening_a_migrated_catalog_imports_no_alembic(tmp_path: Path) -> None:
    """In a new process: the embedded catalog created (Alembic, once), then opened again without it."""
    code = ("import sys; from assay.catalog.engine import get_engine; get_engine(); "
            "print('alembic' in sys.modules)")
    env = {"ASSAY_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert first.stdout.strip() == "True" and again.stdout.strip() == "False"
