"""Incremental scoring of a dataset version with one metric: plan -> compute -> record.

1. :func:`plan_scoring` is pure: it reads the catalog and the stores, and writes nothing but the
   plan's work files (never a catalog row). It resolves the dataset version, builds the metric
   (cheaply), leaves out the language pairs the metric's model does not cover, renders the
   signature the scores will carry, computes every segment's content key and subtracts the keys
   already stored under that signature. What is left goes to a work file cut into shards; a plan
   with nothing to compute is the whole answer (no run is recorded for it).
2. :func:`start_scoring` records the run as running (:class:`assay.jobs.runs.RunRecorder`).
3. :func:`score_shard` scores one shard and writes one immutable Parquet part into the results
   store; numbers that must not be stored (NaN, infinities) are refused before anything is written.
4. :func:`finish_scoring` closes the run: completed with its result files, or failed.

What a metric needs is read from its declared contract (:mod:`assay.metrics.base`) and handed to it
in one :class:`~assay.metrics.base.ScoringContext`. A scored key is never recomputed: the same
request twice computes nothing, and a new dataset version scores only the segments whose content
is new. :func:`compute_plan` is the one runner of the steps, declared once (:class:`ScoringSteps`):
in this process, or as Prefect tasks by the ``score`` flow (:func:`assay.flows.step_tasks.as_tasks`).

Exactly once, also under concurrency and after crashes: a plan with something to compute is
computed under the exclusive lock of its (metric, signature) (:func:`signature_lock_for`,
:mod:`assay.jobs.signature_lock`), held from a final re-plan to the recorded run. The re-plan,
:func:`resume_plan`, runs under the lock: it drops the keys another request stored meanwhile (two
identical requests store one set of rows: the second waits, then finds the first one's parts)
and marks ``crashed`` the running runs of the signature, whose holders must be dead (they would
hold the lock). A killed request's parts are complete files (:mod:`assay.atomic`), so the next
request resumes from them and computes only what is missing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from assay.atomic import write_parquet
from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.config import Settings, load_settings
from assay.datasets import store
from assay.datasets.human import human_scores
from assay.datasets.names import VersionRef
from assay.errors import MetricOutputError, UsageError
from assay.jobs.runs import RecordedFile, RunRecorder, mark_crashed, new_run_id, running_score_runs, version_inputs
from assay.jobs.signature_lock import signature_lock
from assay.metrics.base import Metric, ScoringContext, check_scores
from assay.metrics.registry import MetricSpec, create_metric
from assay.provenance import short
from assay.results import segment_scores

SCOPES = ("judged", "outputs", "all")
#: the error a crashed score run is closed with (see :func:`resume_plan`)
CRASHED_REASON = "its process died: no live holder of the signature lock"
#: a group named like a language pair (``de-en``, ``en-zh``); its target language follows the dash
LANGUAGE_PAIR = re.compile(r"^([a-z]{2,3})-([a-z]{2,3})$")


@dataclass
class ScorePlan:
    """What a scoring request will do; plain data, so flow tasks can pass it along."""

    run_id: str
    """Id of the run that computes the plan (recorded only when computing starts)."""
    version: VersionRef
    """The dataset version scored."""
    metric: dict[str, Any]
    """The :class:`MetricSpec` as a dict."""
    metric_name: str
    signature: str
    """The signature every score of this plan carries (set digests included)."""
    scope: str
    rows: int
    """Rows of the scope that are scored (after leaving out uncovered language pairs)."""
    unique: int
    cached: int
    todo_path: str | None
    shards: list[tuple[int, int]] = field(default_factory=list)
    started_at: float = 0.0
    corpus_path: str | None = None
    """Work file with every reference of the scored set (``depends_on_reference_corpus``)."""
    signature_extra: dict[str, str] = field(default_factory=dict)
    """The scored-set fields of the signature, so a worker can check it renders the same one."""
    store_scores: bool = True
    """False for a model whose weights could not be digested (scored on request, never stored)."""
    checkpoint_digest: str | None = None
    """The checkpoint the metric scores with (:meth:`Metric.checkpoint_digest`), recorded on every
    stored score; None for a metric without a checkpoint."""
    excluded_groups: dict[str, int] = field(default_factory=dict)
    """Language pairs left out because the metric's model does not cover their target language, with
    their row counts."""
    note: str | None = None
    """One line for the user about what the plan left out or will not store; None when nothing."""
    parameters: dict[str, Any] = field(default_factory=dict)
    run: dict[str, Any] | None = None
    """The run recorder (``RunRecorder.as_dict``) once :func:`start_scoring` has recorded the run."""

    @property
    def to_compute(self) -> int:
        return self.unique - self.cached

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScorePlan:
        plan = cls(**{k: v for k, v in data.items() if k not in ("shards", "version")},
                   version=VersionRef.from_dict(data["version"]))
        plan.shards = [(int(s[0]), int(s[1])) for s in data.get("shards", [])]
        return plan


@lru_cache(maxsize=4)
def _metric(spec_key: str) -> Metric:
    """One metric object (and so one loaded model) per process and spec."""
    return create_metric(MetricSpec.from_dict(json.loads(spec_key)))


def metric_for(spec: MetricSpec) -> Metric:
    return _metric(json.dumps(spec.as_dict(), sort_keys=True))


# --- what is scored ---------------------------------------------------------------------------


def scope_rows(settings: Settings, store_path: str, scope: str) -> pa.Table:
    """The (group, source, references, candidate, human) rows a scope covers, from the stored version.

    ``human`` is the row's human score (:mod:`assay.datasets.human`: z where there is one, else raw);
    system outputs without a judgment have none.
    """
    if scope not in SCOPES:
        raise UsageError(f"unknown scope {scope!r} (expected one of {', '.join(SCOPES)})")
    columns = ["group", "source", "references", "candidate"]
    tables = []
    if scope in ("judged", "all"):
        segments = store.read_table(settings, store_path, "segments")
        human = pa.array(human_scores(segments), pa.float64())
        tables.append(segments.select(columns).append_column("human", human))
    if scope in ("outputs", "all"):
        outputs = store.read_table(settings, store_path, "outputs").select(columns)
        tables.append(outputs.append_column("human", pa.nulls(outputs.num_rows, pa.float64())))
    return pa.concat_tables(tables)


def reference_corpus(rows: pa.Table) -> list[str]:
    """Every reference of every row, duplicates included: the corpus idf is computed over, as
    bert_score computes it over the reference list it is given."""
    return [ref for refs in rows.column("references").to_pylist() for ref in (refs or [])]


def target_language(group: str | None) -> str | None:
    """The target language of a group named like a language pair (``de-en`` -> ``en``); None for
    groups that are not language pairs (a task, a category), whose language is not known."""
    match = LANGUAGE_PAIR.match((group or "").strip().lower())
    return match.group(2) if match else None


def uncovered_groups(metric: Metric, groups: Iterable[str]) -> list[str]:
    """The groups whose target language the metric's model does not cover (``metric.languages``)."""
    if metric.languages is None:
        return []
    return sorted({g for g in groups if (lang := target_language(g)) is not None and lang not in metric.languages})


