"""The jobs: each one plan -> compute -> record (ARCHITECTURE.md, "A job, the unit of work").

Modules, one job each, with the plumbing they share:

- ``ingest``: parse a source into an immutable, content-addressed dataset version;
- ``scoring``: score a dataset version with a metric, segment by segment, against the cache;
- ``score_export``: stored segment scores joined back to a version's judgments (``assay scores export``);
- ``evaluation``: correlations with humans, bootstrap intervals, significance clusters;
- ``evaluation_inputs``: the load step of an evaluation, what it reads, read once, as arrays;
- ``evaluation_levels``: the kernels of the two default levels, computed from arrays already loaded;
- ``evaluation_cells``: the cells of an evaluation, one correlation with its bootstrap replicates;
- ``judgments``: which human judgments an evaluation reads (groups left out, human candidates, one rater);
- ``protocol_wmt23``, ``protocol_wmt24``: the WMT23 and WMT24 metrics-task protocols
  (``assay evaluate --protocol``);
- ``error_analysis``: ``assay errors``, what a metric misses on an MQM dataset version;
- ``external_scores``: a version's official segment scores written into the segment-score store;
- ``official_scores``: the official submissions of a version, their signatures and scores as given;
- ``model_selection``: hybrid systems, Hits@1 and MRR (BERTScore, Zhang et al. 2020, §4);
- ``quality_drift``: the quality-drift benchmark (BLEURT, Sellam et al. 2020, §5.2);
- ``reruns``: recompute a past run against its pinned data version;
- ``runs``: the one run recorder every job writes its catalog row with;
- ``signature_lock``: scoring's exactly-once lock per metric signature.

``__all__`` names its public modules. The package imports nothing itself: ``from assay.jobs import
scoring`` loads that job alone.
"""

__all__ = [
    "error_analysis", "evaluation", "evaluation_cells", "evaluation_inputs", "evaluation_levels", "external_scores",
    "ingest", "judgments", "model_selection", "official_scores", "protocol_wmt23", "protocol_wmt24", "quality_drift",
    "reruns", "runs", "score_export", "scoring", "signature_lock",
]
