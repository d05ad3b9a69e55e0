"""Lexical baselines from the reference libraries, not reimplemented.

sacrebleu (Post, 2018) for BLEU (Papineni et al., 2002), sentence BLEU, chrF (Popović, 2015) and
TER (Snover et al., 2006); rouge-score (Google's implementation of Lin, 2004) for ROUGE-1/2/L.

Names follow the level, as WMT's baselines do: ``bleu`` and ``corpus-chrf`` are corpus scores
(sacrebleu's ``corpus_score``: statistics summed over the test set, one score from the sums: WMT's
system-level BLEU and chrF), ``sentbleu`` and ``chrf`` segment scores (``sentence_score``: WMT's
segment-level sentBLEU and chrF). A corpus metric's segment rows carry its sufficient statistics.

BLEU's tokenizer follows the target language unless one is given, as sacrebleu chooses it when it
knows the target language (``BLEU(trg_lang=...)``): ``zh`` for Chinese, ``ja-mecab`` for Japanese,
``ko-mecab`` for Korean, ``13a`` for every other language and where the language is not known.
These are the official WMT baselines: the WMT23 organisers' BLEU is ``tok:zh`` on en-zh,
``tok:ja-mecab-0.996-IPA`` on en-ja and ``tok:13a`` elsewhere (the signatures printed in the
general task's automatic evaluation, wmt-conference/wmt23-news-systems ``scores/autoWMT23.tex``,
whose en-de corpus BLEU is mt-metrics-eval's ``BLEU-refA.sys.score`` to the last digit). The target
language of a segment is its group's language pair (:func:`assay.jobs.scoring.target_language`);
chrF needs no such choice (characters, ``nc:6|nw:0``, for every language).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

from assay.errors import UsageError
from assay.metrics import params as check
from assay.metrics.base import Metric, ScoringContext, SegmentScores
from assay.metrics.signature import package_version, parse_signature

MAX_NGRAM_ORDER = 4


def _bleu(metric: str, *, tokenize: str | None, trg_lang: str = "", **kwargs: Any) -> Any:
    """sacrebleu's BLEU with checked options (its own errors are a KeyError or an assert).
    ``tokenize`` None: sacrebleu's tokenizer for the target language ``trg_lang``."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.metrics.bleu import _TOKENIZERS

    if tokenize is not None:
        check.choice(metric, "tokenize", tokenize, _TOKENIZERS)
    check.choice(metric, "smooth_method", kwargs["smooth_method"], BLEU.SMOOTH_DEFAULTS)
    check.flag(metric, "lowercase", kwargs["lowercase"])
    try:
        return BLEU(tokenize=tokenize, trg_lang=trg_lang, **kwargs)
    except (ImportError, RuntimeError) as exc:  # e.g. ja-mecab without its optional package
        if tokenize is not None:
            raise UsageError(f"{metric}: tokenize {tokenize!r} cannot be used here: {_one_line(exc)}") from exc
        raise UsageError(
            f"{metric}: target language {trg_lang!r} is tokenized as sacrebleu and WMT's official BLEU do "
            f"({BLEU._TOKENIZER_MAP.get(trg_lang, BLEU.TOKENIZER_DEFAULT)}), which cannot be used here "
            f"({_one_line(exc)}); or pass -p tokenize=<name> to tokenize every language alike"
        ) from exc


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _signature_fields(metric: str, signature: str, *names: str) -> list[str]:
    """The values of fields ``names`` of a ``metric`` signature (the parameters of its corpus
    aggregate, :meth:`Metric.corpus_scorer`)."""
    fields = parse_signature(signature)
    if fields["metric"] != metric or any(name not in fields for name in names):
        raise UsageError(f"not a {metric} signature with fields {', '.join(names)}: {signature}")
    return [fields[name] for name in names]


