"""A checkpoint's one spelling: :class:`CheckpointRef`, its content digest first.

A learned-metric checkpoint is named by the sha256 of its files (``docs/CHECKPOINTS.md``): the
registry's key, the ledger's, the score and correlation rows' ``checkpoint_digest`` column. Every
other way a checkpoint is shown is derived from that digest, here and nowhere else:

- ``short``: the first 12 hex digits (:func:`assay.provenance.short`), what a metric signature's
  ``checkpoint:`` field and people see;
- ``name``: the registry's unique name (None for a folder that is not registered);
- ``label``: how people read it: its name, else its short digest;
- ``resource``: ``assay.checkpoint.<digest>``, the resource of its ``assay.checkpoint.registered``
  event (:mod:`assay.flows.events`), which a deployment trigger passes back as the nightly's
  ``checkpoint``.

What a user types to name a checkpoint (a name, a digest prefix, or that event resource) is
resolved by one function, :func:`assay.checkpoints.registry.find`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assay.errors import UsageError
from assay.provenance import short

__all__ = ["RESOURCE_PREFIX", "CheckpointRef", "is_digest"]

RESOURCE_PREFIX = "assay.checkpoint."
"""The prefix of a checkpoint's event resource id (``assay.checkpoint.<digest>``)."""

_DIGEST = re.compile(r"[0-9a-f]{64}")


def is_digest(text: str) -> bool:
    """``text`` is a full checkpoint digest: 64 lower-case hex digits (a sha256)."""
    return isinstance(text, str) and _DIGEST.fullmatch(text) is not None


@dataclass(frozen=True)
class CheckpointRef:
    """One checkpoint: its content ``digest`` (sha256 hex of its files) and, when registered, its
    registry ``name``. Plain JSON (:meth:`as_dict`), so it travels as a flow parameter."""

    digest: str
    name: str | None = None

    def __post_init__(self) -> None:
        if not is_digest(self.digest):
            raise UsageError(f"checkpoint digest {self.digest!r} is not a sha256 hex digest (64 lowercase hex digits)")

    @property
    def short(self) -> str:
        """The digest as signatures and people see it (:func:`assay.provenance.short`)."""
        return short(self.digest)

    @property
    def label(self) -> str:
        """Its name, else its short digest."""
        return self.name or self.short

    @property
    def resource(self) -> str:
        """``assay.checkpoint.<digest>``: the resource id of its registration event."""
        return f"{RESOURCE_PREFIX}{self.digest}"

    def __str__(self) -> str:
        return self.label

    def matches(self, stored: str | None) -> bool:
        """Whether the checkpoint a stored row names (:func:`assay.checkpoints.labels.row_checkpoint`:
        the full digest, or the short one of a part written before the ``checkpoint_digest`` column)
        is this one."""
        return stored is not None and short(stored) == self.short

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON: ``digest``, ``name`` and, for readers of the JSON, ``label``."""
        return {"digest": self.digest, "name": self.name, "label": self.label}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckpointRef:
        name = data.get("name")
        return cls(str(data["digest"]), str(name) if name is not None else None)
