"""Naming checkpoints in tables: a signature's checkpoint, and a checkpoint's name with its lineage.

This module is light on purpose: the leaderboard and the report import it on every call, and it
loads the catalog (SQLAlchemy, Alembic) only when a signature actually names a checkpoint
(:func:`labels_for`).

A stored score or correlation row names its checkpoint in its ``checkpoint_digest`` column
(:func:`row_checkpoint`). Its signature's ``checkpoint:`` field (the 12-digit short digest every
signature shows) is read in one place, :func:`signature_checkpoint`: for a label of a bare signature,
and for rows of parts written before that column.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from assay.config import Settings
from assay.metrics.signature import parse_signature

__all__ = ["labels_for", "lineage_text", "row_checkpoint", "signature_checkpoint"]


def signature_checkpoint(signature: str) -> str | None:
    """The short digest of the checkpoint a metric signature names (its ``checkpoint:`` field), or
    None. The one place a signature is read for its checkpoint."""
    return parse_signature(signature).get("checkpoint") or None


def row_checkpoint(row: Mapping[str, Any]) -> str | None:
    """The checkpoint a stored segment-score or correlation row was scored with: its
    ``checkpoint_digest`` column (the full digest; None for a metric without a checkpoint). A row of
    a part written before that column (read with it null, :func:`assay.results.parts.upgrade`)
    answers with what its signature recorded, the short digest (:func:`signature_checkpoint`);
    :meth:`assay.checkpoints.ref.CheckpointRef.matches` compares either with a checkpoint."""
    return row.get("checkpoint_digest") or signature_checkpoint(str(row["signature"]))


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
