"""What a metric is in Assay: a name, a version and parameters that render a signature, a declared
contract saying what scoring must hand it, and a function from (candidate, references, source)
triples to segment scores.

The contract is declared on the class, never discovered: scoring reads these attributes and passes
what they ask for in one typed :class:`ScoringContext`.

``needs_references``
    Every segment must have at least one reference (False: a reference-less estimator).
``needs_human_scores``
    The metric learns from the human scores of the scored set (BLEU Neighbors, Ethayarajh &
    Sadigh 2020, predicts each segment from its judged neighbours): ``context.human``.
``depends_on_segment_set``
    A segment's score depends on the other segments of the scored set (leave-one-out): the set's
    segment keys join the signature and the whole set is scored in one shard.
``depends_on_reference_corpus``
    A segment's score depends on every reference of the scored set (BERTScore's idf weights,
    Zhang et al. 2020 §3 "Importance Weighting"): ``context.reference_corpus`` holds them and their
    multiset joins the signature; shards stay independent.
``depends_on_target_language``
    A segment's score depends on its target language (BLEU's tokenizer: ``zh`` for Chinese,
    ``ja-mecab`` for Japanese, as sacrebleu and WMT choose it): ``context.target_languages`` holds
    each segment's (its group's language pair), and :meth:`Metric.target_language_fields` of the
    scored set's languages replace the signature's fields that name the choice.
``has_sufficient_statistics``
    The corpus score is not a mean of segment scores (corpus BLEU): ``score`` returns per-segment
    statistics named by ``stats_columns`` and ``corpus_score`` aggregates their sums, so the metric
    is never rerun (sacrebleu's design: score once, aggregate many times).
``model_based``
    Scores come from model weights; :meth:`Metric.model_digest` identifies them.
``languages``
    Target languages the metric's model covers (``frozenset({"en"})`` for the embedded English
    MiniLM); None: any language. Scoring leaves uncovered language pairs out unless asked not to.
``may_abstain``
    A NaN score means "no prediction" (stored as null), as BLEU Neighbors declares where its
    evidence thresholds are not met. Every other metric's non-finite score is refused.

The two set dependencies, ``depends_on_target_language`` and ``languages`` may be set per instance
where a parameter decides them (BERTScore's ``idf``, its ``model``, BLEU's ``tokenize``); the
others are class-level facts (``ClassVar``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from assay.errors import MetricOutputError, UsageError
from assay.metrics.signature import render_signature


@dataclass(frozen=True)
class ScoringContext:
    """What a metric may need beyond its segments; scoring fills the fields the contract asks for."""

    human: Sequence[float | None] | None = None
    """Human score of every segment (``needs_human_scores``), None where a segment has none."""
    reference_corpus: Sequence[str] | None = None
    """Every reference of the whole scored set, duplicates included (``depends_on_reference_corpus``)."""
    target_languages: Sequence[str | None] | None = None
    """Target language of every segment, None where not known (``depends_on_target_language``)."""


@dataclass
class SegmentScores:
    """Scores of n segments, in input order."""

    score: np.ndarray
    """The metric's main score, float64, shape (n,)."""
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    """Further per-segment scores, e.g. ``precision``/``recall``/``f1`` for BERTScore."""
    stats: np.ndarray | None = None
    """Sufficient statistics, shape (n, k), for metrics whose corpus score is not a mean."""
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.score = np.asarray(self.score, dtype=np.float64).reshape(-1)
        n = len(self.score)
        for name, values in self.extra.items():
            self.extra[name] = np.asarray(values, dtype=np.float64)
            if len(self.extra[name]) != n:
                raise MetricOutputError(f"extra score {name!r} has {len(values)} values for {n} segments")
        if self.stats is not None:
            self.stats = np.asarray(self.stats, dtype=np.float64)
            if len(self.stats) != n:
                raise MetricOutputError(f"stats have {len(self.stats)} rows for {n} segments")


