"""Training learned metrics (BLEURT, Sellam et al. 2020): hyper-parameters, stage plans, the stage
runner (``stages``), lineage, recipes.

The model code lives in the workers layer; here are the parts that need no torch.
``__all__`` names the package's public modules; the package imports none of them itself.
"""

__all__ = ["config", "plan", "pretraining", "recipes", "robustness", "stage_request"]