def _digest(items: Iterable[str]) -> str:
    return short(hashlib.sha256("\n".join(items).encode()).hexdigest())


def set_fields(metric: Metric, rows: pa.Table, keys: list[str] | None = None) -> dict[str, str]:
    """The signature fields that name the scored set, for metrics whose scores depend on it.

    - ``depends_on_segment_set`` (BLEU Neighbors leave-one-out): ``set`` digests the segment keys.
    - ``depends_on_reference_corpus`` (BERTScore with idf, Zhang et al. 2020 §3 "Importance
      Weighting"): ``refs`` digests the multiset of the set's references, the idf corpus.

    Either way, shards of one request share one set, so scoring in shards equals one pass, and a
    different set never reuses cached scores computed under another.

    - ``depends_on_target_language`` (BLEU's tokenizer): the metric's fields for the set's target
      languages (:meth:`Metric.target_language_fields`), e.g. ``tok:zh`` for an en-zh set.
    """
    extra: dict[str, str] = {}
    if metric.depends_on_target_language:
        languages = [target_language(group) for group in rows.column("group").to_pylist()]
        extra.update({key: str(value) for key, value in metric.target_language_fields(languages).items()})
    if metric.depends_on_segment_set:
        extra["set"] = _digest(sorted(set(keys if keys is not None else segment_scores.segment_keys(rows))))
    if metric.depends_on_reference_corpus:
        extra["refs"] = _digest(sorted(ref.strip() for ref in reference_corpus(rows)))
    return extra


