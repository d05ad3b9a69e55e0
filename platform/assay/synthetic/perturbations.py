"""The perturbations that need no model (Sellam et al., 2020, §4.1 and appendix A.1).

``mask_filling``
    BLEURT's mask filling with the offline word trigram filler of :mod:`assay.synthetic.ngram`
    in place of BERT (no masked language model is reachable offline here; the worker layer's
    ``mask_filling_mlm`` fills with any Hugging Face masked LM). Masks are placed as in appendix A.1
    (:mod:`assay.synthetic.masking`: random words or one contiguous run, up to 15 masks) and filled
    by beam search of width 8 conditioned on both sides of each gap.
``word_dropping``
    "Given a synthetic example (z, z̃) we generate a pair (z, z̃′) by randomly dropping words from
    z̃. We draw the number of words to drop uniformly, up to the length of the sentence." (A.1). A
    modifier: the spec applies it on top of a share of the other perturbations' pairs ("about 30% of
    the data generated with the previous method"). Between 1 and all words are dropped, so an
    empty candidate is possible, as the paper intends ("void predictions, or sentence truncation",
    §4.1).
``system_outputs``
    The candidate is a real machine translation of the reference's source, from the corpus's WMT
    ``outputs``. It stands in for backtranslation when no translation model is configured: like
    the round trip, it is a translation of the same meaning by an MT system, with the
    "mispredictions" of real systems (§4.1); its family is therefore ``backtranslation``. Each
    reference's outputs are used in a seeded random order, each once before any repeats.
``failure_modes``
    The degenerate candidates MetricX-24 adds to its training data "to make the metric more robust
    to several common failure modes" (Juraska et al., 2024, §3): an empty candidate, gibberish (random
    letters in the reference's word lengths), a fluent but unrelated sentence (another sentence of the
    corpus), under-translation (a prefix of 20-80 % of the reference's words), duplication (the
    reference twice) and a copy of the reference. Each candidate takes one of the ``modes``,
    uniformly. MetricX-24 labels them with a fixed worst score; here the pre-training signals label
    them like every other pair (BLEU, ROUGE, chrF and BERTScore of an empty or unrelated candidate
    are low, of a copy maximal, of a duplicate high in recall and low in precision), so nothing
    about the modes is assumed beyond what the signals measure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from assay.errors import UsageError
from assay.metrics import params as check
from assay.synthetic.base import Perturbation
from assay.synthetic.corpus import KINDS
from assay.synthetic.masking import MAX_MASKS, sample_mask
from assay.synthetic.ngram import BEAM_WIDTH, KneserNeyTrigram

if TYPE_CHECKING:
    from assay.synthetic.corpus import Corpus


def _kinds(what: str, value: Any) -> tuple[str, ...]:
    kinds = (value,) if isinstance(value, str) else tuple(value)
    if not kinds or any(k not in KINDS for k in kinds):
        raise UsageError(f"{what}: train_kinds is {value!r} (expected a non-empty list of {', '.join(KINDS)})")
    return tuple(k for k in KINDS if k in kinds)


def apply_fill(words: Sequence[str], positions: Sequence[int] | np.ndarray, filled: Sequence[str]) -> str:
    """The sentence with the words at ``positions`` replaced by ``filled`` (empty fills removed)."""
    out = list(words)
    for position, word in zip(positions, filled, strict=True):
        out[int(position)] = word
    return " ".join(w for w in out if w)


class NgramMaskFilling(Perturbation):
    """Mask filling (§4.1, A.1) with a Kneser-Ney word trigram model learned from the corpus.

    ``max_masks``: at most this many masked words (A.1: 15); ``contiguous_share``: probability of
    the contiguous strategy (the paper uses both and gives no ratio; default one half);
    ``beam_width`` (A.1: 8); ``train_kinds``: the corpus sentences the model learns from.
    """

    name: ClassVar[str] = "mask_filling"
    family: ClassVar[str] = "mask_filling"

    def __init__(self, max_masks: int = MAX_MASKS, contiguous_share: float = 0.5, beam_width: int = BEAM_WIDTH,
                 train_kinds: Sequence[str] = KINDS) -> None:
        self.max_masks = check.integer(self.name, "max_masks", max_masks, minimum=1)
        self.contiguous_share = check.number(self.name, "contiguous_share", contiguous_share, low=0, high=1)
        self.beam_width = check.integer(self.name, "beam_width", beam_width, minimum=1)
        self.train_kinds = _kinds(self.name, train_kinds)
        self.model: KneserNeyTrigram | None = None

    def params(self) -> dict[str, Any]:
        return {"max_masks": self.max_masks, "contiguous_share": self.contiguous_share,
                "beam_width": self.beam_width, "train_kinds": list(self.train_kinds)}

    def signature_params(self) -> dict[str, Any]:
        return {"filler": "kn-trigram", "masks": self.max_masks, "contiguous": self.contiguous_share,
                "beam": self.beam_width, "lm": "+".join(self.train_kinds)}

    def prepare(self, corpus: Corpus) -> None:
        index = corpus.indices(self.train_kinds)
        self.model = KneserNeyTrigram(corpus.sentences[int(i)].split() for i in index)

    def perturb(self, sentences: Sequence[str], rng: np.random.Generator) -> list[str]:
        if self.model is None:
            raise UsageError(f"{self.name}: call prepare(corpus) before perturb (the filler learns from the corpus)")
        out = []
        for sentence in sentences:
            words = sentence.split()
            _, positions = sample_mask(np.ones(len(words), dtype=np.int64), rng, max_masks=self.max_masks,
                                       contiguous_share=self.contiguous_share)
            fill = self.model.fill(words, positions, self.beam_width)
            out.append(apply_fill(words, positions, fill.words))
        return out


class WordDropping(Perturbation):
    """Word dropping (A.1): between 1 and all of the candidate's words, uniformly many, dropped at
    uniformly random positions."""

    name: ClassVar[str] = "word_dropping"
    role: ClassVar[str] = "modifier"
    family: ClassVar[str] = "word_dropping"

    def params(self) -> dict[str, Any]:
        return {}

    def perturb(self, sentences: Sequence[str], rng: np.random.Generator) -> list[str]:
        out = []
        for sentence in sentences:
            words = sentence.split()
            if not words:
                out.append("")
                continue
            n_drop = int(rng.integers(1, len(words) + 1))
            dropped = set(rng.choice(len(words), n_drop, replace=False).tolist())
            out.append(" ".join(w for i, w in enumerate(words) if i not in dropped))
        return out


class SystemOutputs(Perturbation):
    """Real MT outputs of the reference's source as candidates (a stand-in for backtranslation;
    see the module docstring)."""

    name: ClassVar[str] = "system_outputs"
    family: ClassVar[str] = "backtranslation"

    def __init__(self) -> None:
        self._outputs: dict[str, list[str]] = {}
        self._next: dict[str, int] = {}

    def params(self) -> dict[str, Any]:
        return {}

    def prepare(self, corpus: Corpus) -> None:
        outputs: dict[str, list[str]] = {}
        for ref, cand in corpus.output_pairs.tolist():
            outputs.setdefault(corpus.sentences[ref], []).append(corpus.sentences[cand])
        self._outputs = outputs
        self._next = {}

    def eligible(self, corpus: Corpus, pool: np.ndarray) -> np.ndarray:
        with_outputs = np.unique(corpus.output_pairs[:, 0]) if corpus.output_pairs.size else np.zeros(0, np.int64)
        return np.intersect1d(pool, with_outputs)

    def perturb(self, sentences: Sequence[str], rng: np.random.Generator) -> list[str]:
        out = []
        for sentence in sentences:
            outputs = self._outputs.get(sentence)
            if not outputs:
                raise UsageError(f"{self.name}: no system output of the reference {sentence[:60]!r} in the corpus "
                                 "(call prepare(corpus) first; only references of to-English outputs are eligible)")
            used = self._next.get(sentence, 0)
            if used % len(outputs) == 0:  # a new round over this reference's outputs, in a new order
                order = rng.permutation(len(outputs))
                self._outputs[sentence] = outputs = [outputs[int(i)] for i in order]
            out.append(outputs[used % len(outputs)])
            self._next[sentence] = used + 1
        return out


#: :class:`FailureModes`' modes, in the order they are listed in its parameters
FAILURE_MODES = ("empty", "gibberish", "unrelated", "undertranslation", "duplication", "reference_copy")
_LETTERS = np.array(list("abcdefghijklmnopqrstuvwxyz"))


class FailureModes(Perturbation):
    """MetricX-24's degenerate candidates (see the module docstring). ``modes``: which of
    :data:`FAILURE_MODES` to make, each candidate one of them uniformly (default all)."""

    name: ClassVar[str] = "failure_modes"
    family: ClassVar[str] = "failure_mode"

    def __init__(self, modes: Sequence[str] | str = FAILURE_MODES) -> None:
        chosen = (modes,) if isinstance(modes, str) else tuple(modes)
        unknown = [m for m in chosen if m not in FAILURE_MODES]
        if not chosen or unknown:
            raise UsageError(f"{self.name}: modes {list(chosen)!r} (expected a non-empty list of "
                             f"{', '.join(FAILURE_MODES)})")
        self.modes = tuple(m for m in FAILURE_MODES if m in chosen)
        self._others: list[str] = []

    def params(self) -> dict[str, Any]:
        return {"modes": list(self.modes)}

    def signature_params(self) -> dict[str, Any]:
        return {"modes": "+".join(self.modes)}

    def prepare(self, corpus: Corpus) -> None:
        self._others = list(corpus.sentences)

    def perturb(self, sentences: Sequence[str], rng: np.random.Generator) -> list[str]:
        if "unrelated" in self.modes and len(self._others) < 2:
            raise UsageError(f"{self.name}: 'unrelated' needs a corpus of at least two sentences "
                             "(call prepare(corpus) first)")
        return [self._one(sentence, self.modes[int(rng.integers(len(self.modes)))], rng) for sentence in sentences]

    def _one(self, sentence: str, mode: str, rng: np.random.Generator) -> str:
        words = sentence.split()
        if mode == "empty" or not words:
            return ""
        if mode == "gibberish":
            return " ".join("".join(rng.choice(_LETTERS, len(w))) for w in words)
        if mode == "unrelated":
            while (other := self._others[int(rng.integers(len(self._others)))]) == sentence:
                pass
            return other
        if mode == "undertranslation":
            keep = min(max(1, round(len(words) * rng.uniform(0.2, 0.8))), max(1, len(words) - 1))
            return " ".join(words[:keep])
        if mode == "duplication":
            return f"{sentence} {sentence}"
        return sentence  # reference_copy
