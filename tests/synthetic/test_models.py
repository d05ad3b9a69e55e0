"""The model-based perturbations and signals of the worker layer (BLEURT §4.1, §4.2, appendix A).

Models: tiny *randomly initialised* BERT masked LM, BERT NLI classifier and BART translator built
from configs by ``conftest.py`` and loaded by path like any model (``from_pretrained``); their
outputs mean nothing. Oracles: the same models called directly (exhaustive search over the
vocabulary for beam search; transformers' own mean cross-entropy for likelihoods; softmax of the
classifier's logits), and Assay's BERTScorer for the BERTScore signal.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoModelForSeq2SeqLM, AutoModelForSequenceClassification, AutoTokenizer

from assay.config import load_settings
from assay.errors import NotFoundError, UsageError
from assay.synthetic import (
    PairBatch,
    PerturbationSpec,
    SignalSpec,
    SynthesisSpec,
    create_perturbation,
    create_signal,
    load_pairs,
    signal_tasks,
    store_synthetic,
)
from assay.synthetic.masking import sample_mask
from assay.workers.bertscore import BERTScorer
from assay.workers.synthetic_models import MaskedLMFilling

SENTENCES = ["the cat sat on the mat .", "a big red dog ran to the old mat", "two cats", "one"]


@torch.inference_mode()
def _exhaustive(folder: Path, ids: list[int], positions: list[int]) -> tuple[dict[int, float], dict[tuple, float]]:
    """(log p of each first token, left-to-right score of every token pair) for two masks."""
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForMaskedLM.from_pretrained(folder).eval()
    vocab = [t for t in range(len(tokenizer)) if t not in set(tokenizer.all_special_ids)]
    masked = list(ids)
    for p in positions:
        masked[p] = tokenizer.mask_token_id
    first = torch.log_softmax(model(input_ids=torch.tensor([masked])).logits[0, positions[0]], dim=-1)
    chains = {}
    for a in vocab:
        seq = list(masked)
        seq[positions[0]] = a
        second = torch.log_softmax(model(input_ids=torch.tensor([seq])).logits[0, positions[1]], dim=-1)
        for b in vocab:
            chains[(a, b)] = float(first[a] + second[b])
    return {a: float(first[a]) for a in vocab}, chains


def test_beam_search_against_exhaustive_search(tiny_mlm: Path) -> None:
    """A beam as wide as the vocabulary fills two masks with the best token pair by summed
    left-to-right log-probability; a beam of 1 is greedy (the best first token, then the best next)."""
    wide = MaskedLMFilling(str(tiny_mlm), beam_width=25, device="cpu")
    plan = wide._plan("the cat sat on the mat .", np.random.default_rng(0))
    plan = dataclasses.replace(plan, positions=[2, 4], masked_words={1, 3})
    first, chains = _exhaustive(tiny_mlm, plan.ids, plan.positions)
    filled = wide._fill([plan])[0]
    assert (filled[2], filled[4]) == max(chains, key=lambda k: chains[k])
    greedy = MaskedLMFilling(str(tiny_mlm), beam_width=1, device="cpu")._fill([plan])[0]
    best_first = max(first, key=lambda t: first[t])
    assert greedy[2] == best_first
    assert greedy[4] == max((b for a, b in chains if a == best_first), key=lambda b: chains[(best_first, b)])


def test_mask_filling_changes_masked_words_only(tiny_mlm: Path) -> None:
    plugin = create_perturbation("mask_filling_mlm", model=str(tiny_mlm), device="cpu")
    assert plugin.family == "mask_filling" and plugin.role == "base"
    out = plugin.perturb(SENTENCES * 3, np.random.default_rng(3))
    # the same draws as the plugin's: every word of this vocabulary is one token, so costs are 1
    rng = np.random.default_rng(3)
    for before, after in zip(SENTENCES * 3, out, strict=True):
        words = before.split()
        _, positions = sample_mask(np.ones(len(words), dtype=int), rng)
        kept = [w for i, w in enumerate(words) if i not in set(positions.tolist())]
        got = after.split()
        assert len(got) == len(words)
        assert [w for i, w in enumerate(got) if i not in set(positions.tolist())] == kept
    # deterministic, and independent of how sentences are batched
    again = create_perturbation("mask_filling_mlm", model=str(tiny_mlm), device="cpu", batch_size=1)
    assert again.perturb(SENTENCES * 3, np.random.default_rng(3)) == out
    assert plugin.signature().startswith("mask_filling_mlm|filler:tiny-mlm@")
    with pytest.raises(NotFoundError, match="mask_filling_mlm: cannot load"):
        create_perturbation("mask_filling_mlm", model=str(tiny_mlm / "missing"), device="cpu").perturb(
            ["a cat"], np.random.default_rng(0))


def test_backtranslation_and_its_likelihood(tiny_translator: Path) -> None:
    folder = str(tiny_translator)
    options = {"forward_model": folder, "backward_model": folder, "max_new_tokens": 8, "device": "cpu"}
    plugin = create_perturbation("backtranslation", **options)
    out = plugin.perturb(SENTENCES, np.random.default_rng(0))
    assert len(out) == 4 and all(isinstance(c, str) for c in out)
    assert plugin.perturb(SENTENCES, np.random.default_rng(1)) == out  # beam search: no randomness
    signal = create_signal("backtrans_likelihood", **options)
    assert signal.columns("backtrans_de") == ("signal_backtrans_de_fwd", "signal_backtrans_de_bwd")
    candidates = ["the dog sat", "", "two cats", "one two three"]
    values = signal.checked(PairBatch(SENTENCES, candidates, ["backtranslation"] * 4))
    # oracle: transformers' mean cross-entropy of the target given the best pivot, pair by pair
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    pivot = signal.round_trip.forward.translate
    for i, (ref, cand) in enumerate(zip(SENTENCES, candidates, strict=True)):
        for key, source, target in (("fwd", pivot([ref])[0], cand), ("bwd", pivot([cand])[0], ref)):
            encoded = tokenizer(source, text_target=target, return_tensors="pt")
            encoded.pop("token_type_ids", None)
            with torch.inference_mode():
                loss = model(**encoded).loss
            assert values[key][i] == pytest.approx(-float(loss), abs=2e-5), (key, i)


def test_entailment_maps_the_model_labels(tiny_nli: Path, tmp_path: Path) -> None:
    batch = PairBatch(SENTENCES, ["the cat", "a dog ran", "two", "one one"], ["mask_filling"] * 4)
    probs = create_signal("entailment", model=str(tiny_nli), output="probabilities", device="cpu").checked(batch)
    tokenizer = AutoTokenizer.from_pretrained(tiny_nli)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_nli).eval()
    with torch.inference_mode():
        logits = model(**tokenizer(list(batch.references), list(batch.candidates), return_tensors="pt",
                                   padding=True)).logits
    direct = torch.softmax(logits, dim=-1).numpy()
    # the model's labels: 0 CONTRADICTION, 1 ENTAILMENT, 2 NEUTRAL
    np.testing.assert_allclose(probs["entail"], direct[:, 1], atol=1e-6)
    np.testing.assert_allclose(probs["neutral"], direct[:, 2], atol=1e-6)
    np.testing.assert_allclose(probs["contradict"], direct[:, 0], atol=1e-6)
    classes = create_signal("entailment", model=str(tiny_nli), device="cpu")
    assert classes.kind == "classification" and classes.columns("entailment") == ("signal_entailment",)
    stacked = np.stack([probs["entail"], probs["neutral"], probs["contradict"]], axis=1)
    np.testing.assert_array_equal(classes.checked(batch)[""], stacked.argmax(axis=1))
    # a classifier whose labels do not name the three NLI classes is refused, naming them
    other = tmp_path / "unlabelled"
    shutil.copytree(tiny_nli, other)
    config = json.loads((other / "config.json").read_text())
    config["id2label"] = {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}
    config["label2id"] = {"LABEL_0": 0, "LABEL_1": 1, "LABEL_2": 2}
    (other / "config.json").write_text(json.dumps(config))
    refused = r"\(0=LABEL_0, 1=LABEL_1, 2=LABEL_2\) do not name entailment, neutral and contradiction"
    with pytest.raises(UsageError, match=refused):
        create_signal("entailment", model=str(other), device="cpu").checked(batch)


def test_bertscore_signal_is_assays_bertscore(shared_data: Path) -> None:
    folder = shared_data / "wmt16-da-seg"
    refs = (folder / "DAseg.newstest2016.reference.fi-en").read_text(encoding="utf-8").splitlines()[:30]
    cands = (folder / "DAseg.newstest2016.mt-system.fi-en").read_text(encoding="utf-8").splitlines()[:30]
    refs, cands = [*refs, refs[0]], [*cands, ""]
    got = create_signal("bertscore").checked(PairBatch(refs, cands, ["backtranslation"] * len(refs)))
    p, r, f = BERTScorer().score(cands, refs)
    np.testing.assert_array_equal(got["p"], p)
    np.testing.assert_array_equal(got["r"], r)
    np.testing.assert_array_equal(got["f"], f)
    assert got["f"][-1] == 0.0  # an empty candidate scores 0, as in bert_score


def test_synthesis_with_model_plugins(wmt_home: Path, tiny_mlm: Path, tiny_translator: Path, tiny_nli: Path) -> None:
    """The worker plugins reach the platform through their entry points, in a stored version."""
    folder = str(tiny_translator)
    translation = {"forward_model": folder, "backward_model": folder, "max_new_tokens": 8, "device": "cpu"}
    spec = SynthesisSpec(
        sources=("wmt16",), exclude=("wmt17",), n_pairs=24, seed=3, max_tokens=20,
        perturbations=(PerturbationSpec("mask_filling_mlm", 0.5, {"model": str(tiny_mlm), "device": "cpu"}),
                       PerturbationSpec("backtranslation", 0.5, translation),
                       PerturbationSpec("word_dropping", 0.25)),
        signals=(SignalSpec("backtrans_likelihood", 0.5, translation, alias="backtrans_xx"),
                 SignalSpec("entailment", 2.0, {"model": str(tiny_nli), "device": "cpu"}),
                 SignalSpec("backtrans_flag")),
    )
    version = store_synthetic(spec)
    pairs = load_pairs(load_settings(), version.label).to_pylist()
    assert {r["perturbation"].split("+")[0] for r in pairs} == {"mask_filling_mlm", "backtranslation"}
    for r in pairs:
        assert r["signal_backtrans_flag"] == float(r["perturbation"].startswith("backtranslation"))
        assert r["signal_entailment"] in (0.0, 1.0, 2.0)
        assert np.isfinite(r["signal_backtrans_xx_fwd"]) and np.isfinite(r["signal_backtrans_xx_bwd"])
    tasks = {t.key: t for t in signal_tasks(load_settings(), version.label)}
    assert tasks["entailment"].objectives() == [{"name": "entailment", "column": "signal_entailment",
                                                 "kind": "classification", "n_classes": 3, "weight": 2.0}]
    assert tasks["backtrans_xx"].signature.startswith("backtrans_likelihood|fwd:tiny-bart@")
