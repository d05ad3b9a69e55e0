"""Synthetic MQM ratings with planted error rates, and metrics that see some categories and not others.

Each output gets, independently per category, a Poisson number of errors (the rates below), each
Major with probability 0.4 (else Minor); one rater. The human score is the ``mtme`` MQM penalty
(Major 5, Minor 1), negated, plus small noise; a metric is ``-scale * (penalty of the categories it
sees)``, plus an item offset (source difficulty, which the within-item fit must remove) and noise.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from assay.mqm import RatedOutputs

CATEGORIES = ("Accuracy/Mistranslation", "Fluency/Grammar", "Style/Awkward", "Fluency/Spelling")
RATES = (0.6, 0.4, 0.8, 0.5)
IGNORED = "Fluency/Spelling"
WEIGHTS = {"Major": 5.0, "Minor": 1.0}


class PlantedRatings:
    """The planted errors of ``items`` x ``systems`` outputs, and metrics built on them."""

    def __init__(self, items: int = 300, systems: int = 6, seed: int = 7, noise: float = 0.3) -> None:
        rng = np.random.default_rng(seed)
        self.item = [f"seg{i}" for i in range(items) for _ in range(systems)]
        self.system = [f"sys{s}" for _ in range(items) for s in range(systems)]
        n = len(self.item)
        self.errors: list[tuple[tuple[str, str, str, str, None, None], ...]] = []
        # per output, the penalty of each category
        self.penalty = np.zeros((n, len(CATEGORIES)))
        for o in range(n):
            records = []
            for c, (category, rate) in enumerate(zip(CATEGORIES, RATES, strict=True)):
                for _ in range(rng.poisson(rate)):
                    severity = "Major" if rng.random() < 0.4 else "Minor"
                    records.append((category, severity, "rater1", "target", None, None))
                    self.penalty[o, c] += WEIGHTS[severity]
            self.errors.append(tuple(records))
        self.human = -self.penalty.sum(axis=1) + rng.normal(0, noise, n)
        self._offset = np.repeat(rng.normal(0, 2, items), systems)
        self._rng = rng
        self._noise = noise

    def metric(self, sees: Sequence[str] = CATEGORIES, scale: float = 0.02) -> np.ndarray:
        """A metric that reacts, like the humans, to the categories in ``sees`` and to nothing else."""
        seen = [c for c, category in enumerate(CATEGORIES) if category in sees]
        clean = -self.penalty[:, seen].sum(axis=1) + self._offset + self._rng.normal(0, self._noise, len(self.item))
        return scale * clean

    def outputs(self, metric: np.ndarray) -> RatedOutputs:
        n = len(self.item)
        return RatedOutputs(self.item, self.system, self.human, metric, self.errors, [1] * n,
                            ["candidate"] * n, ["source"] * n)
