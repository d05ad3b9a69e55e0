"""Metric signatures, in the spirit of sacrebleu's (Post, 2018, "A Call for Clarity in Reporting
BLEU Scores"): every score carries a string that says exactly how it was produced.

``bertscore|model:all-minilm-l6-v2@3f2a9c1d0e4b|layer:4|idf:no|rescale:no|v:1|assay:0.1.0``

The signature is part of the cache key of segment scores, so two scores with the same signature
are interchangeable and anything that changes a score must appear in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import assay


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "none"
    text = str(value)
    return text.replace("|", "/").replace(" ", "_")


@dataclass(frozen=True)
class Signature:
    metric: str
    version: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def render(self) -> str:
        parts = [self.metric]
        parts += [f"{key}:{_value(value)}" for key, value in self.params.items()]
        parts += [f"v:{self.version}", f"assay:{assay.__version__}"]
        return "|".join(parts)

    def __str__(self) -> str:
        return self.render()


def parse_signature(text: str) -> dict[str, str]:
    """The ``key:value`` fields of a rendered signature (plus ``metric``)."""
    metric, *fields = text.split("|")
    parsed = {"metric": metric}
    for item in fields:
        key, _, value = item.partition(":")
        parsed[key] = value
    return parsed
