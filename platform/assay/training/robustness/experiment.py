"""One robustness request, resolved and checked before anything runs, and the dataset version it
is made on."""

from __future__ import annotations

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
from assay.datasets.names import VersionRef
from assay.errors import UsageError
from assay.metrics.registry import MetricSpec
from assay.provenance import json_digest
from assay.training.robustness.variants import Variant


@dataclass(frozen=True)
class Experiment:
    """One request, resolved and checked before anything runs (JSON-able: flows pass it around).

    ``points`` are the α (drift) or the shares (webnlg); ``config`` is the trainer's configuration
    as given and ``hyperparameters`` the complete one (defaults filled in), which is what a
    checkpoint's lineage records; ``options`` hold the experiment's own settings (drift:
    ``test_fraction``, ``binning``, ``aspect``; webnlg: ``by``, ``aspects``, ``include_human``).
    """

    kind: str
    version: VersionRef
    """The dataset version the experiment draws its samples or splits from."""
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
            "kind": self.kind, "dataset_digest": self.version.digest, "points": self.points,
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
        return {**asdict(self), "version": self.version.as_dict(), "variants": [v.as_dict() for v in self.variants]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Experiment:
        return cls(**{**data, "version": VersionRef.from_dict(data["version"]),
                      "variants": [Variant.from_dict(v) for v in data["variants"]]})


def dataset_of(settings: Settings, ref: str) -> tuple[VersionRef, pa.Table]:
    """(version, segments) of a stored dataset version."""
    with session_scope(settings) as session:
        version = resolve(session, ref)
        found, path = version.ref, version.store_path
    return found, store.read_table(settings, path, "segments")


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

