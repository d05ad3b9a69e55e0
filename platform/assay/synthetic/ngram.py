"""An interpolated Kneser-Ney trigram model over words, and beam-search mask filling with it.

BLEURT fills masked tokens with BERT and beam search of width 8 (Sellam et al., 2020, §4.1
"Mask-filling with BERT" and appendix A.1 "Random Masking"). No masked language model can be
reached offline on the project's machines, so the offline filler is a word trigram model learned
from the synthetic corpus itself. It is a substitute with the same interface, not a reproduction:
it fills one *word* per mask (BERT fills one WordPiece per mask) and sees a two-word window on each
side of a gap where BERT sees the whole sentence. ``assay.synthetic.perturbations.NgramMaskFilling``
wraps it; the masked-LM filler of the worker layer is the faithful version.

The model (Chen & Goodman, 1998, "An Empirical Study of Smoothing Techniques for Language
Modeling", §3.4: interpolated Kneser-Ney), with ``<s> <s>`` before and ``</s>`` after every
sentence and one absolute discount per order, ``D = n1 / (n1 + 2 n2)`` (Ney et al., 1994; ``n_k``
is the number of n-gram types seen exactly k times)::

    P3(w|u v) = max(c(u v w) - D3, 0) / c(u v .) + D3 N1+(u v .) / c(u v .) * P2(w|v)
    P2(w|v)   = max(N1+(. v w) - D2, 0) / N1+(. v .) + D2 N1+'(v .) / N1+(. v .) * P1(w)
    P1(w)     = max(N1+(. w) - D1, 0) / N1+(. .) + D1 T / N1+(. .) / |V|

with the lower orders on continuation counts (N1+(. v w): the number of distinct words seen
before ``v w``); an unseen history falls back to the next order with weight 1, and the uniform
term gives every word of the vocabulary a probability. Counts are kept as sorted int64 keys
(``u << 2b | v << b | w``, ``b`` bits per word id) and looked up with ``searchsorted``, so scoring
is vectorised over any batch of (u, v, w) triples.

Filling (:meth:`KneserNeyTrigram.fill`) is beam search over the masked positions, left to right.
The score of a filled sentence is its log-probability under the model; only the terms whose
trigram window touches a mask change, and each is added exactly once, when the last mask of its
window is filled. Placing word ``w`` at masked position ``i`` therefore adds ``log P(w | x[i-2]
x[i-1])`` and, when ``x[i+1]`` is a known word, ``log P(x[i+1] | x[i-1] w)`` and (when ``x[i+2]``
is known too, or is ``</s>``) ``log P(x[i+2] | w x[i+1])``: the fill is conditioned on the left
*and* the right context. Candidate words at a gap are the most frequent continuations of the left
history (trigram and bigram), the most frequent predecessors of the right word, and the most
frequent words overall; the original word is never a candidate (a model that has seen the sentence
would otherwise restore it verbatim, which is no perturbation).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from assay.errors import UsageError

BOS, EOS, UNK = 0, 1, 2
SPECIALS = ("<s>", "</s>", "<unk>")
#: beam width of BLEURT's mask filling (appendix A.1: "the beam size 8 by default")
BEAM_WIDTH = 8
#: candidates drawn from each source (trigram continuations, bigram continuations, predecessors
#: of the right word, frequent words) at every gap
CANDIDATES_PER_SOURCE = 16
#: gap contexts whose candidates are remembered (a bound on memory, not on results)
CANDIDATE_CACHE = 200_000


def _discount(counts: np.ndarray) -> float:
    """Ney's absolute discount ``n1 / (n1 + 2 n2)``, kept inside (0, 1)."""
    n1 = int(np.count_nonzero(counts == 1))
    n2 = int(np.count_nonzero(counts == 2))
    if n1 == 0:
        return 0.5
    return float(min(max(n1 / (n1 + 2 * n2), 0.05), 0.95))


