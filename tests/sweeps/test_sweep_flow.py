"""``assay sweep`` end to end on a real local Prefect server (the session's temporary server):
two tiny trials, one pruned by the median rule, and a sweep killed mid-trial that resumes.

The encoder is a tiny RANDOM BERT with MiniLM's real tokenizer (no pretrained model of that size
is available offline); the ratings are the real WMT16 DA judgments in ``../shared/data``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from assay.cli.main import cli
from assay.config import load_settings
from assay.sweeps.storage import close_storages
from assay.workers.training.sweep_trials import load_study
from tests.robustness_support import save_tiny_encoder

SPACE = """\
[trial]
data = ["wmt16"]
init = "{init}"
exclude = ["wmt17"]
[trial.config]
max_steps = 60
eval_every = 10
save_every = 10
batch_size = 8

[params.learning_rate]
low = 1e-9
high = 1e-2
log = true

[pruner]
kind = "median"
startup_trials = 1
warmup_evaluations = 1

# trial 0: a rate that learns; then one that cannot (the pruner's case)
[[enqueue]]
learning_rate = 1e-3
[[enqueue]]
learning_rate = 1e-9
"""


def _assay(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env=os.environ.copy())


def _trial_zero_has_reported() -> bool:
    try:
        study = load_study(load_settings(), "lr")
    except Exception:  # the sweep has not created its study yet
        return False
    trials = study.get_trials(deepcopy=False)
    return bool(trials) and trials[0].state.name == "RUNNING" and len(trials[0].intermediate_values) >= 1


def test_a_sweep_prunes_a_hopeless_trial_and_resumes_after_a_kill(prefect_engine: None, shared_data: Path,
                                                                 tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["ingest", str(shared_data / "wmt16-da-seg")]).exit_code == 0
    encoder = save_tiny_encoder(tmp_path / "tiny-random-bert")
    space = tmp_path / "space.toml"
    space.write_text(SPACE.format(init=encoder), encoding="utf-8")

    # 1. the sweep is killed (SIGKILL, as a lost host or an OOM killer would) while trial 0 trains
    log = tmp_path / "killed-sweep.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "assay.cli.main", "sweep", "run", str(space), "--name", "lr",
                                 "--trials", "2"], stdout=out, stderr=subprocess.STDOUT, env=os.environ.copy(),
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not _trial_zero_has_reported():
            assert proc.poll() is None, f"the sweep ended before it could be killed:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"trial 0 never reported a validation:\n{log.read_text()}"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    close_storages()

    # 2. resumed: trial 0 is marked failed and its values run again first (trial 1, to the end,
    # the pruner's startup trial); trial 2 (the rate that cannot learn) falls below the median of
    # trial 1's tau at the same validation and is pruned
    resumed = _assay("sweep", "run", str(space), "--name", "lr", "--trials", "2", "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "trial(s) 0 were interrupted and run again first" in resumed.stderr
    print(resumed.stdout)
    # the commands after the sweeps read and refuse in this process (each `assay` process costs
    # seconds of imports); the sweeps themselves ran as processes, one of them killed
    shown = runner.invoke(cli, ["sweep", "show", "lr", "--json"])
    assert shown.exit_code == 0, shown.output
    summary = json.loads(shown.stdout)
    trials = summary["trials"]
    assert [t["state"] for t in trials] == ["FAIL", "COMPLETE", "PRUNED"]
    assert trials[0]["failure"].startswith("killed")
    assert trials[1]["retry_of"] == 0 and trials[1]["params"] == trials[0]["params"] == {"learning_rate": 1e-3}
    assert trials[1]["steps"] == 60 and len(trials[1]["intermediate"]) == 6
    assert trials[2]["params"] == {"learning_rate": 1e-9}
    assert trials[2]["intermediate"] and trials[2]["steps"] < 60  # stopped early: less compute
    last = str(max(int(k) for k in trials[2]["intermediate"]))  # the validation it was stopped at (JSON keys)
    assert trials[2]["intermediate"][last] < trials[1]["intermediate"][last]  # the median rule's reason
    assert summary["best"]["number"] == 1 and summary["best"]["checkpoint"] == "lr-t1"

    # the best trial's checkpoint is registered with the sweep in its lineage; the pruned one is not
    info = json.loads(runner.invoke(cli, ["checkpoints", "show", "lr-t1", "--json"]).stdout)
    assert info["lineage"]["hyperparameters"]["extra"]["sweep"] == "lr"
    assert info["sweep"]["sweep"] == "lr" and info["sweep"]["trial"] == 1  # the checkpoint page's sweep row
    assert info["lineage"]["hyperparameters"]["extra"]["trial"] == 1
    assert info["lineage"]["hyperparameters"]["extra"]["space_digest"] == summary["space_digest"]
    assert runner.invoke(cli, ["checkpoints", "show", "lr-t2", "--json"]).exit_code != 0

    # every trial was a `train` flow run on the server, inside a `sweep` run (the server is the whole
    # suite's: only this test's runs are counted, the sweeps by their space file)
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["train", "sweep"])))
        flows = {f.id: f.name for f in client.read_flows()}
    trial_runs = sorted((r.parameters["sweep_trial"]["trial"], r.state_name) for r in runs
                        if flows[r.flow_id] == "train" and (r.parameters.get("sweep_trial") or {}).get("sweep") == "lr")
    assert trial_runs == [(0, "Running"), (1, "Completed"), (2, "Completed")]  # 0: its process was killed
    assert sum(flows[r.flow_id] == "sweep" and r.parameters.get("space_path") == str(space) for r in runs) == 2

    # the report plots the study: learning rate (log10) against validation tau, the pruned trial grey
    report = runner.invoke(cli, ["report", "--out", str(tmp_path / "report")])
    assert report.exit_code == 0, report.output
    html = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert 'id="fig-sweep-lr-learning-rate-0"' in html and "learning_rate (log10)" in html
    assert re.search(r"trial 2 \(pruned after \d validation\(s\), \d+ steps\): learning_rate = 1e-09", html)
    assert "best: trial 1" in html

    # a resume with another space is refused, naming the change, and stores nothing
    changed = tmp_path / "changed.toml"
    changed.write_text(space.read_text().replace("high = 1e-2", "high = 1e-1"), encoding="utf-8")
    refused = runner.invoke(cli, ["sweep", "run", str(changed), "--name", "lr", "--trials", "3", "--resume"])
    assert refused.exit_code == 2, refused.output
    assert "changed: params.learning_rate.high: 0.01 -> 0.1" in refused.stderr
    assert len(json.loads(runner.invoke(cli, ["sweep", "show", "lr", "--json"]).stdout)["trials"]) == 3
    close_storages()