def scoped_signature(metric: Metric, rows: pa.Table, keys: list[str] | None = None) -> str:
    """The metric's signature for scoring ``rows`` (with :func:`set_fields` where they apply)."""
    return metric.signature(set_fields(metric, rows, keys))


# --- plan -------------------------------------------------------------------------------------


def plan_scoring(
    dataset: str,
    spec: MetricSpec,
    scope: str = "judged",
    shard_size: int = 4000,
    allow_languages: bool = False,
    settings: Settings | None = None,
) -> ScorePlan:
    """Plan a scoring request against the cache; writes work files only, never a catalog row.

    ``allow_languages``: score every language pair even where the metric's model does not cover
    the target language (``assay score --any-language``); otherwise those pairs are left out and
    the plan's ``note`` says so.
    """
    settings = settings or load_settings()
    started = time.time()
    if isinstance(shard_size, bool) or not isinstance(shard_size, int) or shard_size < 1:
        raise UsageError(f"shard size must be a positive integer, got {shard_size!r}")
    with session_scope(settings) as session:
        version = resolve(session, dataset)
        ref, store_path = version.ref, version.store_path
    metric = metric_for(spec)
    rows = scope_rows(settings, store_path, scope)
    if rows.num_rows == 0:
        raise UsageError(f"{ref.label} has no {scope} segments to score (try --scope outputs or all)")
    rows, excluded = _covered(metric, rows, allow_languages, ref.label)
    _check_references(metric, rows, ref.label)
    keys = segment_scores.segment_keys(rows)
    extra = set_fields(metric, rows, keys)
    signature = metric.signature(extra)
    stored = not metric.model_based or metric.model_digest() is not None
    done = segment_scores.scored_keys(settings, metric.name, signature) if stored else set()
    seen: set[str] = set()
    todo_index = []
    for i, key in enumerate(keys):
        if key not in seen:
            seen.add(key)
            if key not in done:
                todo_index.append(i)
    run_id = new_run_id()
    todo_path: str | None = None
    corpus_path: str | None = None
    shards: list[tuple[int, int]] = []
    if todo_index:
        todo = rows.take(todo_index).append_column("key", pa.array([keys[i] for i in todo_index], pa.string()))
        if metric.needs_human_scores:
            todo = _with_mean_human(todo, keys, rows.column("human").to_pylist())
        work = settings.work_dir / run_id
        todo_path = str(write_parquet(todo, work / "todo.parquet"))
        if metric.depends_on_reference_corpus:
            corpus = pa.table({"reference": pa.array(reference_corpus(rows), pa.string())})
            corpus_path = str(write_parquet(corpus, work / "reference-corpus.parquet"))
        if metric.depends_on_segment_set:
            shard_size = len(todo_index)  # leave-one-out sees the whole set at once
        shards = [(start, min(start + shard_size, len(todo_index))) for start in range(0, len(todo_index), shard_size)]
    notes = []
    if excluded:
        listed = ", ".join(f"{group} ({count:,} rows)" for group, count in excluded.items())
        covered = ", ".join(sorted(metric.languages or ()))
        notes.append(f"{metric.name} covers target language {covered} only: left out {listed} "
                     "(--any-language / allow_languages=True scores them anyway)")
    if not stored:
        notes.append(f"{metric.name}'s model weights could not be digested: scores are computed and returned, "
                     "never stored")
    return ScorePlan(
        run_id=run_id, version=ref, metric=spec.as_dict(),
        metric_name=metric.name, signature=signature, scope=scope, rows=rows.num_rows, unique=len(seen),
        cached=len(seen) - len(todo_index), todo_path=todo_path, shards=shards, started_at=started,
        corpus_path=corpus_path, signature_extra=extra, store_scores=stored, excluded_groups=excluded,
        checkpoint_digest=metric.checkpoint_digest(),
        note="; ".join(notes) or None,
        parameters={"metric": spec.as_dict(), "scope": scope, "shard_size": shard_size,
                    "allow_languages": allow_languages},
    )


