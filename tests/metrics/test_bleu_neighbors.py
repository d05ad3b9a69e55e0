"""BLEU*, its n-gram index and the BLEU Neighbors estimator (Ethayarajh & Sadigh 2020).

Oracles and tolerances:
* hand-computed BLEU* values (Definition 3.1 worked out with fractions below): relative 1e-12;
* NLTK 3.x ``sentence_bleu([s], x, weights=(0, 1/3, 1/3, 1/3))``, with
  ``SmoothingFunction().method2`` for add-one and without smoothing (NLTK then puts
  ``sys.float_info.min`` in place of a zero precision, about 1e-103 after the cube root):
  absolute 1e-12 (NLTK sums logarithms, we take one cube root);
* sacrebleu's ``BLEU.compute_bleu`` over the 2-, 3- and 4-gram statistics (``max_ngram_order=3``),
  unsmoothed, which is exactly BLEU*: absolute 1e-12;
* the index against the all-pairs kernel and against per-pair scalar BLEU*: exact equality;
* HUSE summarization against the independent numbers of design/REFERENCE_NUMBERS.md (coverage
  0.94, Spearman 0.269, MSE 0.0226, printed to 2-4 digits): coverage within 0.005, Spearman within
  0.0005, MSE within 0.00005.
"""

from __future__ import annotations

import math
import random
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import spearmanr

from assay.errors import UsageError
from assay.metrics.bleu_neighbors import (
    BertScoreKernel,
    BleuNeighbors,
    BleuStarKernel,
    RougeKernel,
    estimate,
    threshold_matrix,
)
from assay.metrics.bleu_star import (
    DEFAULT_SMOOTHING,
    SMOOTHINGS,
    Smoothing,
    bleu_star,
    bleu_star_counts,
    bleu_star_from_counts,
    brevity_penalty,
    signature,
)
from assay.metrics.neighbors_index import AllPairsBleuStar, BleuStarIndex

FOX = "the quick brown fox jumps over the dog"  # 8 tokens
LAZY = "the quick brown fox jumped over the lazy dog"  # 9 tokens


def random_corpus(rng: random.Random, n: int, vocab: int, shortest: int, longest: int) -> list[list[str]]:
    words = [f"w{i}" for i in range(vocab)]
    return [[rng.choice(words) for _ in range(rng.randint(shortest, longest))] for _ in range(n)]


# -- BLEU* -------------------------------------------------------------------------------------


def test_hand_computed_example() -> None:
    # x = FOX against s = LAZY: bigrams 4/7 match, trigrams 2/6, 4-grams 1/5; |x| = 8 < |s| = 9.
    penalty = math.exp(1 - 9 / 8)
    assert bleu_star(FOX, LAZY, smoothing="none") == pytest.approx(
        penalty * (4 / 7 * 2 / 6 * 1 / 5) ** (1 / 3), rel=1e-12
    )
    assert bleu_star(FOX, LAZY, smoothing="add-one") == pytest.approx(
        penalty * (5 / 8 * 3 / 7 * 2 / 6) ** (1 / 3), rel=1e-12
    )
    # asymmetric: as the hypothesis, LAZY has 8 bigrams, 7 trigrams, 6 4-grams and no brevity penalty
    assert bleu_star(LAZY, FOX, smoothing="none") == pytest.approx((4 / 8 * 2 / 7 * 1 / 6) ** (1 / 3), rel=1e-12)


def test_clipping_and_degenerate_inputs() -> None:
    # "the the" matches at most once; with add-one (1+1)/(3+1) * 1/(2+1) * 1/(1+1); |x| > |s|: no penalty
    assert bleu_star("the the the the", "the the", smoothing="add-one") == pytest.approx((1 / 12) ** (1 / 3), rel=1e-12)
    assert bleu_star("the the the the", "the the", smoothing="none") == 0.0
    assert bleu_star("a b c d", "e f g h", smoothing="add-one") == 0.0  # no shared unigram (as NLTK)
    assert bleu_star("", "a b c", smoothing="add-one") == 0.0
    assert bleu_star("a b", "a b", smoothing="none") == 0.0  # no 4-gram at all
    # shares one unigram, no bigram: (1/5)(1/4)(1/3) for a 5-token candidate, penalty exp(1 - 6/5)
    expected = math.exp(1 - 6 / 5) * (1 / 60) ** (1 / 3)
    assert bleu_star("a b c d e", "a x y z u v", smoothing="add-one") == pytest.approx(expected, rel=1e-12)
    assert bleu_star(FOX, FOX, smoothing="none") == 1.0
    assert DEFAULT_SMOOTHING == "add-one"


def test_brevity_penalty() -> None:
    assert brevity_penalty([8, 9, 3, 0], [9, 8, 3, 4]).tolist() == pytest.approx([math.exp(-1 / 8), 1.0, 1.0, 0.0])


