"""Names users give (datasets, checkpoints, suites) reach SQL, paths, Prefect parameters and HTML:
an injection attempt through any of them is refused with one clear error (exit 2), and nothing is
written. Run on SQLite and on the real PostgreSQL server (the ``catalog`` fixture)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from assay.catalog.engine import session_scope
from assay.catalog.models import Checkpoint, Dataset, Suite
from assay.cli.main import cli
from assay.config import Settings

HOSTILE = [
    "x'; DROP TABLE runs; --",
    "../../etc/passwd",
    "<script>alert(1)</script>",
    "name with spaces",
    "UPPER",
    "a/b",
    "",
]


def _counts(settings: Settings) -> tuple[int, int, int]:
    with session_scope(settings) as session:
        return (session.scalar(select(func.count()).select_from(Dataset)) or 0,
                session.scalar(select(func.count()).select_from(Checkpoint)) or 0,
                session.scalar(select(func.count()).select_from(Suite)) or 0)


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_refused_and_nothing_is_written(catalog: Settings, shared_data: Path, tmp_path: Path,
                                                          name: str) -> None:
    runner = CliRunner()
    before = _counts(catalog)
    stored = sorted(p.relative_to(catalog.home) for p in catalog.home.rglob("*") if p.is_file())

    dataset = runner.invoke(cli, ["ingest", str(shared_data / "wmt16-da-seg"), "--name", name])
    assert dataset.exit_code == 2, dataset.output
    assert "invalid dataset name" in dataset.output

    folder = tmp_path / "not-even-a-checkpoint"
    folder.mkdir()
    checkpoint = runner.invoke(cli, ["checkpoints", "register", str(folder), "--name", name])
    assert checkpoint.exit_code == 2, checkpoint.output

    suite = runner.invoke(cli, ["suite", "define", name, "--entry", "wmt16:seg:pearson"])
    assert suite.exit_code == 2, suite.output
    assert "suite name" in suite.output

    shown = runner.invoke(cli, ["suite", "show", name])
    assert shown.exit_code == 2, shown.output

    # the nightly deployment's suite parameter is checked before anything reaches a server
    deploy = runner.invoke(cli, ["deploy", "--suite", name])
    assert deploy.exit_code == 2, deploy.output
    assert "suite name" in deploy.output

    assert _counts(catalog) == before
    assert sorted(p.relative_to(catalog.home) for p in catalog.home.rglob("*") if p.is_file()) == stored


@pytest.mark.parametrize(("option", "value", "expected"), [
    ("--timezone", "Mars/Olympus_Mons", "not an IANA time zone"),
    ("--cron", "every night", "not a cron expression"),
    ("--gpus", "0", "at least 1"),
    ("--zombie-after", "10", "at least 60"),
])
def test_deploy_refuses_bad_settings_before_contacting_a_server(option: str, value: str, expected: str) -> None:
    result = CliRunner().invoke(cli, ["deploy", option, value])
    assert result.exit_code == 2, result.output
    assert expected in result.output


def test_deploy_without_a_team_server_says_how_to_configure_one(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    # a subprocess: this test session's Prefect may point at a test server, which deploy would use
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update({"ASSAY_HOME": str(tmp_path / "home"), "PREFECT_HOME": str(tmp_path / "prefect")})
    done = subprocess.run([str(Path(sys.executable).parent / "assay"), "deploy"], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "PREFECT_API_URL" in done.stderr and "docs/TEAM.md" in done.stderr
