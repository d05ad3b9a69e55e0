"""Checkpoints of learned metrics, named by content digest.

- ``registry``: the catalog's checkpoint rows: register, find, list, lineage.

The package imports nothing itself, so naming a checkpoint does not load the catalog.
"""

__all__ = ["registry"]
