"""An n-gram index that finds every BLEU* neighbour without scoring all pairs.

Ethayarajh & Sadigh, "BLEU Neighbors: A Reference-less Approach to Automatic Evaluation" (2020):
the neighbours of a candidate ``x`` are the training sentences ``s`` with ``BLEU*(x, s) >= tau``
(Definition 3.2, section 3), BLEU* as in Definition 3.1 (:mod:`assay.metrics.bleu_star`).
Scoring every pair costs ``|X| * |S|`` evaluations; the index finds the same pairs from the
n-grams the sentences share. Write ``m_n`` for a pair's clipped n-gram match count
``sum_g min(c_x(g), c_s(g))``; BLEU* is strictly increasing in every ``m_n``.

No smoothing
    BLEU* > 0 needs ``m_4 > 0``: the 4-gram postings (a sparse product of 4-gram indicator
    matrices) give every candidate pair, and their exact ``m_2, m_3, m_4`` are row-wise sums of
    element-wise minima of the two count vectors.
Add-one smoothing
    A pair scores 0 unless it shares a unigram, and the pairs split three ways:

    * ``A``, pairs sharing a bigram: ``min(a, b) = [a >= 1][b >= 1] + [a >= 2][b >= 2]`` whenever
      ``min(a, b) <= 2``, so one sparse product of level-indicator matrices of the 2-, 3- and
      4-grams (their counts packed into one integer) gives every pair's exact ``m_2, m_3, m_4``.
      Where ``m_3 = m_4 = 0`` the score depends only on ``(m_2, |x|, |s|)``, and a table of the
      smallest sufficient ``m_2`` per length pair (from the same formula) keeps or drops the pair
      without scoring it;
    * ``D``, the rare pairs where both sentences hold some n-gram three times or more: exact
      counts as row-wise minima, overriding their (undercounted) values in ``A``;
    * ``U``, pairs sharing only unigrams: the score depends only on ``(|x|, |s|)`` and, since the
      brevity penalty only falls as ``|s|`` grows, reaches ``tau`` exactly for ``|s| <= L(|x|)``
      (closed form per length bucket); those pairs come from the unigram postings.

    A pair in several sets takes its counts from the first of D, A, U (the exact ones).

Every kept pair is scored with :func:`~assay.metrics.bleu_star.bleu_star_from_counts`, the formula
the plain all-pairs kernel (:class:`AllPairsBleuStar`) uses, so neighbour sets and scores are
identical, not merely close. Candidates are processed in chunks to bound memory.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from assay.errors import UsageError
from assay.metrics.bleu_star import (
    DEFAULT_SMOOTHING,
    ORDERS,
    Smoothing,
    bleu_star_from_counts,
    check_smoothing,
    ngram_counts,
)

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]
#: (rows, columns, m2, m3, m4) of a set of pairs
_Pairs = tuple[IntArray, IntArray, IntArray, IntArray, IntArray]
#: Bits per match count in the packed (m2, m3, m4) integer: sentences must be shorter than 2**20.
_BITS = 20
_MASK = (1 << _BITS) - 1


def check_tau(tau: float) -> float:
    """``tau`` if it is in (0, 1]; the index only finds pairs with a positive score."""
    if not 0.0 < tau <= 1.0:
        raise UsageError(f"tau must be in (0, 1] for BLEU*, got {tau}")
    return float(tau)


def neighbors_csr(rows: IntArray, cols: IntArray, scores: FloatArray, shape: tuple[int, int]) -> sp.csr_matrix:
    """A canonical CSR matrix (sorted column indices) of neighbour scores; pairs must be distinct."""
    key = rows * max(shape[1], 1) + cols
    order = np.arange(key.size) if np.all(key[1:] > key[:-1]) else np.argsort(key, kind="stable")
    index_dtype = np.int32 if max(*shape, key.size) < np.iinfo(np.int32).max else np.int64
    indptr = np.zeros(shape[0] + 1, dtype=index_dtype)
    np.cumsum(np.bincount(rows, minlength=shape[0]), out=indptr[1:])
    matrix = sp.csr_matrix((scores[order].astype(np.float64), cols[order].astype(index_dtype), indptr), shape=shape)
    matrix.has_sorted_indices = True
    return matrix


class _Sentences:
    """Sentences as one flat array of token ids, with each position's sentence and offset."""

    def __init__(self, sentences: Sequence[Sequence[str]], vocab: dict[str, int], grow: bool) -> None:
        if grow:
            new_id = defaultdict(itertools.count(len(vocab)).__next__, vocab)
            ids = [new_id[token] for sentence in sentences for token in sentence]
            vocab.update(new_id)
        else:
            ids = [vocab.get(token, -1) for sentence in sentences for token in sentence]
        self.tokens = np.asarray(ids, dtype=np.int64)
        self.lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
        if self.lengths.size and self.lengths.max() > _MASK:
            raise UsageError(f"a sentence has {self.lengths.max()} tokens; the index needs fewer than 2**{_BITS}")
        starts = np.cumsum(self.lengths) - self.lengths
        self.row = np.repeat(np.arange(len(sentences), dtype=np.int64), self.lengths)
        self.offset = np.arange(self.tokens.size, dtype=np.int64) - np.repeat(starts, self.lengths)

    def __len__(self) -> int:
        return int(self.lengths.size)