class Metric(ABC):
    """Base class of every metric; subclasses set ``name`` and ``version``, declare their contract
    (module docstring) and score segments. A metric registers under ``name`` in the entry-point
    group ``assay.metrics`` (see :mod:`assay.metrics.registry`)."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs_references: ClassVar[bool] = True
    needs_human_scores: ClassVar[bool] = False
    depends_on_segment_set: bool = False
    depends_on_reference_corpus: bool = False
    depends_on_target_language: bool = False
    has_sufficient_statistics: ClassVar[bool] = False
    model_based: ClassVar[bool] = False
    languages: frozenset[str] | None = None
    may_abstain: ClassVar[bool] = False
    #: names of ``SegmentScores.extra`` columns this metric produces
    extra_columns: ClassVar[tuple[str, ...]] = ()
    #: names of the sufficient-statistics columns (``has_sufficient_statistics``)
    stats_columns: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.has_sufficient_statistics and not cls.stats_columns:
            raise TypeError(f"{cls.__name__} declares has_sufficient_statistics but names no stats_columns")

    @property
    def depends_on_scored_set(self) -> bool:
        """True when the signature depends on the scored set: its segments or references (a
        segment's score depends on them), or its target languages (BLEU's tokenizer)."""
        return self.depends_on_segment_set or self.depends_on_reference_corpus or self.depends_on_target_language

    @abstractmethod
    def params(self) -> dict[str, object]:
        """The constructor's parameters as given (JSON-serialisable)."""

    def signature_params(self) -> dict[str, object]:
        """The signature's fields: everything that changes the scores. ``params()`` by default;
        model-based metrics add the model digest, tokenizer and library versions."""
        return self.params()

    def signature(self, extra: Mapping[str, object] | None = None) -> str:
        """The metric's signature (:func:`assay.metrics.signature.render_signature`); ``extra``
        fields (the scored set's digest) go before the versions."""
        return render_signature(self.name, {**self.signature_params(), **(extra or {})}, self.version)

    def target_language_fields(self, languages: Sequence[str | None]) -> dict[str, object]:
        """Signature fields for scoring segments of these target languages
        (``depends_on_target_language``); they replace the same fields of :meth:`signature_params`."""
        return {}

    def model_digest(self) -> str | None:
        """sha256 of the weights a model-based metric scores with. None for a metric that is not
        model-based, and for a model whose weights cannot be digested when the caller opted out
        (then scores are never cached); otherwise :class:`UndigestedModelError`."""
        return None

    def checkpoint_digest(self) -> str | None:
        """The digest of the learned-metric checkpoint this metric scores with (what its signature's
        ``checkpoint:`` field shows shortened, and what its stored scores record in full); None for
        a metric that does not score with a checkpoint."""
        return None

    @abstractmethod
    def score(
        self,
        candidates: Sequence[str],
        references: Sequence[Sequence[str]],
        sources: Sequence[str | None] | None = None,
        *,
        context: ScoringContext | None = None,
    ) -> SegmentScores:
        """Score each candidate against its references (and source, where used)."""

    def corpus_score(self, stats: np.ndarray) -> float:
        """The corpus score from summed sufficient statistics (``has_sufficient_statistics``)."""
        raise UsageError(f"{self.name} has no corpus-level aggregate other than the mean")

    @classmethod
    def corpus_scorer(cls, signature: str) -> Callable[[np.ndarray], float]:
        """:meth:`corpus_score` as the metric that rendered ``signature`` computes it: a metric
        whose aggregate has parameters (corpus BLEU's smoothing, corpus chrF's β) reads them back
        from the signature's fields, so stored statistics are aggregated as they were scored.
        By default the default instance's (an aggregate without parameters)."""
        return cls().corpus_score

    def check_inputs(self, candidates: Sequence[str], references: Sequence[Sequence[str]]) -> None:
        if len(candidates) != len(references):
            raise UsageError(f"{self.name}: {len(candidates)} candidates but {len(references)} reference lists")
        if self.needs_references and any(len(refs) == 0 for refs in references):
            missing = sum(1 for refs in references if len(refs) == 0)
            raise UsageError(f"{self.name} needs references, but {missing} segments have none")


def check_scores(metric: Metric, result: SegmentScores, n: int, signature: str) -> None:
    """Refuse numbers that must not be stored: a wrong number of scores, or non-finite ones (NaN
    only where the metric ``may_abstain``; infinities never). One error names the signature and
    counts the segments, so nothing of the batch is written."""
    if len(result.score) != n:
        raise MetricOutputError(f"{signature}: returned {len(result.score)} scores for {n} segments")
    score = result.score
    bad = np.isinf(score) if metric.may_abstain else ~np.isfinite(score)
    if result.stats is not None:
        bad = bad | ~np.isfinite(result.stats).all(axis=1)
    count = int(bad.sum())
    if count:
        kinds = sorted({"NaN" if np.isnan(v) else "infinite" for v in score[bad] if not np.isfinite(v)})
        what = f"{'/'.join(kinds)} scores" if kinds else "non-finite sufficient statistics"
        raise MetricOutputError(
            f"{signature}: {what} for {count} of {n} segments; nothing was stored. "
            "Check the model or checkpoint (e.g. NaN weights from a diverged training run)"
        )