@pytest.mark.filterwarnings("ignore::UserWarning")  # NLTK warns about zero counts without smoothing
@pytest.mark.parametrize("smoothing", SMOOTHINGS)
def test_matches_nltk_sentence_bleu(smoothing: Smoothing) -> None:
    bleu_score = pytest.importorskip("nltk.translate.bleu_score")
    smoother = bleu_score.SmoothingFunction().method2 if smoothing == "add-one" else None
    rng = random.Random(7)
    pairs = [(x, s) for x, s in zip(random_corpus(rng, 300, 6, 0, 14), random_corpus(rng, 300, 6, 0, 14), strict=True)]
    pairs += [(FOX.split(), LAZY.split()), (LAZY.split(), FOX.split())]
    for x, s in pairs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = bleu_score.sentence_bleu([s], x, weights=(0, 1 / 3, 1 / 3, 1 / 3), smoothing_function=smoother)
        ours = bleu_star(" ".join(x), " ".join(s), smoothing=smoothing)
        assert ours == pytest.approx(expected, abs=1e-12), (x, s)


def test_matches_sacrebleu_statistics_formula() -> None:
    from sacrebleu.metrics.bleu import BLEU

    rng = random.Random(3)
    for x, s in zip(random_corpus(rng, 300, 5, 4, 15), random_corpus(rng, 300, 5, 1, 15), strict=True):
        counts = bleu_star_counts(x, s)
        totals = [len(x) - n + 1 for n in (2, 3, 4)]
        expected = BLEU.compute_bleu(list(counts.matches), totals, len(x), len(s), max_ngram_order=3).score / 100
        assert bleu_star(" ".join(x), " ".join(s), smoothing="none") == pytest.approx(expected, abs=1e-12)


def test_signature_and_bad_smoothing() -> None:
    assert signature("none").startswith("bleu_star|smooth:none|tok:whitespace|v:1|assay:")
    with pytest.raises(UsageError, match="smoothing"):
        bleu_star("a", "a", smoothing="add-two")  # type: ignore[arg-type]


# -- the index equals all pairs ----------------------------------------------------------------


def as_dict(matrix: sp.csr_matrix) -> dict[tuple[int, int], float]:
    coo = matrix.tocoo()
    return {(int(r), int(c)): float(v) for r, c, v in zip(coo.row, coo.col, coo.data, strict=True)}


def scalar_neighbors(
    cands: list[list[str]], train: list[list[str]], tau: float, smoothing: Smoothing, loo: bool
) -> dict:
    out = {}
    for i, x in enumerate(cands):
        for j, s in enumerate(train):
            if not (loo and i == j):
                score = bleu_star(" ".join(x), " ".join(s), smoothing=smoothing)
                if score >= tau:
                    out[(i, j)] = score
    return out


def assert_same(left: sp.csr_matrix, right: sp.csr_matrix) -> None:
    assert left.shape == right.shape
    assert np.array_equal(left.indptr, right.indptr)
    assert np.array_equal(left.indices, right.indices)
    assert np.array_equal(left.data, right.data)  # identical floats, not close ones


@pytest.mark.parametrize("smoothing", SMOOTHINGS)
def test_index_equals_all_pairs_on_random_corpora(smoothing: Smoothing) -> None:
    rng = random.Random(11)
    for trial in range(30):
        # small vocabularies make n-grams repeat (even 3+ times in both sentences) and lengths
        # from 0 to 12 exercise the closed-form length bucket of add-one smoothing
        vocab = rng.choice([2, 3, 5, 12, 40])
        train = random_corpus(rng, rng.randint(0, 40), vocab, 0, 12)
        cands = random_corpus(rng, rng.randint(0, 25), vocab, 0, 12)
        tau = rng.choice([0.01, 0.08, 0.2, 0.5, 1.0])
        index, reference = BleuStarIndex(train), AllPairsBleuStar(train)
        got = index.neighbors(cands, tau, smoothing=smoothing, chunk_size=rng.choice([1, 4, 512]))
        assert_same(got, reference.neighbors(cands, tau, smoothing=smoothing))
        assert as_dict(got) == scalar_neighbors(cands, train, tau, smoothing, loo=False), trial
        loo = index.neighbors(train, tau, smoothing=smoothing, exclude_self=True)
        assert_same(loo, reference.neighbors(train, tau, smoothing=smoothing, exclude_self=True))
        assert all(i != j for i, j in as_dict(loo))


