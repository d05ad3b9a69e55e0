"""Lexical baselines from the reference libraries, not reimplemented.

sacrebleu (Post, 2018) for BLEU (Papineni et al., 2002), sentence BLEU, chrF (Popović, 2015) and
TER (Snover et al., 2006); rouge-score (Google's implementation of Lin, 2004) for ROUGE-1/2/L.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from assay.errors import UsageError
from assay.metrics import params as check
from assay.metrics.base import Metric, ScoringContext, SegmentScores
from assay.metrics.signature import package_version

MAX_NGRAM_ORDER = 4


def _bleu(metric: str, **kwargs: Any) -> Any:
    """sacrebleu's BLEU with checked options (its own errors are a KeyError or an assert)."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.metrics.bleu import _TOKENIZERS

    check.choice(metric, "tokenize", kwargs["tokenize"], _TOKENIZERS)
    check.choice(metric, "smooth_method", kwargs["smooth_method"], BLEU.SMOOTH_DEFAULTS)
    check.flag(metric, "lowercase", kwargs["lowercase"])
    try:
        return BLEU(**kwargs)
    except (ImportError, RuntimeError) as exc:  # e.g. ja-mecab without its optional package
        raise UsageError(f"{metric}: tokenize {kwargs['tokenize']!r} cannot be used here: {exc}") from exc


class SentenceBLEU(Metric):
    """Sentence-level BLEU as sacrebleu's ``sentence_bleu`` computes it (defaults: 13a
    tokenization, exponential smoothing, effective order), the WMT ``sentBLEU`` baseline."""

    name: ClassVar[str] = "sentbleu"

    def __init__(self, tokenize: str = "13a", smooth_method: str = "exp", lowercase: bool = False) -> None:
        self.tokenize, self.smooth_method, self.lowercase = tokenize, smooth_method, lowercase
        self._bleu = _bleu(self.name, tokenize=tokenize, smooth_method=smooth_method, lowercase=lowercase,
                           effective_order=True)

    def params(self) -> dict[str, object]:
        return {"tokenize": self.tokenize, "smooth_method": self.smooth_method, "lowercase": self.lowercase}

    def signature_params(self) -> dict[str, object]:
        return {"tok": self.tokenize, "smooth": self.smooth_method, "case": "lc" if self.lowercase else "mixed",
                "eff": True, "sacrebleu": package_version("sacrebleu")}

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
              sources: Sequence[str | None] | None = None, *,
              context: ScoringContext | None = None) -> SegmentScores:
        self.check_inputs(candidates, references)
        scores = [self._bleu.sentence_score(c, list(r)).score for c, r in zip(candidates, references, strict=True)]
        return SegmentScores(np.array(scores))


class CorpusBLEU(Metric):
    """Corpus BLEU (sacrebleu defaults). Segment rows carry BLEU's sufficient statistics
    (hypothesis length, closest reference length, matched and total n-grams per order); the
    corpus score is computed from their sums with ``BLEU.compute_bleu``, exactly as
    ``corpus_score`` would. The per-segment ``score`` is the smoothed sentence BLEU."""

    name: ClassVar[str] = "bleu"
    has_sufficient_statistics: ClassVar[bool] = True
    stats_columns: ClassVar[tuple[str, ...]] = (
        "sys_len", "ref_len",
        *(f"correct_{n}" for n in range(1, MAX_NGRAM_ORDER + 1)),
        *(f"total_{n}" for n in range(1, MAX_NGRAM_ORDER + 1)),
    )

    def __init__(self, tokenize: str = "13a", smooth_method: str = "exp", lowercase: bool = False) -> None:
        self.tokenize, self.smooth_method, self.lowercase = tokenize, smooth_method, lowercase
        self._bleu = _bleu(self.name, tokenize=tokenize, smooth_method=smooth_method, lowercase=lowercase)
        self._sentence = _bleu(self.name, tokenize=tokenize, smooth_method="exp", lowercase=lowercase,
                               effective_order=True)

    def params(self) -> dict[str, object]:
        return {"tokenize": self.tokenize, "smooth_method": self.smooth_method, "lowercase": self.lowercase}

    def signature_params(self) -> dict[str, object]:
        return {"tok": self.tokenize, "smooth": self.smooth_method, "case": "lc" if self.lowercase else "mixed",
                "sacrebleu": package_version("sacrebleu")}

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
              sources: Sequence[str | None] | None = None, *,
              context: ScoringContext | None = None) -> SegmentScores:
        self.check_inputs(candidates, references)
        stats = np.zeros((len(candidates), len(self.stats_columns)), dtype=np.float64)
        scores = np.zeros(len(candidates))
        for i, (cand, refs) in enumerate(zip(candidates, references, strict=True)):
            result = self._sentence.sentence_score(cand, list(refs))
            stats[i] = [result.sys_len, result.ref_len, *result.counts, *result.totals]
            scores[i] = result.score
        return SegmentScores(scores, stats=stats)

    def corpus_score(self, stats: np.ndarray) -> float:
        from sacrebleu.metrics import BLEU

        totals = np.asarray(stats, dtype=np.float64).sum(axis=0) if np.ndim(stats) == 2 else np.asarray(stats)
        k = MAX_NGRAM_ORDER
        result = BLEU.compute_bleu(
            correct=[int(x) for x in totals[2:2 + k]],
            total=[int(x) for x in totals[2 + k:2 + 2 * k]],
            sys_len=int(totals[0]),
            ref_len=int(totals[1]),
            smooth_method=self.smooth_method,
        )
        return float(result.score)


