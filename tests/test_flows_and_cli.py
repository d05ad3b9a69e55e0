"""The ingest flow on the real Prefect engine, and the `assay` command line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.errors import InputError
from assay.fixtures import fixtures_dir

REPO = Path(__file__).resolve().parent.parent
ASSAY = Path(sys.executable).parent / "assay"
DEMO_WMT = fixtures_dir() / "demo-wmt"


def cli():
    from assay.cli.main import cli as group

    return group


@pytest.mark.prefect
def test_ingest_flow_runs_on_the_prefect_engine(prefect_engine: None) -> None:
    from prefect import get_client
    from prefect.client.schemas.sorting import FlowRunSort

    from assay.flows.ingest import ingest_flow

    results = ingest_flow([str(DEMO_WMT), str(fixtures_dir() / "demo-captions.tsv")])
    assert [r["name"] for r in results] == ["wmt99", "demo-captions"]
    assert all(r["created"] for r in results)
    again = ingest_flow([str(DEMO_WMT)])
    assert again[0]["created"] is False and again[0]["version_digest"] == results[0]["version_digest"]

    import anyio

    async def flow_runs() -> list[str]:
        async with get_client() as client:
            runs = await client.read_flow_runs(limit=50, sort=FlowRunSort.START_TIME_DESC)
            return [r.state_type.value for r in runs if r.name]

    states = anyio.run(flow_runs)
    assert states.count("COMPLETED") >= 2  # the engine recorded both flow runs


@pytest.mark.prefect
def test_ingest_flow_fails_with_the_input_error(prefect_engine: None, tmp_path: Path) -> None:
    from assay.flows.ingest import ingest_flow

    bad = tmp_path / "demo-wmt"
    shutil.copytree(DEMO_WMT, bad)
    (bad / "DA-seglevel.csv").write_text("LP DATA SYSTEM SID HUMAN\nde-en newstest2099 alpha.101 1 NaN\n")
    with pytest.raises(InputError, match=r"DA-seglevel.csv:2"):
        ingest_flow([str(bad)])


@pytest.mark.prefect
def test_cli_ingest_list_show_sql(prefect_engine: None) -> None:
    runner = CliRunner()
    group = cli()
    result = runner.invoke(group, ["ingest", str(DEMO_WMT), "--json"])
    assert result.exit_code == 0, result.output
    ingested = json.loads(result.stdout)
    assert (ingested["name"], ingested["version_number"], ingested["label"]) == ("wmt99", 1, "wmt99@1")

    result = runner.invoke(group, ["datasets", "list", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert rows[0]["name"] == "wmt99"
    assert {"name", "version_number", "version_digest", "label", "segment_judgments", "system_judgments"} <= set(
        rows[0])
    assert rows[0]["segment_judgments"] == 36 and rows[0]["system_judgments"] == 6

    result = runner.invoke(group, ["datasets", "show", "wmt99@1", "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["version_digest"] == ingested["version_digest"] and len(ingested["version_digest"]) == 64
    assert [v["version_number"] for v in shown["versions"]] == [1]
    assert all(len(f["sha256"]) == 64 for f in shown["source_files"])

    query = 'SELECT "group", count(*) AS n FROM wmt99 GROUP BY 1 ORDER BY 1'
    result = runner.invoke(group, ["sql", query, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"group": "de-en", "n": 18}, {"group": "fr-en", "n": 18}]
    result = runner.invoke(group, ["sql", "SELECT DISTINCT version_digest FROM wmt99", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"version_digest": ingested["version_digest"][:12]}]

    result = runner.invoke(group, ["sql", "SELECT count(*) AS n FROM segments", "--json", "--dataset", "wmt99@1"])
    assert json.loads(result.stdout) == [{"n": 36}]


@pytest.mark.parametrize("query", [
    "CREATE TABLE t AS SELECT 1",
    "DROP VIEW wmt99",
    "COPY (SELECT 1) TO '/tmp/assay-should-not-exist.csv'",
    "INSERT INTO wmt99 SELECT * FROM wmt99",
])
def test_sql_is_read_only(query: str) -> None:
    from assay.errors import UsageError
    from assay.jobs.ingest import ingest_path
    from assay.query.duck import run_user_query

    ingest_path(DEMO_WMT)
    with pytest.raises(UsageError, match="read-only"):
        run_user_query(query)
    assert not Path("/tmp/assay-should-not-exist.csv").exists()


def test_help_on_every_command() -> None:
    runner = CliRunner()
    group = cli()
    for args in (["--help"], ["run", "--help"], ["ingest", "--help"], ["datasets", "--help"],
                 ["datasets", "list", "--help"], ["datasets", "show", "--help"], ["sql", "--help"],
                 ["db", "--help"], ["db", "upgrade", "--help"], ["db", "downgrade", "--help"],
                 ["server", "--help"], ["server", "start", "--help"], ["server", "stop", "--help"],
                 ["server", "status", "--help"]):
        result = runner.invoke(group, args)
        assert result.exit_code == 0 and "Usage:" in result.output, args


def _run_assay(args: list[str], home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "ASSAY_HOME": str(home), **env}
    environment.pop("PREFECT_HOME", None)
    environment.pop("PREFECT_API_URL", None)
    return subprocess.run([str(ASSAY), *args], capture_output=True, text=True, env=environment,
                          timeout=600, cwd=REPO)


@pytest.fixture
def fresh_home(tmp_path: Path) -> Iterator[Path]:
    """An empty ASSAY_HOME for commands run as a newcomer runs them (with the default background
    Prefect server, which the first flow starts); the server is stopped afterwards."""
    home = tmp_path / "home"
    try:
        yield home
    finally:
        _run_assay(["server", "stop"], home)


@pytest.mark.slow
def test_assay_run_end_to_end_in_a_fresh_home(fresh_home: Path) -> None:
    """The README's main job as a newcomer runs it: empty ASSAY_HOME, bundled demo data."""
    done = _run_assay(["run"], fresh_home)
    assert done.returncode == 0, done.stderr
    assert "wmt99@1" in done.stdout and "demo-captions@1" in done.stdout
    assert (fresh_home / "catalog.sqlite").exists()
    assert "starting a local Prefect server" in done.stderr  # said once, on the first start

    listed = _run_assay(["datasets", "list", "--json"], fresh_home)
    assert {row["name"] for row in json.loads(listed.stdout)} == {"wmt99", "demo-captions"}