def _covered(metric: Metric, rows: pa.Table, allow_languages: bool, label: str) -> tuple[pa.Table, dict[str, int]]:
    """``rows`` without the language pairs the metric does not cover, and those pairs' row counts."""
    groups = rows.column("group").to_pylist()
    left_out = [] if allow_languages else uncovered_groups(metric, groups)
    if not left_out:
        return rows, {}
    excluded = {group: groups.count(group) for group in left_out}
    keep = [i for i, group in enumerate(groups) if group not in excluded]
    if not keep:
        raise UsageError(
            f"{label}: {metric.name} covers target language {', '.join(sorted(metric.languages or ()))} only and "
            f"every group ({', '.join(left_out)}) is in another; pass --any-language (allow_languages=True) "
            "to score them anyway, or choose a model for that language"
        )
    return rows.take(keep), excluded


def _check_references(metric: Metric, rows: pa.Table, label: str) -> None:
    """Refuse, before anything is computed, a metric that needs references on segments without any
    (an MQM release that rates no human translation, such as WMT23 zh-en side by side)."""
    if not metric.needs_references:
        return
    missing = sum(1 for refs in rows.column("references").to_pylist() if not refs)
    if missing:
        which = (f"none of its {rows.num_rows:,} segments has one" if missing == rows.num_rows
                 else f"{missing:,} of its {rows.num_rows:,} segments have none")
        raise UsageError(
            f"{label}: {metric.name} needs a reference, but {which}. "
            "Add one by ingesting the release again with a rated system as its reference: assay ingest PATH "
            "--reference-system NAME (-o reference_system=NAME); or score a metric that needs no reference"
        )


def _with_mean_human(todo: pa.Table, keys: list[str], human: list[float | None]) -> pa.Table:
    """Identical segments judged more than once: the estimator sees their mean human score."""
    totals: dict[str, list[float]] = {}
    for key, value in zip(keys, human, strict=True):
        if value is not None:
            totals.setdefault(key, []).append(value)
    means = [sum(totals[k]) / len(totals[k]) if k in totals else None for k in todo.column("key").to_pylist()]
    return todo.set_column(todo.schema.get_field_index("human"), "human", pa.array(means, pa.float64()))


# --- exactly once: the signature lock and the re-plan under it ---------------------------------


@contextlib.contextmanager
def signature_lock_for(plan: ScorePlan, settings: Settings | None = None,
                       timeout_s: float | None = None) -> Iterator[None]:
    """Hold the exclusive lock of the plan's (metric, signature) (:mod:`assay.jobs.signature_lock`):
    around :func:`resume_plan`, :func:`start_scoring`, every :func:`score_shard` and
    :func:`finish_scoring` of one request. Waits for another request holding it."""
    with signature_lock(settings or load_settings(), plan.metric_name, plan.signature, timeout_s):
        yield


