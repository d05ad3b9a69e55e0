"""Learned metrics under quality drift and with little data: BLEURT's robustness experiments
(Sellam et al., 2020, §5.2 "Robustness to Quality Drift", §5.3 "WebNLG Experiments", appendix B.3).

Both experiments train one learned metric per *variant* and *point*, and correlate it with the
humans on held-out data, beside fixed baselines:

* **Quality drift (§5.2).** For each skew factor α, the train sample keeps low-rated records and
  the test sample high-rated ones (B.3; the samples are drawn by :mod:`assay.jobs.quality_drift`). A
  variant is fine-tuned on the train sample of α and evaluated on the test sample of the same α,
  so a point is one step along the diagonal of the paper's Figure 2 (train skew = test skew).
* **WebNLG (§5.3).** "The data has no natural split between train and test ... We allocate 0% to
  about 50% of the data to training, and we split on both the evaluated systems or the RDF
  inputs". :func:`draw_splits` splits a dataset version's units (systems, or inputs: the items)
  by a seeded permutation; the first ``round(share · n)`` units are the *train* side, the rest
  the *test* side. One permutation serves every share, so the train sides are nested (a larger
  share adds units, never swaps them) and differences between shares are not blurred by
  resampling. Each rated aspect (fluency, grammar, semantics) is "a separate modeling task": a
  variant is trained per aspect on the train side and evaluated on that aspect of the test side.
  At share 0 nothing is trained: a variant that starts from a checkpoint is scored as it is (the
  paper's "comparable with BERTscore with zero fine-tuning"); a variant that starts from a bare
  encoder has no rating head worth scoring and is skipped.

A *variant* is a name and where training starts (``NAME=INIT``): ``encoder`` (the embedded
encoder: the paper's "no pre-training") or a registered checkpoint (e.g. one pre-trained on
synthetic pairs, §4, or fine-tuned on WMT first: the paper's BLEURT). Baselines are fixed
segment-level metrics (the paper's sentBLEU and BERTScore).

Results go to the robustness store (:mod:`assay.results.robustness`), one row per (experiment id,
variant, point, aspect, statistic) on the headline group. The experiment id is a digest of
everything that determines the numbers (dataset digest, points, variants' init digests, baselines,
hyper-parameters, seeds, statistics); a rerun with the same id finds its rows and recomputes
nothing. Every call records a ``robustness`` run whose summary names every checkpoint it used and
whether it was trained then or found.

Checkpoints are found again by what made them, not by name: a registered fine-tuning whose
lineage has the same training data (version digest and aspect), the same parent (init digest, or
the same encoder) and the same hyper-parameters is reused instead of training again.

The package, one concept a module: ``variants`` (variants and baselines, parsed and checked),
``options`` (points and statistics), ``experiment`` (the resolved request), ``splits`` (WebNLG's
train/test splits), ``checkpoints`` (found again by what made them), ``rows`` (result rows and
their store) and ``runs`` (the catalog run). Its public names are re-exported here; ``__all__``
names the modules and those names.
"""

from assay.training.robustness.checkpoints import (
    checkpoint_name,
    find_trained,
    training_key,
)
from assay.training.robustness.experiment import (
    Experiment,
    check_aspects,
    dataset_of,
    rated_aspects,
)
from assay.training.robustness.options import (
    SHARES,
    STATISTICS,
    check_points,
    check_statistics,
)
from assay.training.robustness.rows import (
    EXPERIMENTS,
    RESULTS,
    ROOT,
    Scored,
    headline_rows,
    latest_results,
    point_rows,
    read_results,
    stored_rows,
    stored_rows_of,
    write_results,
)
from assay.training.robustness.runs import (
    RUN_KIND,
    checkpoints_of,
    finish_run,
    read_part,
    record_reuse,
    skipped_variants,
    start_run,
    summary_rows,
)
from assay.training.robustness.splits import (
    SIDES,
    SPLIT_BY,
    SPLIT_KIND,
    SplitSample,
    check_splits,
    draw_splits,
    n_train_units,
    split_name,
    split_pool,
    unit_column,
    unit_order,
)
from assay.training.robustness.variants import (
    BASELINES,
    ENCODER,
    Variant,
    baseline_label,
    check_baselines,
    check_variants,
    parse_variant,
)

__all__ = [
    "BASELINES",
    "ENCODER",
    "EXPERIMENTS",
    "RESULTS",
    "ROOT",
    "RUN_KIND",
    "SHARES",
    "SIDES",
    "SPLIT_BY",
    "SPLIT_KIND",
    "STATISTICS",
    "Experiment",
    "Scored",
    "SplitSample",
    "Variant",
    "baseline_label",
    "check_aspects",
    "check_baselines",
    "check_points",
    "check_splits",
    "check_statistics",
    "check_variants",
    "checkpoint_name",
    "checkpoints",
    "checkpoints_of",
    "dataset_of",
    "draw_splits",
    "experiment",
    "find_trained",
    "finish_run",
    "headline_rows",
    "latest_results",
    "n_train_units",
    "options",
    "parse_variant",
    "point_rows",
    "rated_aspects",
    "read_part",
    "read_results",
    "record_reuse",
    "rows",
    "runs",
    "skipped_variants",
    "split_name",
    "split_pool",
    "splits",
    "start_run",
    "stored_rows",
    "stored_rows_of",
    "summary_rows",
    "training_key",
    "unit_column",
    "unit_order",
    "variants",
    "write_results",
]
