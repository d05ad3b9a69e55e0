"""The pre-training signals that need no model (Sellam et al., 2020, §4.2, Table 1, appendix A.2).

``bleu``
    τ_BLEU: sentence BLEU. The paper used "the original Moses SENTENCE BLEU implementation, using
    the Moses tokenizer and the default parameters" (A.2); here sacrebleu's sentence BLEU (Assay's
    ``sentbleu`` metric: 13a tokenization, exponential smoothing, effective order by default; the
    ``smooth_method`` ``add-k`` is the closest to Moses' BLEU+1). Scale 0-100, as sacrebleu reports.
``rouge``
    τ_ROUGE = (P, R, F): "the seq2seq implementation of ROUGE-N" (A.2), here rouge-score (Assay's
    ``rouge1``/``rouge2``/``rougeL`` metrics), ROUGE-1 by default. The paper does not say which N;
    the seq2seq function's own default is N = 2 (``rouge_type="rouge2"``). Scale 0-1.
``chrf``
    chrF (Popović, 2015) via sacrebleu (Assay's ``chrf`` metric). Not one of BLEURT's signals; a
    cheap character-level one to pre-train on or ablate with. Scale 0-100.
``backtrans_flag``
    τ_backtran_flag: "a Boolean that indicates whether the perturbation was generated with
    backtranslation or with mask-filling" (§4.2), a two-class task: 0 for mask filling, 1 for
    backtranslation (the family of the pair's base perturbation; system outputs are translations),
    NaN for any other family.

The lexical signals call Assay's tested metric classes (:mod:`assay.metrics.lexical`), which call
sacrebleu and rouge-score: one implementation, whose numbers the tests check against those
libraries. Each distinct (reference, candidate) pair is scored once.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from assay.metrics import params as check
from assay.metrics.base import Metric
from assay.metrics.lexical import ChrF, Rouge1, Rouge2, RougeL, SentenceBLEU
from assay.synthetic.base import PairBatch, Signal

ROUGE_TYPES = {"rouge1": Rouge1, "rouge2": Rouge2, "rougeL": RougeL}


def _distinct(batch: PairBatch) -> tuple[list[str], list[list[str]], np.ndarray]:
    """(candidates, reference lists, inverse) of the distinct pairs of ``batch``."""
    index: dict[tuple[str, str], int] = {}
    inverse = np.fromiter((index.setdefault((r, c), len(index)) for r, c in
                           zip(batch.references, batch.candidates, strict=True)), dtype=np.int64, count=len(batch))
    return [c for _, c in index], [[r] for r, _ in index], inverse


class MetricSignal(Signal):
    """A signal read off one of Assay's metrics (``metric``): by default its main score, in one
    column, with the metric's parameters; a subclass may read its extra columns instead."""

    metric: Metric

    def params(self) -> dict[str, Any]:
        return self.metric.params()

    def signature_params(self) -> dict[str, Any]:
        return {"metric": self.metric.name, **self.metric.signature_params()}

    def compute(self, batch: PairBatch) -> dict[str, np.ndarray]:
        score, _, inverse = self._scores(batch)
        return {"": score[inverse]}

    def _scores(self, batch: PairBatch) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
        candidates, references, inverse = _distinct(batch)
        result = self.metric.score(candidates, references)
        return result.score, result.extra, inverse


class BleuSignal(MetricSignal):
    """τ_BLEU: sacrebleu sentence BLEU (see the module docstring)."""

    name: ClassVar[str] = "bleu"

    def __init__(self, tokenize: str = "13a", smooth_method: str = "exp", lowercase: bool = False) -> None:
        self.metric = SentenceBLEU(tokenize=tokenize, smooth_method=smooth_method, lowercase=lowercase)


class ChrfSignal(MetricSignal):
    """chrF via sacrebleu (see the module docstring)."""

    name: ClassVar[str] = "chrf"

    def __init__(self, char_order: int = 6, word_order: int = 0, beta: int = 2, lowercase: bool = False) -> None:
        self.metric = ChrF(char_order=char_order, word_order=word_order, beta=beta, lowercase=lowercase)


class RougeSignal(MetricSignal):
    """τ_ROUGE = (precision, recall, F) via rouge-score (see the module docstring)."""

    name: ClassVar[str] = "rouge"

    def __init__(self, rouge_type: str = "rouge1", use_stemmer: bool = False) -> None:
        self.rouge_type = check.choice(self.name, "rouge_type", rouge_type, ROUGE_TYPES)
        self.metric = ROUGE_TYPES[self.rouge_type](use_stemmer=use_stemmer)

    @property
    def components(self) -> tuple[str, ...]:
        return ("p", "r", "f")

    def params(self) -> dict[str, Any]:
        return {"rouge_type": self.rouge_type, **self.metric.params()}

    def compute(self, batch: PairBatch) -> dict[str, np.ndarray]:
        _, extra, inverse = self._scores(batch)
        return {"p": extra["precision"][inverse], "r": extra["recall"][inverse], "f": extra["f1"][inverse]}


class BacktranslationFlag(Signal):
    """τ_backtran_flag (§4.2): 1 for candidates made by backtranslation (or system outputs), 0 for
    mask filling, NaN otherwise."""

    name: ClassVar[str] = "backtrans_flag"
    kind: ClassVar[str] = "classification"
    classes: ClassVar[tuple[str, ...]] = ("mask_filling", "backtranslation")

    def params(self) -> dict[str, Any]:
        return {}

    def compute(self, batch: PairBatch) -> dict[str, np.ndarray]:
        codes = {family: float(i) for i, family in enumerate(self.classes)}
        return {"": np.array([codes.get(f, np.nan) for f in batch.families], dtype=np.float64)}
