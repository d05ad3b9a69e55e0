"""BLEURT's robustness experiments with training (Sellam et al., 2020, §5.2 quality drift, §5.3
WebNLG): prepare (check everything, resolve every init to its digest) -> draw the data ->
fine-tune each variant at each point -> score and evaluate each test version -> store the rows.

The protocol, the storage and the reading of results are in :mod:`assay.training.robustness`;
this module adds what needs the training code: resolving a variant's init, the complete
hyper-parameters (:class:`TrainConfig`'s defaults filled in, as a checkpoint's lineage records
them) and training a stage (:func:`assay.workers.training.stage_runs.run_stage`).

The steps are small functions on JSON-able values, declared once as :class:`RobustnessSteps`
(:func:`draw`, :func:`train_variant`, :func:`evaluate_point`), and :func:`run_experiment` is the
one runner: :func:`draw`, :func:`training_jobs` -> :func:`train_variant`, :func:`evaluation_points`
-> :func:`evaluate_point`, then :func:`assay.training.robustness.finish_run`. It runs them in this
process, or, handed the same steps as Prefect tasks (:func:`assay.flows.step_tasks.as_tasks`), in
the ``robustness-drift`` and ``robustness-webnlg`` flows.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from assay.catalog.engine import session_scope
from assay.catalog.models import Checkpoint
from assay.config import DEFAULT_RESAMPLES, DEFAULT_SEED, Settings, load_settings
from assay.errors import NotFoundError, UsageError
from assay.jobs import quality_drift as qd
from assay.jobs.evaluation import evaluate
from assay.metrics.registry import MetricSpec
from assay.training import robustness as rb
from assay.training.config import TrainConfig
from assay.training.plan import plan_finetune
from assay.workers.training.stage_runs import resolve_init, run_stage

DEFAULT_VARIANTS = (rb.Variant("no-pretraining", rb.ENCODER),)


# --- prepare: every check before anything is written ------------------------------------------------


def resolve_variants(settings: Settings, variants: Sequence[rb.Variant]) -> list[rb.Variant]:
    """Each variant's init as a folder and (for a checkpoint) its digest; ``encoder`` is the
    embedded encoder."""
    out = []
    for v in rb.check_variants(variants):
        if v.init == rb.ENCODER:
            out.append(rb.Variant(v.name, v.init))
            continue
        try:
            folder, digest = resolve_init(settings, v.init)
        except NotFoundError:
            raise NotFoundError(f"--variant {v.name}={v.init}: {v.init!r} is neither '{rb.ENCODER}', a registered "
                                "checkpoint (`assay checkpoints list`), a checkpoint or encoder folder, nor a hub id "
                                "(owner/name)") from None
        out.append(rb.Variant(v.name, v.init, folder, digest))
    return out


def hyperparameters_of(config: dict[str, Any]) -> dict[str, Any]:
    """The complete trainer configuration, as a checkpoint's lineage records it."""
    unknown = sorted(set(config) - set(TrainConfig.__dataclass_fields__))
    if unknown:
        raise UsageError(f"unknown training option(s) {', '.join(unknown)}")
    return TrainConfig(**config).to_json()


def _common(settings: Settings, variants: Sequence[rb.Variant] | None, baselines: Sequence[MetricSpec] | None,
            config: dict[str, Any] | None, statistics: Sequence[str], n_resamples: int
            ) -> tuple[list[rb.Variant], list[dict[str, Any]], dict[str, Any], dict[str, Any], list[str]]:
    if n_resamples < 1:
        raise UsageError(f"--resamples must be >= 1, not {n_resamples}")
    config = dict(config or {"epochs": 1.0})
    hyper = hyperparameters_of(config)
    chosen = rb.check_baselines([MetricSpec(b) for b in rb.BASELINES] if baselines is None else baselines)
    return (resolve_variants(settings, list(variants or DEFAULT_VARIANTS)), [b.as_dict() for b in chosen],
            config, hyper, rb.check_statistics(statistics))


