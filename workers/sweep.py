"""Running a sweep: an Optuna study over the fine-tuning stage's hyper-parameters.

Each trial samples the space (:mod:`assay.sweeps.space`; TPE, Bergstra et al., 2011), trains one
stage with those values (registered like any stage, the sweep, trial and space digest in its
lineage), and reports the validation Kendall tau at every evaluation; the pruner (the median rule
of Google Vizier, Golovin et al., 2017) stops a trial whose tau falls below the median of earlier
trials at the same step. The study lives beside the catalog (:mod:`assay.sweeps.storage`), so a
killed sweep resumes: finished trials are kept, and a trial left Running by the kill is marked
failed and, by policy, retried with the same values or skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from assay.config import Settings
from assay.errors import NotFoundError, UsageError
from assay.sweeps.space import Param, SearchSpace, changes
from assay.sweeps.storage import open_storage
from assay.training.stages import StageRequest
from assay.workers.training_jobs import EventHandler

POLICIES = ("retry", "skip")


class TrialStages(Protocol):
    def train(self, request: StageRequest) -> dict[str, Any]: ...


def in_process_stages(settings: Settings) -> Callable[[EventHandler], TrialStages]:
    """Trials trained in this process (each still recorded as a training run and registered)."""
    from assay.workers.recipe import InProcessStages

    return lambda on_event: InProcessStages(settings, on_event)


def suggest(trial: Any, param: Param) -> Any:
    """The trial's value for ``param`` (sampled, or the queued value of a retried trial)."""
    if param.kind == "categorical":
        return trial.suggest_categorical(param.name, list(param.choices))
    assert param.low is not None and param.high is not None  # a range (load_space checked it)
    if param.kind == "int":
        return trial.suggest_int(param.name, int(param.low), int(param.high), step=int(param.step or 1), log=param.log)
    return trial.suggest_float(param.name, float(param.low), float(param.high), step=param.step, log=param.log)


def _pruner(space: SearchSpace) -> Any:
    import optuna

    if space.pruner == "none":
        return optuna.pruners.NopPruner()
    return optuna.pruners.MedianPruner(n_startup_trials=space.startup_trials,
                                       n_warmup_steps=space.warmup_evaluations, interval_steps=1)


def open_study(settings: Settings, name: str, space: SearchSpace, *, resume: bool, seed: int) -> Any:
    """Create the study, or (``resume``) load it and refuse a space that changed."""
    import optuna

    storage = open_storage(settings)
    known = {s.study_name: s for s in optuna.study.get_all_study_summaries(storage, include_best_trial=False)}
    if name in known and not resume:
        raise UsageError(f"sweep {name!r} already exists ({known[name].n_trials} trials): `--resume` continues it, "
                         "or choose another --name")
    if name not in known and resume:
        raise NotFoundError(f"no sweep named {name!r} to resume (known: {', '.join(sorted(known)) or 'none'})")
    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=max(2, space.startup_trials))
    study = optuna.create_study(study_name=name, storage=storage, direction="maximize", sampler=sampler,
                                pruner=_pruner(space), load_if_exists=resume)
    if resume:
        diff = changes(study.user_attrs.get("space", {}), space.canonical())
        if diff:
            raise UsageError(f"sweep {name!r} was started with another search space; changed: {'; '.join(diff)}. "
                             "Resume it with its own space, or start a new sweep")
    else:
        study.set_user_attr("space", space.canonical())
        study.set_user_attr("space_digest", space.digest)
    return study


def settle_killed_trials(study: Any, policy: str) -> list[int]:
    """Trials left Running by a killed sweep: marked failed; with ``retry`` their values are queued
    again. Returns their numbers."""
    from optuna.trial import TrialState

    killed = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    for trial in killed:
        study._storage.set_trial_user_attr(trial._trial_id, "failure", "killed: left Running by an interrupted sweep")
        study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
        if policy == "retry":
            study.enqueue_trial(trial.params, user_attrs={"retry_of": trial.number})
    return [t.number for t in killed]


