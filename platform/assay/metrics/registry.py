"""The metric registry: names -> implementations, through Python entry points.

Every metric, the built-in ones included, registers in the entry-point group ``assay.metrics``
(Assay's own in ``pyproject.toml``)::

    [project.entry-points."assay.metrics"]
    sentbleu = "assay.metrics.lexical:SentenceBLEU"
    bertscore = "<the worker layer's metrics module>:BERTScore"

A user's package adds a metric the same way, with no change to Assay: the entry point's name is
the metric's ``name`` and its object a :class:`~assay.metrics.base.Metric` subclass. Listing the
names reads installed metadata only; a class is imported when a metric of that name is used, so
the core library never imports the worker layer (or torch) to list or plan anything.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass, field
from typing import Any

from assay.errors import NotFoundError, UsageError
from assay.metrics.base import Metric
from assay.metrics.params import check_parameter_names

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


def entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """The registered metrics by name (read from installed metadata; nothing is imported)."""
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        other = found.get(entry.name)
        if other is not None and other.value != entry.value:
            raise UsageError(f"metric {entry.name!r} is registered twice, as {other.value} and as {entry.value} "
                             f"(entry-point group {ENTRY_POINT_GROUP}); uninstall one of the two packages")
        found[entry.name] = entry
    return found


def metric_names() -> list[str]:
    """Names of every registered metric, sorted."""
    return sorted(entry_points())


def metric_class(name: str) -> type[Metric]:
    """The class registered as ``name``, imported now."""
    entries = entry_points()
    if name not in entries:
        raise NotFoundError(f"unknown metric {name!r} (registered: {', '.join(sorted(entries)) or 'none'})")
    entry = entries[name]
    try:
        cls = entry.load()
    except ImportError as exc:
        raise NotFoundError(f"metric {name!r} is registered as {entry.value}, which cannot be imported: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, Metric)):
        raise UsageError(f"metric {name!r} is registered as {entry.value}, which is not an assay Metric subclass")
    if cls.name != name:
        raise UsageError(f"metric {name!r} is registered as {entry.value}, whose name is {cls.name!r}; "
                         "the entry point's name must be the metric's name")
    return cls


def create_metric(spec: MetricSpec | str, **params: Any) -> Metric:
    """Instantiate a metric. Creating one is cheap (models load on first use); its parameters are
    checked here: an unknown name or a bad value is one :class:`UsageError` line."""
    if isinstance(spec, str):
        spec = MetricSpec(spec, params)
    cls = metric_class(spec.name)
    check_parameter_names(spec.name, cls, spec.params)
    return cls(**spec.params)
