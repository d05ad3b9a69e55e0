"""Incremental scoring of a dataset version with one metric.

1. ``plan_scoring`` resolves the dataset version, builds the metric (cheaply: no model is loaded)
   and its signature, computes every segment's content key and subtracts the keys already in the
   results store under that signature. What is left is written to a work file and cut into shards.
2. ``score_shard`` scores one shard and writes one immutable Parquet part into the results store.
3. ``finish_scoring`` records the run (inputs by digest, parameters, counts, timings, result files)
   in the catalog.

A scored key is never recomputed: the same request twice computes nothing, and a new dataset
version scores only the segments whose content is new. The Prefect flow in ``flows/score.py``
calls these three steps as tasks.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.catalog.models import ResultFile, Run
from assay.config import Settings, load_settings
from assay.datasets import store
from assay.errors import UsageError
from assay.metrics.base import Metric
from assay.metrics.registry import MetricSpec, create_metric
from assay.provenance import code_version
from assay.results import segment_scores

SCOPES = ("judged", "outputs", "all")


@dataclass
class ScorePlan:
    run_id: str
    dataset: str
    version_number: int
    version_digest: str
    metric: dict[str, Any]
    metric_name: str
    signature: str
    scope: str
    rows: int
    unique: int
    cached: int
    todo_path: str | None
    shards: list[tuple[int, int]] = field(default_factory=list)
    started_at: float = 0.0
    idf_path: str | None = None
    """Work file with the whole scored set's references, for metrics whose weights depend on them."""

    @property
    def to_compute(self) -> int:
        return self.unique - self.cached

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScorePlan:
        plan = cls(**{k: v for k, v in data.items() if k != "shards"})
        plan.shards = [(int(s[0]), int(s[1])) for s in data.get("shards", [])]
        return plan


@lru_cache(maxsize=4)
def _metric(spec_key: str) -> Metric:
    """One metric object (and so one loaded model) per process and spec."""
    import json

    return create_metric(MetricSpec.from_dict(json.loads(spec_key)))


def metric_for(spec: MetricSpec) -> Metric:
    import json

    return _metric(json.dumps(spec.as_dict(), sort_keys=True))


def scope_rows(settings: Settings, store_path: str, scope: str) -> pa.Table:
    """The (source, references, candidate) rows a scope covers, from the stored version."""
    if scope not in SCOPES:
        raise UsageError(f"unknown scope {scope!r} (expected one of {', '.join(SCOPES)})")
    columns = ["source", "references", "candidate"]
    tables = []
    if scope in ("judged", "all"):
        segments = store.read_table(settings, store_path, "segments")
        human = [z if z is not None else r for z, r in zip(segments.column("human_z").to_pylist(),
                                                         segments.column("human_raw").to_pylist(), strict=True)]
        tables.append(segments.select(columns).append_column("human", pa.array(human, pa.float64())))
    if scope in ("outputs", "all"):
        outputs = store.read_table(settings, store_path, "outputs").select(columns)
        tables.append(outputs.append_column("human", pa.nulls(outputs.num_rows, pa.float64())))
    return pa.concat_tables(tables)


def keys_of(table: pa.Table) -> list[str]:
    return [
        segment_scores.segment_key(src, refs, cand)
        for src, refs, cand in zip(
            table.column("source").to_pylist(),
            table.column("references").to_pylist(),
            table.column("candidate").to_pylist(),
            strict=True,
        )
    ]


def reference_corpus(rows: pa.Table) -> list[str]:
    """Every reference of every row, duplicates included: the corpus idf is computed over, as
    bert_score computes it over the reference list it is given."""
    return [ref for refs in rows.column("references").to_pylist() for ref in (refs or [])]


def scoped_signature(metric: Metric, rows: pa.Table, keys: list[str] | None = None) -> str:
    """The metric's signature, extended where a segment's score depends on the scored set.

    - ``corpus_dependent`` (BLEU Neighbors leave-one-out): the set of segment keys joins it.
    - ``reference_dependent`` (BERTScore with idf, Zhang et al. 2020 §3 "Importance Weighting"):
      the idf weights come from all references of the scored set, whose multiset joins it.

    Either way, shards of one request share one set, so scoring in shards equals one pass, and a
    different set never reuses cached scores computed under another.
    """
    signature = metric.signature()
    if getattr(metric, "corpus_dependent", False):
        keys = keys if keys is not None else keys_of(rows)
        signature += "|set:" + hashlib.sha256("\n".join(sorted(set(keys))).encode()).hexdigest()[:12]
    if getattr(metric, "reference_dependent", False):
        corpus = sorted(ref.strip() for ref in reference_corpus(rows))
        signature += "|idf-refs:" + hashlib.sha256("\n".join(corpus).encode()).hexdigest()[:12]
    return signature


