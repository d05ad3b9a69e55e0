"""Hyper-parameter sweeps: search spaces (:mod:`.space`), the Optuna study in the catalog's
database (:mod:`.storage`) and the studies read back (:mod:`.study`).

``__all__`` names its public modules; the package imports none of them itself.
"""

__all__ = ["space", "storage", "study"]
