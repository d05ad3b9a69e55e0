"""Running a sweep: an Optuna study over the fine-tuning stage's hyper-parameters.

Two halves, which meet only in the study (:mod:`assay.sweeps.storage`, beside the catalog, so any
process that reaches the catalog reaches it):

* the **sweep** (:func:`run_sweep`) asks the study for trials (the space's ``[[enqueue]]`` values
  first, then TPE, Bergstra et al., 2011), hands each to a :class:`TrialRunner` (in this process,
  or a ``train`` flow run on the ``gpu`` pool, several at once) and waits for them;
* a **trial** (:func:`train_trial`), wherever it runs, reads its values from the study, trains one
  stage with them (registered like any stage, the sweep, trial and space digest in its lineage),
  reports the validation Kendall tau at every evaluation, and stops when the pruner (the median
  rule of Google Vizier, Golovin et al., 2017) says its tau is below the median of earlier trials
  at the same evaluation; it tells the study how it ended.

A killed sweep resumes: finished trials are kept; a trial still running on a worker is waited for
again; a trial the kill interrupted is marked failed and, by policy, retried first with the same
values or skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from assay.config import Settings
from assay.errors import AssayError, NotFoundError, UsageError
from assay.sweeps.space import Param, SearchSpace, changes
from assay.sweeps.storage import open_storage
from assay.sweeps.study import list_sweeps, load_study, sweep_summary
from assay.training.stage_request import StageRequest
from assay.workers.training.stage_runs import EventHandler
from assay.workers.training.stage_steps import StageSteps, train_stage

POLICIES = ("retry", "skip")


class TrialRunner(Protocol):
    """Where a sweep's trials run. ``start`` returns a handle to wait on (a flow run id), or None
    when the trial ran to its end in the call; ``wait`` blocks until at least one of the running
    trials ended and returns their final states (Prefect state names); ``active`` says whether a
    handle recorded by an earlier, killed sweep is still running."""

    kind: str
    parallel: int

    def start(self, sweep: str, number: int, key: str) -> str | None: ...

    def wait(self, running: dict[int, str]) -> dict[int, str]: ...

    def active(self, handle: str) -> bool: ...


@dataclass
class InProcessTrials:
    """Each trial trained here, one after the other (``train`` runs one trial to its end)."""

    train: Callable[[str, int], Any]
    kind: str = "in-process"
    parallel: int = 1

    def start(self, sweep: str, number: int, key: str) -> str | None:
        self.train(sweep, number)
        return None

    def wait(self, running: dict[int, str]) -> dict[int, str]:
        raise AssertionError("in-process trials never wait")  # start returned None: nothing is running

    def active(self, handle: str) -> bool:
        return False  # a trial of a killed process died with it


def suggest(trial: Any, param: Param) -> Any:
    """The trial's value for ``param`` (sampled, or the queued value of a retried trial)."""
    if param.kind == "categorical":
        return trial.suggest_categorical(param.name, list(param.choices))
    assert param.low is not None and param.high is not None  # a range (load_space checked it)
    if param.kind == "int":
        return trial.suggest_int(param.name, int(param.low), int(param.high), step=int(param.step or 1), log=param.log)
    return trial.suggest_float(param.name, float(param.low), float(param.high), step=param.step, log=param.log)


def pruner_for(space: SearchSpace) -> Any:
    import optuna

    if space.pruner == "none":
        return optuna.pruners.NopPruner()
    if space.pruner == "halving":  # ASHA (Li et al., 2020): rungs at min_resource x reduction_factor^k validations
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=max(1, space.warmup_evaluations),
                                                     reduction_factor=space.reduction_factor,
                                                     min_early_stopping_rate=0)
    return optuna.pruners.MedianPruner(n_startup_trials=space.startup_trials,
                                       n_warmup_steps=space.warmup_evaluations, interval_steps=1)


def open_study_check(storage: Any, name: str, space: SearchSpace, *, resume: bool) -> None:
    """Refuse, before anything is written: a new sweep under a taken name, a resumed sweep that does
    not exist, or one whose search space changed (naming every change)."""
    import optuna

    known = {s.study_name: s for s in optuna.study.get_all_study_summaries(storage, include_best_trial=False)}
    if name in known and not resume:
        raise UsageError(f"sweep {name!r} already exists ({known[name].n_trials} trials): `--resume` continues it, "
                         "or choose another --name")
    if name not in known and resume:
        raise NotFoundError(f"no sweep named {name!r} to resume (known: {', '.join(sorted(known)) or 'none'})")
    if resume:
        stored = optuna.load_study(study_name=name, storage=storage).user_attrs.get("space", {})
        diff = changes(stored, space.canonical())
        if diff:
            raise UsageError(f"sweep {name!r} was started with another search space; changed: {'; '.join(diff)}. "
                             "Resume it with its own space, or start a new sweep")


