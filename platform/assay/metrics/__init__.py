"""Metrics: a name, a version, a declared contract, parameters that render a signature, and
segment scores.

The public API for notebooks::

    from assay.metrics import SentenceBLEU, create_metric
    scores = SentenceBLEU().score(candidates, [[ref] for ref in references])
    bertscore = create_metric("bertscore", layer=4)      # any registered metric by name

The model-based metrics (BERTScore, BLEURT) live in the worker layer, which needs torch; the
platform reaches them only by name, through the entry-point group ``assay.metrics`` in which every
metric, those included, is registered (:mod:`assay.metrics.registry`, ``pyproject.toml``).

``__all__`` names the package's public modules and the names re-exported here (each imported on
first use).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.errors import MetricOutputError, UndigestedModelError
    from assay.metrics.base import Metric, ScoringContext, SegmentScores
    from assay.metrics.bleu_neighbors import BleuNeighbors, BleuStarKernel, RougeKernel
    from assay.metrics.bleu_neighbors_metric import BleuNeighborsMetric
    from assay.metrics.bleu_star import bleu_star
    from assay.metrics.lexical import TER, ChrF, CorpusBLEU, CorpusChrF, Rouge1, Rouge2, RougeL, SentenceBLEU
    from assay.metrics.registry import MetricSpec, create_metric, metric_class, metric_names
    from assay.metrics.signature import Signature, package_version, parse_signature, render_signature

#: where each public name lives; imported on first use, so that importing one light submodule
#: (``assay.metrics.signature``, for the leaderboard) does not load SciPy through BLEU Neighbors
_HOMES = {
    **dict.fromkeys(("MetricOutputError", "UndigestedModelError"), "assay.errors"),
    **dict.fromkeys(("Metric", "ScoringContext", "SegmentScores"), "assay.metrics.base"),
    **dict.fromkeys(("BleuNeighbors", "BleuStarKernel", "RougeKernel"), "assay.metrics.bleu_neighbors"),
    "BleuNeighborsMetric": "assay.metrics.bleu_neighbors_metric",
    "bleu_star": "assay.metrics.bleu_star",
    **dict.fromkeys(("TER", "ChrF", "CorpusBLEU", "CorpusChrF", "Rouge1", "Rouge2", "RougeL", "SentenceBLEU"),
                    "assay.metrics.lexical"),
    **dict.fromkeys(("MetricSpec", "create_metric", "metric_class", "metric_names"), "assay.metrics.registry"),
    **dict.fromkeys(("Signature", "package_version", "parse_signature", "render_signature"),
                    "assay.metrics.signature"),
}


def __getattr__(name: str) -> Any:
    """The public names, imported from their modules on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


__all__ = [
    "TER",
    "BleuNeighbors",
    "BleuNeighborsMetric",
    "BleuStarKernel",
    "ChrF",
    "CorpusBLEU",
    "CorpusChrF",
    "Metric",
    "MetricOutputError",
    "MetricSpec",
    "Rouge1",
    "Rouge2",
    "RougeKernel",
    "RougeL",
    "ScoringContext",
    "SegmentScores",
    "SentenceBLEU",
    "Signature",
    "UndigestedModelError",
    "base",
    "bleu_neighbors",
    "bleu_neighbors_metric",
    "bleu_star",
    "create_metric",
    "lexical",
    "metric_class",
    "metric_names",
    "neighbors_index",
    "package_version",
    "params",
    "parse_signature",
    "registry",
    "render_signature",
    "signature",
]
