"""Plugins by name, through Python entry points: the one loader of every registry.

Metrics (``assay.metrics``), perturbations (``assay.perturbations``) and pre-training signals
(``assay.signals``) register in an entry-point group, Assay's own in ``pyproject.toml`` and another
package's in its own metadata. The entry point's name is the plugin's ``name``. Listing names reads
installed metadata only; a class is imported when a plugin of that name is used, so the core library
never imports the worker layer (or torch) to list or check anything.
"""

from __future__ import annotations

import importlib.metadata
import inspect
from collections.abc import Mapping
from typing import Any

from assay.errors import NotFoundError, PluginError, UsageError


def entry_points(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    """The registered plugins of ``group`` by name (read from installed metadata; nothing is imported).

    One name registered by two packages with different targets is a :class:`UsageError`."""
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for entry in importlib.metadata.entry_points(group=group):
        other = found.get(entry.name)
        if other is not None and other.value != entry.value:
            raise UsageError(f"{entry.name!r} is registered twice in entry-point group {group}, as {other.value} "
                             f"and as {entry.value}; uninstall one of the two packages")
        found[entry.name] = entry
    return found


def load_plugin(group: str, name: str, base: type, what: str) -> Any:
    """The class registered as ``name`` in ``group``, imported now.

    ``what`` names the kind of plugin in messages (``metric``, ``perturbation``, ``signal``). An
    unknown name is a :class:`NotFoundError`; a target that cannot be imported too. A target that is
    not a ``base`` subclass, or whose ``name`` is not the entry point's, is a :class:`PluginError`.
    """
    entries = entry_points(group)
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
        raise PluginError(f"{what} {name!r} is registered as {entry.value}, whose name is {declared!r}; "
                          "the entry point's name must be the plugin's name")
    return cls


def accepted_parameters(cls: type) -> list[str] | None:
    """The keyword parameters of ``cls``'s constructor; None when it takes ``**kwargs``."""
    names = []
    for parameter in inspect.signature(cls).parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            return None
        if parameter.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            names.append(parameter.name)
    return names


def check_parameter_names(what: str, name: str, cls: type, params: Mapping[str, Any]) -> None:
    """Parameters ``cls``'s constructor does not accept: one :class:`UsageError` line listing the
    accepted ones (nothing is checked when it takes ``**kwargs``)."""
    accepted = accepted_parameters(cls)
    if accepted is None:
        return
    unknown = [key for key in params if key not in accepted]
    if unknown:
        listed = ", ".join(accepted) if accepted else "none"
        raise UsageError(f"{what} {name!r} has no parameter {', '.join(map(repr, unknown))} (it accepts: {listed})")
