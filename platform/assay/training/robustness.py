"""Learned metrics under quality drift and with little data: BLEURT's robustness experiments
(Sellam et al., 2020, §5.2 "Robustness to Quality Drift", §5.3 "WebNLG Experiments", appendix B.3).

Both experiments train one learned metric per *variant* and *point*, and correlate it with the
humans on held-out data, beside fixed baselines:

* **Quality drift (§5.2).** For each skew factor α, the train sample keeps low-rated records and
  the test sample high-rated ones (B.3; the samples are drawn by :mod:`assay.jobs.quality_drift`). A
  variant is fine-tuned on the train sample of α and evaluated on the test sample of the same α,
  so a point is one step along the diagonal of the paper's Figure 2 (train skew = test skew).
* **WebNLG (§5.3).** "The data has no natural split between train and test ... We allocate 0% to
  about 50% of the data to training, and we split on both the evaluated systems or the RDF
  inputs". :func:`draw_splits` splits a dataset version's units (systems, or inputs: the items)
  by a seeded permutation; the first ``round(share · n)`` units are the *train* side, the rest
  the *test* side. One permutation serves every share, so the train sides are nested (a larger
  share adds units, never swaps them) and differences between shares are not blurred by
  resampling. Each rated aspect (fluency, grammar, semantics) is "a separate modeling task": a
  variant is trained per aspect on the train side and evaluated on that aspect of the test side.
  At share 0 nothing is trained: a variant that starts from a checkpoint is scored as it is (the
  paper's "comparable with BERTscore with zero fine-tuning"); a variant that starts from a bare
  encoder has no rating head worth scoring and is skipped.

A *variant* is a name and where training starts (``NAME=INIT``): ``encoder`` (the embedded
encoder: the paper's "no pre-training") or a registered checkpoint (e.g. one pre-trained on
synthetic pairs, §4, or fine-tuned on WMT first: the paper's BLEURT). Baselines are fixed
segment-level metrics (the paper's sentBLEU and BERTScore).

Results: ``results/robustness/experiment=<drift|webnlg>/part-<run>-<uuid>.parquet``, schema
:data:`RESULTS`, one row per (experiment id, variant, point, aspect, statistic) on the headline
group (``all``, the mean over groups, where the test data has several; else its only group).
Each row names the checkpoint (name and digest), the train and test dataset versions (label and
digest), the metric signature, the evaluation run that computed the value and its bootstrap
interval. The experiment id is a digest of everything that determines the numbers (dataset
digest, points, variants' init digests, baselines, hyper-parameters, seeds, statistics); a rerun
with the same id finds its rows and recomputes nothing. Every call records a ``robustness`` run
whose summary names every checkpoint it used and whether it was trained then or found.

Checkpoints are found again by what made them, not by name: a registered fine-tuning whose
lineage has the same training data (version digest and aspect), the same parent (init digest, or
the same encoder) and the same hyper-parameters is reused instead of training again.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import select

from assay.atomic import unique_part_name, write_parquet
from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.catalog.models import Checkpoint
from assay.checkpoints.registry import validate_checkpoint_name
from assay.config import Settings
from assay.datasets import store
from assay.datasets.human import human_array
from assay.datasets.names import VersionRef
from assay.errors import NotFoundError, UsageError
from assay.jobs.ingest import derive_version
from assay.jobs.runs import RecordedFile, RunRecorder
from assay.metrics.registry import MetricSpec, create_metric
from assay.provenance import code_version

EXPERIMENTS = ("drift", "webnlg")
#: the statistics every point is evaluated with (the paper reports Kendall τ; Pearson r beside it)
STATISTICS = ("kendall", "pearson")
#: WebNLG's shares of the units given to training: "0% to about 50%" (§5.3)
SHARES: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
SPLIT_BY = ("system", "input")
SIDES = ("train", "test")
SPLIT_KIND = "webnlg-split"
#: the init of a variant that starts from the embedded encoder (the paper's "no pre-training")
ENCODER = "encoder"
#: the paper's baselines (§5.2: "Moses sentBLEU and BERTscore")
BASELINES = ("sentbleu", "bertscore")
ROOT = "results/robustness"
RUN_KIND = "robustness"

RESULTS = pa.schema([
    pa.field("run_id", pa.string(), nullable=False),  # the robustness run that wrote the row
    pa.field("experiment", pa.string(), nullable=False),  # drift | webnlg
    pa.field("experiment_id", pa.string(), nullable=False),  # Experiment.id: digest of the request
    pa.field("dataset", pa.string(), nullable=False),  # the parent version, NAME@N
    pa.field("dataset_digest", pa.string(), nullable=False),
    pa.field("variant", pa.string(), nullable=False),  # variant name, or the baseline's metric text
    pa.field("kind", pa.string(), nullable=False),  # learned | baseline
    pa.field("init", pa.string()),  # learned: the variant's init as given (encoder, a checkpoint)
    pa.field("init_digest", pa.string()),  # learned: the init checkpoint's digest (null: an encoder)
    pa.field("alpha", pa.float64()),  # drift: the skew factor
    pa.field("share", pa.float64()),  # webnlg: requested share of units on the train side
    pa.field("share_actual", pa.float64()),  # webnlg: train units / all units
    pa.field("split_by", pa.string()),  # webnlg: system | input
    pa.field("aspect", pa.string(), nullable=False),
    pa.field("train_dataset", pa.string()),  # learned: the version trained on, NAME@N (null at share 0)
    pa.field("train_digest", pa.string()),
    pa.field("n_train", pa.int64()),  # rated pairs of the training data (validation split included)
    pa.field("test_dataset", pa.string(), nullable=False),
    pa.field("test_digest", pa.string(), nullable=False),
    pa.field("checkpoint", pa.string()),  # learned: registered name
    pa.field("checkpoint_digest", pa.string()),
    pa.field("trained_run_id", pa.string()),  # learned: the finetune run that made the checkpoint
    pa.field("metric", pa.string(), nullable=False),
    pa.field("signature", pa.string(), nullable=False),
    pa.field("statistic", pa.string(), nullable=False),
    pa.field("group", pa.string(), nullable=False),  # "all" (mean over groups) or the only group
    pa.field("value", pa.float64()),
    pa.field("ci_low", pa.float64()),
    pa.field("ci_high", pa.float64()),
    pa.field("n", pa.int64(), nullable=False),
    pa.field("seed", pa.int64(), nullable=False),
    pa.field("n_resamples", pa.int64(), nullable=False),
    pa.field("evaluate_run_id", pa.string(), nullable=False),
    pa.field("code_version", pa.string(), nullable=False),
    pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
])


def json_digest(data: Any) -> str:
    """sha256 hex of ``data`` as canonical JSON (sorted keys, no spaces): an experiment's or a
    training's identity."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


