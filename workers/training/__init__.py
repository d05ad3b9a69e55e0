"""Training BLEURT-style learned metrics (Sellam, Das & Parikh, 2020, "BLEURT: Learning Robust
Metrics for Text Generation", ACL): fine-tuning on human ratings (§3) and multi-task pre-training on
synthetic signals (§4), on transformers' ``Trainer``.

The public names are re-exported here; see :mod:`assay.workers.training.engine` for what a run does.
"""

from assay.training.config import TrainConfig
from assay.workers.training.data import training_table_from_segments
from assay.workers.training.engine import TrainResult, train
from assay.workers.training.objectives import RATING, Objective

__all__ = [
    "RATING",
    "Objective",
    "TrainConfig",
    "TrainResult",
    "train",
    "training_table_from_segments",
]
