"""BLEU*, the kernel of BLEU Neighbors.

Ethayarajh & Sadigh, "BLEU Neighbors: A Reference-less Approach to Automatic Evaluation" (2020),
Definition 3.1 (section 3): the *non-unigram BLEU-4 score* of a candidate ``x`` against a training
sentence ``s`` is

    BLEU*(x, s) = beta * (P_2 * P_3 * P_4) ** (1/3),
    beta = exp(min(0, 1 - |s| / |x|)),

where ``P_n`` is BLEU's clipped (modified) n-gram precision of ``x`` against ``s`` (section 2.1:
"each n-gram can be matched at most once") and ``beta`` is BLEU's brevity penalty. BLEU* is
**asymmetric**: ``x`` is the hypothesis (the precisions are over the candidate's n-grams and the
penalty is for a candidate shorter than ``s``), ``s`` plays the reference. BLEU Neighbors always
calls it as ``BLEU*(candidate, training sentence)`` (Definition 3.2).

Smoothing (the paper does not state one):

``"none"``
    The formula above. Any zero precision makes the score 0, so a pair needs a shared 4-gram.
    On short texts (HUSE summarization headlines, 4-13 tokens) almost no pair shares one and
    BLEU Neighbors makes no prediction at all (coverage 0.00 against the paper's 0.99).
``"add-one"`` (the default)
    Add one to the numerator and the denominator of ``P_2``, ``P_3`` and ``P_4``, exactly as
    NLTK's ``SmoothingFunction().method2`` inside ``sentence_bleu(..., weights=(0, 1/3, 1/3, 1/3))``
    (Lin & Och 2004, ORANGE). Two NLTK details are kept because they decide neighbour sets:
    the precision denominator is at least 1 (``max(1, count)``, before the add-one), and the
    score is 0 when the pair shares no unigram (NLTK returns 0 whenever the unigram numerator is
    0, even though the unigram weight is 0). It reproduces the independent HUSE numbers
    (coverage 0.94, Spearman 0.269, MSE 0.0226; paper 0.99 / 0.325 / 0.0213); without the
    unigram rule every short sentence is a neighbour of every other one, which exceeds the
    ``b`` bound and the coverage falls to about 0.0. That is why it is the default.

All scores are computed by :func:`bleu_star_from_counts`, a vectorised formula over integer
sufficient statistics, so that the scalar function, the all-pairs kernel and the n-gram index
produce bit-identical floats (the index's results are checked for identity, not closeness).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from assay.errors import UsageError
from assay.metrics.signature import render_signature

Smoothing = Literal["none", "add-one"]
SMOOTHINGS: tuple[Smoothing, ...] = ("none", "add-one")
#: Reproduces the independent HUSE numbers best (see the module docstring).
DEFAULT_SMOOTHING: Smoothing = "add-one"
#: BLEU* uses the 2-, 3- and 4-gram precisions (Definition 3.1).
ORDERS: tuple[int, ...] = (2, 3, 4)
VERSION = "1"

Tokenizer = Callable[[str], Sequence[str]]


def whitespace_tokenize(text: str) -> list[str]:
    """Split on whitespace: the texts are expected to be lowercased and tokenized already."""
    return text.split()


def check_smoothing(smoothing: str) -> Smoothing:
    """``smoothing`` if it is one of :data:`SMOOTHINGS`, else a ``UsageError`` naming the choices."""
    if smoothing not in SMOOTHINGS:
        raise UsageError(f"unknown BLEU* smoothing {smoothing!r}; expected one of {', '.join(SMOOTHINGS)}")
    return smoothing


def signature(smoothing: Smoothing = DEFAULT_SMOOTHING, tokenizer: str = "whitespace") -> str:
    """The score's signature, e.g. ``bleu_star|smooth:add-one|tok:whitespace|v:1|assay:0.1.0``."""
    return render_signature("bleu_star", {"smooth": check_smoothing(smoothing), "tok": tokenizer}, VERSION)


