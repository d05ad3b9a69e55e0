"""Checkpoints of learned metrics, named by content digest.

- ``ref``: :class:`~assay.checkpoints.ref.CheckpointRef`, a checkpoint's one spelling, its content digest first.
- ``folder``: a checkpoint folder as files: its format, its JSON description read and checked, its
  content digest (no torch: scans and registry checks start without the model stack).
- ``registry``: the catalog's checkpoint rows: register, find, list, lineage.
- ``record``: everything known about one checkpoint (lineage, nightly history, regressions, error
  analyses against its parent), as ``checkpoints show --json`` and the served page show it.
- ``labels``: a signature's checkpoint and a checkpoint's name with its lineage (no catalog import
  until a checkpoint is named).
- ``stamps``: verification stamps, so a folder is hashed once per host while its files are unchanged.
- ``store``: the shared checkpoint store, each registered checkpoint under
  ``ASSAY_HOME/checkpoints/<digest>/``.
- ``outbox``: the announcement every registered checkpoint owes its team until it is delivered.

``__all__`` names its public modules. The package imports nothing itself, so naming a checkpoint
does not load the catalog.
"""

__all__ = ["folder", "labels", "outbox", "record", "ref", "registry", "stamps", "store"]
