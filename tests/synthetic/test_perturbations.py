"""The perturbations that need no model (BLEURT §4.1, appendix A.1), their registry, and the spec."""

from __future__ import annotations

import numpy as np
import pytest

from assay.errors import NotFoundError, UsageError
from assay.synthetic import (
    Corpus,
    PerturbationSpec,
    SignalSpec,
    SynthesisSpec,
    create_perturbation,
    default_spec,
    perturbation_names,
)
from assay.synthetic.synthesize import load_plugins, split_counts

SENTENCES = ["the cat sat on the mat", "a dog ran to the big red mat", "two old dogs sat on a mat",
             "the cat ran", "a cat sat on the mat", "a dog ran to the mat", "the cat sat"]


def _corpus() -> Corpus:
    # kinds bit 0 = reference, bit 2 = output; outputs 4, 5 and 6 translate references 0, 1, 0
    kinds = np.array([1, 1, 1, 1, 4, 4, 4], dtype=np.uint8)
    pairs = np.array([[0, 4], [1, 5], [0, 6]], dtype=np.int64)
    return Corpus(SENTENCES, kinds, pairs, (), (), 1, None)


def test_word_dropping_drops_between_one_and_all_words() -> None:
    plugin = create_perturbation("word_dropping")
    assert plugin.role == "modifier" and plugin.family == "word_dropping"
    rng = np.random.default_rng(0)
    sentence = "one two three four five six seven eight"
    dropped = []
    for _ in range(2000):
        (out,) = plugin.perturb([sentence], rng)
        words = out.split()
        kept = iter(sentence.split())
        assert all(w in kept for w in words)  # an ordered subsequence
        dropped.append(8 - len(words))
    # "we draw the number of words to drop uniformly, up to the length of the sentence" (A.1)
    np.testing.assert_allclose(np.bincount(dropped, minlength=9)[1:] / 2000, 1 / 8, atol=0.03)
    assert np.bincount(dropped, minlength=9)[0] == 0
    assert plugin.perturb([""], rng) == [""]


def test_system_outputs_uses_each_output_once_before_repeating() -> None:
    corpus = _corpus()
    plugin = create_perturbation("system_outputs")
    plugin.prepare(corpus)
    assert plugin.family == "backtranslation"
    assert plugin.eligible(corpus, corpus.indices(["references"])).tolist() == [0, 1]
    rng = np.random.default_rng(0)
    first = plugin.perturb([SENTENCES[0]] * 4 + [SENTENCES[1]], rng)
    assert sorted(first[:2]) == sorted([SENTENCES[4], SENTENCES[6]])
    assert sorted(first[2:4]) == sorted([SENTENCES[4], SENTENCES[6]])
    assert first[4] == SENTENCES[5]
    with pytest.raises(UsageError, match="no system output"):
        plugin.perturb([SENTENCES[3]], rng)


def test_ngram_mask_filling_changes_only_masked_words() -> None:
    corpus = _corpus()
    plugin = create_perturbation("mask_filling", max_masks=2)
    with pytest.raises(UsageError, match="prepare"):
        plugin.perturb(["the cat"], np.random.default_rng(0))
    plugin.prepare(corpus)
    rng = np.random.default_rng(1)
    out = plugin.perturb(SENTENCES[:4] * 20, rng)
    for before, after in zip(SENTENCES[:4] * 20, out, strict=True):
        a, b = before.split(), after.split()
        assert len(a) == len(b)
        changed = sum(x != y for x, y in zip(a, b, strict=True))
        assert 1 <= changed <= 2  # every masked word changes (the original is never a candidate)
    again = create_perturbation("mask_filling", max_masks=2)
    again.prepare(corpus)
    assert again.perturb(SENTENCES[:4] * 20, np.random.default_rng(1)) == out  # seeded: deterministic
    assert plugin.signature().startswith("mask_filling|filler:kn-trigram|masks:2|contiguous:0.5|beam:8|")


def test_registry() -> None:
    assert {"mask_filling", "word_dropping", "system_outputs", "mask_filling_mlm",
            "backtranslation"} <= set(perturbation_names())
    with pytest.raises(NotFoundError, match="unknown perturbation 'masking'"):
        create_perturbation("masking")
    with pytest.raises(UsageError, match="perturbation 'mask_filling' has no parameter 'beam'"):
        create_perturbation("mask_filling", beam=4)
    with pytest.raises(UsageError, match="max_masks is 0"):
        create_perturbation("mask_filling", max_masks=0)
    with pytest.raises(UsageError, match="train_kinds"):
        create_perturbation("mask_filling", train_kinds=["wikipedia"])


def test_shares_are_split_by_largest_remainder() -> None:
    assert split_counts(10, [0.5, 0.5]) == [5, 5]
    assert split_counts(7, [0.5, 0.5]) == [4, 3]
    assert split_counts(10, [1 / 3, 1 / 3, 1 / 3]) == [4, 3, 3]
    assert sum(split_counts(40_001, [0.25, 0.25, 0.5])) == 40_001