def open_study(settings: Settings, name: str, space: SearchSpace, *, resume: bool, seed: int) -> Any:
    """Create the study, or (``resume``) load it; refused as :func:`open_study_check` says."""
    import uuid

    import optuna

    storage = open_storage(settings)
    open_study_check(storage, name, space, resume=resume)
    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=max(2, space.startup_trials))
    study = optuna.create_study(study_name=name, storage=storage, direction="maximize", sampler=sampler,
                                pruner=pruner_for(space), load_if_exists=resume)
    if not resume:
        study.set_user_attr("token", uuid.uuid4().hex[:16])  # tells this study's trial runs from a namesake's
        study.set_user_attr("space", space.canonical())
        study.set_user_attr("space_digest", space.digest)
    return study


@dataclass
class Retry:
    """A killed trial's values, to be tried again before anything new."""

    of: int
    params: dict[str, Any] = field(default_factory=dict)


def settle_killed_trials(study: Any, policy: str, runner: TrialRunner | None = None) -> tuple[list[int], list[Retry]]:
    """Trials a killed sweep left Running. One still running as a flow run (``runner.active``) is
    left alone (returned first, to be waited for); any other is marked failed and, with ``retry``,
    returned second with its values, to be tried again first."""
    from optuna.trial import TrialState

    alive: list[int] = []
    retries: list[Retry] = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        handle = trial.user_attrs.get("flow_run_id")
        if runner is not None and handle and trial.user_attrs.get("runner") == runner.kind and runner.active(handle):
            alive.append(trial.number)
            continue
        study._storage.set_trial_user_attr(trial._trial_id, "failure", "killed: left Running by an interrupted sweep")
        study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
        if policy == "retry":
            retries.append(Retry(trial.number, dict(trial.params)))
    return alive, retries


def ask_trial(study: Any, space: SearchSpace, retries: list[Retry]) -> Any:
    """The next trial: a retry first, then the space's next ``[[enqueue]]`` values, then the
    sampler's choice. Queued values are enqueued just before the ask, so they run in this order."""
    if retries:
        retry = retries.pop(0)
        study.enqueue_trial(retry.params, user_attrs={"retry_of": retry.of}, skip_if_exists=False)
    else:
        used = int(study.user_attrs.get("enqueued", 0))
        if used < len(space.enqueue):
            study.enqueue_trial(space.enqueue[used], user_attrs={"enqueued": used})
            study.set_user_attr("enqueued", used + 1)
    trial = study.ask()
    for param in space.params:
        suggest(trial, param)
    return trial


