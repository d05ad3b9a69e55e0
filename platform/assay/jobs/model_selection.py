"""Model selection with hybrid systems on a stored dataset version (Zhang et al., 2020, BERTScore,
§4 "Model Selection" and appendix F.2).

For every group and aspect, the judged segments form a systems x items matrix of human scores
(missing where a system's output for an item was not rated) and of each metric's segment scores.
``assay.stats.model_selection`` super-samples hybrid systems from it (Graham and Liu, 2016) and
asks how often the metric's top pick among random candidate sets is the humans' best (Hits@1),
the mean reciprocal human rank of its pick (MRR) and the mean human-score gap (Diff).

Only items that every system produced and every compared metric scored are used; systems written
by people (``is_human``: WebNLG's own texts) are left out, since the metrics compare against
human references. The hybrid draws depend only on the seed and the matrix shape, so all metrics of
a cell are judged on the same hybrids. Results go to the model-selection store
(:mod:`assay.results.model_selection`) and a run to the catalog, like ``evaluate``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.config import DEFAULT_SEED, Settings, load_settings
from assay.datasets import store
from assay.datasets.human import human_score
from assay.errors import UsageError
from assay.jobs.runs import RecordedFile, RunRecorder, new_run_id, version_inputs
from assay.provenance import code_version
from assay.results import model_selection as stored
from assay.results import segment_scores
from assay.results.segment_scores import ScoredMetric, score_lookup, scored_signatures, wanted_signatures
from assay.stats import pearson
from assay.stats.model_selection import model_selection, sample_hybrid_systems


def _matrices(segments: dict[str, list[Any]], index: list[int], keys: list[str]
              ) -> tuple[list[str], list[str], np.ndarray, dict[tuple[str, str], str]]:
    """Systems, items, the human matrix (NaN: not rated) and the segment key of each (system, item)."""
    cell_key: dict[tuple[str, str], str] = {}
    human: dict[tuple[str, str], list[float]] = {}
    for i in index:
        if segments["is_human"][i]:
            continue
        at = (segments["system"][i], segments["item_id"][i])
        cell_key[at] = keys[i]
        value = human_score(segments["human_z"][i], segments["human_raw"][i])
        if value is not None:
            human.setdefault(at, []).append(float(value))
    systems = sorted({s for s, _ in cell_key})
    items = sorted({it for _, it in cell_key if all((s, it) in cell_key for s in systems)})
    matrix = np.array([[np.mean(human[(s, it)]) if (s, it) in human else np.nan for it in items] for s in systems],
                      dtype=np.float64).reshape(len(systems), len(items))
    return systems, items, matrix, cell_key


def select_models(
    dataset: str,
    *,
    metrics: Sequence[str] | None = None,
    n_hybrid: int = 10_000,
    n_candidates: int = 100,
    n_trials: int = 100_000,
    seed: int = DEFAULT_SEED,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Hits@1, MRR and Diff of every metric scored on ``dataset``, per group and aspect."""
    settings = settings or load_settings()
    started = time.time()
    if not 1 <= n_candidates <= n_hybrid:
        raise UsageError(f"--candidates must lie in 1..{n_hybrid} (the number of hybrids), got {n_candidates}")
    with session_scope(settings) as session:
        version = resolve(session, dataset)
        ref, store_path = version.ref, version.store_path
    table = store.read_table(settings, store_path, "segments")
    if table.num_rows == 0:
        raise UsageError(f"{ref.label} has no segment-level judgments to build hybrid systems from")
    seg = table.to_pydict()
    keys = segment_scores.segment_keys(seg)
    groups: dict[tuple[str, str], list[int]] = {}
    for i, (g, a) in enumerate(zip(seg["group"], seg["aspect"], strict=True)):
        groups.setdefault((g, a), []).append(i)
    candidates = [c for c in wanted_signatures(scored_signatures(settings), metrics)
                  if not c.has_sufficient_statistics]  # corpus BLEU: no segment scores to mix
    now = datetime.now(UTC)
    run_id = new_run_id()
    records: list[dict[str, Any]] = []
    skipped: list[str] = []
    for (group, aspect), index in sorted(groups.items()):
        systems, items, human, cell_key = _matrices(seg, index, keys)
        if len(systems) < 2 or not items:
            skipped.append(f"{group}/{aspect}: fewer than 2 systems share an item")
            continue
        cell_keys = [[cell_key[(s, it)] for it in items] for s in systems]
        for scored in candidates:
            matrix = _metric_matrix(settings, scored, cell_keys)
            if matrix is None:
                continue
            try:
                hybrids = sample_hybrid_systems(human, matrix, n_hybrid=n_hybrid, seed=seed)
            except ValueError as exc:  # StatsInputError: too sparse a human matrix
                skipped.append(f"{group}/{aspect}: {exc}")
                break
            result = model_selection(hybrids.human, hybrids.metric, n_candidates=n_candidates, n_trials=n_trials,
                                     seed=seed)
            hybrid_r = pearson(hybrids.human, hybrids.metric).value if n_hybrid > 1 else None
            records.append({
                "run_id": run_id, **ref.columns(),
                "group": group, "aspect": aspect, "metric": scored.metric, "signature": scored.signature,
                "hits_at_1": result.hits_at_1, "mrr": result.mrr, "mean_abs_human_diff": result.mean_abs_human_diff,
                "hybrid_human_metric_pearson": hybrid_r, "n_systems": len(systems), "n_items": len(items),
                "n_hybrid": n_hybrid, "n_candidates": n_candidates, "n_trials": n_trials, "seed": seed,
                "code_version": code_version(), "created_at": now,
            })
    if not records:
        raise UsageError(f"no metric has scores for every system and item of {ref.label}; score it first, "
                         f"e.g. `assay score --dataset {dataset} --metric sentbleu`"
                         + (f" ({'; '.join(skipped)})" if skipped else ""))
    path = stored.write(settings, ref.name, run_id, records)
    seconds = RunRecorder(
        settings, "select",
        inputs=version_inputs(ref, signatures=sorted({r["signature"] for r in records})),
        parameters={"n_hybrid": n_hybrid, "n_candidates": n_candidates, "n_trials": n_trials, "seed": seed,
                    "metrics": list(metrics or [])},
        run_id=run_id, started=started,
    ).record({"rows": len(records), "skipped": skipped, "files": [str(path)]},
             [RecordedFile.of(settings, path, stored.STORE, len(records))])
    public = [{k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in r.items()} for r in records]
    return {"run_id": run_id, "dataset": ref.label, "rows": public, "skipped": skipped,
            "seconds": seconds}


def _metric_matrix(settings: Settings, scored: ScoredMetric, cell_keys: list[list[str]]) -> np.ndarray | None:
    """The metric's systems x items scores, or None unless every cell is scored and defined."""
    wanted = {k for row in cell_keys for k in row}
    lookup = score_lookup(settings, scored, wanted)
    if not wanted <= lookup.keys():
        return None
    matrix = np.array([[np.nan if lookup[k][0] is None else lookup[k][0] for k in row] for row in cell_keys],
                      dtype=np.float64)
    return None if np.isnan(matrix).any() else matrix
