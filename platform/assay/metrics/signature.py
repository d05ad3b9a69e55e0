"""Metric signatures, in the spirit of sacrebleu's (Post, 2018, "A Call for Clarity in Reporting
BLEU Scores"): every score carries one line that says exactly how it was produced.

The format is specified once, in ``docs/SIGNATURES.md`` (whose examples a test renders with
:func:`render_signature`). In short::

    <metric>|<key>:<value>|...|v:<metric version>|assay:<assay version>

Every signature in Assay is rendered by :func:`render_signature`: the lexical metrics, BERTScore,
BLEURT checkpoints, BLEU Neighbors and BERTScore rescaling baselines. Package versions are
rendered by :func:`package_version` (local build suffixes such as ``+cpu`` dropped), models by
:func:`model_field` (``<name>@<first 12 hex digits of the weights' sha256>``).

The signature is part of the cache key of segment scores: two scores with the same signature are
interchangeable, so anything that changes a score must appear in it.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import assay
from assay.provenance import short

#: what a model field says instead of a digest when the caller scored an undigested model
UNDIGESTED = "undigested"


def render_value(value: Any) -> str:
    """One value as a signature shows it: ``yes``/``no`` for booleans, ``none`` for None, other
    values as ``str`` with ``|`` replaced by ``/`` and spaces by ``_`` (so a field never splits)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "none"
    return str(value).replace("|", "/").replace(" ", "_")


def render_signature(metric: str, params: Mapping[str, Any], version: str) -> str:
    """``metric|key:value|...|v:<version>|assay:<assay version>``, keys in the order given."""
    parts = [metric, *(f"{key}:{render_value(value)}" for key, value in params.items())]
    parts += [f"v:{version}", f"assay:{assay.__version__}"]
    return "|".join(parts)


def release(version: str) -> str:
    """A version without its local build suffix: ``2.13.0+cpu`` and ``2.13.0+cu121`` are ``2.13.0``
    (PEP 440's "local version label" names the build, not the release)."""
    return version.split("+", 1)[0]


def package_version(name: str) -> str:
    """The installed release of distribution ``name`` (:func:`release`: a signature must not
    change with the wheel's build tag, so a CPU and a CUDA build of one torch release sign alike;
    whether they compute alike is for the metric's tests to bound); ``none`` when not installed."""
    try:
        return release(importlib.metadata.version(name))
    except importlib.metadata.PackageNotFoundError:
        return "none"


def model_field(name: str, digest: str | None) -> str:
    """``<name>@<short digest>`` (:func:`assay.provenance.short`), or ``<name>@undigested`` when
    ``digest`` is None (a model whose weights could not be digested, scored on the caller's explicit
    request and never cached). ``name`` is the last path component of a folder or hub id
    (``all-MiniLM-L6-v2``)."""
    last = str(name).rstrip("/").split("/")[-1]
    return f"{last}@{UNDIGESTED if digest is None else short(digest)}"


@dataclass(frozen=True)
class Signature:
    """A signature before rendering: metric name, metric version and ordered fields."""

    metric: str
    version: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def render(self) -> str:
        return render_signature(self.metric, self.params, self.version)

    def __str__(self) -> str:
        return self.render()


def parse_signature(text: str) -> dict[str, str]:
    """The ``key:value`` fields of a rendered signature (plus ``metric``)."""
    metric, *fields = text.split("|")
    parsed = {"metric": metric}
    for item in fields:
        key, _, value = item.partition(":")
        parsed[key] = value
    return parsed
