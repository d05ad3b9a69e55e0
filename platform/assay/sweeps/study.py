"""Reading sweeps' studies (no training here): every sweep, one sweep's trials, and whether any
study storage exists yet (the report reads it without creating it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import make_url, text

from assay.config import Settings
from assay.errors import NotFoundError
from assay.sweeps.storage import SCHEMA, open_storage, storage_url


def storage_exists(settings: Settings) -> bool:
    """Whether a sweep has ever stored a study for this catalog (nothing is created to find out)."""
    url, _ = storage_url(settings)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return bool(parsed.database) and Path(str(parsed.database)).is_file()
    from assay.catalog.engine import make_engine

    engine = make_engine(settings.catalog_url)
    try:
        with engine.connect() as conn:
            found = conn.execute(text("SELECT to_regclass(:name)"), {"name": f"{SCHEMA}.studies"}).scalar()
    finally:
        engine.dispose()
    return found is not None


def list_sweeps(settings: Settings) -> list[dict[str, Any]]:
    """Every sweep: name, trials, best validation tau."""
    import optuna

    if not storage_exists(settings):
        return []
    summaries = optuna.study.get_all_study_summaries(open_storage(settings), include_best_trial=True)
    return [{"sweep": s.study_name, "n_trials": s.n_trials, "started": s.datetime_start,
             "best_value": s.best_trial.value if s.best_trial else None,
             "best_trial": s.best_trial.number if s.best_trial else None}
            for s in sorted(summaries, key=lambda s: s.study_name)]


def load_study(settings: Settings, name: str) -> Any:
    import optuna

    if not storage_exists(settings):
        raise NotFoundError(f"no sweep named {name!r} (known: none)")
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
                       "retry_of": t.user_attrs.get("retry_of"), "failure": t.user_attrs.get("failure"),
                       "runner": t.user_attrs.get("runner"), "flow_run_id": t.user_attrs.get("flow_run_id")})
    complete = [t for t in trials if t["state"] == "COMPLETE" and t["value"] is not None]
    best = max(complete, key=lambda t: t["value"], default=None)
    return {"sweep": study.study_name, "space_digest": study.user_attrs.get("space_digest"), "trials": trials,
            "best": best, "steps_trained": sum(t["steps"] or 0 for t in trials)}
