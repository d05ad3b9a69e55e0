"""BLEU Neighbors as a metric of the scoring pipeline (Ethayarajh & Sadigh 2020, section 4).

A reference-less *estimator*: in leave-one-out mode each segment of the scored set is predicted
from all the others and their human qualities, so it declares ``needs_human_scores`` (scoring
hands it the set's human scores) and ``depends_on_segment_set`` (the set's digest joins the
signature and the set is scored in one shard). Qualities are the human scores divided by
``quality_scale`` (HUSE: labels 0-5, so q = mean label / 5 as in the paper); predictions are on that
0-1 quality scale. Where the evidence thresholds ``a <= |N| <= b |S|`` (equation 3) are not met
the estimator makes no prediction: it declares ``may_abstain`` and such a score is stored as null.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from assay.errors import UsageError
from assay.metrics import params as check
from assay.metrics.base import Metric, ScoringContext, SegmentScores
from assay.metrics.bleu_neighbors import (
    DEFAULT_A,
    DEFAULT_B,
    BleuNeighbors,
    BleuStarKernel,
    NeighborKernel,
    RougeKernel,
)
from assay.metrics.bleu_star import DEFAULT_SMOOTHING, check_smoothing

KERNELS = ("bleu", "rouge")


class BleuNeighborsMetric(Metric):
    """Leave-one-out BLEU Neighbors over the scored set (kernel ``bleu`` = BLEU*, or ``rouge``).

    ``tau`` in (0, 1] (default: the kernel's, 0.08 for BLEU* and 0.06 for ROUGE-L), ``a`` >= 1
    neighbours at least, ``b`` in [0, 1] the largest share of the set a neighbourhood may cover,
    ``quality_scale`` > 0 divides the human scores into qualities.
    """

    name: ClassVar[str] = "bleu-neighbors"
    needs_references: ClassVar[bool] = False
    needs_human_scores: ClassVar[bool] = True
    depends_on_segment_set: bool = True
    may_abstain: ClassVar[bool] = True
    extra_columns: ClassVar[tuple[str, ...]] = ("neighbors",)

    def __init__(self, kernel: str = "bleu", tau: float | None = None, a: int = DEFAULT_A, b: float = DEFAULT_B,
                 smoothing: str = DEFAULT_SMOOTHING, quality_scale: float = 5.0) -> None:
        self.kernel_name = check.choice(self.name, "kernel", kernel, KERNELS)
        self.smoothing = check_smoothing(smoothing)
        kernel_obj: NeighborKernel = BleuStarKernel(smoothing=self.smoothing) if kernel == "bleu" else RougeKernel()
        if tau is not None:
            tau = check.number(self.name, "tau", tau, low=0.0, high=1.0, low_open=True)
        a = check.integer(self.name, "a", a, minimum=1)
        b = check.number(self.name, "b", b, low=0.0, high=1.0)
        self.quality_scale = check.number(self.name, "quality_scale", quality_scale, low=0.0, low_open=True)
        self.estimator = BleuNeighbors(kernel_obj, tau=tau, a=a, b=b)
        self._given = {"kernel": kernel, "tau": tau, "a": a, "b": b, "smoothing": smoothing,
                       "quality_scale": quality_scale}

    def params(self) -> dict[str, object]:
        return dict(self._given)

    def signature_params(self) -> dict[str, object]:
        return {"kernel": self.kernel_name, **self.estimator.kernel.params(), "tau": self.estimator.tau,
                "a": self.estimator.a, "b": self.estimator.b, "mode": "loo", "q": f"human/{self.quality_scale:g}"}

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
              sources: Sequence[str | None] | None = None, *, context: ScoringContext | None = None,
              ) -> SegmentScores:
        human = context.human if context is not None else None
        if human is None or any(h is None for h in human):
            raise UsageError("BLEU Neighbors needs a human score for every segment of the scored set")
        if len(human) != len(candidates):
            raise UsageError(f"BLEU Neighbors: {len(human)} human scores for {len(candidates)} segments")
        quality = np.asarray(human, dtype=np.float64) / self.quality_scale
        if not np.isfinite(quality).all():
            raise UsageError("BLEU Neighbors needs finite human scores; some are NaN or infinite")
        result = self.estimator.leave_one_out(list(candidates), quality)
        scores = np.array([np.nan if p is None else p for p in result.predictions], dtype=np.float64)
        undefined = int(np.isnan(scores).sum())
        warnings = [f"{undefined} of {len(scores)} predictions undefined (coverage "
                    f"{1 - undefined / max(len(scores), 1):.3f})"] if undefined else []
        return SegmentScores(scores, extra={"neighbors": result.neighbor_counts.astype(np.float64)},
                             warnings=warnings)
