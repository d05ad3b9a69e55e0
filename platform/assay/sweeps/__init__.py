"""Hyper-parameter sweeps: search spaces (:mod:`.space`) and the Optuna study in the catalog's
database (:mod:`.storage`)."""
