"""Assay: evaluate text-generation metrics against human judgments.

The public Python API lives in subpackages (``assay.metrics``, ``assay.datasets``,
``assay.catalog``); this module only carries the package version.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