# --- variants and baselines ------------------------------------------------------------------------

_VARIANT_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")


@dataclass(frozen=True)
class Variant:
    """Where one learned metric starts: ``init`` as given (``encoder`` or a checkpoint name or
    folder, or an encoder folder), and once resolved its ``folder`` (None: the embedded encoder)
    and checkpoint ``digest`` (None: not a checkpoint, i.e. an encoder without a rating head)."""

    name: str
    init: str
    folder: str | None = None
    digest: str | None = None

    @property
    def is_checkpoint(self) -> bool:
        return self.digest is not None

    def identity(self) -> dict[str, Any]:
        """What determines this variant's checkpoints: the init's digest, else the encoder."""
        return {"name": self.name, "init": self.digest or (self.folder or ENCODER)}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Variant:
        return cls(**data)


def parse_variant(text: str) -> Variant:
    """``NAME=INIT`` -> a variant (not yet resolved)."""
    name, sep, init = text.partition("=")
    name, init = name.strip(), init.strip()
    if not sep or not init or not _VARIANT_NAME.fullmatch(name):
        raise UsageError(f"--variant {text!r}: expected NAME=INIT, NAME of 1-40 lowercase letters, digits, '_' or "
                         f"'-' and INIT '{ENCODER}' or a checkpoint name or folder, e.g. "
                         "no-pretraining=encoder or pretrained=bleurt-synth")
    return Variant(name, init)


def check_variants(variants: Sequence[Variant]) -> list[Variant]:
    """At least one variant, names unique."""
    if not variants:
        raise UsageError(f"give at least one --variant NAME=INIT (e.g. no-pretraining={ENCODER})")
    names = [v.name for v in variants]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"--variant names must be unique; {', '.join(twice)} given more than once")
    return list(variants)


