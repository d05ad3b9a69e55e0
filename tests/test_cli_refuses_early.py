"""``assay evaluate`` refuses bad options before any flow starts (issue 29: a bad ``--rater`` was
refused only after 3 s of start-up): an unknown dataset, a statistic the level does not have, a
rater on a version without per-rater scores. Each is refused with exit status 2 and one error line,
and the flow is never called."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from assay.cli import runner
from assay.cli.main import cli
from assay.fixtures import fixtures_dir
from assay.jobs.ingest import ingest_path


@pytest.fixture
def no_flow(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("the flow started")

    monkeypatch.setattr(runner, "run_flow", refuse)


@pytest.mark.parametrize(("options", "error"), [
    (["--dataset", "nosuch"], "no dataset named 'nosuch'"),
    (["--dataset", "wmt99", "--stat", "nosuch"], "statistic(s) ['nosuch'] not available at level seg"),
    (["--dataset", "wmt99", "--level", "sys", "--stat", "acc23"], "not available at level sys"),
    (["--dataset", "wmt99", "--rater", "nobody"], "--rater needs per-rater scores"),
])
def test_evaluate_refuses_bad_options_before_its_flow(no_flow: None, options: list[str], error: str) -> None:
    ingest_path(fixtures_dir() / "demo-wmt")
    result = CliRunner().invoke(cli, ["evaluate", *options])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and error in result.output
    assert result.output.count("\n") == 1
