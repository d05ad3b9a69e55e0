"""Worker-pool code that may need an accelerator: model loading, BERTScore, the BLEURT-style scorer,
and training (:mod:`assay.workers.training`).

``__all__`` names its public modules; the package imports none of them itself (many import torch).
"""

__all__ = [
    "bertscore", "bleurt", "checkpoint", "checkpoint_registration", "checkpoint_watch", "device", "embedded_model",
    "encoder", "metrics", "rescale_baselines", "synthetic_models", "synthetic_signals", "training",
    "transformers_bars",
]
