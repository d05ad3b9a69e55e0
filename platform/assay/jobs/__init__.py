"""The jobs: each one plan -> compute -> record (ARCHITECTURE.md, "A job, the unit of work").

Modules, one job each, with the plumbing they share:

- ``ingest``: parse a source into an immutable, content-addressed dataset version;
- ``scoring``: score a dataset version with a metric, segment by segment, against the cache;
- ``score_export``: stored segment scores joined back to a version's judgments (``assay scores export``);
- ``evaluation``: correlations with humans, bootstrap intervals, significance clusters;
- ``model_selection``: hybrid systems, Hits@1 and MRR (BERTScore, Zhang et al. 2020, §4);
- ``quality_drift``: the quality-drift benchmark (BLEURT, Sellam et al. 2020, §5.2);
- ``reruns``: recompute a past run against its pinned data version;
- ``runs``: the one run recorder every job writes its catalog row with;
- ``signature_lock``: scoring's exactly-once lock per metric signature.

The package imports nothing itself: ``from assay.jobs import scoring`` loads that job alone.
"""

__all__ = [
    "evaluation", "ingest", "model_selection", "quality_drift", "reruns", "runs", "score_export", "scoring",
    "signature_lock",
]