def run_sweep(space: SearchSpace, name: str, n_trials: int, settings: Settings, *, resume: bool = False,
              on_killed: str = "retry", seed: int = 12345,
              make_stages: Callable[[EventHandler], TrialStages] | None = None,
              log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run trials until ``n_trials`` have finished (completed or pruned, and with ``skip`` also the
    killed ones); returns :func:`sweep_summary`."""
    import optuna
    from optuna.trial import TrialState

    if on_killed not in POLICIES:
        raise UsageError(f"--on-killed {on_killed!r}: expected retry or skip")
    if n_trials < 1:
        raise UsageError(f"--trials {n_trials}: expected >= 1")
    study = open_study(settings, name, space, resume=resume, seed=seed)
    killed = settle_killed_trials(study, on_killed) if resume else []
    if killed:
        log(f"sweep {name}: trial(s) {', '.join(map(str, killed))} were interrupted; "
            + ("queued again" if on_killed == "retry" else "skipped"))
    stages_for = make_stages or in_process_stages(settings)
    counted = (TrialState.COMPLETE, TrialState.PRUNED) + ((TrialState.FAIL,) if on_killed == "skip" else ())

    def finished() -> int:
        return len(study.get_trials(deepcopy=False, states=counted))

    while finished() < n_trials:
        trial = study.ask()
        values = {p.name: suggest(trial, p) for p in space.params}
        checkpoint = f"{name}-t{trial.number}"
        config = space.trial_config(values)
        config["extra"] = {**config.get("extra", {}), "sweep": name, "trial": trial.number,
                           "space_digest": space.digest}
        trial.set_user_attr("checkpoint", checkpoint)
        reported: list[tuple[int, float]] = []

        def on_event(event: dict[str, Any], trial: Any = trial, reported: list[tuple[int, float]] = reported) -> None:
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
        log(f"trial {trial.number}: {values}")
        try:
            result = stages_for(on_event).train(request)
        except optuna.TrialPruned as pruned:
            study.tell(trial, state=TrialState.PRUNED)
            log(f"trial {trial.number}: pruned ({pruned})")
            continue
        except BaseException as exc:
            trial.set_user_attr("failure", f"{type(exc).__name__}: {exc}"[:500])
            study.tell(trial, state=TrialState.FAIL)
            raise
        tau = result.get("best_kendall_tau")
        trial.set_user_attr("steps", int(result.get("steps", reported[-1][0] if reported else 0)))
        trial.set_user_attr("digest", result["registered"]["digest"])
        study.tell(trial, float(tau) if tau is not None else float("nan"))
        log(f"trial {trial.number}: validation tau {tau:.4f}, checkpoint {checkpoint}")
    return sweep_summary(study)


def load_study(settings: Settings, name: str) -> Any:
    import optuna

    storage = open_storage(settings)
    try:
        return optuna.load_study(study_name=name, storage=storage)
    except KeyError as exc:
        known = [s.study_name for s in optuna.study.get_all_study_summaries(storage, include_best_trial=False)]
        raise NotFoundError(f"no sweep named {name!r} (known: {', '.join(sorted(known)) or 'none'})") from exc


def sweep_summary(study: Any) -> dict[str, Any]:
    """Every trial (state, values, reported taus, steps trained, checkpoint) and the best one."""
    from optuna.trial import TrialState

    trials = []
    for t in study.get_trials(deepcopy=False):
        trials.append({"number": t.number, "state": t.state.name, "params": t.params, "value": t.value,
                       "intermediate": {int(k): v for k, v in sorted(t.intermediate_values.items())},
                       "steps": t.user_attrs.get("steps"), "checkpoint": t.user_attrs.get("checkpoint")
                       if t.state == TrialState.COMPLETE else None,
                       "retry_of": t.user_attrs.get("retry_of"), "failure": t.user_attrs.get("failure")})
    complete = [t for t in trials if t["state"] == "COMPLETE" and t["value"] is not None]
    best = max(complete, key=lambda t: t["value"], default=None)
    return {"sweep": study.study_name, "space_digest": study.user_attrs.get("space_digest"), "trials": trials,
            "best": best, "steps_trained": sum(t["steps"] or 0 for t in trials)}