def _counts_matrix(row: IntArray, gram: IntArray, shape: tuple[int, int]) -> sp.csr_matrix:
    """Sentence x n-gram count matrix from the (sentence, n-gram id) of every position (-1: none)."""
    keep = gram >= 0
    data = np.ones(int(keep.sum()), dtype=np.int32)
    matrix = sp.csr_matrix((data, (row[keep], gram[keep])), shape=shape)
    matrix.sum_duplicates()
    return matrix


def _indicator(matrix: sp.csr_matrix, level: int = 1) -> sp.csr_matrix:
    """``[matrix >= level]`` as an int32 CSR matrix (explicit zeros removed)."""
    out = matrix.copy()
    out.data = (out.data >= level).astype(np.int32)
    out.eliminate_zeros()
    return out


def _pair_clipped(candidates: sp.csr_matrix, train: sp.csr_matrix, rows: IntArray, cols: IntArray) -> IntArray:
    """Exact clipped counts of the given (candidate, training) pairs: row sums of minima."""
    if rows.size == 0:
        return np.zeros(0, dtype=np.int64)
    minima = candidates[rows].minimum(train[cols])
    return np.asarray(minima.sum(axis=1), dtype=np.int64).ravel()


def _product_pairs(left: sp.csr_matrix, right_t: sp.csr_matrix) -> tuple[IntArray, IntArray, IntArray]:
    """(rows, columns, values) of the non-zero entries of ``left @ right_t``."""
    product = (left @ right_t).tocsr()
    rows = np.repeat(np.arange(product.shape[0], dtype=np.int64), np.diff(product.indptr))
    return rows, product.indices.astype(np.int64), product.data.astype(np.int64, copy=False)


def _lookup(known: IntArray, key: IntArray, valid: NDArray[np.bool_]) -> IntArray:
    """Position of each valid ``key`` in the sorted ``known`` keys, -1 where it is absent."""
    if known.size == 0:
        return np.full(key.size, -1, dtype=np.int64)
    where = np.searchsorted(known, key).clip(max=known.size - 1)
    return np.where(valid & (known[where] == key), where, -1).astype(np.int64)


class _LengthTables:
    """Per (candidate length, training length) thresholds, all from the BLEU* formula itself.

    Lengths are coded by their rank among the distinct lengths (``code`` per candidate,
    ``train_code`` per training sentence). ``need[c, t]``: the smallest ``m_2`` with
    ``BLEU*(m_2, 0, 0) >= tau`` for that pair of lengths, or ``max(|x|, 1)`` (more than any
    possible ``m_2 <= |x| - 1``) when none suffices. ``limit[c]``: the longest training length
    whose pairs reach ``tau`` with no shared bigram at all (-1: none).
    """

    def __init__(self, cand_lengths: IntArray, train_lengths: IntArray, tau: float, smoothing: Smoothing) -> None:
        lengths, code = np.unique(cand_lengths, return_inverse=True)
        ref, train_code = np.unique(train_lengths, return_inverse=True)
        self.code, self.train_code = code.ravel().astype(np.int64), train_code.ravel().astype(np.int64)
        x, ref = lengths[:, None], ref[None, :]
        low = np.zeros((x.shape[0], ref.shape[1]), dtype=np.int64)
        high = low + np.maximum(x, 1)
        while np.any(low < high):
            mid = (low + high) // 2
            ok = bleu_star_from_counts(mid, 0, 0, x, ref, True, smoothing) >= tau
            high = np.where(ok, mid, high)
            low = np.where(ok, low, mid + 1)
        self.need = high
        reach = bleu_star_from_counts(0, 0, 0, x, ref, True, smoothing) >= tau
        longest = np.where(reach, ref, -1).max(axis=1, initial=-1)
        self.limit = longest.astype(np.int64)