def resume_plan(plan: ScorePlan, settings: Settings | None = None) -> ScorePlan:
    """Bring a plan up to date; call it while holding :func:`signature_lock_for` of the plan.

    1. Score runs of the signature still marked running cannot be alive (their process would hold
       the lock): they are marked ``crashed`` (:func:`assay.jobs.runs.mark_crashed`, their summary kept)
       and their left-over work files removed.
    2. The keys stored under the signature since the plan was made (by a request that held the
       lock meanwhile, or a killed one's complete parts) are dropped from the work file and the
       shards are cut again; a plan left with nothing to compute loses its work files (its run
       will not be recorded).
    """
    settings = settings or load_settings()
    for run_id in mark_crashed(settings, running_score_runs(settings, plan.signature), CRASHED_REASON):
        _discard_work(settings, run_id)
    if not plan.shards or plan.todo_path is None or not plan.store_scores or plan.run is not None:
        return plan
    done = segment_scores.scored_keys(settings, plan.metric_name, plan.signature)
    todo = pq.read_table(plan.todo_path)
    keep = [i for i, key in enumerate(todo.column("key").to_pylist()) if key not in done]
    if len(keep) == todo.num_rows:
        return plan
    cached = plan.cached + todo.num_rows - len(keep)
    if not keep:
        discard(plan)
        return replace(plan, cached=cached, todo_path=None, corpus_path=None, shards=[])
    write_parquet(todo.take(keep), Path(plan.todo_path))
    size = (len(keep) if metric_for(MetricSpec.from_dict(plan.metric)).depends_on_segment_set
            else int(plan.parameters.get("shard_size") or len(keep)))
    shards = [(start, min(start + size, len(keep))) for start in range(0, len(keep), size)]
    return replace(plan, cached=cached, shards=shards)


def _discard_work(settings: Settings, run_id: str) -> None:
    """Remove a dead run's work files (the names :func:`plan_scoring` writes), then its folder if empty."""
    work = settings.work_dir / run_id
    for name in ("todo.parquet", "reference-corpus.parquet"):
        (work / name).unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        work.rmdir()


# --- compute ----------------------------------------------------------------------------------


def start_scoring(plan: ScorePlan, settings: Settings | None = None) -> ScorePlan:
    """Record the plan's run as running; returns the plan carrying its recorder. A plan with
    nothing to compute records no run and is returned unchanged."""
    if not plan.shards or plan.run is not None:
        return plan
    recorder = _recorder(settings or load_settings(), plan).start()
    return replace(plan, run=recorder.as_dict())


def _recorder(settings: Settings, plan: ScorePlan) -> RunRecorder:
    inputs = version_inputs(plan.version, signature=plan.signature)
    return RunRecorder(settings, "score", inputs, dict(plan.parameters), run_id=plan.run_id, started=plan.started_at)


