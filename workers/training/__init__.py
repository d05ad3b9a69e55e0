"""Training BLEURT-style learned metrics (Sellam, Das & Parikh, 2020, "BLEURT: Learning Robust
Metrics for Text Generation", ACL): fine-tuning on human ratings (§3) and multi-task pre-training on
synthetic signals (§4), on transformers' ``Trainer``.

The public names are re-exported here; see :mod:`assay.workers.training.engine` for what a run does.
The jobs built on it (each plans on the platform side, :mod:`assay.training`, and runs here):
``stage_runs`` (a stage as a recorded run), ``stage_steps`` (its steps, plan -> train),
``recipe_runs`` (the BLEURT recipe's stages in order), ``robustness_runs`` (BLEURT §5.2/§5.3
experiments) and ``sweep_trials`` (an Optuna sweep's trials).
``__all__`` names the package's public modules and those names.
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
    "batches",
    "data",
    "engine",
    "launch",
    "model",
    "objectives",
    "recipe_runs",
    "robustness_runs",
    "stage_runs",
    "stage_steps",
    "sweep_trials",
    "train",
    "training_table_from_segments",
]
