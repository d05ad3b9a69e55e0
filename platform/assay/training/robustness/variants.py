"""Variants and baselines of a robustness experiment: what is trained, and what it is compared with
(BLEURT, Sellam et al. 2020, §5.2 and §5.3).

A *variant* is a name and where training starts (``NAME=INIT``): ``encoder`` (the embedded
encoder: the paper's "no pre-training") or a registered checkpoint (e.g. one pre-trained on
synthetic pairs, §4, or fine-tuned on WMT first: the paper's BLEURT). Baselines are fixed
segment-level metrics (the paper's sentBLEU and BERTScore).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from assay.errors import NotFoundError, UsageError
from assay.metrics.registry import MetricSpec, create_metric

#: the init of a variant that starts from the embedded encoder (the paper's "no pre-training")
ENCODER = "encoder"
#: the paper's baselines (§5.2: "Moses sentBLEU and BERTscore")
BASELINES = ("sentbleu", "bertscore")

_VARIANT_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")


@dataclass(frozen=True)
class Variant:
    """Where one learned metric starts: ``init`` as given (``encoder`` or a checkpoint name or
    folder, or an encoder folder), and once resolved its ``folder`` (None: the embedded encoder)
    and checkpoint ``digest`` (None: not a checkpoint, i.e. an encoder without a rating head)."""

    name: str
    init: str
    folder: str | None = None
    digest: str | None = None

    @property
    def is_checkpoint(self) -> bool:
        return self.digest is not None

    def identity(self) -> dict[str, Any]:
        """What determines this variant's checkpoints: the init's digest, else the encoder."""
        return {"name": self.name, "init": self.digest or (self.folder or ENCODER)}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Variant:
        return cls(**data)


def parse_variant(text: str) -> Variant:
    """``NAME=INIT`` -> a variant (not yet resolved)."""
    name, sep, init = text.partition("=")
    name, init = name.strip(), init.strip()
    if not sep or not init or not _VARIANT_NAME.fullmatch(name):
        raise UsageError(f"--variant {text!r}: expected NAME=INIT, NAME of 1-40 lowercase letters, digits, '_' or "
                         f"'-' and INIT '{ENCODER}' or a checkpoint name or folder, e.g. "
                         "no-pretraining=encoder or pretrained=bleurt-synth")
    return Variant(name, init)


def check_variants(variants: Sequence[Variant]) -> list[Variant]:
    """At least one variant, names unique."""
    if not variants:
        raise UsageError(f"give at least one --variant NAME=INIT (e.g. no-pretraining={ENCODER})")
    names = [v.name for v in variants]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"--variant names must be unique; {', '.join(twice)} given more than once")
    return list(variants)


def check_baselines(baselines: Sequence[MetricSpec]) -> list[MetricSpec]:
    """Segment-level metrics with valid parameters (a corpus metric has no segment scores)."""
    for spec in baselines:
        try:
            metric = create_metric(spec)
        except (UsageError, NotFoundError) as exc:
            raise UsageError(f"--baseline {spec.name!r}: {exc}") from None
        if metric.stats_columns:
            raise UsageError(f"--baseline {spec.name!r} is a corpus-level metric; give a segment-level one "
                             "(e.g. sentbleu or bertscore)")
    labels = [baseline_label(s) for s in baselines]
    if len(set(labels)) != len(labels):
        raise UsageError("--baseline: the same metric is given twice")
    return list(baselines)


def baseline_label(spec: MetricSpec) -> str:
    """``sentbleu``, ``bertscore:layer=9``: how a baseline is named in the results."""
    params = ",".join(f"{k}={spec.params[k]}" for k in sorted(spec.params))
    return spec.name + (f":{params}" if params else "")

