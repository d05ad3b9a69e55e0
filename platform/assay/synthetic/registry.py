"""Perturbations and signals by name, through Python entry points.

Every perturbation registers in the entry-point group ``assay.perturbations`` and every
pre-training signal in ``assay.signals`` (Assay's own in ``pyproject.toml``; another package adds
its own the same way). The entry point's name is the plugin's ``name``. Listing names reads
installed metadata only; a class is imported when a plugin of that name is created, so the core
library never imports the worker layer (or torch) to list or check a spec. Loading and checking
are :mod:`assay.plugins`' (one loader for every registry).
"""

from __future__ import annotations

from typing import Any

from assay import plugins
from assay.errors import PluginError
from assay.synthetic.base import FAMILIES, ROLES, SIGNAL_KINDS, Perturbation, Signal

PERTURBATIONS = "assay.perturbations"
SIGNALS = "assay.signals"


def perturbation_names() -> list[str]:
    return sorted(plugins.entry_points(PERTURBATIONS))


def signal_names() -> list[str]:
    return sorted(plugins.entry_points(SIGNALS))


def perturbation_class(name: str) -> type[Perturbation]:
    cls: type[Perturbation] = plugins.load_plugin(PERTURBATIONS, name, Perturbation, "perturbation")
    if cls.role not in ROLES or cls.family not in FAMILIES:
        raise PluginError(f"perturbation {name!r} declares role {cls.role!r} and family {cls.family!r} "
                          f"(expected a role in {ROLES} and a family in {FAMILIES})")
    return cls


def signal_class(name: str) -> type[Signal]:
    cls: type[Signal] = plugins.load_plugin(SIGNALS, name, Signal, "signal")
    if cls.kind not in SIGNAL_KINDS or (cls.kind == "classification") != bool(cls.classes):
        raise PluginError(f"signal {name!r} declares kind {cls.kind!r} with classes {cls.classes!r} (a "
                          "classification names its classes, a regression none)")
    return cls


def create_perturbation(name: str, **params: Any) -> Perturbation:
    """A perturbation by name; an unknown name or parameter is one :class:`UsageError` line."""
    cls = perturbation_class(name)
    plugins.check_parameter_names("perturbation", name, cls, params)
    return cls(**params)


def create_signal(name: str, **params: Any) -> Signal:
    """A signal by name; an unknown name or parameter is one :class:`UsageError` line."""
    cls = signal_class(name)
    plugins.check_parameter_names("signal", name, cls, params)
    return cls(**params)