def test_spec_round_trip_and_refusals() -> None:
    spec = default_spec()
    assert SynthesisSpec.from_dict(spec.as_dict()) == spec
    assert spec.weights() == {"bleu": 1.0, "rouge": 1.0, "bertscore": 1.0, "backtrans_flag": 1.0}
    base = spec.as_dict()
    cases = [
        ({"n_pairs": 0}, "n_pairs is 0"),
        ({"sources": []}, "sources is empty"),
        ({"kinds": ["wikipedia"]}, "kinds is"),
        ({"max_tokens": 2}, "max_tokens is 2"),
        ({"signals": [{"name": "bleu"}, {"name": "bleu"}]}, "two signals share the key 'bleu'"),
        ({"signals": [{"name": "bleu", "weight": -1}]}, "weight -1"),
        ({"signals": [{"name": "bleu", "alias": "1bleu"}]}, "signal key '1bleu'"),
        ({"perturbations": [{"name": "mask_filling", "share": 1.5}]}, "share 1.5"),
        ({"perturbations": [{"share": 1.0}]}, "each perturbation needs a name"),
        ({"colour": "blue"}, "unknown key"),
    ]
    for change, message in cases:
        with pytest.raises(UsageError, match=message):
            SynthesisSpec.from_dict({**base, **change})
    with pytest.raises(UsageError, match=r"sum to 0.8; they must sum to 1"):
        load_plugins(SynthesisSpec(("wmt16",), (PerturbationSpec("mask_filling", 0.5),
                                                PerturbationSpec("system_outputs", 0.3)), (SignalSpec("bleu"),)))
    with pytest.raises(UsageError, match="no base perturbation"):
        load_plugins(SynthesisSpec(("wmt16",), (PerturbationSpec("word_dropping", 0.3),), (SignalSpec("bleu"),)))
    with pytest.raises(UsageError, match="sources must be a list"):
        SynthesisSpec("wmt16", (), ())  # type: ignore[arg-type]


def test_failure_modes_make_each_of_metricx24s_degenerate_candidates() -> None:
    from assay.synthetic.perturbations import FAILURE_MODES
    from assay.synthetic.signals import BleuSignal

    corpus = _corpus()
    plugin = create_perturbation("failure_modes")
    assert plugin.role == "base" and plugin.family == "failure_mode"
    assert plugin.signature().startswith(
        "failure_modes|modes:empty+gibberish+unrelated+undertranslation+duplication+reference_copy|")
    plugin.prepare(corpus)
    reference = SENTENCES[1]  # 8 words
    words = reference.split()
    out = plugin.perturb([reference] * 600, np.random.default_rng(0))
    seen = {mode: 0 for mode in FAILURE_MODES}
    for candidate in out:
        c = candidate.split()
        if candidate == "":
            seen["empty"] += 1
        elif candidate == reference:
            seen["reference_copy"] += 1
        elif candidate == f"{reference} {reference}":
            seen["duplication"] += 1
        elif candidate in SENTENCES:
            seen["unrelated"] += 1
        elif c == words[:len(c)] and 1 <= len(c) < len(words):
            seen["undertranslation"] += 1
            assert round(0.2 * 8) <= len(c) <= round(0.8 * 8)
        else:  # random letters in the reference's word lengths
            assert [len(w) for w in c] == [len(w) for w in words] and all(w.isalpha() for w in c)
            seen["gibberish"] += 1
    assert all(abs(n / 600 - 1 / 6) < 0.06 for n in seen.values()), seen  # uniform over the modes
    again = create_perturbation("failure_modes")
    again.prepare(corpus)
    assert again.perturb([reference] * 600, np.random.default_rng(0)) == out  # seeded: deterministic
    # the signals label them like any pair: a copy is BLEU 100, an empty candidate 0 (NaN-free)
    from assay.synthetic.base import PairBatch

    bleu = BleuSignal().checked(PairBatch([reference] * 2, [reference, ""], ["failure_mode"] * 2))[""]
    assert bleu.tolist() == pytest.approx([100.0, 0.0])
    only = create_perturbation("failure_modes", modes=["duplication", "empty"])
    only.prepare(corpus)
    assert set(only.perturb([reference] * 50, np.random.default_rng(1))) == {"", f"{reference} {reference}"}
    with pytest.raises(UsageError, match="modes \\['blank'\\]"):
        create_perturbation("failure_modes", modes=["blank"])


def test_the_recipe_takes_a_share_of_failure_modes_from_the_other_base_perturbations() -> None:
    from assay.training.recipes import BleurtRecipe

    spec = BleurtRecipe().synthesis_spec()  # the default share is 0.1 (docs/RECIPE.md)
    assert [(p.name, p.share) for p in spec.perturbations] == [
        ("mask_filling", 0.45), ("system_outputs", 0.45), ("failure_modes", 0.1), ("word_dropping", 0.3)]
    load_plugins(spec)  # the base shares sum to 1
    without = BleurtRecipe().with_overrides(failure_modes_share=0.0).synthesis_spec()
    assert [(p.name, p.share) for p in without.perturbations] == [
        ("mask_filling", 0.5), ("system_outputs", 0.5), ("word_dropping", 0.3)]  # the corpus as before
    with pytest.raises(UsageError, match=r"failure_modes_share 1\.0"):
        BleurtRecipe().with_overrides(failure_modes_share=1.0)