class TargetLanguageBLEU:
    """One sacrebleu ``BLEU`` per target language: the ``tokenize`` given for every segment, or
    (None) sacrebleu's tokenizer for each segment's target language (module docstring). The
    signature's ``tok`` is the tokenizer that was used: one name where the scored segments share
    one (``13a``, ``zh``, ``ja-mecab-0.996-IPA``, as sacrebleu prints it), otherwise the default and
    the languages that differ from it (``13a,ja=ja-mecab-0.996-IPA,zh=zh``)."""

    def __init__(self, metric: str, tokenize: str | None, **options: Any) -> None:
        self.metric, self.tokenize, self.options = metric, tokenize, options
        self._scorers: dict[str, Any] = {}
        self.for_language(None)  # checks the options now, where the metric is built

    @property
    def depends_on_target_language(self) -> bool:
        return self.tokenize is None

    def for_language(self, language: str | None) -> Any:
        """The BLEU that scores a segment of this target language (None: not known)."""
        key = "" if self.tokenize is not None else (language or "")
        if key not in self._scorers:
            self._scorers[key] = _bleu(self.metric, tokenize=self.tokenize, trg_lang=key, **self.options)
        return self._scorers[key]

    def for_segments(self, n: int, context: ScoringContext | None) -> list[Any]:
        """The BLEU of each of ``n`` segments, by their target languages where the context has them."""
        languages = context.target_languages if context is not None else None
        if languages is None or not self.depends_on_target_language:
            return [self.for_language(None)] * n
        if len(languages) != n:
            raise UsageError(f"{self.metric}: {len(languages)} target languages for {n} segments")
        return [self.for_language(language) for language in languages]

    def sentence_statistics(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
                            context: ScoringContext | None) -> list[tuple[Any, list[int]]]:
        """(the BLEU that scored it, its sentence statistics: hypothesis and closest reference length,
        matched and total n-grams per order) of each segment, exactly as sacrebleu's
        ``sentence_score`` computes them, with each distinct reference set tokenized and counted once
        per call. Every system's output of a source shares its references, so a ``--scope outputs``
        run re-read each reference once per system (10 to 16 times on WMT17 and WMT18). The steps
        are sacrebleu's own, those ``sentence_score`` runs (``_preprocess_segment``,
        ``_extract_reference_info``, ``_compute_segment_statistics``), without the repeats;
        tests/test_scoring.py checks the result equal to ``sentence_bleu`` on real outputs."""
        bleus = self.for_segments(len(candidates), context)
        known: dict[tuple[int, tuple[str, ...]], dict[str, Any]] = {}
        out = []
        for bleu, cand, refs in zip(bleus, candidates, references, strict=True):
            key = (id(bleu), tuple(ref for ref in refs if ref is not None))
            info = known.get(key)
            if info is None:
                info = known[key] = bleu._extract_reference_info([bleu._preprocess_segment(ref) for ref in key[1]])
            out.append((bleu, bleu._compute_segment_statistics(bleu._preprocess_segment(cand), info)))
        return out

    def tok_field(self, languages: Iterable[str | None] = (None,)) -> str:
        """The signature's ``tok`` for segments of these target languages."""
        if self.tokenize is not None:
            return self.tokenize
        used = {language or "": self.for_language(language).tokenizer_signature for language in set(languages)}
        default = self.for_language(None).tokenizer_signature
        if len(set(used.values())) <= 1:
            return next(iter(used.values()), default)
        others = sorted(f"{language}={tok}" for language, tok in used.items() if language and tok != default)
        return ",".join([default, *others])