def check_baselines(baselines: Sequence[MetricSpec]) -> list[MetricSpec]:
    """Segment-level metrics with valid parameters (a corpus metric has no segment scores)."""
    for spec in baselines:
        try:
            metric = create_metric(spec)
        except (UsageError, NotFoundError) as exc:
            raise UsageError(f"--baseline {spec.name!r}: {exc}") from None
        if metric.stats_columns:
            raise UsageError(f"--baseline {spec.name!r} is a corpus-level metric; give a segment-level one "
                             "(e.g. sentbleu or bertscore)")
    labels = [baseline_label(s) for s in baselines]
    if len(set(labels)) != len(labels):
        raise UsageError("--baseline: the same metric is given twice")
    return list(baselines)


def baseline_label(spec: MetricSpec) -> str:
    """``sentbleu``, ``bertscore:layer=9``: how a baseline is named in the results."""
    params = ",".join(f"{k}={spec.params[k]}" for k in sorted(spec.params))
    return spec.name + (f":{params}" if params else "")


def check_points(values: Sequence[float], option: str, *, low: float, high: float | None) -> list[float]:
    """Sorted distinct finite numbers in ``[low, high)`` (``high`` None: no upper bound)."""
    if not values:
        raise UsageError(f"{option}: give at least one value")
    out = []
    for value in values:
        v = float(value)
        if not math.isfinite(v) or v < low or (high is not None and v >= high):
            bound = f"in [{low:g}, {high:g})" if high is not None else f">= {low:g}"
            raise UsageError(f"{option}: {value!r} is not a number {bound}")
        out.append(v)
    return sorted(set(out))


def check_statistics(statistics: Sequence[str]) -> list[str]:
    unknown = sorted(set(statistics) - set(STATISTICS))
    if unknown or not statistics:
        raise UsageError(f"statistics {', '.join(unknown) or '(none)'}: choose from {', '.join(STATISTICS)}")
    return [s for s in STATISTICS if s in statistics]


# --- the experiment ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Experiment:
    """One request, resolved and checked before anything runs (JSON-able: flows pass it around).

    ``points`` are the α (drift) or the shares (webnlg); ``config`` is the trainer's configuration
    as given and ``hyperparameters`` the complete one (defaults filled in), which is what a
    checkpoint's lineage records; ``options`` hold the experiment's own settings (drift:
    ``test_fraction``, ``binning``, ``aspect``; webnlg: ``by``, ``aspects``, ``include_human``).
    """

    kind: str
    dataset: str
    dataset_digest: str
    points: list[float]
    variants: list[Variant]
    baselines: list[dict[str, Any]]
    config: dict[str, Any]
    hyperparameters: dict[str, Any]
    seed: int
    statistics: list[str]
    n_resamples: int
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        """sha256 (16 hex digits) of everything that determines the numbers."""
        return json_digest({
            "kind": self.kind, "dataset_digest": self.dataset_digest, "points": self.points,
            "variants": [v.identity() for v in self.variants], "baselines": self.baselines,
            "hyperparameters": self.hyperparameters, "seed": self.seed, "statistics": self.statistics,
            "n_resamples": self.n_resamples, "options": self.options,
        })[:16]

    @property
    def aspects(self) -> list[str]:
        """The aspects trained and evaluated: drift's one, or WebNLG's tasks."""
        return list(self.options["aspects"]) if "aspects" in self.options else [self.options["aspect"]]

    @property
    def baseline_specs(self) -> list[MetricSpec]:
        return [MetricSpec.from_dict(b) for b in self.baselines]

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "variants": [v.as_dict() for v in self.variants]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Experiment:
        return cls(**{**data, "variants": [Variant.from_dict(v) for v in data["variants"]]})


def dataset_of(settings: Settings, ref: str) -> tuple[str, str, str, pa.Table]:
    """(name, label, digest, segments) of a stored dataset version."""
    with session_scope(settings) as session:
        version = resolve(session, ref)
        name, label, digest, path = version.dataset.name, version.label, version.digest, version.store_path
    return name, label, digest, store.read_table(settings, path, "segments")


def rated_aspects(segments: pa.Table) -> list[str]:
    human = human_array(segments)
    return sorted({a for a, h in zip(segments.column("aspect").to_pylist(), human, strict=True) if np.isfinite(h)})


