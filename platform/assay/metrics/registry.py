"""The metric registry: names -> implementations.

Model-based metrics live in ``assay.workers`` (they need torch and may need a GPU); they are
named here by import path and imported only when a metric is created, so the core library stays
importable without torch and never imports the worker layer at module level.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from assay.errors import UsageError
from assay.metrics.base import Metric

METRICS: dict[str, str] = {
    "sentbleu": "assay.metrics.lexical:SentenceBLEU",
    "bleu": "assay.metrics.lexical:CorpusBLEU",
    "chrf": "assay.metrics.lexical:ChrF",
    "ter": "assay.metrics.lexical:TER",
    "rouge1": "assay.metrics.lexical:Rouge1",
    "rouge2": "assay.metrics.lexical:Rouge2",
    "rougeL": "assay.metrics.lexical:RougeL",
    "bertscore": "assay.workers.metrics:BERTScore",
    "bleurt": "assay.workers.metrics:BLEURT",
    "bleu-neighbors": "assay.metrics.bleu_neighbors_metric:BleuNeighborsMetric",
}


@dataclass(frozen=True)
class MetricSpec:
    """A metric by name plus the parameters given to its constructor (JSON-serialisable), so
    flows can pass metrics between tasks and record them in runs."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "params": dict(self.params)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MetricSpec:
        return cls(str(data["name"]), dict(data.get("params") or {}))


def metric_class(name: str) -> type[Metric]:
    if name not in METRICS:
        raise UsageError(f"unknown metric {name!r} (known: {', '.join(METRICS)})")
    module_name, _, attr = METRICS[name].partition(":")
    cls = getattr(importlib.import_module(module_name), attr)
    if not (isinstance(cls, type) and issubclass(cls, Metric)):
        raise TypeError(f"{METRICS[name]} is not a Metric")
    return cls


def create_metric(spec: MetricSpec | str, **params: Any) -> Metric:
    """Instantiate a metric. Creating one is cheap: models are loaded on first ``score``."""
    if isinstance(spec, str):
        spec = MetricSpec(spec, params)
    cls = metric_class(spec.name)
    try:
        return cls(**spec.params)
    except TypeError as exc:
        raise UsageError(f"metric {spec.name!r}: bad parameters {spec.params} ({exc})") from exc
