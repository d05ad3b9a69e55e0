"""Checkpoints of learned metrics, named by content digest.

- ``registry``: the catalog's checkpoint rows: register, find, list, lineage.
- ``labels``: a signature's checkpoint and a checkpoint's name with its lineage (no catalog import
  until a checkpoint is named).

The package imports nothing itself, so naming a checkpoint does not load the catalog.
"""

__all__ = ["labels", "registry"]
