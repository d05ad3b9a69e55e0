"""Robustness to quality drift: the skewed train/test benchmark of BLEURT (Sellam et al., 2020,
§5.2 "Robustness to Quality Drift", appendix B.3 "Data Re-sampling Methodology").

The paper sub-samples WMT17 so that training keeps low-rated translations and test keeps
high-rated ones; the skew factor α sets how strongly. This module reproduces that protocol on
any dataset version's judged segments:

1. **Disjoint pools.** In the paper, train (WMT15/16) and test (WMT17) are different datasets,
   and its training setup keeps records that share a source out of both sides at once
   (appendix B.2, "no leak"). With one dataset version, its items (``(group, item_id)``: a WMT
   source sentence) are first split into two disjoint pools, within each group, by a seeded
   permutation: ``test_fraction`` of each group's items (default one half) form the test pool,
   the rest the train pool. Every segment of an item goes to the same pool, so no source
   sentence is in both train and test.
2. **Bins.** "We split the data in 10 bins of equal size" (B.3): bins of equal *count*, i.e.
   deciles of the human score (``human_z``, else ``human_raw``), computed once over the whole
   version within each aspect (so B means the same in both pools). Equal counts is the reading
   the paper's own numbers confirm: with Bernoulli sampling the expected kept fraction is
   ``mean(1/B^α)``, i.e. 50.2%, 29.3%, 20.0% and 12.0% for α = 0.5, 1.0, 1.5, 3.0 with deciles,
   against the 50.7%, 30.3%, 20.4% and 11.9% the paper reports; equal-*width* bins over the
   observed range (``binning="width"``, kept as an option) give 43.5%, 19.7%, 9.5% and 1.7% on
   WMT17, because few ratings lie in the extreme bins. Ties share a bin.
3. **Sampling.** Each record is kept independently with probability ``1/B^α`` (train) or
   ``1/(11−B)^α`` (test), as in B.3; these are probabilities, not weights, so the samples shrink
   as α grows and α = 0 keeps the whole pool. One uniform draw per segment (from
   ``numpy.random.default_rng`` seeded with ``SeedSequence(seed)``) is shared by every α, so the
   samples are nested: the sample at a larger α is a subset of the one at a smaller α, and
   differences between α are not blurred by resampling noise.

Each sample is stored as a derived dataset version named ``{dataset}-drift-a{α}-{split}``
(``wmt17-drift-a1.5-test``) with its lineage: the parent version and the derivation
``{"kind": "quality-drift", "alpha", "split", "seed", "bins", "binning", "bin_edges",
"test_fraction", "parent"}``. Derived versions hold the sampled ``segments`` only (no
system-level judgments, outputs or rankings: they describe the full test set, not a sample).

:func:`run_quality_drift` samples, scores every test sample with each metric (segment scores are
cached by content, so a sample of an already-scored version computes nothing new) and evaluates
them at segment level. The paper *trains* BLEURT on each train split and tests it on the matching
test split: that is :mod:`assay.training.robustness` (``assay robustness drift``), which draws the
samples with this module. Here the metrics evaluated are existing ones, which do not use the train
splits; the drop in agreement as the test skew grows is then the "test skew" axis of the paper's
Figure 2 for those metrics.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.config import DEFAULT_RESAMPLES, DEFAULT_SEED, Settings, load_settings
from assay.datasets import store
from assay.datasets.human import human_array
from assay.datasets.names import VersionedRecord, VersionRef
from assay.errors import UsageError
from assay.jobs.evaluation import evaluate
from assay.jobs.ingest import derive_version
from assay.jobs.runs import RunRecorder, version_inputs
from assay.jobs.scoring import score_dataset
from assay.metrics.registry import MetricSpec, metric_class
from assay.results.correlations import mean_else_each_group
from assay.stats.levels import SEG_STATS

#: The skew factors of the paper's Figure 1 and 2.
ALPHAS: tuple[float, ...] = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
N_BINS = 10
BINNINGS = ("quantile", "width")
SPLITS = ("train", "test")


@dataclass(frozen=True)
class DriftSample(VersionedRecord):
    """One stored sample: a derived dataset version."""

    alpha: float
    split: str
    version: VersionRef
    created: bool
    rows: int
    pool_rows: int
    mean_human: float


# --- the protocol, on arrays ------------------------------------------------------------------


def human_scores(segments: pa.Table) -> np.ndarray:
    """The human score of every segment (:mod:`assay.datasets.human`: ``human_z``, else
    ``human_raw``); NaN where there is none."""
    return human_array(segments)


def bin_edges(human: np.ndarray, n_bins: int = N_BINS, binning: str = "quantile") -> np.ndarray:
    """The ``n_bins - 1`` inner edges: deciles ("10 bins of equal size", B.3) or equal widths."""
    if binning not in BINNINGS:
        raise UsageError(f"unknown binning {binning!r} (expected one of {', '.join(BINNINGS)})")
    if human.size == 0:
        raise UsageError("no rated segments to bin")
    if binning == "quantile":
        return np.quantile(human, np.arange(1, n_bins) / n_bins)
    return np.linspace(human.min(), human.max(), n_bins + 1)[1:-1]


def bin_index(human: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The bin B in 1..len(edges)+1 of each score; equal scores always share a bin."""
    return 1 + np.searchsorted(edges, human, side="right")


