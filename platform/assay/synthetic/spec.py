"""The synthesis spec: what synthetic pairs to make, from what, and what to label them with.

One typed, JSON-serialisable description (recorded whole in the stored version's lineage) of
BLEURT's pre-training data (Sellam et al., 2020, §4): the sentences (``sources``, ``exclude``,
``kinds``, length filters), the perturbations that make candidates (§4.1) with their shares, the
signals that label the pairs (§4.2) with their loss weights γ_k (eq. 1), the number of pairs and
the seed. :func:`default_spec` is the CPU recipe's.

Shares: the base perturbations' shares are the fractions of the pairs each makes and must sum to
1; a modifier's share is the fraction of all pairs it is applied to, on top of the base
perturbation (appendix A.1: word dropping on "about 30% of the data").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.config import DEFAULT_SEED
from assay.datasets.names import validate_name
from assay.errors import UsageError
from assay.synthetic.corpus import KINDS

_SIGNAL_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


@dataclass(frozen=True)
class PerturbationSpec:
    name: str
    """a registered perturbation (``assay.perturbations`` entry points)"""
    share: float
    """base: the fraction of pairs it makes; modifier: the fraction of pairs it is applied to"""
    params: Mapping[str, Any] = field(default_factory=dict)
    """its constructor's parameters"""

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "share": self.share, "params": dict(self.params)}


@dataclass(frozen=True)
class SignalSpec:
    name: str
    """a registered signal (``assay.signals`` entry points)"""
    weight: float = 1.0
    """γ_k, the weight of this task in the pre-training loss (eq. 1; the paper sets it by grid search)"""
    params: Mapping[str, Any] = field(default_factory=dict)
    """its constructor's parameters"""
    alias: str | None = None
    """the key of its columns (``signal_<key>...``) when not its name, e.g. two backtranslation
    likelihoods, en-de and en-fr, as in Table 1"""

    @property
    def key(self) -> str:
        return self.alias or self.name

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "weight": self.weight, "params": dict(self.params), "alias": self.alias}