def check_aspects(label: str, present: Sequence[str], wanted: Sequence[str] | None, *, single: bool) -> list[str]:
    """The aspects to train and evaluate on: those wanted (each rated in the version), else all;
    ``single``: exactly one (drift trains one model per α)."""
    chosen = sorted(set(wanted)) if wanted else list(present)
    missing = sorted(set(chosen) - set(present))
    if missing:
        raise UsageError(f"--aspect {', '.join(missing)}: {label} rates no such aspect (aspects: {', '.join(present)})")
    if single and len(chosen) != 1:
        raise UsageError(f"{label} rates {len(chosen)} aspects ({', '.join(chosen)}); choose one with --aspect")
    return chosen


# --- WebNLG splits (§5.3) ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SplitSample:
    """One stored side of a split: a derived dataset version."""

    by: str
    share: float
    side: str
    version: VersionRef
    created: bool
    rows: int
    units: int
    """units (systems or inputs) on this side"""
    n_units: int
    share_actual: float
    """train units / all units (``round(share · n)`` of ``n``)"""

    @property
    def label(self) -> str:
        return self.version.label

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON (a flow parameter): the fields, ``version`` as :meth:`VersionRef.as_dict`, and ``label``."""
        return {**asdict(self), "label": self.label}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SplitSample:
        fields = {k: v for k, v in data.items() if k != "label"}
        return cls(**{**fields, "version": VersionRef.from_dict(fields["version"])})


def split_name(dataset: str, by: str, share: float, side: str) -> str:
    """``webnlg2017`` + system + 0.2 + train -> ``webnlg2017-split-system-s0.2-train``."""
    return f"{dataset}-split-{by}-s{float(share):g}-{side}"


def unit_column(by: str) -> str:
    if by not in SPLIT_BY:
        raise UsageError(f"--by {by!r}: expected one of {', '.join(SPLIT_BY)}")
    return "system" if by == "system" else "item_id"


def n_train_units(n_units: int, share: float) -> int:
    """``round(share · n)``, halves rounded up (0.5 of 9 systems is 5; the tolerance keeps a
    product such as 0.3 · 5 = 1.4999999999999998 from rounding otherwise than 1.5)."""
    return math.floor(share * n_units + 0.5 + 1e-9)


def unit_order(units: Iterable[str], seed: int) -> list[str]:
    """The distinct units in a seeded random order; the train side of every share is a prefix."""
    ordered = sorted(set(units))
    permutation = np.random.default_rng(np.random.SeedSequence(seed)).permutation(len(ordered))
    return [ordered[i] for i in permutation]


def split_pool(segments: pa.Table, include_human: bool) -> pa.Table:
    """The segments a split draws from: rated, and (unless ``include_human``) written by a system.
    The paper evaluates "9 systems over 223 inputs" (§5.3): WebNLG's human-written texts (the
    ``webnlg`` team) are references, not outputs to be rated against them."""
    keep = np.isfinite(human_array(segments))
    if not include_human:
        keep &= ~np.asarray(segments.column("is_human").to_pylist(), dtype=bool)
    return segments.filter(pa.array(keep))


def check_splits(label: str, pool: pa.Table, by: Sequence[str], shares: Sequence[float]) -> None:
    """Every share leaves units on the test side, and a share > 0 puts at least one on the train side."""
    if pool.num_rows == 0:
        raise UsageError(f"{label} has no rated system outputs to split")
    for b in by:
        n = len(set(pool.column(unit_column(b)).to_pylist()))
        for share in shares:
            k = n_train_units(n, share)
            if share > 0 and k == 0:
                raise UsageError(f"--shares {share:g} gives no {b} of {label}'s {n} to training; use a larger share")
            if k >= n:
                raise UsageError(f"--shares {share:g} gives every {b} of {label} ({n}) to training and none to test")


def draw_splits(dataset: str, *, by: str, shares: Sequence[float], seed: int, include_human: bool = False,
                settings: Settings) -> list[SplitSample]:
    """Derive and store the train and test sides of every share (split by ``by``), §5.3.

    Derivation: ``{"kind": "webnlg-split", "by", "share", "seed", "side", "include_human",
    "n_units", "train_units", "share_actual", "units_digest"}`` (``units_digest``: sha256 of the
    sorted train units; ``train_systems`` lists them when splitting by system). The same
    ``(version, by, seed, include_human)`` always gives the same sides; at share 0 only the test
    side (everything) is stored. Every aspect is kept: each is trained and evaluated separately.
    """
    column = unit_column(by)
    name, label, _, segments = dataset_of(settings, dataset)
    pool = split_pool(segments, include_human)
    shares = check_points(shares, "--shares", low=0.0, high=1.0)
    check_splits(label, pool, [by], shares)
    order = unit_order(pool.column(column).to_pylist(), seed)
    out = []
    for share in shares:
        k = n_train_units(len(order), share)
        train_units = sorted(order[:k])
        is_train = pc.is_in(pool.column(column), pa.array(train_units, pa.string()))
        derivation = {"kind": SPLIT_KIND, "by": by, "share": share, "seed": seed, "include_human": include_human,
                      "n_units": len(order), "train_units": k, "share_actual": k / len(order),
                      "units_digest": json_digest(train_units)}
        if by == "system":
            derivation["train_systems"] = train_units
        for side in SIDES:
            if side == "train" and k == 0:
                continue
            mask = is_train if side == "train" else pc.invert(is_train)
            table = pool.filter(mask)
            result = derive_version(label, split_name(name, by, share, side), {"segments": table},
                                    {**derivation, "side": side}, settings=settings)
            out.append(SplitSample(by=by, share=share, side=side, version=result.version, created=result.created,
                                   rows=table.num_rows,
                                   units=k if side == "train" else len(order) - k, n_units=len(order),
                                   share_actual=k / len(order)))
    return out


# --- checkpoints: found again by what made them ------------------------------------------------------


def training_key(train_digest: str, aspect: str | None, variant: Variant, hyperparameters: dict[str, Any]) -> str:
    """sha256 of what determines a fine-tuned checkpoint."""
    return json_digest({"train": train_digest, "aspect": aspect, "init": variant.identity()["init"],
                      "hyperparameters": hyperparameters})


def checkpoint_name(experiment: str, dataset: str, point: str, variant: str, key: str) -> str:
    """``rb-drift-wmt17-a1.5-no-pretraining-3f2a9c1b``: experiment, data, point, variant, key."""
    text = f"rb-{experiment}-{dataset}-{point}-{variant}"
    return validate_checkpoint_name(f"{re.sub(r'[^a-z0-9._-]+', '-', text.lower())[:110]}-{key[:8]}")


def find_trained(settings: Settings, *, train_digest: str, aspect: str | None, variant: Variant,
                 hyperparameters: dict[str, Any]) -> dict[str, Any] | None:
    """A registered fine-tuning of ``variant`` on exactly this data with these hyper-parameters,
    whose folder still exists: ``{"name", "digest", "path", "run_id", "n_train"}``; else None."""
    wanted = json.loads(json.dumps(hyperparameters))
    with session_scope(settings) as session:
        rows = list(session.scalars(select(Checkpoint).order_by(Checkpoint.created_at, Checkpoint.id)))
        for row in rows:
            lineage = dict(row.lineage or {})
            data = lineage.get("datasets") or []
            if lineage.get("operation") != "finetune" or len(data) != 1:
                continue
            if data[0].get("digest") != train_digest or data[0].get("aspect") != aspect:
                continue
            if lineage.get("parent_digest") != variant.digest:
                continue
            if variant.digest is None and (lineage.get("init") or {}).get("folder") != variant.folder:
                continue
            if lineage.get("hyperparameters") != wanted or not Path(row.path).is_dir():
                continue
            return {"name": row.name, "digest": row.digest, "path": row.path, "run_id": row.run_id,
                    "n_train": int(data[0].get("rows") or 0)}
    return None


# --- result rows ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scored:
    """One metric scored on one test version: a variant's checkpoint, or a baseline."""

    variant: str
    kind: str  # learned | baseline
    metric: str
    signature: str
    aspect: str | None = None
    """learned on this aspect: only its rows count (None: every aspect)"""
    init: str | None = None
    init_digest: str | None = None
    checkpoint: str | None = None
    checkpoint_digest: str | None = None
    trained_run_id: str | None = None
    train_dataset: str | None = None
    train_digest: str | None = None
    n_train: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Scored:
        return cls(**data)