def score_shard(plan: ScorePlan, shard: int, settings: Settings | None = None) -> dict[str, Any]:
    """Score one shard of the plan's work file and write one result part. Returns its record
    (``RecordedFile`` fields plus ``seconds`` and ``warnings``; for a plan that does not store,
    the scores themselves instead of a file)."""
    settings = settings or load_settings()
    if plan.todo_path is None:
        raise UsageError("nothing to score in this plan")
    if not 0 <= shard < len(plan.shards):
        raise UsageError(f"shard {shard} does not exist (the plan has {len(plan.shards)})")
    start, end = plan.shards[shard]
    table = pq.read_table(plan.todo_path).slice(start, end - start)
    metric = metric_for(MetricSpec.from_dict(plan.metric))
    here = metric.signature(plan.signature_extra)
    if here != plan.signature:
        raise UsageError(f"this worker would score under\n  {here}\nbut the plan was made for\n  {plan.signature}\n"
                         "(other library versions or model files); run it where the plan was made, or plan again here")
    context = ScoringContext(
        human=table.column("human").to_pylist() if metric.needs_human_scores else None,
        reference_corpus=(pq.read_table(plan.corpus_path).column("reference").to_pylist()
                          if metric.depends_on_reference_corpus and plan.corpus_path else None),
        target_languages=([target_language(group) for group in table.column("group").to_pylist()]
                          if metric.depends_on_target_language else None),
    )
    t0 = time.perf_counter()
    result = metric.score(table.column("candidate").to_pylist(), table.column("references").to_pylist(),
                          table.column("source").to_pylist(), context=context)
    seconds = time.perf_counter() - t0
    check_scores(metric, result, table.num_rows, plan.signature)
    if metric.has_sufficient_statistics and result.stats is None:
        raise MetricOutputError(f"{plan.signature}: declares sufficient statistics but returned none")
    rows = segment_scores.rows_table(
        plan.signature,
        table.column("key").to_pylist(),
        list(result.score),
        {k: list(v) for k, v in result.extra.items()} or None,
        result.stats.tolist() if result.stats is not None else None,
        plan.run_id,
        plan.checkpoint_digest,
    )
    record: dict[str, Any] = {"seconds": seconds, "warnings": list(result.warnings)}
    if not plan.store_scores:
        kept = rows.select(["key", "score", "extra"]).to_pylist()
        return {**record, "path": None, "rows": rows.num_rows,
                "scores": [{"key": r["key"], "score": r["score"], **dict(r["extra"] or [])} for r in kept]}
    path = segment_scores.write_part(settings, plan.metric_name, plan.signature, plan.run_id, shard, rows)
    return {**record, **RecordedFile.of(settings, path, "segment_scores", rows.num_rows).as_dict()}


# --- record -----------------------------------------------------------------------------------


def finish_scoring(plan: ScorePlan, parts: list[dict[str, Any]], settings: Settings | None = None,
                   error: str | None = None) -> dict[str, Any]:
    """Close the plan's run (completed with the parts' files, or failed with ``error``), remove the
    work files and return the summary. A plan with nothing to compute has no run (``run_id`` None).
    A plan whose run was never started (a caller that skipped :func:`start_scoring`) is recorded
    in one step."""
    settings = settings or load_settings()
    files = [RecordedFile.from_dict(p) for p in parts if p.get("path")]
    summary: dict[str, Any] = {
        "rows": plan.rows, "unique_segments": plan.unique, "cached": plan.cached,
        "computed": sum(p["rows"] for p in parts), "files": [f.path for f in files],
        "scoring_seconds": sum(p["seconds"] for p in parts),
        "warnings": sorted({w for p in parts for w in p["warnings"]}),
        "excluded_groups": dict(plan.excluded_groups), "note": plan.note, "stored": plan.store_scores,
    }
    if not plan.store_scores:
        summary["scores"] = [row for p in parts for row in p.get("scores", [])]
    run_id: str | None = plan.run_id
    if not plan.shards:
        run_id, seconds = None, time.time() - plan.started_at
    else:
        recorder = RunRecorder.from_dict(settings, plan.run) if plan.run else _recorder(settings, plan)
        recorded = {k: v for k, v in summary.items() if k != "scores"}
        if error is not None:
            if plan.run is None:
                recorder.start()
            seconds = recorder.fail(error, recorded, files)
        elif plan.run is None:
            seconds = recorder.record(recorded, files)
        else:
            seconds = recorder.complete(recorded, files)
    discard(plan)
    return {"run_id": run_id, "dataset": plan.version.label, "signature": plan.signature,
            "checkpoint_digest": plan.checkpoint_digest, "seconds": seconds, **summary}


def discard(plan: ScorePlan) -> None:
    """Remove the plan's work files (a plan that will not be computed, or one that is finished)."""
    for path in (plan.todo_path, plan.corpus_path):
        if path:
            Path(path).unlink(missing_ok=True)
    if plan.todo_path:
        with contextlib.suppress(OSError):  # only when empty: never another run's files
            Path(plan.todo_path).parent.rmdir()


# --- the runner: one sequence of steps, in this process or as flow tasks ------------------------


