"""Quality drift: how each metric's correlation changes with the benchmark's drift parameter α.

A quality-drift benchmark derives dataset versions whose derivation is
``{"kind": "quality-drift", "alpha": α, "split": "test" | "train", "seed": s}``; each is
evaluated like any dataset. This module lines up the evaluations of the *test* samples: one
series per (level, aspect, statistic) and metric signature, a point per sample (α, seed), on the
mean over groups (``all``) or the only group.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assay.report.collect import CorrelationRow, Evaluation


@dataclass(frozen=True)
class DriftPoint:
    alpha: float
    seed: int | None
    row: CorrelationRow
    evaluation: Evaluation


@dataclass
class DriftPanel:
    """One chart: a statistic at a level on one aspect, every metric's points against α."""

    level: str
    aspect: str
    statistic: str
    group: str
    series: dict[str, list[DriftPoint]] = field(default_factory=dict)  # signature -> points

    @property
    def parents(self) -> list[str]:
        return sorted({str((p.evaluation.version.derivation or {}).get("parent", "?"))
                       for ps in self.series.values() for p in ps})


def _alpha(evaluation: Evaluation) -> float | None:
    value = (evaluation.version.derivation or {}).get("alpha")
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def drift_panels(evaluations: list[Evaluation]) -> list[DriftPanel]:
    """Panels from the evaluations of quality-drift test samples (other splits are left out)."""
    panels: dict[tuple[str, str, str], DriftPanel] = {}
    for evaluation in evaluations:
        derivation = evaluation.version.derivation or {}
        alpha = _alpha(evaluation)
        if derivation.get("split", "test") != "test" or alpha is None:
            continue
        seed = derivation.get("seed")
        for aspect in evaluation.aspects:
            groups = evaluation.groups(aspect)
            group = "all" if "all" in groups else (groups[0] if len(groups) == 1 else None)
            if group is None:
                continue
            for row in evaluation.rows:
                if row.aspect != aspect or row.group != group or row.value is None:
                    continue
                panel = panels.setdefault((evaluation.level, aspect, row.statistic),
                                          DriftPanel(evaluation.level, aspect, row.statistic, group))
                panel.series.setdefault(row.signature, []).append(
                    DriftPoint(alpha, int(seed) if isinstance(seed, int) else None, row, evaluation))
    for panel in panels.values():
        for points in panel.series.values():
            points.sort(key=lambda p: (p.alpha, p.seed if p.seed is not None else -1))
    order = ("pearson", "kendall", "spearman", "kendall_c", "kendall_like", "pairwise_accuracy")

    def key(k: tuple[str, str, str]) -> tuple[bool, str, int, str]:
        return (k[0] != "seg", k[1], order.index(k[2]) if k[2] in order else len(order), k[2])

    return [panels[k] for k in sorted(panels, key=key)]
