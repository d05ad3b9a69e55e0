"""BLEU Neighbors' coverage/agreement trade-off on HUSE, computed when the report is built.

Ethayarajh & Sadigh (2020), section 4: leave-one-out on the 200 HUSE summarization sentences,
quality ``q = mean label / 5`` (labels 0-5). A prediction is defined only when the number of
neighbours ``|N|`` satisfies ``a <= |N| <= b |S|`` (equation 3), so raising ``a`` or lowering ``b``
trades coverage for (possibly) better agreement. The neighbour search does not depend on ``a``
and ``b``; the kernel's index is built once and reused for the whole grid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from assay.config import Settings
from assay.datasets import store
from assay.metrics.bleu_neighbors import BleuNeighbors, BleuStarKernel
from assay.report.collect import VersionInfo

GRID_A = (1, 3, 5, 10, 20)
GRID_B = (0.33, 0.5, 0.66, 0.8, 1.0)
HUSE_FORMAT = "huse"
HUSE_SCALE = 5.0


@dataclass(frozen=True)
class NeighborPoint:
    a: int
    b: float
    coverage: float
    spearman: float | None
    mse: float | None
    defined: int
    n: int
    signature: str


@dataclass(frozen=True)
class NeighborGrid:
    version: VersionInfo
    tau: float
    points: list[NeighborPoint]

    def point(self, a: int, b: float) -> NeighborPoint | None:
        return next((p for p in self.points if p.a == a and p.b == b), None)


def huse_version(versions: list[VersionInfo]) -> VersionInfo | None:
    """The newest ingested (not derived) HUSE version, if any."""
    found = [v for v in versions if v.format == HUSE_FORMAT and not v.derivation]
    return max(found, key=lambda v: (v.ref.name == "huse", v.created_at or 0, v.ref.number)) if found else None


def neighbors_grid(settings: Settings, version: VersionInfo, grid_a: tuple[int, ...] = GRID_A,
                   grid_b: tuple[float, ...] = GRID_B) -> NeighborGrid:
    """Leave-one-out coverage, Spearman's rho and MSE for every (a, b) of the grid (BLEU* kernel,
    default smoothing and tau)."""
    segments = store.read_table(settings, version.store_path, "segments").select(["candidate", "human_raw"])
    texts = segments.column("candidate").to_pylist()
    quality = np.array(segments.column("human_raw").to_pylist(), dtype=np.float64) / HUSE_SCALE
    kernel = BleuStarKernel()
    points = []
    tau = BleuNeighbors(kernel).tau
    for a in grid_a:
        for b in grid_b:
            estimator = BleuNeighbors(kernel, a=a, b=b)
            summary = estimator.leave_one_out(texts, quality).summary(quality)
            points.append(NeighborPoint(a, b, summary.coverage, summary.spearman, summary.mse, summary.defined,
                                        summary.n, estimator.signature()))
    return NeighborGrid(version, tau, points)