def _find(keys: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index, found) of each ``query`` in the sorted, non-empty ``keys``."""
    index = np.minimum(np.searchsorted(keys, query), keys.size - 1)
    return index, keys[index] == query


def _lookup(keys: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``values`` at the positions of ``query`` in the sorted, non-empty ``keys``; 0 where absent."""
    index, found = _find(keys, query)
    return np.where(found, values[index], 0)


@dataclass(frozen=True)
class Fill:
    """The best beam of one gap-filling: the filled words and their log-probability gain."""

    words: list[str]
    score: float


class KneserNeyTrigram:
    """Interpolated Kneser-Ney trigram model over whitespace-separated words (see the module
    docstring). ``sentences`` are lists of words; the vocabulary is every word seen."""

    def __init__(self, sentences: Iterable[Sequence[str]]) -> None:
        vocab: dict[str, int] = {s: i for i, s in enumerate(SPECIALS)}
        encoded: list[int] = []
        lengths: list[int] = []
        for words in sentences:
            ids = [vocab.setdefault(w, len(vocab)) for w in words]
            encoded.extend((BOS, BOS, *ids, EOS))
            lengths.append(len(ids) + 3)
        if not lengths:
            raise UsageError("the n-gram filler needs at least one training sentence")
        self.words = list(vocab)
        self.vocab = vocab
        self.bits = max(2, (len(vocab) - 1).bit_length())
        if 3 * self.bits > 62:
            raise UsageError(f"the n-gram filler supports at most 2^20 distinct words, not {len(vocab)}")
        b = self.bits
        flat = np.asarray(encoded, dtype=np.int64)
        ends = np.cumsum(lengths)
        # a trigram starts at every position but the last two of each padded sentence
        valid = np.ones(flat.size, dtype=bool)
        valid[ends - 1] = False
        valid[ends - 2] = False
        first = np.flatnonzero(valid)
        u, v, w = flat[first], flat[first + 1], flat[first + 2]
        self.tri_keys, tri_counts = np.unique((u << (2 * b)) | (v << b) | w, return_counts=True)
        self.tri_counts = tri_counts.astype(np.float64)
        self.d3 = _discount(tri_counts)
        # history (u v): c(u v .) and N1+(u v .)
        hist = self.tri_keys >> b
        self.h3_keys, h3_start, h3_types = np.unique(hist, return_index=True, return_counts=True)
        self.h3_total = np.add.reduceat(self.tri_counts, h3_start)
        self.h3_types = h3_types.astype(np.float64)
        # bigram continuation counts N1+(. v w): distinct u per (v w)
        mask2 = (1 << (2 * b)) - 1
        self.bi_keys, bi_cont = np.unique(self.tri_keys & mask2, return_counts=True)
        self.bi_cont = bi_cont.astype(np.float64)
        self.d2 = _discount(bi_cont)
        self.h2_keys, h2_start, h2_types = np.unique(self.bi_keys >> b, return_index=True, return_counts=True)
        self.h2_total = np.add.reduceat(self.bi_cont, h2_start)
        self.h2_types = h2_types.astype(np.float64)
        word_mask = (1 << b) - 1
        bi_w = self.bi_keys & word_mask
        # unigram continuation counts N1+(. w): distinct v per w
        size = len(vocab)
        uni_cont = np.bincount(bi_w, minlength=size).astype(np.float64)
        self.d1 = _discount(uni_cont[uni_cont > 0].astype(np.int64))
        total = uni_cont.sum()
        seen = float(np.count_nonzero(uni_cont))
        self.p1 = np.maximum(uni_cont - self.d1, 0) / total + self.d1 * seen / total / size
        fillable = np.ones(size, dtype=bool)
        fillable[[BOS, EOS, UNK]] = False
        ranked = np.argsort(-np.where(fillable, uni_cont, -1), kind="stable")
        self.frequent = ranked[:CANDIDATES_PER_SOURCE].astype(np.int64)
        self.fillable = fillable
        self.word_mask = word_mask
        self._h2_total_of = np.zeros(size)
        self._h2_total_of[self.h2_keys] = self.h2_total
        self._h2_types_of = np.zeros(size)
        self._h2_types_of[self.h2_keys] = self.h2_types
        self._build_candidate_tables()
        self._candidates: dict[tuple[int, int, int], np.ndarray] = {}

    # ------------------------------------------------------------------ probabilities

    def ids(self, words: Sequence[str]) -> np.ndarray:
        get = self.vocab.get
        return np.fromiter((get(w, UNK) for w in words), dtype=np.int64, count=len(words))

    def logprob(self, u: np.ndarray, v: np.ndarray, w: np.ndarray) -> np.ndarray:
        """``log P3(w | u v)`` (natural log) for arrays of word ids, element-wise."""
        b = self.bits
        u, v, w = np.broadcast_arrays(np.asarray(u, np.int64), np.asarray(v, np.int64), np.asarray(w, np.int64))
        p = self.p1[w]
        # bigram level (the history is one word: its statistics are indexed by word id)
        total2 = self._h2_total_of[v]
        types2 = self._h2_types_of[v]
        h2_found = total2 > 0
        total2 = np.where(h2_found, total2, 1.0)
        cont = _lookup(self.bi_keys, self.bi_cont, (v << b) | w)
        p2 = np.maximum(cont - self.d2, 0) / total2 + self.d2 * types2 / total2 * p
        p = np.where(h2_found, p2, p)
        # trigram level
        hist = (u << b) | v
        h3, h3_found = _find(self.h3_keys, hist)
        total3 = np.where(h3_found, self.h3_total[h3], 1.0)
        types3 = np.where(h3_found, self.h3_types[h3], 0.0)
        count = _lookup(self.tri_keys, self.tri_counts, (hist << b) | w)
        p3 = np.maximum(count - self.d3, 0) / total3 + self.d3 * types3 / total3 * p
        return np.log(np.where(h3_found, p3, p))

    def sentence_logprob(self, words: Sequence[str]) -> float:
        """Log-probability of a whole sentence, ``</s>`` included."""
        ids = np.concatenate(([BOS, BOS], self.ids(words), [EOS]))
        return float(self.logprob(ids[:-2], ids[1:-1], ids[2:]).sum())

    # ------------------------------------------------------------------ candidates

    def _top_table(self, groups: np.ndarray, words: np.ndarray, counts: np.ndarray,
                   n_groups: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``CANDIDATES_PER_SOURCE`` most frequent ``words`` of every group, as one array and
        the start of each group in it (group g's words are ``table[start[g]:start[g + 1]]``)."""
        order = np.lexsort((words, -counts, groups))
        groups, words = groups[order], words[order]
        first = np.searchsorted(groups, groups, side="left")
        keep = (np.arange(groups.size) - first) < CANDIDATES_PER_SOURCE
        start = np.searchsorted(groups[keep], np.arange(n_groups + 1), side="left")
        return words[keep], start

    def _build_candidate_tables(self) -> None:
        b, word_mask = self.bits, self.word_mask
        # trigram continuations per history (u v), indexed by the history's position in h3_keys
        hist_index = np.searchsorted(self.h3_keys, self.tri_keys >> b)
        self._tri_top, self._tri_start = self._top_table(hist_index, self.tri_keys & word_mask, self.tri_counts,
                                                         self.h3_keys.size)
        size = len(self.words)
        # bigram continuations per v, and predecessors per right word, indexed by word id
        self._bi_top, self._bi_start = self._top_table(self.bi_keys >> b, self.bi_keys & word_mask, self.bi_cont, size)
        self._rev_top, self._rev_start = self._top_table(self.bi_keys & word_mask, self.bi_keys >> b, self.bi_cont,
                                                         size)

    def candidates(self, u: int, v: int, right: int | None) -> np.ndarray:
        """Candidate words for a gap after ``u v`` and before ``right`` (None: a mask follows),
        remembered for the most recent :data:`CANDIDATE_CACHE` gaps' contexts."""
        key = (u, v, -1 if right is None else right)
        found = self._candidates.get(key)
        if found is None:
            if len(self._candidates) >= CANDIDATE_CACHE:
                self._candidates.clear()
            found = self._candidates[key] = self._find_candidates(u, v, right)
        return found

    def _find_candidates(self, u: int, v: int, right: int | None) -> np.ndarray:
        parts = [self.frequent, self._bi_top[self._bi_start[v]:self._bi_start[v + 1]]]
        hist = (u << self.bits) | v
        h = int(np.searchsorted(self.h3_keys, hist))
        if h < self.h3_keys.size and self.h3_keys[h] == hist:
            parts.append(self._tri_top[self._tri_start[h]:self._tri_start[h + 1]])
        if right is not None and right not in (EOS, UNK):
            parts.append(self._rev_top[self._rev_start[right]:self._rev_start[right + 1]])
        found = np.unique(np.concatenate(parts))
        return found[self.fillable[found]]

    # ------------------------------------------------------------------ filling

    def fill(self, words: Sequence[str], masked: Sequence[int] | np.ndarray, beam_width: int = BEAM_WIDTH) -> Fill:
        """Fill the words at positions ``masked`` (sorted, distinct) with beam search.

        Returns the filled words of the best beam, in position order, and its log-probability
        gain (the sum of the terms that touch a mask; see the module docstring).
        """
        n = len(words)
        positions = sorted(set(int(i) for i in masked))
        if not positions:
            return Fill([], 0.0)
        if positions[0] < 0 or positions[-1] >= n:
            raise UsageError(f"masked positions must lie in 0..{n - 1}, got {positions}")
        # padded ids: x[p + 2] is word p; x[1], x[0] are <s>; x[n + 2] is </s>
        x = np.concatenate(([BOS, BOS], self.ids(words), [EOS]))
        is_masked = np.zeros(n + 3, dtype=bool)
        is_masked[np.asarray(positions) + 2] = True
        original = x.copy()
        # beams: rows of the padded sentence as filled so far, and their scores
        beams = x[None, :].copy()
        scores = np.zeros(1)
        for p in positions:
            i = p + 2
            right = None if is_masked[i + 1] else int(x[i + 1])
            rows, cands = [], []
            cache: dict[tuple[int, int], np.ndarray] = {}
            for row in range(beams.shape[0]):
                key = (int(beams[row, i - 2]), int(beams[row, i - 1]))
                found = cache.get(key)
                if found is None:
                    found = self.candidates(key[0], key[1], right)
                    found = found[found != original[i]]
                    cache[key] = found
                rows.append(np.full(found.size, row, dtype=np.int64))
                cands.append(found)
            row_of = np.concatenate(rows)
            w = np.concatenate(cands)
            if w.size == 0:
                continue  # nothing to put here: keep the original word
            u2, u1 = beams[row_of, i - 2], beams[row_of, i - 1]
            # the terms this word completes, scored in one lookup: its own, then those of the
            # known words to its right whose window it closes
            us, vs, ws = [u2], [u1], [w]
            if not is_masked[i + 1]:
                us.append(u1)
                vs.append(w)
                ws.append(np.full(w.size, x[i + 1]))
                if i + 2 <= n + 2 and not is_masked[i + 2]:
                    us.append(w)
                    vs.append(np.full(w.size, x[i + 1]))
                    ws.append(np.full(w.size, x[i + 2]))
            terms = self.logprob(np.concatenate(us), np.concatenate(vs), np.concatenate(ws))
            gain = scores[row_of] + terms.reshape(len(us), w.size).sum(axis=0)
            keep = min(beam_width, gain.size)
            best = np.argpartition(-gain, keep - 1)[:keep] if gain.size > keep else np.arange(gain.size)
            best = best[np.lexsort((w[best], -gain[best]))]  # by score, ties by word id: deterministic
            beams = beams[row_of[best]].copy()
            beams[:, i] = w[best]
            scores = gain[best]
        top = int(np.argmax(scores))
        return Fill([self.words[int(beams[top, p + 2])] for p in positions], float(scores[top]))
