"""The nightly sweep's defaults, one home for its flows (``assay.flows.nightly``,
``assay.flows.checkpoint_eval``), ``assay deploy``, ``assay nightly run`` and ``assay checkpoints
scan``. Constants only, so that a command's ``--help`` imports nothing else for them."""

from __future__ import annotations

__all__ = ["SETTLE_SECONDS", "SHARD_SIZE"]

SETTLE_SECONDS = 60.0
"""A watched checkpoint folder in which nothing was modified for this long is complete."""

SHARD_SIZE = 2000
"""Segments per scoring shard of a checkpoint's evaluation: each shard is stored as it finishes, so a
crashed run's retry keeps the shards done."""
