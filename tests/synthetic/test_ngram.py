"""The Kneser-Ney trigram filler (assay.synthetic.ngram): a proper distribution, the counts of
Chen & Goodman (1998, §3.4) by hand on a toy corpus, and beam search that finds the best fill."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from assay.errors import UsageError
from assay.synthetic.ngram import BOS, EOS, KneserNeyTrigram

TOY = ["the cat sat on the mat", "the dog sat on the mat", "a cat ran to the dog", "the cat ran"]


@pytest.fixture(scope="module")
def toy() -> KneserNeyTrigram:
    return KneserNeyTrigram(s.split() for s in TOY)


def test_every_history_is_a_distribution(toy: KneserNeyTrigram) -> None:
    words = np.arange(len(toy.words))
    for u, v in [("the", "cat"), ("cat", "sat"), ("mat", "dog"), ("<s>", "<s>"), ("<unk>", "<unk>"), ("dog", "the")]:
        ids = toy.ids([u, v]) if u not in ("<s>",) else np.array([BOS, BOS])
        p = np.exp(toy.logprob(np.full(words.size, ids[0]), np.full(words.size, ids[1]), words))
        assert p.sum() == pytest.approx(1.0, abs=1e-12), (u, v)
        assert (p > 0).all()


def test_probabilities_by_hand(toy: KneserNeyTrigram) -> None:
    """P3(sat | the cat), computed by hand from the formulas of the module docstring."""
    d3, d2, d1 = toy.d3, toy.d2, toy.d1
    # trigram level: "the cat" is followed by sat (1) and ran (1): c = 2, N1+ = 2
    # bigram level (continuation counts): ". cat sat" has 1 left word (the), ". cat ran" has 2 (a, the)
    # -> N1+(. cat .) = 3, N1+'(cat .) = 2 distinct words
    # unigram level: N1+(. sat) = 2 (cat, dog); N1+(. .) = number of bigram types
    bigram_types = {(a, b) for s in TOY for a, b in zip(["<s>", *s.split()], [*s.split(), "</s>"], strict=False)}
    # every bigram type of the padded corpus (including "<s> <s>" -> word) occurs with some left word
    padded = [["<s>", "<s>", *s.split(), "</s>"] for s in TOY]
    types = {(t[i + 1], t[i + 2]) for t in padded for i in range(len(t) - 2)}
    assert bigram_types <= types
    total = len(types)
    seen = len({b for _, b in types})
    vocab = len(toy.words)
    p1 = max(2 - d1, 0) / total + d1 * seen / total / vocab
    p2 = max(1 - d2, 0) / 3 + d2 * 2 / 3 * p1
    p3 = max(1 - d3, 0) / 2 + d3 * 2 / 2 * p2
    ids = toy.ids(["the", "cat", "sat"])
    assert math.exp(toy.logprob(ids[0], ids[1], ids[2])) == pytest.approx(p3, rel=1e-12)


def test_sentence_logprob_sums_the_trigrams(toy: KneserNeyTrigram) -> None:
    words = ["the", "cat", "sat", "on", "the", "dog"]
    ids = [BOS, BOS, *toy.ids(words).tolist(), EOS]
    expected = sum(float(toy.logprob(ids[i], ids[i + 1], ids[i + 2])) for i in range(len(ids) - 2))
    assert toy.sentence_logprob(words) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("masked", [[1], [2], [0, 1], [1, 3], [4, 5], [0, 5]])
def test_a_wide_beam_finds_the_most_likely_fill(toy: KneserNeyTrigram, masked: list[int]) -> None:
    """With a beam wider than the number of partial fills, the result is the fill (the original
    words excluded) that maximises the sentence's log-probability, found here by enumeration."""
    words = ["the", "cat", "sat", "on", "the", "mat"]
    fillable = [w for w in toy.words if w not in ("<s>", "</s>", "<unk>")]
    best, best_score = None, -math.inf
    for choice in itertools.product(fillable, repeat=len(masked)):
        if any(c == words[i] for c, i in zip(choice, masked, strict=True)):
            continue
        filled = list(words)
        for c, i in zip(choice, masked, strict=True):
            filled[i] = c
        score = toy.sentence_logprob(filled)
        if score > best_score:
            best, best_score = choice, score
    fill = toy.fill(words, masked, beam_width=len(fillable) ** len(masked))
    assert tuple(fill.words) == best
    # the gain is the sum of the terms whose trigram window holds a mask: the rest is constant
    ids = [BOS, BOS, *toy.ids(words).tolist(), EOS]
    untouched = sum(float(toy.logprob(ids[j - 2], ids[j - 1], ids[j])) for j in range(2, len(ids))
                    if not {j - 2, j - 1, j} & {i + 2 for i in masked})
    assert fill.score + untouched == pytest.approx(best_score, rel=1e-12)


def test_never_restores_the_original_word(toy: KneserNeyTrigram) -> None:
    words = ["the", "cat", "sat", "on", "the", "mat"]
    for i in range(len(words)):
        assert toy.fill(words, [i]).words[0] != words[i]


def test_degenerate_inputs(toy: KneserNeyTrigram) -> None:
    assert toy.fill(["the"], []).words == []
    assert len(toy.fill(["unseen", "words", "only"], [1]).words) == 1
    with pytest.raises(UsageError, match="masked positions"):
        toy.fill(["the", "cat"], [2])
    with pytest.raises(UsageError, match="at least one training sentence"):
        KneserNeyTrigram([])