class SentenceBLEU(Metric):
    """Sentence-level BLEU as sacrebleu's ``sentence_bleu`` computes it (defaults: exponential
    smoothing, effective order, the target language's tokenizer: 13a but for Chinese, Japanese and
    Korean), the WMT ``sentBLEU`` baseline: on WMT23 en-de it equals mt-metrics-eval's official
    ``BLEU-refA.seg.score`` exactly (``tests/metrics/test_official_baselines.py``)."""

    name: ClassVar[str] = "sentbleu"

    def __init__(self, tokenize: str | None = None, smooth_method: str = "exp", lowercase: bool = False) -> None:
        self.tokenize, self.smooth_method, self.lowercase = tokenize, smooth_method, lowercase
        self._bleu = TargetLanguageBLEU(self.name, tokenize, smooth_method=smooth_method, lowercase=lowercase,
                                        effective_order=True)
        self.depends_on_target_language = self._bleu.depends_on_target_language

    def params(self) -> dict[str, object]:
        return {"tokenize": self.tokenize, "smooth_method": self.smooth_method, "lowercase": self.lowercase}

    def signature_params(self) -> dict[str, object]:
        return {"tok": self._bleu.tok_field(), "smooth": self.smooth_method,
                "case": "lc" if self.lowercase else "mixed", "eff": True, "sacrebleu": package_version("sacrebleu")}

    def target_language_fields(self, languages: Sequence[str | None]) -> dict[str, object]:
        return {"tok": self._bleu.tok_field(languages)}

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
              sources: Sequence[str | None] | None = None, *,
              context: ScoringContext | None = None) -> SegmentScores:
        self.check_inputs(candidates, references)
        scores = [bleu._compute_score_from_stats(stats).score
                  for bleu, stats in self._bleu.sentence_statistics(candidates, references, context)]
        return SegmentScores(np.array(scores))


class CorpusBLEU(Metric):
    """Corpus BLEU (sacrebleu defaults, the target language's tokenizer as :class:`SentenceBLEU`).
    Segment rows carry BLEU's sufficient statistics (hypothesis length, closest reference length,
    matched and total n-grams per order); the corpus score is computed from their sums with
    ``BLEU.compute_bleu``, exactly as ``corpus_score`` would (``eff:no``): on WMT23 en-de it equals
    mt-metrics-eval's official ``BLEU-refA.sys.score``. The per-segment ``score`` is the smoothed
    sentence BLEU."""

    name: ClassVar[str] = "bleu"
    has_sufficient_statistics: ClassVar[bool] = True
    stats_columns: ClassVar[tuple[str, ...]] = (
        "sys_len", "ref_len",
        *(f"correct_{n}" for n in range(1, MAX_NGRAM_ORDER + 1)),
        *(f"total_{n}" for n in range(1, MAX_NGRAM_ORDER + 1)),
    )

    def __init__(self, tokenize: str | None = None, smooth_method: str = "exp", lowercase: bool = False) -> None:
        from sacrebleu.metrics import BLEU

        self.tokenize, self.smooth_method, self.lowercase = tokenize, smooth_method, lowercase
        check.choice(self.name, "smooth_method", smooth_method, BLEU.SMOOTH_DEFAULTS)
        self._sentence = TargetLanguageBLEU(self.name, tokenize, smooth_method="exp", lowercase=lowercase,
                                            effective_order=True)
        self.depends_on_target_language = self._sentence.depends_on_target_language

    def params(self) -> dict[str, object]:
        return {"tokenize": self.tokenize, "smooth_method": self.smooth_method, "lowercase": self.lowercase}

    def signature_params(self) -> dict[str, object]:
        return {"tok": self._sentence.tok_field(), "smooth": self.smooth_method,
                "case": "lc" if self.lowercase else "mixed", "sacrebleu": package_version("sacrebleu")}

    def target_language_fields(self, languages: Sequence[str | None]) -> dict[str, object]:
        return {"tok": self._sentence.tok_field(languages)}

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
              sources: Sequence[str | None] | None = None, *,
              context: ScoringContext | None = None) -> SegmentScores:
        self.check_inputs(candidates, references)
        stats = np.zeros((len(candidates), len(self.stats_columns)), dtype=np.float64)
        scores = np.zeros(len(candidates))
        for i, (bleu, segment) in enumerate(self._sentence.sentence_statistics(candidates, references, context)):
            stats[i] = segment
            scores[i] = bleu._compute_score_from_stats(segment).score
        return SegmentScores(scores, stats=stats)

    @classmethod
    def corpus_scorer(cls, signature: str) -> Callable[[np.ndarray], float]:
        (smooth,) = _signature_fields(cls.name, signature, "smooth")
        return cls(smooth_method=smooth).corpus_score

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
    """chrF (Popović, 2015) via sacrebleu's ``CHRF`` (defaults: character 6-grams, no word n-grams,
    β = 2, whitespace ignored: ``nc:6|nw:0|space:no``), for every language: on WMT23 en-de the
    segment scores equal mt-metrics-eval's official ``chrF-refA.seg.score`` exactly."""

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