def run_sweep(space: SearchSpace, name: str, n_trials: int, settings: Settings, *, resume: bool = False,
              on_killed: str = "retry", seed: int = 12345, runner: TrialRunner | None = None,
              log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run trials until ``n_trials`` have finished (completed or pruned, and with ``skip`` also the
    killed ones), up to ``runner.parallel`` at once; returns :func:`sweep_summary`.

    A trial that fails (its training raised, or its flow run crashed) stops the sweep with an
    error naming it: the sweep would fail the same way again. Other trials still running on
    workers go on and tell the study how they ended; ``--resume`` waits for them."""
    from optuna.trial import TrialState

    if on_killed not in POLICIES:
        raise UsageError(f"--on-killed {on_killed!r}: expected retry or skip")
    if n_trials < 1:
        raise UsageError(f"--trials {n_trials}: expected >= 1")
    runner = runner or InProcessTrials(lambda sweep, number: train_trial(settings, sweep, number, log=log))
    study = open_study(settings, name, space, resume=resume, seed=seed)
    alive, retries = settle_killed_trials(study, on_killed, runner) if resume else ([], [])
    notes = ([f"trial(s) {', '.join(str(r.of) for r in retries)} were interrupted and run again first"]
             if retries else []) + ([f"trial(s) {', '.join(map(str, alive))} still running: waiting for them"]
                                    if alive else [])
    for note in notes:
        log(f"sweep {name}: {note}")
    running = {number: study.trials[number].user_attrs["flow_run_id"] for number in alive}
    counted = (TrialState.COMPLETE, TrialState.PRUNED) + ((TrialState.FAIL,) if on_killed == "skip" else ())

    def finished() -> int:
        return len(study.get_trials(deepcopy=False, states=counted))

    while True:
        while len(running) < max(1, runner.parallel) and finished() + len(running) < n_trials:
            trial = ask_trial(study, space, retries)
            trial.set_user_attr("runner", runner.kind)
            log(f"trial {trial.number}: {trial.params}" + (f" ({runner.kind})" if runner.kind != "in-process" else ""))
            handle = runner.start(name, trial.number, f"{study.user_attrs.get('token', name)}:{trial._trial_id}")
            if handle is None:
                _check_ended(study, trial.number, "Completed", log)
            else:
                study._storage.set_trial_user_attr(trial._trial_id, "flow_run_id", handle)
                running[trial.number] = handle
        if not running:
            break
        for number, state in runner.wait(running).items():
            running.pop(number)
            _check_ended(study, number, state, log)
    return {**sweep_summary(study), "notes": notes}


def _check_ended(study: Any, number: int, state: str, log: Callable[[str], None]) -> None:
    """After a trial's run ended: log how; a trial the run left Running (it crashed before telling
    the study) is marked failed; a failed trial stops the sweep."""
    from optuna.trial import TrialState

    trial = study._storage.get_trial(study._storage.get_trial_id_from_study_id_trial_number(study._study_id, number))
    if trial.state == TrialState.RUNNING:
        failure = f"its flow run ended {state} without reporting"
        study._storage.set_trial_user_attr(trial._trial_id, "failure", failure)
        study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
        trial = study._storage.get_trial(trial._trial_id)
    if trial.state == TrialState.FAIL:
        raise AssayError(f"sweep {study.study_name}: trial {number} failed: {trial.user_attrs.get('failure')}; "
                         "fix the cause, then `assay sweep run --resume` (the trial is retried with --on-killed retry)")
    if trial.state == TrialState.PRUNED:
        log(f"trial {number}: pruned after {len(trial.intermediate_values)} validation(s), "
            f"{trial.user_attrs.get('steps')} steps")
    else:
        log(f"trial {number}: validation tau {trial.value:.4f}, checkpoint {trial.user_attrs.get('checkpoint')}")


def train_trial(settings: Settings, sweep: str, number: int, *,
                on_event: EventHandler | None = None, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Train trial ``number`` of ``sweep`` with the values the study gave it; report every
    validation's tau, stop when pruned, and tell the study how it ended. Returns the outcome."""
    import optuna
    from optuna.trial import TrialState

    study = load_study(settings, sweep)
    space = SearchSpace.from_canonical(study.user_attrs["space"])
    study.pruner = pruner_for(space)
    trial_id = study._storage.get_trial_id_from_study_id_trial_number(study._study_id, number)
    frozen = study._storage.get_trial(trial_id)
    if frozen.state != TrialState.RUNNING:
        raise UsageError(f"sweep {sweep!r}: trial {number} is {frozen.state.name}, not running; nothing to train")
    trial = optuna.trial.Trial(study, trial_id)
    values = dict(frozen.params)
    checkpoint = f"{sweep}-t{number}"
    config = space.trial_config(values)
    config["extra"] = {**config.get("extra", {}), "sweep": sweep, "trial": number, "space_digest": space.digest}
    trial.set_user_attr("checkpoint", checkpoint)
    reported: list[tuple[int, float]] = []

    def report(event: dict[str, Any]) -> None:
        if on_event is not None:
            on_event(event)
        if event.get("event") != "evaluate" or event.get("val_kendall_tau") is None:
            return
        step, tau = int(event["step"]), float(event["val_kendall_tau"])
        reported.append((step, tau))
        trial.report(tau, len(reported))  # Optuna's step: the n-th validation (comparable across trials)
        trial.set_user_attr("steps", step)
        if trial.should_prune():
            raise optuna.TrialPruned(f"validation tau {tau:.4f} after {len(reported)} validation(s), step {step}")

    request = StageRequest(space.stage, space.data, init=space.init, config=config, name=checkpoint,
                           exclude=space.exclude, groups=space.groups, aspect=space.aspect)
    try:
        result = train_stage(request, StageSteps(settings, on_event=report))
    except optuna.TrialPruned as pruned:
        study.tell(number, state=TrialState.PRUNED)
        log(f"trial {number}: pruned ({pruned})")
        return {"trial": number, "state": "PRUNED", "steps": reported[-1][0] if reported else 0, "value": None}
    except BaseException as exc:
        trial.set_user_attr("failure", f"{type(exc).__name__}: {exc}"[:500])
        study.tell(number, state=TrialState.FAIL)
        raise
    tau = result.get("best_kendall_tau")
    steps = int(result.get("steps", reported[-1][0] if reported else 0))
    trial.set_user_attr("steps", steps)
    trial.set_user_attr("digest", result["registered"]["digest"])
    study.tell(number, float(tau) if tau is not None else float("nan"))
    return {"trial": number, "state": "COMPLETE", "steps": steps, "value": tau, "checkpoint": checkpoint,
            "digest": result["registered"]["digest"]}


__all__ = ["list_sweeps", "load_study", "sweep_summary"]  # re-exported: the CLI and tests use them here
