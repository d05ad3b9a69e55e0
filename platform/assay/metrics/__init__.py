"""Metrics: a name, a version and parameters that render a signature, and segment scores.

The public API for notebooks::

    from assay.metrics import BERTScore, SentenceBLEU
    scores = BERTScore(layer=4).score(candidates, [[ref] for ref in references])

The model-based metrics (``BERTScore``, ``BLEURT``) live in the worker layer (``assay.workers``,
which needs torch); they are resolved on first access, so ``import assay.metrics`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

from assay.metrics.base import Metric, SegmentScores
from assay.metrics.bleu_neighbors import BleuNeighbors, BleuStarKernel, RougeKernel
from assay.metrics.bleu_neighbors_metric import BleuNeighborsMetric
from assay.metrics.bleu_star import bleu_star
from assay.metrics.lexical import TER, ChrF, CorpusBLEU, Rouge1, Rouge2, RougeL, SentenceBLEU
from assay.metrics.registry import METRICS, MetricSpec, create_metric
from assay.metrics.signature import Signature, parse_signature

_WORKER_METRICS = {"BERTScore": "assay.workers.metrics", "BLEURT": "assay.workers.metrics"}

__all__ = [
    "BLEURT",
    "METRICS",
    "TER",
    "BERTScore",
    "BleuNeighbors",
    "BleuNeighborsMetric",
    "BleuStarKernel",
    "ChrF",
    "CorpusBLEU",
    "Metric",
    "MetricSpec",
    "Rouge1",
    "Rouge2",
    "RougeKernel",
    "RougeL",
    "SegmentScores",
    "SentenceBLEU",
    "Signature",
    "bleu_star",
    "create_metric",
    "parse_signature",
]


def __getattr__(name: str) -> Any:
    if name in _WORKER_METRICS:
        return getattr(importlib.import_module(_WORKER_METRICS[name]), name)
    raise AttributeError(f"module 'assay.metrics' has no attribute {name!r}")
