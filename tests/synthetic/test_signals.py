"""The lexical pre-training signals (BLEURT §4.2, Table 1) against their oracles, sacrebleu and
rouge-score called directly, on real WMT16 de-en pairs (DAseg MT outputs and references from
``../shared/data/wmt16-da-seg``). Tolerance: exact equality (the same libraries compute them)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sacrebleu
from rouge_score import rouge_scorer

from assay.errors import NotFoundError, UsageError
from assay.synthetic import PairBatch, create_signal, signal_names
from assay.synthetic.base import Signal


@pytest.fixture(scope="module")
def wmt16_pairs(shared_data: Path) -> PairBatch:
    """200 real (reference, MT output) pairs, three repeated, plus degenerate candidates."""
    folder = shared_data / "wmt16-da-seg"
    refs = (folder / "DAseg.newstest2016.reference.de-en").read_text(encoding="utf-8").splitlines()[:200]
    cands = (folder / "DAseg.newstest2016.mt-system.de-en").read_text(encoding="utf-8").splitlines()[:200]
    refs += [refs[0], refs[1], refs[2], refs[3], refs[4]]
    cands += [cands[0], cands[1], "", refs[3], "."]
    return PairBatch(refs, cands, ["mask_filling"] * len(refs))


def _sliced(signal: Signal, batch: PairBatch, order: np.ndarray, size: int) -> dict[str, np.ndarray]:
    """The signal computed on shuffled batches of ``size`` pairs, put back in the original order."""
    out: dict[str, np.ndarray] = {}
    for start in range(0, len(order), size):
        rows = order[start:start + size]
        part = signal.checked(PairBatch([batch.references[i] for i in rows], [batch.candidates[i] for i in rows],
                                        [batch.families[i] for i in rows]))
        for key, values in part.items():
            out.setdefault(key, np.full(len(order), np.nan))[rows] = values
    return out


def test_bleu_is_sacrebleu_sentence_bleu(wmt16_pairs: PairBatch) -> None:
    signal = create_signal("bleu")
    got = signal.checked(wmt16_pairs)[""]
    expected = [sacrebleu.sentence_bleu(c, [r]).score for r, c in zip(wmt16_pairs.references, wmt16_pairs.candidates,
                                                                       strict=True)]
    np.testing.assert_array_equal(got, expected)
    assert got[202] == 0.0  # an empty candidate
    assert got[203] == pytest.approx(100.0, abs=1e-9)  # a copy of the reference
    assert signal.columns("bleu") == ("signal_bleu",)
    assert signal.signature().startswith("bleu|metric:sentbleu|tok:13a|smooth:exp|")
    add_k = create_signal("bleu", smooth_method="add-k").checked(wmt16_pairs)[""]
    np.testing.assert_array_equal(add_k[:5], [sacrebleu.sentence_bleu(c, [r], smooth_method="add-k").score for r, c in
                                              zip(wmt16_pairs.references[:5], wmt16_pairs.candidates[:5], strict=True)])


def test_chrf_is_sacrebleu_chrf(wmt16_pairs: PairBatch) -> None:
    got = create_signal("chrf").checked(wmt16_pairs)[""]
    expected = [sacrebleu.sentence_chrf(c, [r]).score for r, c in zip(wmt16_pairs.references, wmt16_pairs.candidates,
                                                                       strict=True)]
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("rouge_type", ["rouge1", "rouge2", "rougeL"])
def test_rouge_is_rouge_score(wmt16_pairs: PairBatch, rouge_type: str) -> None:
    signal = create_signal("rouge", rouge_type=rouge_type)
    got = signal.checked(wmt16_pairs)
    scorer = rouge_scorer.RougeScorer([rouge_type])
    results = [scorer.score(r, c)[rouge_type] for r, c in zip(wmt16_pairs.references, wmt16_pairs.candidates,
                                                               strict=True)]
    np.testing.assert_array_equal(got["p"], [s.precision for s in results])
    np.testing.assert_array_equal(got["r"], [s.recall for s in results])
    np.testing.assert_array_equal(got["f"], [s.fmeasure for s in results])
    assert signal.columns("rouge") == ("signal_rouge_p", "signal_rouge_r", "signal_rouge_f")


@pytest.mark.parametrize("name", ["bleu", "chrf", "rouge"])
def test_batches_give_identical_numbers(wmt16_pairs: PairBatch, name: str) -> None:
    """Shuffled batches of 7 pairs give exactly the numbers of one batch (no state across pairs)."""
    signal = create_signal(name)
    whole = signal.checked(wmt16_pairs)
    order = np.random.default_rng(0).permutation(len(wmt16_pairs))
    sliced = _sliced(signal, wmt16_pairs, order, 7)
    for key in whole:
        np.testing.assert_array_equal(sliced[key], whole[key])


def test_backtranslation_flag_reads_the_family() -> None:
    signal = create_signal("backtrans_flag")
    batch = PairBatch(["a"] * 4, ["b"] * 4, ["mask_filling", "backtranslation", "word_dropping", "other"])
    values = signal.checked(batch)[""]
    np.testing.assert_array_equal(values[:2], [0.0, 1.0])
    assert np.isnan(values[2:]).all()  # not computable: NaN, never 0
    assert signal.kind == "classification" and signal.classes == ("mask_filling", "backtranslation")


def test_registry_and_parameters() -> None:
    assert {"bleu", "rouge", "chrf", "backtrans_flag", "bertscore", "backtrans_likelihood",
            "entailment"} <= set(signal_names())
    with pytest.raises(NotFoundError, match="unknown signal 'blue'"):
        create_signal("blue")
    with pytest.raises(UsageError, match="signal 'bleu' has no parameter 'smoothing'"):
        create_signal("bleu", smoothing="exp")
    with pytest.raises(UsageError, match="rouge_type is 'rouge3'"):
        create_signal("rouge", rouge_type="rouge3")