def prepare_drift(dataset: str, *, alphas: Sequence[float] | None = None,
                  variants: Sequence[rb.Variant] | None = None, baselines: Sequence[MetricSpec] | None = None,
                  config: dict[str, Any] | None = None, aspect: str | None = None, seed: int = DEFAULT_SEED,
                  statistics: Sequence[str] = rb.STATISTICS, n_resamples: int = DEFAULT_RESAMPLES,
                  test_fraction: float = 0.5, binning: str = "quantile",
                  settings: Settings | None = None) -> rb.Experiment:
    """The quality-drift experiment with training (§5.2), checked: writes nothing."""
    settings = settings or load_settings()
    points = rb.check_points(list(qd.ALPHAS if alphas is None else alphas), "--alphas", low=0.0, high=None)
    if not 0 < test_fraction < 1:
        raise UsageError(f"--test-fraction must be between 0 and 1, not {test_fraction}")
    if binning not in qd.BINNINGS:
        raise UsageError(f"--binning {binning!r}: expected one of {', '.join(qd.BINNINGS)}")
    version, segments = rb.dataset_of(settings, dataset)
    chosen_aspect = rb.check_aspects(version.label, rb.rated_aspects(segments), [aspect] if aspect else None,
                                     single=True)[0]
    resolved, baseline_dicts, config, hyper, stats = _common(settings, variants, baselines, config, statistics,
                                                              n_resamples)
    return rb.Experiment("drift", version, points, resolved, baseline_dicts, config, hyper, int(seed), stats,
                         int(n_resamples), {"test_fraction": float(test_fraction), "binning": binning,
                                            "aspect": chosen_aspect})


def prepare_webnlg(dataset: str, *, shares: Sequence[float] | None = None, by: Sequence[str] = rb.SPLIT_BY,
                   aspects: Sequence[str] | None = None, variants: Sequence[rb.Variant] | None = None,
                   baselines: Sequence[MetricSpec] | None = None, config: dict[str, Any] | None = None,
                   include_human: bool = False, seed: int = DEFAULT_SEED, statistics: Sequence[str] = rb.STATISTICS,
                   n_resamples: int = DEFAULT_RESAMPLES, settings: Settings | None = None) -> rb.Experiment:
    """The WebNLG experiment (§5.3), checked: writes nothing."""
    settings = settings or load_settings()
    points = rb.check_points(list(rb.SHARES if shares is None else shares), "--shares", low=0.0, high=1.0)
    if not by:
        raise UsageError(f"--by: give at least one of {', '.join(rb.SPLIT_BY)}")
    for b in by:
        rb.unit_column(b)
    version, segments = rb.dataset_of(settings, dataset)
    chosen = rb.check_aspects(version.label, rb.rated_aspects(segments), aspects, single=False)
    rb.check_splits(version.label, rb.split_pool(segments, include_human), by, points)
    resolved, baseline_dicts, config, hyper, stats = _common(settings, variants, baselines, config, statistics,
                                                              n_resamples)
    if points == [0.0] and not any(v.is_checkpoint for v in resolved):
        raise UsageError("--shares 0 alone trains nothing, and no --variant starts from a checkpoint to score as it "
                         "is; add a share > 0 or a variant NAME=CHECKPOINT")
    return rb.Experiment("webnlg", version, points, resolved, baseline_dicts, config, hyper, int(seed), stats,
                         int(n_resamples), {"by": [b for b in rb.SPLIT_BY if b in by], "aspects": chosen,
                                            "include_human": bool(include_human)})


# --- the steps ---------------------------------------------------------------------------------------


def draw(experiment: rb.Experiment, settings: Settings | None = None) -> list[dict[str, Any]]:
    """Derive and store the experiment's data: the drift samples of every α (B.3), or the WebNLG
    train/test sides of every share and split kind (§5.3)."""
    settings = settings or load_settings()
    if experiment.kind == "drift":
        opts = experiment.options
        samples = qd.draw_samples(experiment.version.label, alphas=experiment.points, seed=experiment.seed,
                                  test_fraction=opts["test_fraction"], binning=opts["binning"], settings=settings)
        return [{**s.as_dict(), "point": {"alpha": s.alpha}} for s in samples]
    out = []
    for by in experiment.options["by"]:
        for s in rb.draw_splits(experiment.version.label, by=by, shares=experiment.points, seed=experiment.seed,
                                include_human=experiment.options["include_human"], settings=settings):
            out.append({**s.as_dict(), "point": {"share": s.share, "split_by": s.by}})
    return out


