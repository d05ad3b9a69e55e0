"""The sweep's Optuna study beside the catalog (SQLite file; PostgreSQL schema ``optuna``), the
refusal of a resumed sweep whose space changed (naming what changed, storing nothing), and the
settling of trials a killed sweep left Running (failed, then queued again or skipped by policy)."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from assay.config import load_settings
from assay.errors import NotFoundError, UsageError
from assay.sweeps.space import SearchSpace, load_space
from assay.sweeps.storage import SQLITE_FILE, close_storages, create_storage
from assay.workers.training.sweep_trials import ask_trial, load_study, open_study, settle_killed_trials, sweep_summary
from tests.team_server import _database_url, create_database, drop_database, require_postgres

SPACE = """\
[trial]
data = ["wmt16"]
[trial.config]
max_steps = 4
[params.learning_rate]
low = 1e-5
high = 1e-4
log = true
[params.head_input]
choices = ["cls", "mean"]
"""


def _space(tmp_path: Path, text_: str = SPACE) -> SearchSpace:
    path = tmp_path / "space.toml"
    path.write_text(text_, encoding="utf-8")
    return load_space(path)


def _check_study_life(tmp_path: Path) -> None:
    settings = load_settings()
    space = _space(tmp_path)
    study = open_study(settings, "lr", space, resume=False, seed=1)
    assert study.user_attrs["space_digest"] == space.digest
    with pytest.raises(UsageError, match=r"sweep 'lr' already exists .*`--resume` continues it"):
        open_study(settings, "lr", space, resume=False, seed=1)
    with pytest.raises(NotFoundError, match="no sweep named 'other' to resume"):
        open_study(settings, "other", space, resume=True, seed=1)
    changed = _space(tmp_path, SPACE.replace("high = 1e-4", "high = 1e-3"))
    with pytest.raises(UsageError, match=r"changed: params.learning_rate.high: 0.0001 -> 0.001"):
        open_study(settings, "lr", changed, resume=True, seed=1)
    assert load_study(settings, "lr").user_attrs["space_digest"] == space.digest

    # a sweep killed mid-trial leaves it Running: resuming marks it failed and returns its values,
    # which the next ask runs again before anything new
    killed = study.ask()
    killed.suggest_float("learning_rate", 1e-5, 1e-4, log=True)
    killed.suggest_categorical("head_input", ["cls", "mean"])
    resumed = open_study(settings, "lr", space, resume=True, seed=1)
    alive, retries = settle_killed_trials(resumed, "retry")
    assert alive == [] and [(r.of, r.params) for r in retries] == [(killed.number, killed.params)]
    trials = sweep_summary(resumed)["trials"]
    assert [t["state"] for t in trials] == ["FAIL"] and trials[0]["failure"].startswith("killed")
    again = ask_trial(resumed, space, retries)
    assert again.params == killed.params and again.user_attrs["retry_of"] == killed.number and not retries
    alive, retries = settle_killed_trials(resumed, "skip")
    assert alive == [] and retries == []  # skipped: nothing to run again
    assert [t["state"] for t in sweep_summary(resumed)["trials"]] == ["FAIL", "FAIL"]
    close_storages()


def test_the_study_beside_a_sqlite_catalog(tmp_path: Path) -> None:
    _check_study_life(tmp_path)
    settings = load_settings()
    assert (settings.catalog_file.parent / SQLITE_FILE).is_file()


def test_the_study_in_the_postgresql_catalog_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A team's catalog: the study's tables go to schema ``optuna`` of the same database; the
    catalog's own Alembic revision (public.alembic_version) is left as it was."""
    require_postgres()
    from assay.catalog.engine import upgrade

    name = f"assay_sweep_{uuid.uuid4().hex[:10]}"
    create_database(name)
    try:
        url = _database_url(name, "psycopg")
        upgrade(url)
        engine = create_engine(url)
        with engine.connect() as conn:
            before = conn.execute(text("SELECT version_num FROM public.alembic_version")).scalar_one()
        monkeypatch.setenv("ASSAY_CATALOG_URL", url)
        _check_study_life(tmp_path)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT version_num FROM public.alembic_version")).scalar_one() == before
            assert conn.execute(text("SELECT count(*) FROM optuna.studies")).scalar_one() == 1
            assert conn.execute(text("SELECT count(*) FROM optuna.trials")).scalar_one() == 2
        engine.dispose()
    finally:
        drop_database(name)


def _open_at_once(workers: int = 4) -> list[str]:
    """Open the storage from several threads released together: each opens its own engine, as
    separate processes would; returns their errors."""
    settings, errors = load_settings(), []
    start = threading.Barrier(workers)

    def open_one() -> None:
        start.wait()
        try:
            storage = create_storage(settings)
            storage.remove_session()
            storage.engine.dispose()
        except Exception as exc:  # reported by the assertion below
            errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")

    threads = [threading.Thread(target=open_one) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def test_workers_opening_a_new_study_storage_at_once_all_get_it(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """CI once lost a sweep this way: the test polled the study while the sweep's process made it,
    and the sweep died on "UNIQUE constraint failed: alembic_version". Without the lock in
    ``create_storage`` every round below fails ("table studies already exists")."""
    for round_ in range(3):
        home = tmp_path / f"home-{round_}"
        home.mkdir()
        monkeypatch.setenv("ASSAY_HOME", str(home))
        assert _open_at_once() == []
        storage = create_storage(load_settings())
        assert storage.get_all_studies() == []
        storage.engine.dispose()


def test_workers_opening_a_new_study_storage_in_postgresql_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same on a team's PostgreSQL catalog: the schema ``optuna`` and its tables are made once."""
    require_postgres()
    name = f"assay_sweep_{uuid.uuid4().hex[:10]}"
    create_database(name)
    try:
        monkeypatch.setenv("ASSAY_CATALOG_URL", _database_url(name, "psycopg"))
        assert _open_at_once() == []
        engine = create_engine(_database_url(name, "psycopg"))
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM optuna.alembic_version")).scalar_one() == 1
        engine.dispose()
    finally:
        drop_database(name)