class CorpusChrF(ChrF):
    """Corpus chrF (Popović, 2015) as sacrebleu's ``CHRF.corpus_score`` computes it, the WMT
    system-level ``chrF`` baseline: the character (and word) n-gram counts of every segment are
    summed over the corpus and one F-score is computed from the sums, which is not the mean of
    segment chrF (on WMT23 en-de the two differ by up to several points). Segment rows carry the
    sufficient statistics sacrebleu extracts (hypothesis, reference and matched n-grams per order,
    against the segment's best reference); :meth:`corpus_score` computes sacrebleu's F-score of
    their sums, so bootstrap replicates re-aggregate without rescoring. On WMT23 en-de it equals
    mt-metrics-eval's official ``chrF-refA.sys.score`` (``tests/metrics/test_corpus_chrf.py``).
    The per-segment ``score`` is the segment chrF (:class:`ChrF`'s)."""

    name: ClassVar[str] = "corpus-chrf"
    has_sufficient_statistics: ClassVar[bool] = True
    #: the layout for the default orders (``nc:6|nw:0``); in general three columns per order,
    #: character orders 1..nc then word orders 1..nw, as sacrebleu's ``_get_match_statistics``
    stats_columns: ClassVar[tuple[str, ...]] = tuple(
        f"{count}_char{n}" for n in range(1, 7) for count in ("hyp", "ref", "match"))

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
              sources: Sequence[str | None] | None = None, *,
              context: ScoringContext | None = None) -> SegmentScores:
        self.check_inputs(candidates, references)
        width = 3 * (self.char_order + self.word_order)
        stats = np.zeros((len(candidates), width), dtype=np.float64)
        scores = np.zeros(len(candidates))
        for i, (cand, refs) in enumerate(zip(candidates, references, strict=True)):
            # what sacrebleu's sentence_score and corpus_score extract for one segment
            (row,) = self._chrf._extract_corpus_statistics([cand], [[ref] for ref in refs])
            stats[i] = row
            scores[i] = self._chrf._compute_score_from_stats(row).score
        return SegmentScores(scores, stats=stats)

    @classmethod
    def corpus_scorer(cls, signature: str) -> Callable[[np.ndarray], float]:
        nc, nw, beta = _signature_fields(cls.name, signature, "nc", "nw", "beta")
        try:
            return cls(char_order=int(nc), word_order=int(nw), beta=int(beta)).corpus_score
        except ValueError:
            raise UsageError(f"nc, nw and beta are not integers in {signature}") from None

    def corpus_score(self, stats: np.ndarray) -> float:
        totals = np.asarray(stats, dtype=np.float64).sum(axis=0) if np.ndim(stats) == 2 else np.asarray(stats)
        width = 3 * (self.char_order + self.word_order)
        if totals.shape != (width,):
            raise UsageError(f"{self.name}: {totals.shape[-1] if totals.ndim else 0} sufficient statistics per "
                             f"segment, expected {width} (3 per order, nc:{self.char_order}|nw:{self.word_order})")
        return float(self._chrf._compute_score_from_stats([int(x) for x in totals]).score)


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