def keep_probability(bins: np.ndarray, alpha: float, split: str, n_bins: int = N_BINS) -> np.ndarray:
    """B.3: ``1/B^α`` for train (skewed to low ratings), ``1/(n_bins+1−B)^α`` for test (to high)."""
    if split not in SPLITS:
        raise UsageError(f"unknown split {split!r} (expected train or test)")
    if alpha < 0:
        raise UsageError(f"the skew factor must be >= 0, not {alpha}")
    rank = bins if split == "train" else n_bins + 1 - bins
    return np.power(rank.astype(np.float64), -float(alpha))


def split_pools(groups: Sequence[str], items: Sequence[str], test_fraction: float,
                rng: np.random.Generator) -> np.ndarray:
    """A boolean mask, True for segments of the test pool: within each group, a seeded permutation
    of its items puts ``round(test_fraction * n_items)`` of them in the test pool."""
    if not 0 < test_fraction < 1:
        raise UsageError(f"test_fraction must be between 0 and 1, not {test_fraction}")
    by_group: dict[str, set[str]] = {}
    for group, item in zip(groups, items, strict=True):
        by_group.setdefault(group, set()).add(item)
    test_items: set[tuple[str, str]] = set()
    for group in sorted(by_group):
        ordered = sorted(by_group[group])
        chosen = rng.permutation(len(ordered))[: round(test_fraction * len(ordered))]
        test_items.update((group, ordered[i]) for i in chosen)
    return np.array([(g, i) in test_items for g, i in zip(groups, items, strict=True)], dtype=bool)


def aspect_bins(human: np.ndarray, aspects: Sequence[str], binning: str,
                n_bins: int = N_BINS) -> tuple[np.ndarray, dict[str, list[float]]]:
    """Bins computed within each aspect (a WebNLG fluency score is not a semantics score)."""
    bins = np.zeros(len(human), dtype=np.int64)
    edges_by_aspect = {}
    aspect_array = np.asarray(aspects, dtype=object)
    for aspect in sorted(set(aspects)):
        mask = aspect_array == aspect
        edges = bin_edges(human[mask], n_bins, binning)
        bins[mask] = bin_index(human[mask], edges)
        edges_by_aspect[aspect] = [float(e) for e in edges]
    return bins, edges_by_aspect


def drift_name(dataset: str, alpha: float, split: str) -> str:
    """``wmt17`` + 1.5 + test -> ``wmt17-drift-a1.5-test`` (``a0``, ``a0.5``, ``a1`` ...)."""
    return f"{dataset}-drift-a{float(alpha):g}-{split}"


# --- sampling and storing ---------------------------------------------------------------------


@dataclass
class _Prepared:
    """The rated segments of the parent with their bins, pools and shared uniform draws."""

    segments: pa.Table
    human: np.ndarray
    bins: np.ndarray
    test_pool: np.ndarray
    uniform: np.ndarray
    edges: dict[str, list[float]]


def _prepare(segments: pa.Table, seed: int, test_fraction: float, binning: str) -> _Prepared:
    human = human_scores(segments)
    rated = np.flatnonzero(~np.isnan(human))
    if rated.size == 0:
        raise UsageError("the dataset version has no segments with a human score")
    segments, human = segments.take(pa.array(rated)), human[rated]
    bins, edges = aspect_bins(human, segments.column("aspect").to_pylist(), binning)
    pool_rng, sample_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    test_pool = split_pools(segments.column("group").to_pylist(), segments.column("item_id").to_pylist(),
                            test_fraction, pool_rng)
    uniform = sample_rng.random(segments.num_rows)
    return _Prepared(segments, human, bins, test_pool, uniform, edges)


def _sample_mask(prepared: _Prepared, alpha: float, split: str) -> np.ndarray:
    pool = prepared.test_pool if split == "test" else ~prepared.test_pool
    return pool & (prepared.uniform < keep_probability(prepared.bins, alpha, split))


def _parent_segments(dataset: str, settings: Settings) -> tuple[str, str, pa.Table]:
    with session_scope(settings) as session:
        version = resolve(session, dataset)
        name, label, store_path = version.dataset.name, version.label, version.store_path
    return name, label, store.read_table(settings, store_path, "segments")