class BleuStarIndex:
    """Inverted n-gram index over tokenized training sentences for BLEU* neighbour search.

    ``BleuStarIndex(train).neighbors(candidates, tau)`` returns the same CSR matrix as
    ``AllPairsBleuStar(train).neighbors(candidates, tau)``: row ``i``, column ``j`` holds
    ``BLEU*(candidates[i], train[j])`` for every pair with a score ``>= tau``.
    """

    def __init__(self, train: Sequence[Sequence[str]]) -> None:
        self._vocab: dict[str, int] = {}
        sents = _Sentences(train, self._vocab, grow=True)
        self.lengths = sents.lengths
        self._keys: dict[int, IntArray] = {1: np.arange(len(self._vocab), dtype=np.int64)}
        self._counts: dict[int, sp.csr_matrix] = {}
        ids = sents.tokens
        for n in (1, *ORDERS):
            if n > 1:
                key, valid = self._extend(sents, ids, n)
                self._keys[n], inverse = np.unique(key[valid], return_inverse=True)
                ids = np.full(sents.tokens.size, -1, dtype=np.int64)
                ids[valid] = inverse.ravel()
            self._counts[n] = _counts_matrix(sents.row, ids, (len(sents), self._keys[n].size))
        self._once_t = _indicator(self._counts[4]).T.tocsr()
        self._packed_t = sp.vstack([_indicator(self._counts[n], k).T for n in ORDERS for k in (1, 2)]).tocsr()
        self._deep_t = sp.vstack([_indicator(self._counts[n], 3).T for n in ORDERS]).tocsr()

    @property
    def size(self) -> int:
        """The number of training sentences."""
        return int(self.lengths.size)

    def _extend(self, sents: _Sentences, previous: IntArray, n: int) -> tuple[IntArray, NDArray[np.bool_]]:
        """Keys of the n-grams starting at each position: (id of the (n-1)-gram, next token)."""
        valid = sents.offset <= sents.lengths[sents.row] - n
        nxt = np.full(sents.tokens.size, -1, dtype=np.int64)
        shifted = max(sents.tokens.size - n + 1, 0)
        nxt[:shifted] = sents.tokens[n - 1 : n - 1 + shifted]
        valid &= (previous >= 0) & (nxt >= 0)
        return np.where(valid, previous * len(self._vocab) + nxt, -1), valid

    def _encode(self, candidates: Sequence[Sequence[str]]) -> tuple[IntArray, dict[int, sp.csr_matrix]]:
        """Candidate lengths and count matrices over the training n-gram vocabulary.

        N-grams that never occur in training cannot match and are left out; the lengths still
        count every token.
        """
        sents = _Sentences(candidates, self._vocab, grow=False)
        matrices: dict[int, sp.csr_matrix] = {}
        ids = sents.tokens
        for n in (1, *ORDERS):
            if n > 1:
                key, valid = self._extend(sents, ids, n)
                ids = _lookup(self._keys[n], key, valid)
            matrices[n] = _counts_matrix(sents.row, ids, (len(sents), self._keys[n].size))
        return sents.lengths, matrices

    def neighbors(
        self,
        candidates: Sequence[Sequence[str]],
        tau: float,
        *,
        smoothing: Smoothing = DEFAULT_SMOOTHING,
        exclude_self: bool = False,
        chunk_size: int = 512,
    ) -> sp.csr_matrix:
        """Neighbour scores: CSR ``len(candidates) x size`` with every pair scoring ``>= tau``.

        ``exclude_self`` drops the pairs ``(i, i)`` (leave-one-out, where the candidates are the
        training sentences themselves, in the same order).
        """
        tau = check_tau(tau)
        smoothing = check_smoothing(smoothing)
        if exclude_self and len(candidates) != self.size:
            raise ValueError("exclude_self needs the candidates to be the training sentences")
        lengths, matrices = self._encode(candidates)
        tables = _LengthTables(lengths, self.lengths, tau, smoothing)
        bucket = _UnigramBucket(self, tables) if smoothing == "add-one" else None
        parts: list[tuple[IntArray, IntArray, FloatArray]] = []
        for start in range(0, len(candidates), chunk_size):
            stop = min(start + chunk_size, len(candidates))
            chunk = {n: m[start:stop] for n, m in matrices.items()}
            if bucket is None:
                pairs = self._exact_pairs(chunk, _product_pairs(_indicator(chunk[4]), self._once_t)[:2])
            else:
                pairs = self._smoothed_pairs(chunk, tables, bucket, start)
            rows, cols, m2, m3, m4 = pairs
            scores = bleu_star_from_counts(m2, m3, m4, lengths[start + rows], self.lengths[cols], True, smoothing)
            keep = scores >= tau
            if exclude_self:
                keep &= start + rows != cols
            parts.append((start + rows[keep], cols[keep], scores[keep]))
        return _stack(parts, (len(candidates), self.size))

    def _exact_pairs(self, chunk: dict[int, sp.csr_matrix], pairs: tuple[IntArray, IntArray]) -> _Pairs:
        """The given pairs with their exact clipped counts (row-wise minima)."""
        rows, cols = pairs
        m2, m3, m4 = (_pair_clipped(chunk[n], self._counts[n], rows, cols) for n in ORDERS)
        return rows, cols, m2, m3, m4

    def _smoothed_pairs(
        self, chunk: dict[int, sp.csr_matrix], tables: _LengthTables, bucket: _UnigramBucket, start: int
    ) -> _Pairs:
        """Pairs that can reach ``tau`` with add-one smoothing: D, then A, then U (module docstring)."""
        code = tables.code[start : start + chunk[1].shape[0]]
        packed_left = sp.hstack(
            [
                _indicator(chunk[n], k).astype(np.int64) * (1 << (_BITS * o))
                for o, n in enumerate(ORDERS)
                for k in (1, 2)
            ]
        ).tocsr()
        rows, cols, packed = _product_pairs(packed_left, self._packed_t)
        keep = (packed > _MASK) | (packed >= tables.need[code[rows], tables.train_code[cols]])
        rows, cols, packed = rows[keep], cols[keep], packed[keep]
        m2, m3, m4 = ((packed >> (_BITS * o)) & _MASK for o in range(3))
        shared = (rows, cols, m2, m3, m4)
        deep_left = sp.hstack([_indicator(chunk[n], 3) for n in ORDERS]).tocsr()
        deep = self._exact_pairs(chunk, _product_pairs(deep_left, self._deep_t)[:2])
        return _first_of(deep, shared, bucket.pairs(chunk[1], code))


