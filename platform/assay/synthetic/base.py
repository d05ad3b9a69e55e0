"""What a perturbation and a pre-training signal are (Sellam et al., 2020, §4.1 and §4.2).

A **perturbation** turns reference sentences ``z`` into candidates ``z̃`` (§4.1: mask filling,
backtranslation, word dropping). Its contract is declared on the class:

``role``
    ``"base"`` makes a candidate from a reference (mask filling, backtranslation, system outputs);
    ``"modifier"`` is applied on top of another perturbation's candidate (word dropping, "applied on
    about 30% of the data generated with the previous method", appendix A.1).
``family``
    What the candidate is, for the backtranslation flag signal (§4.2: "whether the perturbation
    was generated with backtranslation or with mask-filling"): ``mask_filling``,
    ``backtranslation`` (system outputs count as translations), ``word_dropping`` or
    ``failure_mode`` (MetricX-24's degenerate candidates; the flag is NaN for them).

A **signal** maps (reference, candidate) pairs to the targets of one pre-training task ``τ_k``
(Table 1): one float64 column per component (ROUGE: precision, recall, F), NaN where the signal
cannot be computed for a pair (a missing signal is NaN, never 0). ``kind`` is the loss of its task
(§4.3: regression, or classification over ``classes``); its weight ``γ_k`` in the pre-training
loss (eq. 1) belongs to the synthesis spec, not to the signal.

Both are plugins: they register in the entry-point groups ``assay.perturbations`` and
``assay.signals`` (:mod:`assay.synthetic.registry`), carry their parameters and render a signature
with :func:`assay.metrics.signature.render_signature`, so every stored pair says how it was made.
Model-based ones live in the worker layer and are only imported when used.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from assay.errors import PluginError
from assay.metrics.signature import render_signature

if TYPE_CHECKING:
    from assay.synthetic.corpus import Corpus

ROLES = ("base", "modifier")
FAMILIES = ("mask_filling", "backtranslation", "word_dropping", "failure_mode")
SIGNAL_KINDS = ("regression", "classification")


class SignedPlugin(ABC):
    """A named, versioned plugin whose parameters render its signature (perturbations, signals)."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"

    @abstractmethod
    def params(self) -> dict[str, Any]:
        """The constructor's parameters (JSON-serialisable), as recorded in the lineage."""

    def signature_params(self) -> dict[str, Any]:
        """The fields of the signature: by default the parameters, in order."""
        return self.params()

    def signature(self) -> str:
        return render_signature(self.name, self.signature_params(), self.version)


class Perturbation(SignedPlugin):
    """A way to make candidates from sentences (§4.1). Subclasses set ``name``, ``role`` and
    ``family``, take their parameters as keyword arguments and implement :meth:`perturb`."""

    role: ClassVar[str] = "base"
    family: ClassVar[str]

    def prepare(self, corpus: Corpus) -> None:
        """Called once with the corpus before any :meth:`perturb` (e.g. to learn a model from it)."""

    def eligible(self, corpus: Corpus, pool: np.ndarray) -> np.ndarray:
        """The corpus indices this perturbation can start from, among ``pool`` (the sentences the
        spec draws references from). Default: all of them."""
        return pool

    @abstractmethod
    def perturb(self, sentences: Sequence[str], rng: np.random.Generator) -> list[str]:
        """One candidate per sentence, in order; all randomness from ``rng``."""


@dataclass(frozen=True)
class PairBatch:
    """Pairs handed to a signal: ``references[i]`` is ``z``, ``candidates[i]`` is ``z̃``, and
    ``families[i]`` the family of the base perturbation that made ``z̃``."""

    references: Sequence[str]
    candidates: Sequence[str]
    families: Sequence[str]

    def __len__(self) -> int:
        return len(self.references)


class Signal(SignedPlugin):
    """A pre-training signal τ_k (§4.2). Subclasses set ``name``, ``kind`` (and ``classes`` for a
    classification), declare their ``components`` and implement :meth:`compute`."""

    kind: ClassVar[str] = "regression"
    classes: ClassVar[tuple[str, ...]] = ()

    @property
    def components(self) -> tuple[str, ...]:
        """Names of the columns this signal fills, ``()`` for a single column (e.g. BLEU)."""
        return ()

    def columns(self, key: str) -> tuple[str, ...]:
        """The table columns of this signal under ``key`` (its name, or an alias in the spec):
        ``signal_<key>`` or ``signal_<key>_<component>``."""
        parts = self.components
        return (f"signal_{key}",) if not parts else tuple(f"signal_{key}_{c}" for c in parts)

    @abstractmethod
    def compute(self, batch: PairBatch) -> dict[str, np.ndarray]:
        """Per component (``""`` for a single-column signal), float64 values, NaN where missing."""

    def checked(self, batch: PairBatch) -> dict[str, np.ndarray]:
        """:meth:`compute`, with its output checked against the declared components."""
        out = self.compute(batch)
        expected = self.components or ("",)
        if sorted(out) != sorted(expected):
            raise PluginError(f"signal {self.name!r} returned components {sorted(out)}, declared {list(expected)}")
        checked = {}
        for part in expected:
            values = np.asarray(out[part], dtype=np.float64).reshape(-1)
            if values.size != len(batch):
                raise PluginError(f"signal {self.name!r} returned {values.size} values for {len(batch)} pairs")
            checked[part] = values
        return checked