def draw_samples(
    dataset: str,
    *,
    alphas: Sequence[float] = ALPHAS,
    seed: int = DEFAULT_SEED,
    test_fraction: float = 0.5,
    binning: str = "quantile",
    settings: Settings | None = None,
) -> list[DriftSample]:
    """Draw and store the train and test samples of every α (B.3) from a dataset version.

    The same ``(dataset version, seed, test_fraction, binning)`` always gives the same samples
    (re-storing them is a no-op); another seed gives other pools and other draws.
    """
    settings = settings or load_settings()
    name, parent_label, segments = _parent_segments(dataset, settings)
    prepared = _prepare(segments, seed, test_fraction, binning)
    lineage = {"kind": "quality-drift", "seed": seed, "bins": N_BINS, "binning": binning,
               "bin_edges": prepared.edges, "test_fraction": test_fraction, "parent": parent_label}
    return [_store_sample(prepared, name, lineage, alpha, split, settings)
            for alpha in sorted({float(a) for a in alphas}) for split in SPLITS]


def _store_sample(prepared: _Prepared, name: str, lineage: dict[str, Any], alpha: float, split: str,
                  settings: Settings) -> DriftSample:
    mask = _sample_mask(prepared, alpha, split)
    if not mask.any():
        raise UsageError(f"the {split} sample for alpha={alpha:g} is empty; use a smaller alpha or a larger dataset")
    derivation = {"kind": "quality-drift", "alpha": alpha, "split": split, **lineage}
    result = derive_version(lineage["parent"], drift_name(name, alpha, split),
                            {"segments": prepared.segments.filter(pa.array(mask))}, derivation, settings=settings)
    pool = prepared.test_pool if split == "test" else ~prepared.test_pool
    return DriftSample(alpha=alpha, split=split, version=result.version, created=result.created,
                       rows=int(mask.sum()), pool_rows=int(pool.sum()),
                       mean_human=float(prepared.human[mask].mean()))


# --- scoring and evaluating -------------------------------------------------------------------


def check_request(metrics: Sequence[MetricSpec], statistic: str) -> None:
    """Segment-level drift needs segment metrics (corpus BLEU's segment scores belong to sentbleu)
    and a segment-level correlation statistic."""
    if statistic not in SEG_STATS or statistic == "kendall_like":
        raise UsageError(f"unknown statistic {statistic!r} (choose from pearson, spearman, kendall, kendall_c)")
    if not metrics:
        raise UsageError("give at least one metric (e.g. sentbleu)")
    for spec in metrics:
        if metric_class(spec.name).stats_columns:
            raise UsageError(f"{spec.name} is a corpus-level metric; use a segment-level one (e.g. sentbleu)")


def score_sample(label: str, spec: MetricSpec, settings: Settings | None = None) -> dict[str, Any]:
    """Score one sample's judged segments; cached keys (the parent's scores) are not recomputed."""
    return score_dataset(label, spec, scope="judged", settings=settings)  # exactly once, as any scoring


def evaluate_sample(test: DriftSample, train: DriftSample | None, signatures: dict[str, str], *,
                    statistic: str = "kendall", seed: int = DEFAULT_SEED, n_resamples: int = DEFAULT_RESAMPLES,
                    settings: Settings | None = None) -> list[dict[str, Any]]:
    """Segment-level agreement on one test sample, one row per (metric, group); group ``all`` is
    the mean over groups, as in :func:`assay.jobs.evaluation.evaluate`. ``signatures`` maps each
    scored signature to its metric name."""
    result = evaluate(test.label, level="seg", metrics=list(signatures), statistics=[statistic], seed=seed,
                      n_resamples=n_resamples, settings=settings)
    return [{
        "alpha": test.alpha, "metric": row["metric"], "signature": row["signature"], "statistic": statistic,
        "group": row["group"], "value": row["value"], "ci_low": row["ci_low"], "ci_high": row["ci_high"],
        "n": row["n"], "n_train": train.rows if train else None, "n_test": test.rows, "test_dataset": test.label,
        "train_dataset": train.label if train else None, "seed": seed, "evaluate_run_id": result["run_id"],
    } for row in result["rows"] if row["signature"] in signatures]


def pair_samples(samples: Sequence[DriftSample]) -> list[tuple[DriftSample, DriftSample | None]]:
    """(test, train) per α, in increasing α."""
    train = {s.alpha: s for s in samples if s.split == "train"}
    return [(s, train.get(s.alpha)) for s in sorted(samples, key=lambda s: s.alpha) if s.split == "test"]


