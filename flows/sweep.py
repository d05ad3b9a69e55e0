"""The ``sweep`` flow: an Optuna study over the fine-tuning stage (:mod:`assay.workers.training.sweep_trials`),
each trial a ``train`` flow run.

With the team's deployments in place (``assay deploy``), each trial is a run of the ``train/train``
deployment on the ``gpu`` pool, as many at once as the pool's concurrency limit allows (or
``parallel``); the trial's run reads its values from the study and tells the study how it ended,
so the sweep only dispatches and waits. Without the deployment (or with ``in_process``), each
trial is a ``train`` subflow of this run, one after the other.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from prefect import flow, get_run_logger
from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment
from prefect.exceptions import ObjectNotFound

from assay.config import load_settings
from assay.flows.hooks import install_flow_hooks
from assay.sweeps.space import SearchSpace
from assay.workers.training.sweep_trials import InProcessTrials, TrialRunner, run_sweep

#: the deployment ``assay deploy`` creates for the ``train`` flow
TRAIN_DEPLOYMENT = "train/train"
POLL_SECONDS = 3.0


@dataclass
class DeploymentTrials:
    """Trials as runs of the ``train`` deployment (on its work pool, ``gpu`` on a team setup)."""

    parallel: int
    kind: str = "deployment"
    poll_seconds: float = POLL_SECONDS

    def start(self, sweep: str, number: int, key: str) -> str | None:
        run = run_deployment(TRAIN_DEPLOYMENT, parameters={"sweep_trial": {"sweep": sweep, "trial": number}},
                             timeout=0, flow_run_name=f"{sweep}-t{number}",
                             idempotency_key=f"assay-sweep:{key}")
        return str(run.id)  # type: ignore[union-attr]  # sync call: a FlowRun

    def _state(self, handle: str) -> Any:
        with get_client(sync_client=True) as client:
            return client.read_flow_run(handle).state  # type: ignore[arg-type]

    def active(self, handle: str) -> bool:
        try:
            state = self._state(handle)
        except ObjectNotFound:
            return False
        return state is not None and not state.is_final()

    def wait(self, running: dict[int, str]) -> dict[int, str]:
        while True:
            ended = {}
            for number, handle in running.items():
                state = self._state(handle)
                if state is not None and state.is_final():
                    ended[number] = state.name
            if ended:
                return ended
            time.sleep(self.poll_seconds)


def deployed_parallelism() -> int | None:
    """The concurrency the ``train`` deployment's pool allows (1 when unlimited), or None when the
    deployment does not exist."""
    with get_client(sync_client=True) as client:
        try:
            deployment = client.read_deployment_by_name(TRAIN_DEPLOYMENT)
        except ObjectNotFound:
            return None
        if not deployment.work_pool_name:
            return 1
        pool = client.read_work_pool(deployment.work_pool_name)
    return max(1, pool.concurrency_limit or 1)


def _subflow_trial(sweep: str, number: int) -> dict[str, Any]:
    """One trial as a ``train`` subflow of the sweep's run."""
    from assay.flows.train import train_flow

    return train_flow(sweep_trial={"sweep": sweep, "trial": number})


@flow(name="sweep", on_running=[install_flow_hooks])
def sweep_flow(space: dict[str, Any], name: str, trials: int, resume: bool = False, on_killed: str = "retry",
               seed: int = 12345, parallel: int | None = None, in_process: bool = False,
               space_path: str = "") -> dict[str, Any]:
    """Run (or resume) the sweep ``name`` over ``space`` (as :meth:`SearchSpace.canonical` wrote it)
    until ``trials`` trials have finished; returns every trial and the best."""
    logger = get_run_logger()
    deployed = None if in_process else deployed_parallelism()
    runner: TrialRunner
    if deployed is None:
        runner = InProcessTrials(_subflow_trial)
        logger.info("sweep %s: trials as train subflows in this run%s", name,
                    "" if in_process else f" (no {TRAIN_DEPLOYMENT} deployment)")
    else:
        runner = DeploymentTrials(parallel=parallel or deployed)
        logger.info("sweep %s: trials as %s runs, up to %d at once", name, TRAIN_DEPLOYMENT, runner.parallel)
    return run_sweep(SearchSpace.from_canonical(space, space_path), name, trials, load_settings(), resume=resume,
                     on_killed=on_killed, seed=seed, runner=runner, log=logger.info)
