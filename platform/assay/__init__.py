"""Assay: evaluate text-generation metrics against human judgments.

The public Python API lives in subpackages (``assay.metrics``, ``assay.datasets``,
``assay.catalog``); this module only carries the package version. ``__all__`` names its public
modules and ``__version__``; the package imports none of them itself.
"""

__version__ = "0.1.0"
__all__ = [
    "__version__", "atomic", "catalog", "checkpoints", "config", "datasets", "errors", "fixtures", "flow_context",
    "jobs", "metrics", "mqm", "nightly", "plugins", "ports", "progress", "provenance", "query", "renamed_columns",
    "report", "results", "serve", "slugs", "stats", "sweeps", "synthetic", "training", "transient", "urls",
]