def test_index_uses_the_closed_form_bucket_for_short_sentences() -> None:
    # the candidate shares only the unigram "a" with every training sentence: scores depend on
    # the lengths alone and reach tau = 0.08 up to some training length, then stop
    train = [["a", *(f"t{j}_{k}" for k in range(length - 1))] for j, length in enumerate(range(1, 30))]
    cands = [["a", "b", "c", "d", "e"], ["b", "c"], ["a"]]
    got = BleuStarIndex(train).neighbors(cands, 0.08, smoothing="add-one")
    assert_same(got, AllPairsBleuStar(train).neighbors(cands, 0.08, smoothing="add-one"))
    first = as_dict(got[0])
    assert first and max(j for _, j in first) < len(train) - 1  # a proper prefix of the lengths
    lengths = [len(train[j]) for _, j in first]
    assert lengths == list(range(1, max(lengths) + 1))
    closed = bleu_star_from_counts(0, 0, 0, 5, np.array(lengths), True, "add-one")
    assert [first[(0, j)] for j in range(len(lengths))] == closed.tolist()
    assert as_dict(got[1]) == {}  # "b c" shares no unigram with any training sentence


@pytest.mark.parametrize("smoothing", SMOOTHINGS)
def test_index_degenerate_corpora(smoothing: Smoothing) -> None:
    assert BleuStarIndex([]).neighbors([["a", "b"]], 0.08, smoothing=smoothing).shape == (1, 0)
    assert BleuStarIndex([["a", "b"]]).neighbors([], 0.08, smoothing=smoothing).shape == (0, 1)
    train = [[], ["x"], ["a", "b", "c", "d"]]
    cands = [[], ["unseen", "words"], ["a", "b", "c", "d"]]
    got = BleuStarIndex(train).neighbors(cands, 0.08, smoothing=smoothing)
    assert as_dict(got) == {(2, 2): 1.0}


def test_index_rejects_bad_arguments() -> None:
    index = BleuStarIndex([["a", "b"]])
    with pytest.raises(UsageError, match="tau"):
        index.neighbors([["a"]], 0.0)
    with pytest.raises(ValueError, match="exclude_self"):
        index.neighbors([["a"], ["b"]], 0.08, exclude_self=True)


# -- the estimator -----------------------------------------------------------------------------


def matrix_kernel(sim: np.ndarray) -> BertScoreKernel:
    """A kernel whose similarities are a fixed matrix (through the BERTScore slot)."""
    return BertScoreKernel(lambda cands, train: sim[: len(cands), : len(train)], name="fixed")


def test_tau_a_b_rule_and_undefined_is_none() -> None:
    # 10 training sentences, qualities 0.0 .. 0.9; |S| = 10 so b = 0.5 allows at most 5 neighbours
    quality = np.arange(10) / 10
    sim = np.zeros((4, 10))
    sim[0, :3] = 0.2  # 3 neighbours: at least a = 3, defined
    sim[1, :2] = 0.2  # 2 < a: undefined
    sim[2, :5] = [0.1, 0.1, 0.1, 0.1, 0.1 - 1e-12]  # the last is below tau: 4 neighbours
    sim[3, :6] = 0.5  # 6 > b|S| = 5: undefined
    result = BleuNeighbors(matrix_kernel(sim), tau=0.1, a=3, b=0.5).predict(["x"] * 4, ["s"] * 10, quality)
    assert result.neighbor_counts.tolist() == [3, 2, 4, 6]
    assert result.predictions[0] == pytest.approx(0.1)
    assert result.predictions[1] is None and result.predictions[3] is None
    assert result.predictions[2] == pytest.approx(0.15)  # tau is inclusive: 0.1 >= 0.1
    assert result.coverage == 0.5
    summary = result.summary([0.1, 0.2, 0.3, 0.4])
    assert (summary.defined, summary.undefined, summary.coverage) == (2, 2, 0.5)
    assert summary.mse == pytest.approx(((0.1 - 0.1) ** 2 + (0.15 - 0.3) ** 2) / 2)


def test_bounds_are_inclusive() -> None:
    neighbors = sp.csr_matrix(np.array([[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0]]))
    predictions, counts = estimate(neighbors, [0.0, 1.0, 0.5, 0.5], train_size=4, a=2, b=0.5)
    assert counts.tolist() == [2, 3]
    assert predictions == (0.5, None)  # |N| = a = b|S| = 2 is defined; 3 > 2 is not


def test_leave_one_out_excludes_self() -> None:
    texts = ["a b c d e", "a b c d e", "a b c d e", "v w x y z"]
    quality = np.array([0.2, 0.4, 0.6, 1.0])
    result = BleuNeighbors(BleuStarKernel("none"), a=1, b=1.0).leave_one_out(texts, quality)
    assert result.train_size == 3
    assert result.neighbor_counts.tolist() == [2, 2, 2, 0]
    assert result.predictions[:3] == pytest.approx((0.5, 0.4, 0.3))  # each from the other two copies
    assert result.predictions[3] is None  # its only perfect match would be itself
    assert result.neighbors.diagonal().tolist() == [0.0] * 4


