"""Perturbations and signals by name, through Python entry points.

Every perturbation registers in the entry-point group ``assay.perturbations`` and every
pre-training signal in ``assay.signals`` (Assay's own in ``pyproject.toml``; another package adds
its own the same way). The entry point's name is the plugin's ``name``. Listing names reads
installed metadata only; a class is imported when a plugin of that name is created, so the core
library never imports the worker layer (or torch) to list or check a spec.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

from assay.errors import NotFoundError, PluginError, UsageError
from assay.metrics.params import accepted_parameters
from assay.synthetic.base import FAMILIES, ROLES, SIGNAL_KINDS, Perturbation, Signal

PERTURBATIONS = "assay.perturbations"
SIGNALS = "assay.signals"

def entry_points(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    """The registered plugins of ``group`` by name (nothing is imported)."""
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for entry in importlib.metadata.entry_points(group=group):
        other = found.get(entry.name)
        if other is not None and other.value != entry.value:
            raise UsageError(f"{entry.name!r} is registered twice in {group}, as {other.value} and as {entry.value}; "
                             "uninstall one of the two packages")
        found[entry.name] = entry
    return found


def perturbation_names() -> list[str]:
    return sorted(entry_points(PERTURBATIONS))


def signal_names() -> list[str]:
    return sorted(entry_points(SIGNALS))


def _load(group: str, name: str, base: type) -> Any:
    entries = entry_points(group)
    what = "perturbation" if base is Perturbation else "signal"
    if name not in entries:
        raise NotFoundError(f"unknown {what} {name!r} (registered: {', '.join(sorted(entries)) or 'none'})")
    entry = entries[name]
    try:
        cls = entry.load()
    except ImportError as exc:
        raise NotFoundError(f"{what} {name!r} is registered as {entry.value}, which cannot be imported: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise PluginError(f"{what} {name!r} is registered as {entry.value}, which is not a {base.__name__} subclass")
    declared = getattr(cls, "name", None)
    if declared != name:
        raise PluginError(f"{what} {name!r} is registered as {entry.value}, whose name is {declared!r}")
    return cls


def perturbation_class(name: str) -> type[Perturbation]:
    cls: type[Perturbation] = _load(PERTURBATIONS, name, Perturbation)
    if cls.role not in ROLES or cls.family not in FAMILIES:
        raise PluginError(f"perturbation {name!r} declares role {cls.role!r} and family {cls.family!r} "
                          f"(expected a role in {ROLES} and a family in {FAMILIES})")
    return cls


def signal_class(name: str) -> type[Signal]:
    cls: type[Signal] = _load(SIGNALS, name, Signal)
    if cls.kind not in SIGNAL_KINDS or (cls.kind == "classification") != bool(cls.classes):
        raise PluginError(f"signal {name!r} declares kind {cls.kind!r} with classes {cls.classes!r} (a "
                          "classification names its classes, a regression none)")
    return cls


def _check_params(what: str, name: str, cls: type, params: dict[str, Any]) -> None:
    accepted = accepted_parameters(cls)
    unknown = sorted(set(params) - set(accepted or params))
    if unknown:
        listed = ", ".join(accepted or []) or "none"
        raise UsageError(f"{what} {name!r} has no parameter {', '.join(map(repr, unknown))} (it accepts: {listed})")


def create_perturbation(name: str, **params: Any) -> Perturbation:
    """A perturbation by name; an unknown name or parameter is one :class:`UsageError` line."""
    cls = perturbation_class(name)
    _check_params("perturbation", name, cls, params)
    return cls(**params)


def create_signal(name: str, **params: Any) -> Signal:
    """A signal by name; an unknown name or parameter is one :class:`UsageError` line."""
    cls = signal_class(name)
    _check_params("signal", name, cls, params)
    return cls(**params)