@dataclass(frozen=True)
class BleuStarCounts:
    """Sufficient statistics of one (candidate, training sentence) pair.

    ``matches[k]`` is the clipped match count of the ``ORDERS[k]``-grams, i.e. the sum over the
    candidate's n-grams ``g`` of ``min(count_x(g), count_s(g))``.
    """

    candidate_length: int
    reference_length: int
    matches: tuple[int, int, int]
    shares_unigram: bool


def ngram_counts(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    """The multiset of ``n``-grams of ``tokens``."""
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def clipped_matches(candidate: Counter[tuple[str, ...]], reference: Counter[tuple[str, ...]]) -> int:
    """BLEU's clipped match count: each candidate n-gram matches at most as often as in ``reference``."""
    return sum(min(count, reference[gram]) for gram, count in candidate.items() if gram in reference)


def bleu_star_counts(candidate: Sequence[str], reference: Sequence[str]) -> BleuStarCounts:
    """Count the statistics BLEU* needs for one pair (plain Python; the reference computation)."""
    m2, m3, m4 = (clipped_matches(ngram_counts(candidate, n), ngram_counts(reference, n)) for n in ORDERS)
    return BleuStarCounts(
        candidate_length=len(candidate),
        reference_length=len(reference),
        matches=(m2, m3, m4),
        shares_unigram=not set(candidate).isdisjoint(reference),
    )


def brevity_penalty(candidate_length: ArrayLike, reference_length: ArrayLike) -> NDArray[np.float64]:
    """``exp(min(0, 1 - |s| / |x|))`` (Definition 3.1); 0 for an empty candidate, as in NLTK."""
    cand = np.asarray(candidate_length, dtype=np.int64)
    ref = np.asarray(reference_length, dtype=np.int64)
    ratio = ref / np.maximum(cand, 1)
    penalty = np.exp(np.minimum(0.0, 1.0 - ratio))
    return np.where(cand > 0, penalty, 0.0)


def bleu_star_from_counts(
    m2: ArrayLike,
    m3: ArrayLike,
    m4: ArrayLike,
    candidate_length: ArrayLike,
    reference_length: ArrayLike,
    shares_unigram: ArrayLike,
    smoothing: Smoothing = DEFAULT_SMOOTHING,
) -> NDArray[np.float64]:
    """BLEU* from integer statistics, element-wise over arrays (Definition 3.1).

    The precision of order ``n`` is ``m_n / max(1, c_n)`` with ``c_n = max(0, |x| - n + 1)`` the
    candidate's n-gram count (``(m_n + 1) / (max(1, c_n) + 1)`` with add-one smoothing). The
    geometric mean is taken as the cube root of one exact integer ratio, so the result does not
    depend on the order of floating-point operations.
    """
    smoothing = check_smoothing(smoothing)
    cand = np.asarray(candidate_length, dtype=np.int64)
    counts = [np.asarray(m, dtype=np.int64) for m in (m2, m3, m4)]
    totals = [np.maximum(cand - n + 1, 1) for n in ORDERS]
    if smoothing == "add-one":
        numerator = (counts[0] + 1) * (counts[1] + 1) * (counts[2] + 1)
        denominator = (totals[0] + 1) * (totals[1] + 1) * (totals[2] + 1)
        numerator = np.where(np.asarray(shares_unigram, dtype=bool), numerator, 0)
    else:
        numerator = counts[0] * counts[1] * counts[2]
        denominator = totals[0] * totals[1] * totals[2]
    mean = np.cbrt(numerator / denominator)
    return np.asarray(brevity_penalty(cand, reference_length) * mean, dtype=np.float64)


def bleu_star(
    candidate: str,
    reference: str,
    *,
    smoothing: Smoothing = DEFAULT_SMOOTHING,
    tokenize: Tokenizer = whitespace_tokenize,
) -> float:
    """BLEU*(candidate, reference) of two texts (Ethayarajh & Sadigh 2020, Definition 3.1).

    ``reference`` is the training sentence ``s``; the score is asymmetric (see the module docstring).
    """
    counts = bleu_star_counts(tokenize(candidate), tokenize(reference))
    m2, m3, m4 = counts.matches
    score = bleu_star_from_counts(
        m2, m3, m4, counts.candidate_length, counts.reference_length, counts.shares_unigram, smoothing
    )
    return float(score)
