"""One robustness request, resolved and checked before anything runs, and the dataset version it
is made on."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.config import Settings
from assay.datasets import store
from assay.datasets.human import human_array
from assay.errors import UsageError
from assay.metrics.registry import MetricSpec
from assay.training.robustness.variants import Variant


def json_digest(data: Any) -> str:
    """sha256 hex of ``data`` as canonical JSON (sorted keys, no spaces): an experiment's or a
    training's identity."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


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

