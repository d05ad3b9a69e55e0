"""The nightly service: which checkpoints are evaluated on what, once, and how they compare.

- ``suites``: named, versioned evaluation suites (dataset versions, levels, statistics);
- ``ledger``: the exactly-once ledger of (checkpoint digest, dataset version, suite signature);
- ``regressions``: a checkpoint significantly worse than the team's best;
- ``history``: a checkpoint's correlations night by night, as the completed evaluations stored them;
- ``blindness``: a checkpoint significantly blinder than the team's best to an error the raters
  penalise;
- ``status``: where every nightly evaluation stands (owed, pending, running, crashed, failed,
  completed);
- ``watched_folders``: folders whose new checkpoints the sweep registers.

``__all__`` names its public modules. The package imports nothing itself: ``from assay.nightly
import ledger`` loads that module alone.
"""

__all__ = ["blindness", "defaults", "history", "ledger", "regressions", "status", "suites", "watched_folders"]
