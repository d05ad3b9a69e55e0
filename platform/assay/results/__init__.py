"""The results store: immutable, hive-partitioned Parquet parts that jobs write, under
``ASSAY_HOME/results`` (docs/STORAGE.md, "Results store").

This package alone builds the store's paths, declares its schemas and reads and writes its parts;
everything else goes through the named functions of one module per store:

- ``segment_scores``: one row per (signature, segment key), what ``assay score`` computes;
- ``correlations``: the correlations ``assay evaluate`` computes;
- ``significance``: the pairwise tests behind its clusters;
- ``system_points``: the system scores behind its system-level correlations;
- ``model_selection``: Hits@1, MRR and Diff of ``assay select``;
- ``robustness``: the learned-metric experiments of ``assay robustness drift|webnlg``;
- ``error_analysis``: what a metric misses on MQM data (``assay errors``): error sensitivity and the
  worst disagreements;
- ``external_scores``: a shared task's official submissions as external metrics, their signatures
  and stored scores;
- ``headline``: which evaluation stands for a dataset's result, and the labels of side evaluations;
- ``newest_run``: which stored rows a reader shows when several runs computed the same cell;
- ``parts``: the part layout they share, and the read-time upgrade of renamed columns;
- ``schemas``: every store's declared schema, by name;
- ``export``: a table written where the user asked (CSV or Parquet).

Regressions are catalog rows (:mod:`assay.nightly.regressions`), not Parquet: they cite the
correlations and p-values their evaluation runs stored here. The quality-drift benchmark stores
derived dataset versions and ordinary evaluation runs, nothing of its own. ``__all__`` names its
public modules. The package imports nothing itself: ``from assay.results import correlations``
loads that store alone.
"""

__all__ = [
    "correlations", "error_analysis", "export", "external_scores", "headline", "model_selection", "newest_run",
    "parts",
    "robustness", "schemas", "segment_scores", "significance", "system_points",
]