def headline_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (signature, aspect, statistic): the ``all`` row (mean over groups), else the only group."""
    keyed: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in rows:
        keyed.setdefault((row["signature"], row["aspect"], row["statistic"]), []).append(row)
    out = []
    for group_rows in keyed.values():
        mean = [r for r in group_rows if r["group"] == "all"]
        if mean:
            out.append(mean[0])
        elif len(group_rows) == 1:
            out.append(group_rows[0])
    return out


def point_rows(point: dict[str, Any], scored: Sequence[Scored], evaluation: dict[str, Any],
               aspects: Sequence[str]) -> list[dict[str, Any]]:
    """The result rows of one test version on the experiment's ``aspects``: ``evaluation`` is
    :func:`assay.jobs.evaluation.evaluate`'s answer on it, ``point`` the point's columns (``alpha`` or
    ``share``, ``share_actual``, ``split_by``, ``test_dataset``, ``test_digest``)."""
    by_signature: dict[str, list[Scored]] = {}
    for s in scored:
        by_signature.setdefault(s.signature, []).append(s)
    out = []
    for row in headline_rows([r for r in evaluation["rows"] if r["aspect"] in aspects]):
        for s in by_signature.get(row["signature"], []):
            if s.aspect is not None and s.aspect != row["aspect"]:
                continue
            out.append({
                **{k: point.get(k) for k in ("alpha", "share", "share_actual", "split_by", "test_dataset",
                                             "test_digest")},
                "variant": s.variant, "kind": s.kind, "init": s.init, "init_digest": s.init_digest,
                "aspect": row["aspect"], "train_dataset": s.train_dataset, "train_digest": s.train_digest,
                "n_train": s.n_train, "checkpoint": s.checkpoint, "checkpoint_digest": s.checkpoint_digest,
                "trained_run_id": s.trained_run_id, "metric": s.metric, "signature": s.signature,
                "statistic": row["statistic"], "group": row["group"], "value": row["value"],
                "ci_low": row["ci_low"], "ci_high": row["ci_high"], "n": row["n"],
                "evaluate_run_id": evaluation["run_id"],
            })
    return out


def results_table(experiment: Experiment, run_id: str, rows: Sequence[dict[str, Any]]) -> pa.Table:
    now = datetime.now(UTC)
    common = {"run_id": run_id, "experiment": experiment.kind, "experiment_id": experiment.id,
              "dataset": experiment.dataset, "dataset_digest": experiment.dataset_digest, "seed": experiment.seed,
              "n_resamples": experiment.n_resamples, "code_version": code_version(), "created_at": now}
    full = [{**common, **r} for r in rows]
    return pa.Table.from_pylist([{f.name: r.get(f.name) for f in RESULTS} for r in full], schema=RESULTS)


def write_results(settings: Settings, experiment: Experiment, run_id: str,
                  rows: Sequence[dict[str, Any]]) -> RecordedFile:
    """Write one immutable part (atomically); returns it as the run records it."""
    if experiment.kind not in EXPERIMENTS:
        raise UsageError(f"unknown robustness experiment {experiment.kind!r} (expected drift or webnlg)")
    target = settings.home / ROOT / f"experiment={experiment.kind}" / unique_part_name(run_id)
    write_parquet(results_table(experiment, run_id, rows), target, schema=RESULTS)
    relative = target.relative_to(settings.home)
    return RecordedFile.of(settings, relative, "robustness", len(rows))


def read_results(settings: Settings, experiment: str | None = None) -> list[dict[str, Any]]:
    """Every stored row (of one experiment kind, or of both), oldest part first."""
    import pyarrow.parquet as pq

    kinds = [experiment] if experiment else list(EXPERIMENTS)
    rows: list[dict[str, Any]] = []
    for kind in kinds:
        for part in sorted((settings.home / ROOT / f"experiment={kind}").glob("part-*.parquet")):
            rows += pq.read_table(part, schema=RESULTS).to_pylist()
    return rows


def latest_results(rows: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """experiment id -> the rows of the newest run that wrote it."""
    newest: dict[str, tuple[Any, str]] = {}
    for row in rows:
        key = (row["created_at"], row["run_id"])
        if row["experiment_id"] not in newest or key > newest[row["experiment_id"]]:
            newest[row["experiment_id"]] = key
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if newest[row["experiment_id"]][1] == row["run_id"]:
            out.setdefault(row["experiment_id"], []).append(row)
    return out


def stored_rows(settings: Settings, experiment: Experiment) -> list[dict[str, Any]]:
    """The rows of this experiment's newest completed run, if any run wrote them."""
    return latest_results(read_results(settings, experiment.kind)).get(experiment.id, [])


