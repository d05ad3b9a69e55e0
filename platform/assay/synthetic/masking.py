"""Where to put the masks of BLEURT's mask filling (Sellam et al., 2020, appendix A.1 "Random
Masking"), shared by every filler.

"We use two masking strategies. The first strategy samples random words in the sentence and it
replaces them with masks (one for each token). [...] The second strategy creates contiguous
sequences: it samples a start position s, a length l (uniformly distributed), and it masks all the
tokens spanned by words between positions s and s + l. In both cases, we use up to 15 masks per
sentence."

Masks are counted in the filler's tokens: a word costs as many masks as it has tokens (WordPieces
for a masked LM, 1 for the word n-gram filler). :func:`sample_mask` draws the number of masks
``m`` uniformly from 1 (or the cheapest word's cost) to ``min(max_masks, total cost)``, then
either random words (in a random order, each kept while its cost still fits in ``m``) or one
contiguous run of words starting at a uniformly drawn position from which a run can reach ``m``
masks. A word whose cost alone exceeds
the budget is never masked.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from assay.errors import UsageError

#: "we use up to 15 masks per sentence" (appendix A.1)
MAX_MASKS = 15
STRATEGIES = ("random", "contiguous")


def sample_mask(costs: Sequence[int] | np.ndarray, rng: np.random.Generator, *, max_masks: int = MAX_MASKS,
                contiguous_share: float = 0.5) -> tuple[str, np.ndarray]:
    """(strategy, sorted positions of the masked words) for a sentence whose words cost ``costs``
    masks each. The number of masks is drawn from the cheapest word's cost (1 for the n-gram filler)
to ``min(max_masks, total cost)``. ``contiguous_share``: the probability of the contiguous strategy. An empty sentence,
    or one whose every word costs more than ``max_masks``, gets no mask."""
    if max_masks < 1:
        raise UsageError(f"max_masks must be at least 1, got {max_masks}")
    if not 0.0 <= contiguous_share <= 1.0:
        raise UsageError(f"contiguous_share must lie between 0 and 1, got {contiguous_share}")
    cost = np.maximum(np.asarray(costs, dtype=np.int64), 1)
    strategy = STRATEGIES[int(rng.random() < contiguous_share)]
    fits = cost <= max_masks
    if cost.size == 0 or not fits.any():
        return strategy, np.zeros(0, dtype=np.int64)
    budget = int(rng.integers(int(cost[fits].min()), min(max_masks, int(cost[fits].sum())) + 1))
    if strategy == "random":
        chosen = []
        left = budget
        for i in rng.permutation(cost.size):
            if cost[i] <= left:
                chosen.append(int(i))
                left -= int(cost[i])
                if left == 0:
                    break
        return strategy, np.sort(np.asarray(chosen, dtype=np.int64))
    # contiguous: a start from which a run of words (stopping at the first that does not fit) can
    # reach the budget, or, where none can, the start of the longest such run
    # (costs are positive, so a run from s reaches the budget exactly when C[s] + budget is a prefix sum)
    prefix = np.concatenate(([0], np.cumsum(cost)))
    starts = np.flatnonzero(np.isin(prefix[:-1] + budget, prefix))
    if starts.size == 0:
        reach = np.array([_run(cost, s, budget)[1] for s in range(cost.size)])
        starts = np.flatnonzero(reach == reach.max())
    start = int(starts[rng.integers(starts.size)])
    stop, _ = _run(cost, start, budget)
    return strategy, np.arange(start, stop, dtype=np.int64)


def _run(cost: np.ndarray, start: int, budget: int) -> tuple[int, int]:
    """(end, masks) of the run of words from ``start`` while their total cost fits ``budget``."""
    total = 0
    stop = start
    while stop < cost.size and total + int(cost[stop]) <= budget:
        total += int(cost[stop])
        stop += 1
    return stop, total