@pytest.mark.slow
def test_bad_input_exits_non_zero_with_one_clear_error(tmp_path: Path, fresh_home: Path) -> None:
    bad = tmp_path / "demo-wmt"
    shutil.copytree(DEMO_WMT, bad)
    seg = bad / "DA-seglevel.csv"
    seg.write_text(seg.read_text().replace("0.620", "oops", 1))
    done = _run_assay(["ingest", str(bad)], fresh_home)
    assert done.returncode == 2
    # the first flow in a fresh home also says, once, that it starts the background server
    lines = [line for line in done.stderr.splitlines()
             if line.strip() and not line.startswith("assay: starting a local Prefect server")]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ") and f"{seg}:2" in lines[0]
    datasets = fresh_home / "datasets"
    assert not datasets.exists() or not any(datasets.iterdir())


def test_cli_ingest_of_an_unchanged_source_starts_no_flow(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.cli import runner
    from assay.jobs.ingest import ingest_path

    first = ingest_path(DEMO_WMT)

    def no_flow(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a flow was started for an unchanged source")

    monkeypatch.setattr(runner, "run_ingest_flow", no_flow)
    result = CliRunner().invoke(cli(), ["ingest", str(DEMO_WMT), "--json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["created"] is False and answer["parsed"] is False
    assert answer["version_digest"] == first.version.digest
    shown = CliRunner().invoke(cli(), ["ingest", str(DEMO_WMT)])
    assert "unchanged" in shown.stdout and "not parsed again" in shown.stdout


def test_cli_score_with_everything_cached_starts_no_flow(monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.cli import runner
    from assay.jobs.ingest import ingest_path
    from assay.jobs.scoring import score_dataset
    from assay.metrics.registry import MetricSpec

    ingest_path(DEMO_WMT)
    scored = score_dataset("wmt99", MetricSpec.from_dict({"name": "chrf", "params": {}}))

    def no_flow(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a flow was started with nothing to compute")

    monkeypatch.setattr(runner, "run_score_flow", no_flow)
    result = CliRunner().invoke(cli(), ["score", "--dataset", "wmt99", "--metric", "chrf", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["computed"] == 0 and summary["cached"] == scored["computed"] and summary["run_id"] is None
    assert summary["signature"] == scored["signature"]
    shown = CliRunner().invoke(cli(), ["score", "--dataset", "wmt99", "--metric", "chrf"])
    assert shown.exit_code == 0 and scored["signature"] in shown.stdout and "nothing to compute" in shown.stdout


@pytest.mark.prefect
def test_cli_score_hands_its_plan_to_the_flow(prefect_engine: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """``assay score`` plans once: the flow computes the command's plan (its run id) and resolves the
    request and hashes the segments no second time."""
    from assay.jobs import scoring
    from assay.jobs.ingest import ingest_path

    ingest_path(DEMO_WMT)
    planned: list[scoring.ScorePlan] = []
    plan_scoring = scoring.plan_scoring

    def recorded(*args: object, **kwargs: object) -> scoring.ScorePlan:
        planned.append(plan_scoring(*args, **kwargs))  # type: ignore[arg-type]
        return planned[-1]

    monkeypatch.setattr(scoring, "plan_scoring", recorded)
    result = CliRunner().invoke(cli(), ["score", "--dataset", "wmt99", "--metric", "rouge2", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["computed"] == 36 and len(planned) == 1 and summary["run_id"] == planned[0].run_id
    assert planned[0].todo_path is not None and not Path(planned[0].todo_path).exists()


IMPORTS = """
import json, sys
modules, args = json.loads(sys.argv[1]), sys.argv[2:]
from assay.cli.main import cli
try:
    cli(args, prog_name="assay", standalone_mode=False)
except BaseException:
    pass
print(json.dumps(sorted(m for m in modules if m in sys.modules)))
"""
HEAVY = ("prefect", "torch", "transformers")


def _heavy_imports(*args: str, modules: tuple[str, ...] = HEAVY) -> list[str]:
    """Which of ``modules`` an ``assay ARGS`` process has imported when the command ends."""
    done = subprocess.run([sys.executable, "-c", IMPORTS, json.dumps(modules), *args], capture_output=True,
                          text=True, timeout=120, check=True, cwd=REPO)
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_help_imports_nothing_heavy() -> None:
    assert _heavy_imports("--help") == []


def test_the_cli_imports_no_command_s_machinery() -> None:
    """Every ``assay`` process imports the CLI with all its commands' options; the options' help
    reads the training recipe (and so the synthetic-data package, 0.7 s) only when it is shown."""
    machinery = ("assay.synthetic", "assay.training.recipes", "pyarrow", "sqlalchemy.orm")
    assert _heavy_imports("--help", modules=machinery) == []


def test_train_help_and_its_option_errors_import_nothing_heavy() -> None:
    """The trainer's hyper-parameters are checked without the torch engine (assay.training.config)."""
    assert _heavy_imports("train", "--help") == []
    assert _heavy_imports("train", "--stage", "finetune", "--data", "wmt16", "--steps", "0") == []
    assert _heavy_imports("train", "--stage", "finetune", "--data", "wmt16", "--steps", "1", "--lr", "-1") == []


def test_import_platform_from_repo_root_is_the_standard_library() -> None:
    done = subprocess.run([sys.executable, "-c", "import platform; print(platform.system())"],
                          capture_output=True, text=True, cwd=REPO, check=True)
    assert done.stdout.strip() == "Linux"


def test_platform_package_does_not_import_torch_at_module_level() -> None:
    code = (
        "import sys, pkgutil, importlib, assay\n"
        "for m in pkgutil.walk_packages(assay.__path__, 'assay.'):\n"
        "    if m.name.startswith(('assay.flows', 'assay.workers', 'assay.migrations')): continue\n"
        "    importlib.import_module(m.name)\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


@pytest.mark.prefect
def test_cli_score_evaluate_leaderboard(prefect_engine: None, tmp_path: Path) -> None:
    runner = CliRunner()
    group = cli()
    assert runner.invoke(group, ["ingest", str(DEMO_WMT)]).exit_code == 0
    for metric in ("sentbleu", "chrf"):
        result = runner.invoke(group, ["score", "--dataset", "wmt99", "--metric", metric, "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["computed"] == 36
    again = runner.invoke(group, ["score", "--dataset", "wmt99", "--metric", "chrf", "--json"])
    assert json.loads(again.stdout)["computed"] == 0

    out = tmp_path / "chrf.csv"
    result = runner.invoke(group, ["scores", "export", "--dataset", "wmt99", "--metric", "chrf", "--out", str(out)])
    assert result.exit_code == 0, result.output
    header = out.read_text().splitlines()[0]
    for column in ("group", "system", "segment_id", "aspect", "human", "score", "signature"):
        assert f'"{column}"' in header

    result = runner.invoke(group, ["evaluate", "--dataset", "wmt99", "--level", "seg", "--resamples", "100", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {"metric", "signature", "group", "aspect", "level", "statistic", "value", "ci_low", "ci_high", "n",
            "version_number"} <= set(rows[0])

    result = runner.invoke(group, ["leaderboard", "--dataset", "wmt99", "--level", "seg", "--stat", "kendall",
                                   "--json"])
    assert result.exit_code == 0, result.output
    board = json.loads(result.stdout)
    assert [r["rank"] for r in board] == [1, 2]
    assert {"rank", "cluster", "metric", "signature", "value"} <= set(board[0])
    result = runner.invoke(group, ["leaderboard", "--dataset", "wmt99", "--csv"])
    assert result.exit_code == 0 and result.stdout.splitlines()[0].startswith("rank,cluster,")
    result = runner.invoke(group, ["leaderboard", "--dataset", "wmt99"])
    assert result.exit_code == 0 and "sentbleu" in result.stdout
    # with rows to rank, the leaderboard still needs neither the orchestrator nor a model
    assert _heavy_imports("leaderboard", "--dataset", "wmt99", "--json") == []
    # the flows ran on the test harness (its URL is configured), not on a background server
    from assay.config import load_settings

    assert not (load_settings().server_dir / "state.json").exists()


@pytest.mark.prefect
def test_select_rerun_and_runs_carry_their_flow_run_ids(prefect_engine: None) -> None:
    """select and rerun run as flows too; every run row written inside a flow records the Prefect
    flow-run id (the flow layer registers the hook; the platform never imports Prefect)."""
    from sqlalchemy import select as sql_select

    from assay.catalog.engine import session_scope
    from assay.catalog.models import Run

    runner = CliRunner()
    group = cli()
    assert runner.invoke(group, ["ingest", str(DEMO_WMT)]).exit_code == 0
    scored = runner.invoke(group, ["score", "--dataset", "wmt99", "--metric", "sentbleu", "--json"])
    assert scored.exit_code == 0, scored.output
    score_run = json.loads(scored.stdout)["run_id"]
    assert runner.invoke(group, ["score", "--dataset", "wmt99", "--metric", "chrf"]).exit_code == 0
    chosen = runner.invoke(group, ["select", "--dataset", "wmt99", "--hybrids", "50", "--candidates", "5",
                                   "--draws", "200", "--json"])
    assert chosen.exit_code == 0, chosen.output
    assert {r["metric"] for r in json.loads(chosen.stdout)} == {"sentbleu", "chrf"}
    again = runner.invoke(group, ["rerun", score_run, "--json"])
    assert again.exit_code == 0, again.output
    rerun = json.loads(again.stdout)
    assert rerun["parent_run_id"] == score_run and rerun["computed"] == 0
    with session_scope() as session:
        runs = {r.kind: r for r in session.scalars(sql_select(Run)).all()}
    assert {"score", "select", "rerun"} <= set(runs)
    kinds = ("score", "select", "rerun")
    assert {kind: bool(runs[kind].flow_run_id) for kind in kinds} == dict.fromkeys(kinds, True)
    assert runs["rerun"].parent_run_id == score_run