def record_drift_run(dataset: str, samples: Sequence[DriftSample], metrics: Sequence[MetricSpec],
                     parameters: dict[str, Any], rows: Sequence[dict[str, Any]], started: float,
                     settings: Settings | None = None) -> str:
    """One ``quality-drift`` run in the catalog: what was sampled, how, and the headline rows."""
    settings = settings or load_settings()
    with session_scope(settings) as session:
        version = resolve(session, dataset)
        inputs = version_inputs(version.ref, samples=[s.as_dict() for s in samples])
    recorder = RunRecorder(settings, "quality-drift", inputs,
                           {**parameters, "metrics": [m.as_dict() for m in metrics]}, started=started)
    recorder.record({"rows": mean_else_each_group(rows, ("alpha", "signature", "statistic")),
                     "evaluate_runs": sorted({r["evaluate_run_id"] for r in rows})})
    run_id = recorder.run_id
    return run_id


@dataclass(frozen=True)
class DriftSteps:
    """The steps of the benchmark, declared once: each calls this module's function of that step in
    this process, against ``settings``; the ``quality-drift`` flow hands :func:`run_quality_drift` the
    same object with its methods as Prefect tasks (:func:`assay.flows.step_tasks.as_tasks`)."""

    settings: Settings

    def draw(self, dataset: str, alphas: Sequence[float], seed: int, test_fraction: float,
             binning: str) -> list[DriftSample]:
        return draw_samples(dataset, alphas=alphas, seed=seed, test_fraction=test_fraction, binning=binning,
                            settings=self.settings)

    def score(self, label: str, spec: MetricSpec) -> dict[str, Any]:
        return score_sample(label, spec, self.settings)

    def evaluate(self, test: DriftSample, train: DriftSample | None, signatures: dict[str, str], statistic: str,
                 seed: int, n_resamples: int) -> list[dict[str, Any]]:
        return evaluate_sample(test, train, signatures, statistic=statistic, seed=seed, n_resamples=n_resamples,
                               settings=self.settings)

    def record(self, dataset: str, samples: Sequence[DriftSample], metrics: Sequence[MetricSpec],
               parameters: dict[str, Any], rows: Sequence[dict[str, Any]], started: float) -> str:
        return record_drift_run(dataset, samples, metrics, parameters, rows, started, self.settings)


def run_quality_drift(
    dataset: str,
    metrics: Sequence[MetricSpec],
    *,
    alphas: Sequence[float] = ALPHAS,
    seed: int = DEFAULT_SEED,
    statistic: str = "kendall",
    n_resamples: int = DEFAULT_RESAMPLES,
    test_fraction: float = 0.5,
    binning: str = "quantile",
    settings: Settings | None = None,
    steps: DriftSteps | None = None,
) -> list[dict[str, Any]]:
    """The quality-drift benchmark (BLEURT §5.2, B.3) for existing metrics.

    Draws and stores the train/test samples of every α, scores each test sample with each metric
    and evaluates it at segment level. Returns one row per (α, metric, group) with ``alpha,
    metric, signature, statistic, group, value, ci_low, ci_high, n, n_train, n_test,
    test_dataset, train_dataset, seed, evaluate_run_id, drift_run_id``; group ``all`` (the mean
    over groups) is the headline number. The train samples are stored but not used: the metrics
    evaluated here are fixed ones (a learned metric trained on them, the paper's BLEURT, is
    :mod:`assay.training.robustness`). The seed drives both the sampling and the bootstrap CIs, and is recorded in the
    derivations and in the ``quality-drift`` run.

    The one orchestration of the benchmark: ``steps`` defaults to :class:`DriftSteps` in this process;
    the ``quality-drift`` flow hands them as its tasks.
    """
    steps = steps or DriftSteps(settings or load_settings())
    check_request(metrics, statistic)
    alphas = list(alphas)
    started = time.time()
    samples = steps.draw(dataset, alphas, seed, test_fraction, binning)
    rows: list[dict[str, Any]] = []
    for test, train in pair_samples(samples):
        signatures = {steps.score(test.label, spec)["signature"]: spec.name for spec in metrics}
        rows += steps.evaluate(test, train, signatures, statistic, seed, n_resamples)
    parameters = drift_parameters(alphas, seed, statistic, n_resamples, test_fraction, binning)
    run_id = steps.record(dataset, samples, metrics, parameters, rows, started)
    return [{**row, "drift_run_id": run_id} for row in rows]


def drift_parameters(alphas: Sequence[float], seed: int, statistic: str, n_resamples: int, test_fraction: float,
                     binning: str) -> dict[str, Any]:
    return {"alphas": sorted({float(a) for a in alphas}), "seed": seed, "statistic": statistic,
            "n_resamples": n_resamples, "test_fraction": test_fraction, "binning": binning, "bins": N_BINS}

