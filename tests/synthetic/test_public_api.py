"""The public API of assay.synthetic is what its ``__all__`` lists, and the package stays light."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import assay.synthetic as synthetic


def test_all_lists_the_public_names() -> None:
    public = {name for name, value in vars(synthetic).items()
              if not name.startswith("_") and not isinstance(value, types.ModuleType)}
    modules = {p.stem for p in Path(synthetic.__file__).parent.glob("*.py") if not p.name.startswith("_")}
    assert set(synthetic.__all__) == public | modules  # the modules too (tests/test_exported_members.py)
    assert callable(synthetic.synthesize)  # the function, not its module


def test_importing_it_imports_no_model_framework() -> None:
    code = ("import sys, assay.synthetic, assay.synthetic.perturbations, assay.synthetic.signals; "
            "print(sorted(m for m in ('torch', 'transformers', 'prefect') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