# --- the run --------------------------------------------------------------------------------------------


def _run_fields(experiment: Experiment) -> tuple[dict[str, Any], dict[str, Any]]:
    """(inputs, parameters) of a ``robustness`` run: the data and inits by digest, the request."""
    inputs = {"dataset": experiment.dataset, "dataset_digest": experiment.dataset_digest,
              "variants": [v.as_dict() for v in experiment.variants], "baselines": experiment.baselines}
    parameters = {"experiment": experiment.kind, "experiment_id": experiment.id, "points": experiment.points,
                  "config": experiment.config, "hyperparameters": experiment.hyperparameters,
                  "seed": experiment.seed, "statistics": experiment.statistics,
                  "n_resamples": experiment.n_resamples, "options": experiment.options}
    return inputs, parameters


def start_run(settings: Settings, experiment: Experiment) -> RunRecorder:
    """The ``robustness`` run, written as running: the fine-tuning runs name it as their parent."""
    return RunRecorder(settings, RUN_KIND, *_run_fields(experiment)).start()


def skipped_variants(experiment: Experiment) -> list[str]:
    """What a WebNLG experiment leaves out by design: at share 0 nothing is trained, and a variant
    that starts from an encoder has no trained rating head to score (§5.3 scores pre-trained
    checkpoints "with zero fine-tuning")."""
    if experiment.kind != "webnlg" or 0.0 not in experiment.points:
        return []
    return [f"share 0: variant {v.name} starts from an encoder ({v.init}), which has no trained rating head; "
            "nothing is trained at share 0, so it is not scored there" for v in experiment.variants
            if not v.is_checkpoint]