class _UnigramBucket:
    """Pairs sharing a unigram whose closed-form score reaches ``tau`` (``|s| <= limit[|x|]``)."""

    def __init__(self, index: BleuStarIndex, tables: _LengthTables) -> None:
        self.tables = tables
        self.train_lengths = index.lengths
        self.columns = np.flatnonzero(index.lengths <= tables.limit.max(initial=-1))
        self._train_t = _indicator(index._counts[1][self.columns]).T.tocsr()

    def pairs(self, unigrams: sp.csr_matrix, code: IntArray) -> _Pairs:
        limit = self.tables.limit[code]
        rows = np.flatnonzero(limit >= 0)
        if rows.size == 0 or self.columns.size == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty, empty, empty
        r, c, _ = _product_pairs(_indicator(unigrams[rows]), self._train_t)
        r, c = rows[r], self.columns[c]
        keep = self.train_lengths[c] <= limit[r]
        zeros = np.zeros(int(keep.sum()), dtype=np.int64)
        return r[keep], c[keep], zeros, zeros, zeros


def _first_of(*sets: _Pairs) -> _Pairs:
    """The union of pair sets; a pair in several takes its counts from the first one."""
    rows, cols, m2, m3, m4 = (np.concatenate(arrays) for arrays in zip(*sets, strict=True))
    width = int(cols.max(initial=0)) + 1
    _, first = np.unique(rows * width + cols, return_index=True)
    return rows[first], cols[first], m2[first], m3[first], m4[first]