def plan_scoring(
    dataset: str,
    spec: MetricSpec,
    *,
    scope: str = "judged",
    shard_size: int = 4000,
    settings: Settings | None = None,
) -> ScorePlan:
    settings = settings or load_settings()
    started = time.time()
    with session_scope(settings) as session:
        version = resolve(session, dataset)
        name, number, digest, store_path = version.dataset.name, version.number, version.digest, version.store_path
    metric = metric_for(spec)
    rows = scope_rows(settings, store_path, scope)
    if rows.num_rows == 0:
        raise UsageError(f"{name}@{number} has no {scope} segments to score (try --scope outputs or all)")
    keys = keys_of(rows)
    metric_name = metric.name
    signature = scoped_signature(metric, rows, keys)
    done = segment_scores.scored_keys(settings, metric_name, signature)
    seen: set[str] = set()
    todo_index = []
    for i, key in enumerate(keys):
        if key not in seen:
            seen.add(key)
            if key not in done:
                todo_index.append(i)
    unique = len(seen)
    run_id = uuid.uuid4().hex
    todo_path: str | None = None
    idf_path: str | None = None
    shards: list[tuple[int, int]] = []
    if todo_index:
        todo = rows.take(todo_index).append_column("key", pa.array([keys[i] for i in todo_index], pa.string()))
        if getattr(metric, "needs_human", False):
            # identical segments judged more than once: the estimator sees their mean human score
            totals: dict[str, list[float]] = {}
            for key, value in zip(keys, rows.column("human").to_pylist(), strict=True):
                if value is not None:
                    totals.setdefault(key, []).append(value)
            means = [sum(totals[k]) / len(totals[k]) if k in totals else None for k in todo.column("key").to_pylist()]
            todo = todo.set_column(todo.schema.get_field_index("human"), "human", pa.array(means, pa.float64()))
        work = settings.home / "work" / run_id
        work.mkdir(parents=True, exist_ok=True)
        todo_path = str(work / "todo.parquet")
        pq.write_table(todo, todo_path)
        if getattr(metric, "corpus_dependent", False):
            shard_size = len(todo_index)
        if getattr(metric, "reference_dependent", False):
            idf_path = str(work / "idf-references.parquet")
            pq.write_table(pa.table({"reference": pa.array(reference_corpus(rows), pa.string())}), idf_path)
        shards = [(start, min(start + shard_size, len(todo_index))) for start in range(0, len(todo_index), shard_size)]
    plan = ScorePlan(
        run_id=run_id, dataset=name, version_number=number, version_digest=digest, metric=spec.as_dict(),
        metric_name=metric_name, signature=signature, scope=scope, rows=rows.num_rows, unique=unique,
        cached=unique - len(todo_index), todo_path=todo_path, shards=shards, started_at=started,
        idf_path=idf_path,
    )
    with session_scope(settings) as session:
        session.add(Run(
            id=run_id, kind="score", status="running", code_version=code_version(),
            inputs={"dataset": name, "version": number, "dataset_digest": digest, "signature": signature},
            parameters={"metric": spec.as_dict(), "scope": scope, "shard_size": shard_size},
            summary={}, started_at=datetime.fromtimestamp(started, UTC),
        ))
    return plan


def score_shard(plan: ScorePlan, shard: int, settings: Settings | None = None) -> dict[str, Any]:
    """Score one shard of the plan's work file; writes one result part. Returns its record."""
    settings = settings or load_settings()
    if plan.todo_path is None:
        raise UsageError("nothing to score in this plan")
    start, end = plan.shards[shard]
    table = pq.read_table(plan.todo_path).slice(start, end - start)
    metric = metric_for(MetricSpec.from_dict(plan.metric))
    t0 = time.perf_counter()
    arguments = (table.column("candidate").to_pylist(), table.column("references").to_pylist(),
                 table.column("source").to_pylist())
    if getattr(metric, "needs_human", False):
        result = metric.score(*arguments, human=table.column("human").to_pylist())  # type: ignore[call-arg]
    elif plan.idf_path is not None:
        corpus = pq.read_table(plan.idf_path).column("reference").to_pylist()
        result = metric.score(*arguments, idf_sentences=corpus)  # type: ignore[call-arg]
    else:
        result = metric.score(*arguments)
    seconds = time.perf_counter() - t0
    rows = segment_scores.rows_table(
        plan.signature,
        table.column("key").to_pylist(),
        list(result.score),
        {k: list(v) for k, v in result.extra.items()} or None,
        result.stats.tolist() if result.stats is not None else None,
        plan.run_id,
    )
    path = segment_scores.write_part(settings, plan.metric_name, plan.signature, plan.run_id, shard, rows)
    digest = hashlib.sha256((settings.home / path).read_bytes()).hexdigest()
    return {"path": str(path), "rows": rows.num_rows, "sha256": digest, "seconds": seconds,
            "warnings": list(result.warnings)}


def finish_scoring(plan: ScorePlan, parts: list[dict[str, Any]], settings: Settings | None = None,
                   error: str | None = None) -> dict[str, Any]:
    settings = settings or load_settings()
    finished = time.time()
    summary = {
        "rows": plan.rows, "unique_segments": plan.unique, "cached": plan.cached,
        "computed": sum(p["rows"] for p in parts), "files": [p["path"] for p in parts],
        "scoring_seconds": sum(p["seconds"] for p in parts),
        "warnings": sorted({w for p in parts for w in p["warnings"]}),
    }
    with session_scope(settings) as session:
        run = session.get(Run, plan.run_id)
        if run is None:
            raise UsageError(f"run {plan.run_id} is not in the catalog")
        run.status = "failed" if error else "completed"
        run.error = error
        run.finished_at = datetime.fromtimestamp(finished, UTC)
        run.duration_s = finished - plan.started_at
        run.summary = summary
        for part in parts:
            session.add(ResultFile(run_id=plan.run_id, kind="segment_scores", path=part["path"],
                                   sha256=part["sha256"], rows=part["rows"]))
    if plan.idf_path:
        Path(plan.idf_path).unlink(missing_ok=True)
    if plan.todo_path:
        Path(plan.todo_path).unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # other files may still be there
            Path(plan.todo_path).parent.rmdir()
    return {"run_id": plan.run_id, "dataset": f"{plan.dataset}@{plan.version_number}",
            "signature": plan.signature, "seconds": finished - plan.started_at, **summary}