@dataclass(frozen=True)
class SynthesisSpec:
    sources: tuple[str, ...]
    """dataset versions to draw sentences from (``wmt16``, ``wmt18@1``)"""
    perturbations: tuple[PerturbationSpec, ...]
    signals: tuple[SignalSpec, ...]
    n_pairs: int = 40_000
    """pairs to make"""
    exclude: tuple[str, ...] = ()
    """datasets never drawn from, e.g. the evaluation set (``wmt17``)"""
    kinds: tuple[str, ...] = ("references", "sources")
    """which corpus sentences are perturbed as references z (system outputs always pair a WMT
    reference with its outputs)"""
    min_tokens: int = 3
    """shortest sentence kept, in words"""
    max_tokens: int | None = 64
    """longest sentence kept, in words (None: no limit)"""
    seed: int = DEFAULT_SEED
    """every random draw derives from it: the same spec and data give the same pairs"""

    def __post_init__(self) -> None:
        for name in ("sources", "exclude", "kinds", "perturbations", "signals"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Sequence):
                raise UsageError(f"spec: {name} must be a list, not {value!r}")
            object.__setattr__(self, name, tuple(value))

    def validate(self) -> SynthesisSpec:
        """Check everything that can be checked without the data or the plugins' code."""
        if not self.sources:
            raise UsageError("spec: sources is empty (expected dataset versions, e.g. ['wmt16', 'wmt18'])")
        for name in self.exclude:
            validate_name(name)
        if isinstance(self.n_pairs, bool) or not isinstance(self.n_pairs, int) or self.n_pairs < 1:
            raise UsageError(f"spec: n_pairs is {self.n_pairs!r} (expected a positive integer)")
        if not self.kinds or any(k not in KINDS for k in self.kinds):
            raise UsageError(f"spec: kinds is {list(self.kinds)} (expected a non-empty list of {', '.join(KINDS)})")
        if isinstance(self.min_tokens, bool) or not isinstance(self.min_tokens, int) or self.min_tokens < 1:
            raise UsageError(f"spec: min_tokens is {self.min_tokens!r} (expected an integer >= 1)")
        if self.max_tokens is not None and (not isinstance(self.max_tokens, int) or self.max_tokens < self.min_tokens):
            raise UsageError(f"spec: max_tokens is {self.max_tokens!r} (expected an integer >= min_tokens, or null)")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise UsageError(f"spec: seed is {self.seed!r} (expected a non-negative integer)")
        if not self.perturbations:
            raise UsageError("spec: perturbations is empty (expected e.g. mask_filling and system_outputs)")
        names = [p.name for p in self.perturbations]
        if len(set(names)) != len(names):
            raise UsageError(f"spec: a perturbation is listed twice ({', '.join(names)})")
        for p in self.perturbations:
            if not isinstance(p.share, int | float) or not 0 <= p.share <= 1 or not math.isfinite(p.share):
                raise UsageError(f"spec: perturbation {p.name!r} has share {p.share!r} (expected a number in [0, 1])")
        if not self.signals:
            raise UsageError("spec: signals is empty (expected e.g. bleu, rouge, bertscore)")
        keys = [s.key for s in self.signals]
        if len(set(keys)) != len(keys):
            raise UsageError(f"spec: two signals share the key {sorted(k for k in keys if keys.count(k) > 1)[0]!r}; "
                             "give one an alias")
        for s in self.signals:
            if not s.key or not s.key[0].isalpha() or not set(s.key) <= _SIGNAL_KEY_CHARS or len(s.key) > 48:
                raise UsageError(f"spec: signal key {s.key!r} must be 1-48 letters, digits or '_', starting with a "
                                 "letter")
            if not isinstance(s.weight, int | float) or not math.isfinite(s.weight) or s.weight < 0:
                raise UsageError(f"spec: signal {s.key!r} has weight {s.weight!r} (expected a finite number >= 0)")
        return self

    def weights(self) -> dict[str, float]:
        """γ_k of every signal, by key."""
        return {s.key: float(s.weight) for s in self.signals}

    def as_dict(self) -> dict[str, Any]:
        return {"sources": list(self.sources), "exclude": list(self.exclude), "n_pairs": self.n_pairs,
                "kinds": list(self.kinds), "min_tokens": self.min_tokens, "max_tokens": self.max_tokens,
                "seed": self.seed, "perturbations": [p.as_dict() for p in self.perturbations],
                "signals": [s.as_dict() for s in self.signals]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SynthesisSpec:
        """The spec of a JSON object (as :meth:`as_dict` writes it); unknown keys are refused."""
        known = {"sources", "exclude", "n_pairs", "kinds", "min_tokens", "max_tokens", "seed", "perturbations",
                 "signals"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UsageError(f"spec: unknown key(s) {', '.join(unknown)} (expected {', '.join(sorted(known))})")
        try:
            perturbations = tuple(PerturbationSpec(str(p["name"]), p["share"], dict(p.get("params") or {}))
                                  for p in data.get("perturbations", ()))
            signals = tuple(SignalSpec(str(s["name"]), s.get("weight", 1.0), dict(s.get("params") or {}),
                                       s.get("alias")) for s in data.get("signals", ()))
        except (KeyError, TypeError, AttributeError) as exc:
            raise UsageError(f"spec: each perturbation needs a name and a share, each signal a name ({exc})") from exc
        options = {k: data[k] for k in ("n_pairs", "min_tokens", "max_tokens", "seed") if k in data}
        return cls(sources=tuple(data.get("sources", ())), exclude=tuple(data.get("exclude", ())),
                   kinds=tuple(data.get("kinds", ("references", "sources"))), perturbations=perturbations,
                   signals=signals, **options).validate()


def default_spec(n_pairs: int = 40_000, seed: int = DEFAULT_SEED) -> SynthesisSpec:
    """The CPU recipe: sentences of WMT16 and WMT18 (never WMT17, the evaluation set); half the
    pairs by n-gram mask filling and half from WMT system outputs (standing in for
    backtranslation), word dropping on 30% of them; the signals of Table 1 that need no translation
    or entailment model (BLEU, ROUGE, BERTScore with the embedded MiniLM, the backtranslation flag),
    each with γ = 1 (the paper's grid-searched values are not published)."""
    return SynthesisSpec(
        sources=("wmt16", "wmt18"),
        exclude=("wmt17",),
        n_pairs=n_pairs,
        perturbations=(PerturbationSpec("mask_filling", 0.5), PerturbationSpec("system_outputs", 0.5),
                       PerturbationSpec("word_dropping", 0.3)),
        signals=(SignalSpec("bleu"), SignalSpec("rouge"), SignalSpec("bertscore"), SignalSpec("backtrans_flag")),
        seed=seed,
    ).validate()