def test_train_to_test_uses_the_index_and_matches_exhaustive() -> None:
    rng = random.Random(5)
    train = [" ".join(s) for s in random_corpus(rng, 60, 8, 2, 10)]
    cands = [" ".join(s) for s in random_corpus(rng, 30, 8, 2, 10)]
    quality = np.random.default_rng(0).random(60)
    fast = BleuNeighbors(BleuStarKernel()).predict(cands, train, quality)
    slow = BleuNeighbors(BleuStarKernel(exhaustive=True)).predict(cands, train, quality)
    assert fast.predictions == slow.predictions
    assert_same(fast.neighbors, slow.neighbors)
    assert fast.signature.startswith(
        "bleu_neighbors|kernel:bleu_star|smooth:add-one|tok:whitespace|tau:0.08|a:5|b:0.66"
    )


def test_summary_matches_scipy() -> None:
    sim = np.eye(6)[:, :6] + 0.0
    sim[:, 0] = 1.0
    quality = np.array([0.9, 0.1, 0.4, 0.3, 0.8, 0.5])
    result = BleuNeighbors(matrix_kernel(sim), tau=0.5, a=1, b=1.0).predict(["x"] * 6, ["s"] * 6, quality)
    gold = np.array([0.2, 0.3, 0.1, 0.6, 0.7, 0.4])
    summary = result.summary(gold)
    pred = np.array(result.predictions, dtype=float)
    assert summary.coverage == 1.0 and summary.undefined == 0
    assert summary.spearman == pytest.approx(spearmanr(pred, gold).statistic, abs=1e-12)
    assert summary.mse == pytest.approx(float(np.mean((pred - gold) ** 2)), abs=1e-15)
    empty = BleuNeighbors(matrix_kernel(sim), tau=0.5, a=5).predict(["x"], ["s"] * 6, quality).summary([0.5])
    assert (empty.coverage, empty.spearman, empty.mse, empty.undefined) == (0.0, None, None, 1)


def test_kernels_defaults_and_rouge_matches_the_library() -> None:
    from rouge_score import rouge_scorer

    assert (BleuStarKernel.default_tau, RougeKernel.default_tau) == (0.08, 0.06)
    assert BertScoreKernel(lambda c, t: np.zeros((len(c), len(t)))).default_tau == 0.10
    train = [LAZY, "a completely different sentence", "the quick brown fox"]
    got = RougeKernel().neighbors([FOX], train, 0.06)
    library = rouge_scorer.RougeScorer(["rougeL"])
    expected = [library.score(t, FOX)["rougeL"].fmeasure for t in train]
    assert got.toarray()[0].tolist() == pytest.approx([v if v >= 0.06 else 0.0 for v in expected], abs=1e-15)


def test_estimator_rejects_bad_arguments() -> None:
    with pytest.raises(UsageError, match="tau"):
        BleuNeighbors(tau=0.0)
    with pytest.raises(UsageError, match="positive integer"):
        BleuNeighbors(a=0)
    with pytest.raises(UsageError, match=r"\[0, 1\]"):
        BleuNeighbors(b=1.5)
    with pytest.raises(UsageError, match="quality"):
        BleuNeighbors().leave_one_out(["a b", "a b"], [0.5])
    with pytest.raises(ValueError, match="shape"):
        BertScoreKernel(lambda c, t: np.zeros((1, 1))).neighbors(["a", "b"], ["c"], 0.1)
    with pytest.raises(ValueError, match="square"):
        threshold_matrix(np.zeros((2, 3)), 0.1, exclude_self=True)


# -- HUSE summarization (real data) ------------------------------------------------------------


@pytest.fixture(scope="module")
def huse(shared_data: Path) -> tuple[list[str], np.ndarray]:
    from assay.datasets.formats import parse

    table = parse(shared_data / "huse" / "summarization_raw_outputs.csv", "huse").tables["segments"]
    quality = np.asarray(table.column("human_raw").to_pylist(), dtype=np.float64) / 5
    return [str(text) for text in table.column("candidate").to_pylist()], quality


def test_huse_reproduces_the_independent_numbers(huse: tuple[list[str], np.ndarray]) -> None:
    texts, quality = huse
    assert len(texts) == 200
    summary = BleuNeighbors().leave_one_out(texts, quality).summary(quality)
    assert summary.coverage == pytest.approx(0.94, abs=0.005)
    assert summary.spearman == pytest.approx(0.269, abs=0.0005)
    assert summary.mse == pytest.approx(0.0226, abs=0.00005)
    unsmoothed = BleuNeighbors(BleuStarKernel("none")).leave_one_out(texts, quality).summary(quality)
    assert (unsmoothed.coverage, unsmoothed.undefined, unsmoothed.spearman) == (0.0, 200, None)