def _stack(parts: Sequence[tuple[IntArray, IntArray, FloatArray]], shape: tuple[int, int]) -> sp.csr_matrix:
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return neighbors_csr(empty, empty, np.zeros(0), shape)
    rows, cols, scores = (np.concatenate(arrays) for arrays in zip(*parts, strict=True))
    return neighbors_csr(rows, cols, scores, shape)


class AllPairsBleuStar:
    """The plain reference kernel: BLEU* of every (candidate, training sentence) pair.

    N-grams are counted with Python ``Counter``s (:func:`~assay.metrics.bleu_star.ngram_counts`),
    independently of the index's integer encoding; for one candidate the clipped counts against
    all training sentences are read from column slices of per-order count matrices. No pair is
    skipped and no closed form is used. Its cost is ``|X| * |S|``: use it to check the index.
    """

    def __init__(self, train: Sequence[Sequence[str]]) -> None:
        self.lengths = np.fromiter((len(s) for s in train), dtype=np.int64, count=len(train))
        self._vocab: dict[int, dict[tuple[str, ...], int]] = {}
        self._counts: dict[int, sp.csc_matrix] = {}
        for n in (1, *ORDERS):
            vocab: dict[tuple[str, ...], int] = {}
            rows: list[int] = []
            cols: list[int] = []
            data: list[int] = []
            for i, sentence in enumerate(train):
                for gram, count in ngram_counts(sentence, n).items():
                    rows.append(i)
                    cols.append(vocab.setdefault(gram, len(vocab)))
                    data.append(count)
            shape = (len(train), len(vocab))
            self._vocab[n] = vocab
            self._counts[n] = sp.csc_matrix((np.asarray(data, dtype=np.int64), (rows, cols)), shape=shape)

    @property
    def size(self) -> int:
        """The number of training sentences."""
        return int(self.lengths.size)

    def _matches(self, candidate: Sequence[str], n: int) -> IntArray:
        """Clipped n-gram matches of ``candidate`` against every training sentence."""
        vocab = self._vocab[n]
        grams = [(vocab[g], c) for g, c in ngram_counts(candidate, n).items() if g in vocab]
        if not grams:
            return np.zeros(self.size, dtype=np.int64)
        ids, caps = (np.asarray(x, dtype=np.int64) for x in zip(*grams, strict=True))
        columns: Any = self._counts[n][:, ids]
        columns.data = np.minimum(columns.data, np.repeat(caps, np.diff(columns.indptr)))
        return np.asarray(columns.sum(axis=1), dtype=np.int64).ravel()

    def scores(self, candidate: Sequence[str], smoothing: Smoothing = DEFAULT_SMOOTHING) -> FloatArray:
        """BLEU*(candidate, s) for every training sentence ``s``, in training order."""
        m2, m3, m4 = (self._matches(candidate, n) for n in ORDERS)
        shares_unigram = self._matches(candidate, 1) > 0
        return bleu_star_from_counts(m2, m3, m4, len(candidate), self.lengths, shares_unigram, smoothing)

    def neighbors(
        self,
        candidates: Sequence[Sequence[str]],
        tau: float,
        *,
        smoothing: Smoothing = DEFAULT_SMOOTHING,
        exclude_self: bool = False,
    ) -> sp.csr_matrix:
        """The same matrix as :meth:`BleuStarIndex.neighbors`, by scoring every pair."""
        tau = check_tau(tau)
        smoothing = check_smoothing(smoothing)
        if exclude_self and len(candidates) != self.size:
            raise ValueError("exclude_self needs the candidates to be the training sentences")
        parts = []
        for i, candidate in enumerate(candidates):
            scores = self.scores(candidate, smoothing)
            keep = scores >= tau
            if exclude_self:
                keep[i] = False
            cols = np.flatnonzero(keep).astype(np.int64)
            parts.append((np.full(cols.size, i, dtype=np.int64), cols, scores[cols]))
        return _stack(parts, (len(candidates), self.size))
