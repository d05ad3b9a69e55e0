"""BLEU Neighbors: reference-less quality estimation by nearest neighbours in sentence space.

Ethayarajh & Sadigh, "BLEU Neighbors: A Reference-less Approach to Automatic Evaluation" (2020).
Given training sentences ``S`` with known qualities ``q(s)`` and a candidate ``x``:

* the neighbours of ``x`` are ``N = {s in S | k(x, s) >= tau}`` for a kernel ``k``, BLEU* by
  default (Definitions 3.1 and 3.2, section 3);
* the estimate is the mean neighbour quality, defined only when there is enough evidence,
  ``a <= |N| <= b |S|`` (equation 3); otherwise the prediction is *undefined* and is returned as
  ``None``, never as 0. Coverage is the share of candidates with a defined prediction
  (Definition 3.3);
* defaults ``tau = 0.08, a = 5, b = 0.66`` (sections 3 and 4, "Threshold Settings").

Two modes: train -> test (:meth:`BleuNeighbors.predict`) and leave-one-out, where each sentence is
predicted from all the others, ``|S| = n - 1`` (:meth:`BleuNeighbors.leave_one_out`, section 4,
as on the HUSE data). Other kernels plug in through :class:`NeighborKernel` (section 4, "Other
Kernel Functions": ROUGE with ``tau = 0.06``, BERTScore with ``tau = 0.10``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from assay.errors import UsageError
from assay.metrics.bleu_star import (
    DEFAULT_SMOOTHING,
    Smoothing,
    Tokenizer,
    check_smoothing,
    whitespace_tokenize,
)
from assay.metrics.neighbors_index import AllPairsBleuStar, BleuStarIndex, neighbors_csr
from assay.metrics.signature import render_signature

VERSION = "1"
DEFAULT_A = 5
DEFAULT_B = 0.66


class NeighborKernel(Protocol):
    """A similarity kernel that finds neighbours (Ethayarajh & Sadigh 2020, sections 3 and 4).

    ``neighbors`` returns a CSR matrix of shape ``(len(candidates), len(train))`` holding
    ``k(candidates[i], train[j])`` for exactly the pairs with ``k >= tau`` (``tau > 0``); with
    ``exclude_self`` the candidates are the training texts and the pairs ``(i, i)`` are left out.
    """

    name: str
    default_tau: float

    def params(self) -> dict[str, object]:
        """Everything that changes the similarities, for the signature."""
        ...

    def neighbors(
        self, candidates: Sequence[str], train: Sequence[str], tau: float, *, exclude_self: bool = False
    ) -> sp.csr_matrix: ...


def threshold_matrix(similarity: ArrayLike, tau: float, *, exclude_self: bool = False) -> sp.csr_matrix:
    """The neighbour matrix of a dense similarity matrix: entries ``>= tau`` (``tau > 0``)."""
    if not tau > 0:
        raise UsageError(f"tau must be positive, got {tau}")
    sim = np.asarray(similarity, dtype=np.float64)
    if sim.ndim != 2:
        raise ValueError(f"a similarity matrix must be 2-D, got shape {sim.shape}")
    keep = sim >= tau
    if exclude_self:
        if sim.shape[0] != sim.shape[1]:
            raise ValueError("exclude_self needs a square similarity matrix")
        np.fill_diagonal(keep, False)
    rows, cols = np.nonzero(keep)
    return neighbors_csr(rows.astype(np.int64), cols.astype(np.int64), sim[rows, cols], sim.shape)


class BleuStarKernel:
    """BLEU* (Definition 3.1) through the n-gram index; ``exhaustive=True`` scores all pairs instead."""

    name = "bleu_star"
    default_tau = 0.08

    def __init__(
        self,
        smoothing: Smoothing = DEFAULT_SMOOTHING,
        tokenize: Tokenizer = whitespace_tokenize,
        *,
        tokenizer_name: str = "whitespace",
        exhaustive: bool = False,
        chunk_size: int = 512,
    ) -> None:
        self.smoothing = check_smoothing(smoothing)
        self.tokenize, self.tokenizer_name = tokenize, tokenizer_name
        self.exhaustive, self.chunk_size = exhaustive, chunk_size
        self._cache: tuple[tuple[str, ...], BleuStarIndex | AllPairsBleuStar] | None = None

    def params(self) -> dict[str, object]:
        return {"smooth": self.smoothing, "tok": self.tokenizer_name}

    def _searcher(self, train: Sequence[str]) -> BleuStarIndex | AllPairsBleuStar:
        key = tuple(train)
        if self._cache is None or self._cache[0] != key:
            tokens = [list(self.tokenize(text)) for text in train]
            self._cache = (key, AllPairsBleuStar(tokens) if self.exhaustive else BleuStarIndex(tokens))
        return self._cache[1]

    def neighbors(
        self, candidates: Sequence[str], train: Sequence[str], tau: float, *, exclude_self: bool = False
    ) -> sp.csr_matrix:
        searcher = self._searcher(train)
        tokens = [list(self.tokenize(text)) for text in candidates]
        if isinstance(searcher, AllPairsBleuStar):
            return searcher.neighbors(tokens, tau, smoothing=self.smoothing, exclude_self=exclude_self)
        return searcher.neighbors(
            tokens, tau, smoothing=self.smoothing, exclude_self=exclude_self, chunk_size=self.chunk_size
        )


class _RougeTokenizer:
    """Adapter: rouge-score wants an object with ``tokenize(text)``."""

    def __init__(self, tokenize: Tokenizer) -> None:
        self._tokenize = tokenize

    def tokenize(self, text: str) -> list[str]:
        return list(self._tokenize(text))


class RougeKernel:
    """ROUGE-L F-measure from the rouge-score library (section 2.1; ``tau = 0.06``, section 4).

    ROUGE-L is the variant the paper discusses. Texts are split on whitespace by default, as for
    BLEU*; ``tokenize=None`` uses rouge-score's own tokenizer (lowercase, ``[a-z0-9]`` only).
    Every pair is scored (the library's LCS in Python), so this suits small training sets.
    """

    name = "rouge_l"
    default_tau = 0.06

    def __init__(self, tokenize: Tokenizer | None = whitespace_tokenize, *, tokenizer_name: str = "whitespace") -> None:
        from rouge_score import rouge_scorer

        tokenizer = None if tokenize is None else _RougeTokenizer(tokenize)
        self.tokenizer_name = "rouge-score" if tokenize is None else tokenizer_name
        self._scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False, tokenizer=tokenizer)

    def params(self) -> dict[str, object]:
        return {"rouge": "L", "measure": "F", "tok": self.tokenizer_name}

    def neighbors(
        self, candidates: Sequence[str], train: Sequence[str], tau: float, *, exclude_self: bool = False
    ) -> sp.csr_matrix:
        sim = np.zeros((len(candidates), len(train)))
        for i, candidate in enumerate(candidates):
            for j, text in enumerate(train):
                if not (exclude_self and i == j):
                    sim[i, j] = self._scorer.score(text, candidate)["rougeL"].fmeasure
        return threshold_matrix(sim, tau, exclude_self=exclude_self)


#: ``scorer(candidates, train)`` -> similarity matrix of shape ``(len(candidates), len(train))``
PairwiseScorer = Callable[[Sequence[str], Sequence[str]], ArrayLike]


class BertScoreKernel:
    """A kernel around a user-provided pairwise scorer, BERTScore by default (``tau = 0.10``).

    The BERTScore implementation lives with the workers; pass a callable that returns the
    ``(len(candidates), len(train))`` matrix of similarities (for instance BERTScore F1 of each
    candidate against each training sentence) and name what it computes in ``params``.
    """

    def __init__(
        self,
        scorer: PairwiseScorer,
        *,
        name: str = "bertscore",
        default_tau: float = 0.10,
        params: Mapping[str, object] | None = None,
    ) -> None:
        self.scorer, self.name, self.default_tau = scorer, name, default_tau
        self._params = dict(params or {})

    def params(self) -> dict[str, object]:
        return dict(self._params)

    def neighbors(
        self, candidates: Sequence[str], train: Sequence[str], tau: float, *, exclude_self: bool = False
    ) -> sp.csr_matrix:
        sim = np.asarray(self.scorer(candidates, train), dtype=np.float64)
        if sim.shape != (len(candidates), len(train)):
            raise ValueError(f"{self.name} scorer returned shape {sim.shape}, expected {(len(candidates), len(train))}")
        return threshold_matrix(sim, tau, exclude_self=exclude_self)


@dataclass(frozen=True)
class NeighborSummary:
    """Coverage (Definition 3.3) and agreement with human quality on the defined predictions."""

    n: int
    defined: int
    undefined: int
    coverage: float
    spearman: float | None
    """scipy ``spearmanr`` on the defined predictions; None with fewer than 2 or a constant side."""
    spearman_p: float | None
    mse: float | None
    """Mean squared error on the defined predictions; None when there are none."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, eq=False)
class NeighborPredictions:
    """BLEU Neighbors estimates for a list of candidates, in input order."""

    predictions: tuple[float | None, ...]
    """Mean neighbour quality, or None where equation 3 leaves it undefined."""
    neighbor_counts: NDArray[np.int64]
    """``|N|`` per candidate, whether or not the prediction is defined."""
    train_size: int
    """``|S|``: the training set size the ``b`` bound applies to (``n - 1`` in leave-one-out)."""
    neighbors: sp.csr_matrix
    """The neighbour matrix the estimates came from (kernel similarities of the neighbours)."""
    signature: str

    @property
    def coverage(self) -> float:
        """The share of candidates with a defined prediction (Definition 3.3)."""
        if not self.predictions:
            return math.nan
        return sum(p is not None for p in self.predictions) / len(self.predictions)

    def summary(self, quality: ArrayLike) -> NeighborSummary:
        """Coverage, Spearman's rho and MSE against the human ``quality`` of the candidates."""
        truth = _qualities(quality, len(self.predictions))
        defined = np.array([p is not None for p in self.predictions], dtype=bool)
        pred = np.array([p for p in self.predictions if p is not None], dtype=np.float64)
        gold = truth[defined]
        rho: float | None = None
        p_value: float | None = None
        if pred.size >= 2 and np.ptp(pred) > 0 and np.ptp(gold) > 0:
            from scipy.stats import spearmanr

            result = spearmanr(pred, gold)
            rho, p_value = float(result.statistic), float(result.pvalue)
        return NeighborSummary(
            n=len(self.predictions),
            defined=int(defined.sum()),
            undefined=int((~defined).sum()),
            coverage=self.coverage,
            spearman=rho,
            spearman_p=p_value,
            mse=float(np.mean((pred - gold) ** 2)) if pred.size else None,
        )


def _qualities(quality: ArrayLike, n: int) -> NDArray[np.float64]:
    values = np.asarray(quality, dtype=np.float64)
    if values.shape != (n,):
        raise UsageError(f"expected {n} quality scores, got shape {values.shape}")
    if not np.all(np.isfinite(values)):
        raise UsageError("quality scores must all be finite numbers")
    return values


def estimate(
    neighbors: sp.csr_matrix, train_quality: ArrayLike, train_size: int, a: int, b: float
) -> tuple[tuple[float | None, ...], NDArray[np.int64]]:
    """Equation 3: the mean neighbour quality where ``a <= |N| <= b |S|``, else None."""
    quality = _qualities(train_quality, neighbors.shape[1])
    indicator = neighbors.copy()
    indicator.data = np.ones_like(indicator.data)
    counts = np.diff(indicator.indptr).astype(np.int64)
    sums = indicator @ quality
    defined = (counts >= a) & (counts <= b * train_size)
    predictions = tuple(float(s / c) if ok else None for s, c, ok in zip(sums, counts, defined, strict=True))
    return predictions, counts


class BleuNeighbors:
    """The BLEU Neighbors estimator (Ethayarajh & Sadigh 2020, section 3, equation 3).

    ``kernel`` defaults to BLEU* with add-one smoothing; ``tau`` defaults to the kernel's own
    (0.08 for BLEU*), ``a`` to 5 and ``b`` to 0.66.
    """

    def __init__(
        self,
        kernel: NeighborKernel | None = None,
        *,
        tau: float | None = None,
        a: int = DEFAULT_A,
        b: float = DEFAULT_B,
    ) -> None:
        self.kernel: NeighborKernel = kernel if kernel is not None else BleuStarKernel()
        self.tau = self.kernel.default_tau if tau is None else float(tau)
        if not self.tau > 0:
            raise UsageError(f"tau must be positive, got {self.tau}")
        if isinstance(a, bool) or not isinstance(a, int | np.integer) or a < 1:
            raise UsageError(f"a (the minimum number of neighbours) must be a positive integer, got {a!r}")
        if not 0.0 <= b <= 1.0:
            raise UsageError(f"b (the maximum share of the training set) must be in [0, 1], got {b}")
        self.a, self.b = int(a), float(b)

    def signature(self) -> str:
        params = {"kernel": self.kernel.name, **self.kernel.params(), "tau": self.tau, "a": self.a, "b": self.b}
        return render_signature("bleu_neighbors", params, VERSION)

    def predict(self, candidates: Sequence[str], train: Sequence[str], train_quality: ArrayLike) -> NeighborPredictions:
        """Train -> test: estimate each candidate from the training texts and their qualities."""
        neighbors = self.kernel.neighbors(candidates, train, self.tau)
        return self._predictions(neighbors, train_quality, len(train))

    def leave_one_out(self, texts: Sequence[str], quality: ArrayLike) -> NeighborPredictions:
        """Estimate each text from all the others (``S`` = the other ``n - 1`` texts)."""
        neighbors = self.kernel.neighbors(texts, texts, self.tau, exclude_self=True)
        return self._predictions(neighbors, quality, max(len(texts) - 1, 0))

    def _predictions(self, neighbors: sp.csr_matrix, quality: ArrayLike, train_size: int) -> NeighborPredictions:
        predictions, counts = estimate(neighbors, quality, train_size, self.a, self.b)
        return NeighborPredictions(predictions, counts, train_size, neighbors, self.signature())