class ChrF(Metric):
    """chrF (Popović, 2015) via sacrebleu's ``CHRF`` (defaults: character 6-grams, β = 2)."""

    name: ClassVar[str] = "chrf"

    def __init__(self, char_order: int = 6, word_order: int = 0, beta: int = 2, lowercase: bool = False) -> None:
        from sacrebleu.metrics import CHRF

        self.char_order = check.integer(self.name, "char_order", char_order, minimum=1)
        self.word_order = check.integer(self.name, "word_order", word_order, minimum=0)
        self.beta = check.integer(self.name, "beta", beta, minimum=0)
        self.lowercase = check.flag(self.name, "lowercase", lowercase)
        self._chrf = CHRF(char_order=char_order, word_order=word_order, beta=beta, lowercase=lowercase)

    def params(self) -> dict[str, object]:
        return {"char_order": self.char_order, "word_order": self.word_order, "beta": self.beta,
                "lowercase": self.lowercase}

    def signature_params(self) -> dict[str, object]:
        return {"nc": self.char_order, "nw": self.word_order, "beta": self.beta,
                "case": "lc" if self.lowercase else "mixed", "sacrebleu": package_version("sacrebleu")}

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
              sources: Sequence[str | None] | None = None, *,
              context: ScoringContext | None = None) -> SegmentScores:
        self.check_inputs(candidates, references)
        return SegmentScores(np.array([self._chrf.sentence_score(c, list(r)).score
                                       for c, r in zip(candidates, references, strict=True)]))


class TER(Metric):
    """Translation Edit Rate (Snover et al., 2006) via sacrebleu's ``TER``. Lower is better, so
    the main score is the *negated* TER: every Assay score correlates positively with quality.
    ``ter`` (the raw edit rate) is kept as an extra column."""

    name: ClassVar[str] = "ter"
    extra_columns: ClassVar[tuple[str, ...]] = ("ter",)

    def __init__(self, normalized: bool = False, case_sensitive: bool = False) -> None:
        from sacrebleu.metrics import TER as SacreTER

        self.normalized = check.flag(self.name, "normalized", normalized)
        self.case_sensitive = check.flag(self.name, "case_sensitive", case_sensitive)
        self._ter = SacreTER(normalized=normalized, case_sensitive=case_sensitive)

    def params(self) -> dict[str, object]:
        return {"normalized": self.normalized, "case_sensitive": self.case_sensitive}

    def signature_params(self) -> dict[str, object]:
        return {"norm": self.normalized, "case": "mixed" if self.case_sensitive else "lc",
                "sign": "negated", "sacrebleu": package_version("sacrebleu")}

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
              sources: Sequence[str | None] | None = None, *,
              context: ScoringContext | None = None) -> SegmentScores:
        self.check_inputs(candidates, references)
        ter = np.array([self._ter.sentence_score(c, list(r)).score
                        for c, r in zip(candidates, references, strict=True)])
        return SegmentScores(-ter, extra={"ter": ter})


class _Rouge(Metric):
    """ROUGE (Lin, 2004) via the rouge-score package. Main score: F-measure; precision and recall
    are extra columns. Several references: rouge-score's ``score_multi`` (the reference with the
    best F)."""

    extra_columns: ClassVar[tuple[str, ...]] = ("precision", "recall", "f1")

    def __init__(self, use_stemmer: bool = False) -> None:
        from rouge_score import rouge_scorer

        self.use_stemmer = check.flag(self.name, "use_stemmer", use_stemmer)
        self._scorer = rouge_scorer.RougeScorer([self.name], use_stemmer=use_stemmer)

    def params(self) -> dict[str, object]:
        return {"use_stemmer": self.use_stemmer}

    def signature_params(self) -> dict[str, object]:
        return {"stem": self.use_stemmer, "rouge_score": package_version("rouge-score")}

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
              sources: Sequence[str | None] | None = None, *,
              context: ScoringContext | None = None) -> SegmentScores:
        self.check_inputs(candidates, references)
        p, r, f = (np.zeros(len(candidates)) for _ in range(3))
        for i, (cand, refs) in enumerate(zip(candidates, references, strict=True)):
            result: Any = self._scorer.score_multi(list(refs), cand)[self.name]
            p[i], r[i], f[i] = result.precision, result.recall, result.fmeasure
        return SegmentScores(f, extra={"precision": p, "recall": r, "f1": f})


class Rouge1(_Rouge):
    """ROUGE-1: unigram overlap."""

    name: ClassVar[str] = "rouge1"


class Rouge2(_Rouge):
    """ROUGE-2: bigram overlap."""

    name: ClassVar[str] = "rouge2"


class RougeL(_Rouge):
    """ROUGE-L: longest common subsequence."""

    name: ClassVar[str] = "rougeL"
