"""The nightly service: which checkpoints are evaluated on what, once, and how they compare.

- ``suites``: named, versioned evaluation suites (dataset versions, levels, statistics);
- ``ledger``: the exactly-once ledger of (checkpoint digest, dataset version, suite signature);
- ``regressions``: a checkpoint significantly worse than the team's best;
- ``watched_folders``: folders whose new checkpoints the sweep registers.

The package imports nothing itself: ``from assay.nightly import ledger`` loads that module alone.
"""

__all__ = ["ledger", "regressions", "suites", "watched_folders"]
