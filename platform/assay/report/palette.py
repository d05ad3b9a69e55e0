"""One colour and one short label per metric signature, the same in every chart of a report.

Colours follow Tableau 10 (a categorical palette designed to stay distinguishable and readable on
white), extended by darker variants when a report holds more than ten signatures. Signatures are
ordered by metric name then signature, so a metric keeps its colour as long as the set of
signatures in the report does not change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.checkpoints.labels import lineage_text, signature_checkpoint
from assay.metrics.signature import parse_signature

TABLEAU10 = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
             "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")
DARKER = ("#2b5a85", "#c66a0c", "#b33538", "#3f8c86", "#3a7d33",
          "#b8961b", "#7f5076", "#d0667a", "#6e4f3d", "#7f776f")
#: ordered colours for parameter sweeps (BLEU Neighbors' a): steps of matplotlib's "plasma"
SWEEP = ("#0d0887", "#6a00a8", "#b12a90", "#e16462", "#f89540", "#c9a800")
#: reference markers (paper and independent numbers)
REFERENCE = "#222222"
#: parameters that never distinguish two signatures usefully in a label
_UNINFORMATIVE = {"metric", "v", "assay", "sacrebleu"}


def short_label(signature: str, siblings: Iterable[str]) -> str:
    """The metric name, plus the parameters that tell it apart from same-named ``siblings``."""
    mine = parse_signature(signature)
    others = [parse_signature(s) for s in siblings if s != signature]
    others = [o for o in others if o["metric"] == mine["metric"]]
    if not others:
        return mine["metric"]
    keys = [k for k in mine if k not in _UNINFORMATIVE and any(o.get(k) != mine[k] for o in others)]
    if not keys:  # differ only in versions
        keys = [k for k in mine if k != "metric" and any(o.get(k) != mine[k] for o in others)]
    return mine["metric"] + " (" + ", ".join(f"{k}:{mine[k]}" for k in keys[:2]) + ")"


@dataclass
class MetricPalette:
    """Signature -> colour and label, fixed once for the whole report."""

    signatures: list[str] = field(default_factory=list)
    checkpoints: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """registered checkpoints by (12-digit) digest: a learned metric is labelled with its name and lineage"""

    @classmethod
    def of(cls, signatures: Iterable[str], checkpoints: Mapping[str, Mapping[str, Any]] | None = None
           ) -> MetricPalette:
        unique = sorted(set(signatures), key=lambda s: (parse_signature(s)["metric"], s))
        return cls(unique, dict(checkpoints or {}))

    def colour(self, signature: str) -> str:
        if signature not in self.signatures:
            self.signatures.append(signature)
        index = self.signatures.index(signature)
        colours = TABLEAU10 + DARKER
        return colours[index % len(colours)]

    def label(self, signature: str) -> str:
        digest = signature_checkpoint(signature)
        if digest and digest in self.checkpoints:
            return f"{parse_signature(signature)['metric']} · {lineage_text(self.checkpoints[digest])}"
        return short_label(signature, self.signatures)

    def order(self, signatures: Iterable[str]) -> list[str]:
        """``signatures`` in palette order (metric name, then signature)."""
        wanted = set(signatures)
        known = [s for s in self.signatures if s in wanted]
        return known + sorted(wanted - set(known))