def checkpoints_of(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The distinct checkpoints (per variant) of stored rows, as a run summary names them."""
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        if not r["checkpoint_digest"] or (r["variant"], r["checkpoint_digest"]) in seen:
            continue
        point = {"alpha": r["alpha"]} if r["alpha"] is not None else {"share": r["share"], "split_by": r["split_by"]}
        seen[(r["variant"], r["checkpoint_digest"])] = {
            "variant": r["variant"], "point": point, "aspect": r["aspect"] if r["train_dataset"] else None,
            "name": r["checkpoint"], "digest": r["checkpoint_digest"], "run_id": r["trained_run_id"],
            "trained": False, "train_dataset": r["train_dataset"]}
    return list(seen.values())


def summary_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    keep = ("variant", "kind", "alpha", "share", "split_by", "aspect", "statistic", "value", "ci_low", "ci_high",
            "checkpoint", "test_dataset")
    return [{k: r.get(k) for k in keep} for r in rows]


def finish_run(settings: Settings, recorder: RunRecorder, experiment: Experiment, rows: Sequence[dict[str, Any]],
               checkpoints: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Write the rows as one part and complete the run; returns the run's summary with the rows."""
    if not rows:
        raise UsageError("the experiment produced no result rows; check --variant and the points")
    recorded = write_results(settings, experiment, recorder.run_id, rows)
    summary = {"experiment": experiment.kind, "experiment_id": experiment.id, "checkpoints": list(checkpoints),
               "trained": sum(bool(c.get("trained")) for c in checkpoints), "skipped": skipped_variants(experiment),
               "result_file": recorded.path, "reused_run": None, "rows": summary_rows(rows)}
    recorder.complete(summary, [recorded])
    return {**summary, "run_id": recorder.run_id, "rows": read_part(settings, recorded.path)}


def read_part(settings: Settings, relative: str) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return [_plain(r) for r in pq.read_table(settings.home / relative, schema=RESULTS).to_pylist()]


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """JSON-able: timestamps as ISO text."""
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}


def record_reuse(settings: Settings, experiment: Experiment, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A rerun of a finished experiment: one run row pointing at the stored results; nothing else
    is written, trained, scored or evaluated."""
    recorder = RunRecorder(settings, RUN_KIND, *_run_fields(experiment))
    summary = {"experiment": experiment.kind, "experiment_id": experiment.id, "checkpoints": checkpoints_of(rows),
               "trained": 0, "skipped": skipped_variants(experiment), "result_file": None,
               "reused_run": rows[0]["run_id"], "rows": summary_rows(rows)}
    recorder.record(summary)
    return {**summary, "run_id": recorder.run_id, "rows": [_plain(r) for r in rows]}