@dataclass(frozen=True)
class ScoringSteps:
    """The steps of a scoring request, declared once: each calls this module's function of that step
    in this process, against ``settings``. The ``score`` flow hands :func:`compute_plan` the same
    object with its methods as Prefect tasks (:func:`assay.flows.step_tasks.as_tasks`);
    :func:`compute_plan` is the one place that orders them, holds the lock, shows progress and closes
    a failed run."""

    settings: Settings

    def plan(self, dataset: str, spec: MetricSpec, scope: str, shard_size: int,
             allow_languages: bool) -> ScorePlan:
        return plan_scoring(dataset, spec, scope=scope, shard_size=shard_size, allow_languages=allow_languages,
                            settings=self.settings)

    def resume(self, plan: ScorePlan) -> ScorePlan:
        return resume_plan(plan, self.settings)

    def start(self, plan: ScorePlan) -> ScorePlan:
        return start_scoring(plan, self.settings)

    def score_shard(self, plan: ScorePlan, shard: int) -> dict[str, Any]:
        return score_shard(plan, shard, self.settings)

    def finish(self, plan: ScorePlan, parts: list[dict[str, Any]], error: str | None = None) -> dict[str, Any]:
        return finish_scoring(plan, parts, self.settings, error=error)


def score_dataset(
    dataset: str,
    spec: MetricSpec,
    scope: str = "judged",
    shard_size: int = 4000,
    allow_languages: bool = False,
    settings: Settings | None = None,
    steps: ScoringSteps | None = None,
    plan: ScorePlan | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Plan the request (unless ``plan`` is the plan already made for it), then :func:`compute_plan`;
    a failure marks the run failed and is raised again. Returns :func:`finish_scoring`'s summary.

    ``steps`` defaults to :class:`ScoringSteps` in this process; a handed-on ``plan`` is not planned
    again (it is still brought up to date under the signature lock, :func:`resume_plan`)."""
    settings = settings or load_settings()
    steps = steps or ScoringSteps(settings)
    if plan is None:
        plan = steps.plan(dataset, spec, scope, shard_size, allow_languages)
    elif plan.metric != spec.as_dict() or plan.scope != scope:
        raise UsageError(f"the plan handed on scores {plan.metric} ({plan.scope}), not the request's "
                         f"{spec.as_dict()} ({scope})")
    return compute_plan(plan, settings, steps=steps, progress=progress)


def compute_plan(plan: ScorePlan, settings: Settings | None = None, timeout_s: float | None = None, *,
                 steps: ScoringSteps | None = None, progress: bool = False) -> dict[str, Any]:
    """Compute a plan exactly once: a plan with nothing to compute is finished at once (no run, no
    lock); otherwise, under the signature lock, :func:`resume_plan`, start, score every shard (one
    progress bar in segments over the shards when ``progress``) and finish. A failure marks the run
    failed and is raised again. ``steps`` defaults to :class:`ScoringSteps` in this process."""
    settings = settings or load_settings()
    steps = steps or ScoringSteps(settings)
    if not plan.shards:
        return steps.finish(plan, [])
    with signature_lock_for(plan, settings, timeout_s):
        plan = steps.resume(plan)
        if not plan.shards:  # another request stored them while this one waited for the lock
            return steps.finish(plan, [])
        plan = steps.start(plan)
        parts: list[dict[str, Any]] = []
        try:
            from assay.progress import start as start_progress

            # a bar at a terminal, lines otherwise (assay.progress); the display ticks while a shard,
            # thousands of segments, is scored, and a model-based metric shows its own bar within it
            display = start_progress(f"scoring {plan.metric_name}", sum(end - start for start, end in plan.shards),
                                     "segments", tick=True) if progress else None
            with display or contextlib.nullcontext():
                for shard in range(len(plan.shards)):
                    parts.append(steps.score_shard(plan, shard))
                    if display is not None:
                        display.update(sum(part["rows"] for part in parts))
        except BaseException as exc:
            steps.finish(plan, parts, error=f"{type(exc).__name__}: {exc}")
            raise
        return steps.finish(plan, parts)
