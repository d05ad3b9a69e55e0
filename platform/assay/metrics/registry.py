"""The metric registry: names -> implementations, through Python entry points.

Every metric, the built-in ones included, registers in the entry-point group ``assay.metrics``
(Assay's own in ``pyproject.toml``)::

    [project.entry-points."assay.metrics"]
    sentbleu = "assay.metrics.lexical:SentenceBLEU"
    bertscore = "<the worker layer's metrics module>:BERTScore"

A user's package adds a metric the same way, with no change to Assay: the entry point's name is
the metric's ``name`` and its object a :class:`~assay.metrics.base.Metric` subclass. Listing the
names reads installed metadata only; a class is imported when a metric of that name is used, so
the core library never imports the worker layer (or torch) to list or plan anything. Loading and
checking are :mod:`assay.plugins`' (one loader for every registry).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay import plugins
from assay.metrics.base import Metric

ENTRY_POINT_GROUP = "assay.metrics"


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


def metric_names() -> list[str]:
    """Names of every registered metric, sorted."""
    return sorted(plugins.entry_points(ENTRY_POINT_GROUP))


def metric_class(name: str) -> type[Metric]:
    """The class registered as ``name``, imported now."""
    cls: type[Metric] = plugins.load_plugin(ENTRY_POINT_GROUP, name, Metric, "metric")
    return cls


def create_metric(spec: MetricSpec | str, **params: Any) -> Metric:
    """Instantiate a metric. Creating one is cheap (models load on first use); its parameters are
    checked here: an unknown name or a bad value is one :class:`UsageError` line."""
    if isinstance(spec, str):
        spec = MetricSpec(spec, params)
    cls = metric_class(spec.name)
    plugins.check_parameter_names("metric", spec.name, cls, spec.params)
    return cls(**spec.params)
