"""BLEU Neighbors as a metric of the scoring pipeline (Ethayarajh & Sadigh 2020, section 4).

A reference-less *estimator*: in leave-one-out mode each segment of the scored set is predicted
from all the others and their human qualities, so its score depends on the whole set. The
pipeline therefore treats it as ``corpus_dependent`` (the set's digest joins the signature and
the set is scored in one task) and hands it the human scores (``needs_human``). Qualities are the
human scores divided by ``quality_scale`` (HUSE: labels 0-5, so q = mean label / 5 as in the
paper); predictions are on that 0-1 quality scale. An undefined prediction is stored as null.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from assay.errors import UsageError
from assay.metrics.base import Metric, SegmentScores
from assay.metrics.bleu_neighbors import DEFAULT_A, DEFAULT_B, BleuNeighbors, BleuStarKernel, RougeKernel
from assay.metrics.bleu_star import DEFAULT_SMOOTHING


class BleuNeighborsMetric(Metric):
    """Leave-one-out BLEU Neighbors over the scored set (kernel ``bleu`` = BLEU*, or ``rouge``)."""

    name: ClassVar[str] = "bleu-neighbors"
    needs_references: ClassVar[bool] = False
    needs_human: ClassVar[bool] = True
    corpus_dependent: ClassVar[bool] = True
    extra_columns: ClassVar[tuple[str, ...]] = ("neighbors",)

    def __init__(self, kernel: str = "bleu", tau: float | None = None, a: int = DEFAULT_A, b: float = DEFAULT_B,
                 smoothing: str = DEFAULT_SMOOTHING, quality_scale: float = 5.0) -> None:
        if kernel == "bleu":
            kernel_obj = BleuStarKernel(smoothing=smoothing)  # type: ignore[arg-type]
        elif kernel == "rouge":
            kernel_obj = RougeKernel()  # type: ignore[assignment]
        else:
            raise UsageError(f"unknown BLEU Neighbors kernel {kernel!r} (bleu or rouge)")
        if quality_scale <= 0:
            raise UsageError("quality_scale must be positive")
        self.kernel_name, self.smoothing, self.quality_scale = kernel, smoothing, float(quality_scale)
        self.estimator = BleuNeighbors(kernel_obj, tau=tau, a=a, b=b)

    def params(self) -> dict[str, object]:
        return {"kernel": self.kernel_name, **self.estimator.kernel.params(), "tau": self.estimator.tau,
                "a": self.estimator.a, "b": self.estimator.b, "mode": "loo", "q": f"human/{self.quality_scale:g}"}

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
              sources: Sequence[str | None] | None = None, *, human: Sequence[float | None] | None = None,
              ) -> SegmentScores:
        if human is None or any(h is None for h in human):
            raise UsageError("BLEU Neighbors needs a human score for every segment of the scored set")
        quality = np.asarray(human, dtype=np.float64) / self.quality_scale
        result = self.estimator.leave_one_out(list(candidates), quality)
        scores = np.array([np.nan if p is None else p for p in result.predictions], dtype=np.float64)
        undefined = int(np.isnan(scores).sum())
        warnings = [f"{undefined} of {len(scores)} predictions undefined (coverage "
                    f"{1 - undefined / max(len(scores), 1):.3f})"] if undefined else []
        return SegmentScores(scores, extra={"neighbors": result.neighbor_counts.astype(np.float64)},
                             warnings=warnings)
