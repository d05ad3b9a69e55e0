"""Naming checkpoints in tables: a signature's checkpoint, and a checkpoint's name with its lineage.

This module is light on purpose: the leaderboard and the report import it on every call, and it
loads the catalog (SQLAlchemy, Alembic) only when a signature actually names a checkpoint
(:func:`labels_for`). A signature's checkpoint is its ``checkpoint:`` field, read by
:func:`assay.metrics.signature.parse_signature` (the 12-digit digest prefix every signature shows).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from assay.config import Settings
from assay.metrics.signature import parse_signature

__all__ = ["labels_for", "lineage_text", "signature_checkpoint"]


def signature_checkpoint(signature: str) -> str | None:
    """The checkpoint digest prefix a metric signature names (its ``checkpoint:`` field), or None."""
    return parse_signature(signature).get("checkpoint") or None


def labels_for(settings: Settings, digests: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The registry's labels (name, operation, parent, digest) of registered checkpoints, keyed by
    full digest and by 12-digit prefix; an empty ``digests`` answers ``{}`` without opening the catalog."""
    if not any(True for _ in digests):
        return {}
    from assay.checkpoints.registry import labels_by_digest

    return labels_by_digest(settings)


def lineage_text(label: Mapping[str, Any]) -> str:
    """``finetuned-wmt16 (finetune of pretrained-synth)``: a checkpoint's name with its lineage."""
    text = str(label["name"])
    if label.get("operation") and label.get("parent"):
        text += f" ({label['operation']} of {label['parent']})"
    elif label.get("operation"):
        text += f" ({label['operation']})"
    return text