def _side(sample: dict[str, Any]) -> str:
    return str(sample.get("split") or sample.get("side"))


def training_jobs(experiment: rb.Experiment, samples: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One job per (point, aspect, variant) with a train side: what to fine-tune on what."""
    aspects = [experiment.options["aspect"]] if experiment.kind == "drift" else experiment.options["aspects"]
    jobs = []
    for sample in samples:
        if _side(sample) != "train":
            continue
        point = sample["point"]
        text = (f"a{point['alpha']:g}" if experiment.kind == "drift"
                else f"{point['split_by']}-s{point['share']:g}")
        for aspect in aspects:
            for variant in experiment.variants:
                jobs.append({"variant": variant.as_dict(), "point": point, "aspect": aspect,
                             "train": {"label": sample["label"], "digest": sample["version"]["digest"]},
                             "name_part": text if experiment.kind == "drift" else f"{text}-{aspect}"})
    return jobs


def train_variant(experiment: rb.Experiment, job: dict[str, Any], parent_run_id: str | None = None,
                  settings: Settings | None = None) -> dict[str, Any]:
    """Fine-tune one variant on one train side, or find the checkpoint an identical request made.

    A new checkpoint is named ``rb-<experiment>-<dataset>-<point>-<variant>-<key>`` (``key``: the
    digest of its training data, aspect, init and hyper-parameters) and registered by the stage;
    its training state (``work_dir``: resumable trainer state, the init made from the encoder) is
    removed once it is registered, as the checkpoint and its lineage hold everything else. A stage
    interrupted before that resumes from its last saved state on the next call.
    """
    settings = settings or load_settings()
    variant = rb.Variant.from_dict(job["variant"])
    train, aspect = job["train"], job["aspect"]
    answer = {"variant": variant.name, "point": job["point"], "aspect": aspect, "train_dataset": train["label"],
              "train_digest": train["digest"], "init": variant.init, "init_digest": variant.digest}
    found = rb.find_trained(settings, train_digest=train["digest"], aspect=aspect, variant=variant,
                            hyperparameters=experiment.hyperparameters)
    if found is not None:
        return {**answer, **found, "trained": False}
    key = rb.training_key(train["digest"], aspect, variant, experiment.hyperparameters)
    name = rb.checkpoint_name(experiment.kind, experiment.version.name, job["name_part"], variant.name, key)
    plan = plan_finetune(settings, [train["label"]], init=variant.folder, init_digest=variant.digest,
                         config=experiment.config, name=name, resume=True, aspect=aspect)
    summary = run_stage(settings, plan, resume=True, parent_run_id=parent_run_id)
    shutil.rmtree(plan.work_dir, ignore_errors=True)
    registered = summary["registered"]
    return {**answer, "name": registered["name"], "digest": registered["digest"], "path": registered["path"],
            "run_id": summary["run_id"], "n_train": plan.data[0].rows, "trained": True}


def _init_checkpoint(settings: Settings, variant: rb.Variant, point: dict[str, Any]) -> dict[str, Any]:
    """A variant's init checkpoint scored as it is (WebNLG share 0): its registered name, if any."""
    with session_scope(settings) as session:
        row = session.scalar(select(Checkpoint).where(Checkpoint.digest == variant.digest))
        name, run_id = (row.name, row.run_id) if row is not None else (Path(str(variant.folder)).name, None)
    return {"variant": variant.name, "point": point, "aspect": None, "train_dataset": None, "train_digest": None,
            "init": variant.init, "init_digest": variant.digest, "name": name, "digest": variant.digest,
            "path": variant.folder, "run_id": run_id, "n_train": 0, "trained": False}


def evaluation_points(experiment: rb.Experiment, samples: Sequence[dict[str, Any]],
                      trained: Sequence[dict[str, Any]], settings: Settings | None = None) -> list[dict[str, Any]]:
    """One point per test side: the test version and the checkpoints to score on it (those
    trained at that point; at WebNLG share 0 the variants' init checkpoints as they are)."""
    settings = settings or load_settings()
    points = []
    for sample in samples:
        if _side(sample) != "test":
            continue
        point = sample["point"]
        learned = [t for t in trained if t["point"] == point]
        if experiment.kind == "webnlg" and point["share"] == 0:
            learned = [_init_checkpoint(settings, v, point) for v in experiment.variants if v.is_checkpoint]
        columns = {**point, "share_actual": sample.get("share_actual"), "test_dataset": sample["label"],
                   "test_digest": sample["version"]["digest"]}
        points.append({"point": columns, "learned": learned})
    return points


def evaluate_point(experiment: rb.Experiment, point: dict[str, Any],
                   settings: Settings | None = None) -> list[dict[str, Any]]:
    """Score the test version with every checkpoint and baseline (cached scores are reused) and
    evaluate it at segment level; returns the point's result rows."""
    settings = settings or load_settings()
    label = point["point"]["test_dataset"]
    scored = []
    for t in point["learned"]:
        spec = MetricSpec("bleurt", {"checkpoint": t["path"]})
        signature = qd.score_sample(label, spec, settings)["signature"]
        scored.append(rb.Scored(
            variant=t["variant"], kind="learned", metric="bleurt", signature=signature, aspect=t["aspect"],
            init=t["init"], init_digest=t["init_digest"], checkpoint=t["name"], checkpoint_digest=t["digest"],
            trained_run_id=t["run_id"], train_dataset=t["train_dataset"], train_digest=t["train_digest"],
            n_train=t["n_train"]))
    for spec in experiment.baseline_specs:
        signature = qd.score_sample(label, spec, settings)["signature"]
        scored.append(rb.Scored(variant=rb.baseline_label(spec), kind="baseline", metric=spec.name,
                                signature=signature))
    evaluation = evaluate(label, level="seg", metrics=sorted({s.signature for s in scored}),
                          statistics=experiment.statistics, seed=experiment.seed,
                          n_resamples=experiment.n_resamples, settings=settings)
    return rb.point_rows(point["point"], scored, evaluation, experiment.aspects)


def made_checkpoints(trained: Sequence[dict[str, Any]], points: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every checkpoint the experiment used, as its run's summary names it."""
    keep = ("variant", "point", "aspect", "name", "digest", "run_id", "trained", "train_dataset")
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for t in [*trained, *(t for p in points for t in p["learned"])]:
        out.setdefault((t["variant"], t["digest"]), {k: t.get(k) for k in keep})
    return list(out.values())


@dataclass(frozen=True)
class RobustnessSteps:
    """The experiment's steps, declared once: each calls this module's function of that step in this
    process, against ``settings``; the robustness flows hand :func:`run_experiment` the same object
    with its methods as Prefect tasks."""

    settings: Settings

    def draw(self, experiment: rb.Experiment) -> list[dict[str, Any]]:
        return draw(experiment, self.settings)

    def train(self, experiment: rb.Experiment, job: dict[str, Any], parent_run_id: str) -> dict[str, Any]:
        return train_variant(experiment, job, parent_run_id, self.settings)

    def evaluate(self, experiment: rb.Experiment, point: dict[str, Any]) -> list[dict[str, Any]]:
        return evaluate_point(experiment, point, self.settings)


def run_experiment(experiment: rb.Experiment, settings: Settings | None = None, *,
                   steps: RobustnessSteps | None = None) -> dict[str, Any]:
    """The whole experiment, the one order of its steps (``steps`` defaults to
    :class:`RobustnessSteps` in this process; the flows hand them as their tasks). A finished
    experiment with the same id is not run again: its stored rows are answered, with a new run
    row that points at them."""
    settings = settings or load_settings()
    steps = steps or RobustnessSteps(settings)
    stored = rb.stored_rows(settings, experiment)
    if stored:
        return rb.record_reuse(settings, experiment, stored)
    recorder = rb.start_run(settings, experiment)
    try:
        samples = steps.draw(experiment)
        trained = [steps.train(experiment, job, recorder.run_id) for job in training_jobs(experiment, samples)]
        points = evaluation_points(experiment, samples, trained, settings)
        rows = [row for point in points for row in steps.evaluate(experiment, point)]
        return rb.finish_run(settings, recorder, experiment, rows, made_checkpoints(trained, points))
    except BaseException as exc:
        recorder.fail(f"{type(exc).__name__}: {exc}")
        raise
