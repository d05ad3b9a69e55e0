"""The numeric options of a robustness experiment: its points and statistics, checked."""

from __future__ import annotations

import math
from collections.abc import Sequence

from assay.errors import UsageError

#: the statistics every point is evaluated with (the paper reports Kendall τ; Pearson r beside it)
STATISTICS = ("kendall", "pearson")
#: WebNLG's shares of the units given to training: "0% to about 50%" (§5.3)
SHARES: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)


def check_points(values: Sequence[float], option: str, *, low: float, high: float | None) -> list[float]:
    """Sorted distinct finite numbers in ``[low, high)`` (``high`` None: no upper bound)."""
    if not values:
        raise UsageError(f"{option}: give at least one value")
    out = []
    for value in values:
        v = float(value)
        if not math.isfinite(v) or v < low or (high is not None and v >= high):
            bound = f"in [{low:g}, {high:g})" if high is not None else f">= {low:g}"
            raise UsageError(f"{option}: {value!r} is not a number {bound}")
        out.append(v)
    return sorted(set(out))


def check_statistics(statistics: Sequence[str]) -> list[str]:
    unknown = sorted(set(statistics) - set(STATISTICS))
    if unknown or not statistics:
        raise UsageError(f"statistics {', '.join(unknown) or '(none)'}: choose from {', '.join(STATISTICS)}")
    return [s for s in STATISTICS if s in statistics]

