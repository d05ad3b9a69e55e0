"""What a metric is in Assay: a name, a version and parameters that render a signature, and a
function from (candidate, references, source) triples to segment scores.

Where a corpus score is not the mean of segment scores (corpus BLEU), a metric also returns
per-segment *sufficient statistics*; the corpus score is aggregated from their sums later and the
metric is never rerun (sacrebleu's design: score once, aggregate many times).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from assay.errors import UsageError
from assay.metrics.signature import Signature


@dataclass
class SegmentScores:
    """Scores of n segments, in input order."""

    score: np.ndarray
    """The metric's main score, float64, shape (n,)."""
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    """Further per-segment scores, e.g. ``precision``/``recall``/``f1`` for BERTScore."""
    stats: np.ndarray | None = None
    """Sufficient statistics, shape (n, k), for metrics whose corpus score is not a mean."""
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.score = np.asarray(self.score, dtype=np.float64)
        n = len(self.score)
        for name, values in self.extra.items():
            self.extra[name] = np.asarray(values, dtype=np.float64)
            if len(self.extra[name]) != n:
                raise ValueError(f"extra score {name!r} has {len(values)} values for {n} segments")
        if self.stats is not None and len(self.stats) != n:
            raise ValueError(f"stats have {len(self.stats)} rows for {n} segments")


class Metric(ABC):
    """Base class of every metric; subclasses set ``name`` and ``version`` and score segments."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs_references: ClassVar[bool] = True
    #: names of ``SegmentScores.extra`` columns this metric produces
    extra_columns: ClassVar[tuple[str, ...]] = ()
    #: names of the sufficient-statistics columns, when the corpus score is aggregated from them
    stats_columns: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def params(self) -> dict[str, object]:
        """Everything that changes the scores, for the signature."""

    def signature(self) -> str:
        return Signature(self.name, self.version, self.params()).render()

    @abstractmethod
    def score(
        self,
        candidates: Sequence[str],
        references: Sequence[Sequence[str]],
        sources: Sequence[str | None] | None = None,
    ) -> SegmentScores:
        """Score each candidate against its references (and source, where used)."""

    def corpus_score(self, stats: np.ndarray) -> float:
        """The corpus score from summed sufficient statistics (metrics with ``stats_columns``)."""
        raise UsageError(f"{self.name} has no corpus-level aggregate other than the mean")

    def check_inputs(self, candidates: Sequence[str], references: Sequence[Sequence[str]]) -> None:
        if len(candidates) != len(references):
            raise ValueError(f"{len(candidates)} candidates but {len(references)} reference lists")
        if self.needs_references and any(len(refs) == 0 for refs in references):
            missing = sum(1 for refs in references if len(refs) == 0)
            raise UsageError(f"{self.name} needs references, but {missing} segments have none")
