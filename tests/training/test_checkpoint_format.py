"""The checkpoint format with signal heads (Sellam et al., 2020, §4.3), and the bad checkpoints that
loading, :func:`verify_checkpoint` and training refuse, each with one error naming the file.

Already covered elsewhere, so not repeated here: pickle-only weights and an unknown
``format_version`` (``tests/workers/test_bleurt.py``), NaN scores at scoring time
(``tests/workers/test_refusals.py``). Here: truncated weights, a JSON that does not match the
weights, a missing tokenizer file, non-finite outputs (verify), a tokenizer that does not fit its
encoder, and malformed ``signal_heads``. The encoder is a tiny RANDOM BERT (see conftest).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModel, AutoTokenizer, BertTokenizer

from assay.errors import CheckpointError
from assay.workers.bleurt import BleurtScorer
from assay.workers.checkpoint import (
    CONFIG_FILE,
    WEIGHTS_FILE,
    SignalHeadSpec,
    create_from_encoder,
    load_checkpoint,
    read_config,
    save_checkpoint,
    verify_checkpoint,
)
from assay.workers.training import Objective, TrainConfig, train


@pytest.fixture(scope="module")
def base_checkpoint(tiny_encoder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return create_from_encoder(tiny_encoder, tmp_path_factory.mktemp("base") / "base", seed=3)


@pytest.fixture(scope="module")
def signal_checkpoint(tiny_encoder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny encoder + rating head + a regression and a 3-class signal head."""
    torch.manual_seed(5)
    encoder = AutoModel.from_pretrained(tiny_encoder)
    heads = {"bleu": torch.nn.Linear(32, 1), "entail": torch.nn.Linear(32, 3)}
    specs = [SignalHeadSpec("bleu", "regression", 1, 0.5, {"type": "affine", "mean": 0.3, "std": 0.2}),
             SignalHeadSpec("entail", "classification", 3, 2.0)]
    return save_checkpoint(tmp_path_factory.mktemp("sig") / "sig", encoder, AutoTokenizer.from_pretrained(tiny_encoder),
                           torch.nn.Linear(32, 1), base_encoder={"name": "tiny", "source": str(tiny_encoder)},
                           max_length=64, normalisation={"type": "affine", "mean": 1.0, "std": 2.0},
                           signal_heads=heads, signal_specs=specs)


def _copy(folder: Path, tmp_path: Path, name: str = "copy") -> Path:
    target = tmp_path / name
    shutil.copytree(folder, target)
    return target


def test_signal_heads_round_trip(signal_checkpoint: Path, base_checkpoint: Path) -> None:
    data = json.loads((signal_checkpoint / CONFIG_FILE).read_text())
    assert data["format_version"] == 1
    assert data["signal_heads"] == [
        {"name": "bleu", "kind": "regression", "out_dim": 1, "weight": 0.5,
         "normalisation": {"type": "affine", "mean": 0.3, "std": 0.2}},
        {"name": "entail", "kind": "classification", "out_dim": 3, "weight": 2.0, "normalisation": {"type": "none"}},
    ]
    tensors = load_file(str(signal_checkpoint / WEIGHTS_FILE))
    assert tensors["signal_heads.entail.weight"].shape == (3, 32) and tensors["signal_heads.bleu.bias"].shape == (1,)
    loaded = load_checkpoint(signal_checkpoint, "cpu")
    assert list(loaded.model.signal_heads) == ["bleu", "entail"]
    assert torch.equal(loaded.model.signal_heads["entail"].weight, tensors["signal_heads.entail.weight"])
    assert [s.name for s in loaded.config.signal_specs()] == ["bleu", "entail"]
    # the scorer only reads the rating head: unchanged behaviour
    assert BleurtScorer(signal_checkpoint, device="cpu").score(["the cat"], ["a cat"]).shape == (1,)
    # a checkpoint without signal heads has no key, and loads as before
    assert "signal_heads" not in json.loads((base_checkpoint / CONFIG_FILE).read_text())
    assert len(load_checkpoint(base_checkpoint, "cpu").model.signal_heads) == 0
    facts = verify_checkpoint(signal_checkpoint)
    assert facts["heads"] == ["rating", "bleu", "entail"] and facts["n_pairs"] == 4
    assert all(isinstance(x, float) for x in facts["scores"])


def test_truncated_weights_are_refused(base_checkpoint: Path, tmp_path: Path) -> None:
    folder = _copy(base_checkpoint, tmp_path)
    data = (folder / WEIGHTS_FILE).read_bytes()
    (folder / WEIGHTS_FILE).write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(folder)
    message = str(err.value)
    assert message.startswith(f"{folder / WEIGHTS_FILE}: cannot be read as safetensors")
    assert "truncated or damaged" in message and "incomplete metadata" in message


def test_a_json_that_does_not_match_the_weights_is_refused(base_checkpoint: Path, tmp_path: Path) -> None:
    folder = _copy(base_checkpoint, tmp_path)
    data = json.loads((folder / CONFIG_FILE).read_text())
    data["encoder_config"]["num_hidden_layers"] = 3
    data["encoder_config"]["intermediate_size"] = 48
    (folder / CONFIG_FILE).write_text(json.dumps(data))
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(folder)
    message = str(err.value)
    assert message.startswith(f"{folder / WEIGHTS_FILE}: does not match {CONFIG_FILE}:")
    assert "tensor(s) the JSON's architecture needs are missing (encoder.encoder.layer.2." in message
    assert "have other shapes (encoder.encoder.layer.0.intermediate.dense.bias: [64] != [48]" in message

    # a signal head listed in the JSON but absent from the weights
    folder = _copy(base_checkpoint, tmp_path, "extra-head")
    data = json.loads((folder / CONFIG_FILE).read_text())
    data["signal_heads"] = [{"name": "bleu", "kind": "regression", "out_dim": 1, "weight": 1.0,
                             "normalisation": {"type": "none"}}]
    (folder / CONFIG_FILE).write_text(json.dumps(data))
    with pytest.raises(CheckpointError, match=r"missing \(signal_heads.bleu.bias, signal_heads.bleu.weight\)"):
        load_checkpoint(folder)


def test_a_missing_tokenizer_file_is_refused(base_checkpoint: Path, tmp_path: Path) -> None:
    folder = _copy(base_checkpoint, tmp_path)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(folder)
    assert str(err.value) == (f"{folder / 'tokenizer.json'}: missing (listed in 'tokenizer_files' of {CONFIG_FILE})")


def test_non_finite_outputs_are_refused_by_verify(signal_checkpoint: Path, tmp_path: Path) -> None:
    folder = _copy(signal_checkpoint, tmp_path)
    tensors = load_file(str(folder / WEIGHTS_FILE))
    tensors["signal_heads.entail.bias"] = torch.tensor([0.0, float("inf"), 0.0])
    save_file(tensors, str(folder / WEIGHTS_FILE), metadata={"format": "pt"})
    load_checkpoint(folder)  # loads: the shapes are right
    with pytest.raises(CheckpointError) as err:
        verify_checkpoint(folder)
    assert str(err.value) == (f"{folder / WEIGHTS_FILE}: gives NaN or infinite outputs on fixed test pairs "
                              "(signal head 'entail': 4 of 4 pairs) (expected finite outputs; the weights are "
                              "damaged or training diverged)")

    tensors["signal_heads.entail.bias"] = torch.zeros(3)
    tensors["encoder.embeddings.LayerNorm.weight"][0] = float("nan")
    save_file(tensors, str(folder / WEIGHTS_FILE), metadata={"format": "pt"})
    with pytest.raises(CheckpointError, match=r"\(the rating head: 4 of 4 pairs, signal head 'bleu': 4 of 4 pairs, "
                                              r"signal head 'entail': 4 of 4 pairs\)"):
        verify_checkpoint(folder)


def _swap_tokenizer(folder: Path, vocab: list[str]) -> None:
    for name in read_config(folder).tokenizer_files:
        (folder / name).unlink()
    written = BertTokenizer(vocab={w: i for i, w in enumerate(vocab)}).save_pretrained(str(folder))
    data = json.loads((folder / CONFIG_FILE).read_text())
    data["tokenizer_files"] = sorted({Path(p).name for p in written if Path(p).is_file()})
    (folder / CONFIG_FILE).write_text(json.dumps(data))


def test_a_tokenizer_that_does_not_fit_the_encoder_is_refused(
    base_checkpoint: Path, tmp_path: Path, rows: list[dict[str, Any]]
) -> None:
    """An --init checkpoint whose tokenizer has more tokens than the encoder's 25 embeddings is
    refused before training writes anything (its ids would index past the embedding table)."""
    folder = _copy(base_checkpoint, tmp_path, "big-vocab")
    _swap_tokenizer(folder, ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *[f"w{i}" for i in range(40)]])
    out, work = tmp_path / "out", tmp_path / "work"
    with pytest.raises(CheckpointError) as err:
        train(rows, init=folder, out=out, objectives=[Objective("rating", "human")], primary="rating",
              config=TrainConfig(max_steps=1, device="cpu"), work_dir=work)
    assert str(err.value) == (
        f"{folder}: the tokenizer has 45 tokens but the encoder's embedding table has 25 rows "
        f"(encoder_config.vocab_size in {CONFIG_FILE}) (expected the tokenizer the encoder was trained with "
        "(at most vocab_size tokens))")
    assert not out.exists() and not work.exists()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(signal_heads={"bleu": 1}), "key 'signal_heads' has the wrong type (dict)"),
        (lambda d: d["signal_heads"][0].update(name="a.b"), "key 'signal_heads[0].name' is 'a.b'"),
        (lambda d: d["signal_heads"][1].update(name="bleu"), "key 'signal_heads[1].name' is 'bleu' (a duplicate)"),
        (lambda d: d["signal_heads"][1].update(kind="ranking"), "key 'signal_heads[1].kind' is 'ranking'"),
        (lambda d: d["signal_heads"][1].update(out_dim=1), "key 'signal_heads[1].out_dim' is 1 for a classification"),
        (lambda d: d["signal_heads"][0].update(weight=-1), "key 'signal_heads[0].weight' is -1"),
        (lambda d: d["signal_heads"][0]["normalisation"].update(std=0),
         "keys 'signal_heads[0].normalisation.mean'/'signal_heads[0].normalisation.std' are 0.3/0"),
        (lambda d: d["signal_heads"][1].update(normalisation={"type": "affine", "mean": 0, "std": 1}),
         "normalisation.type' is 'affine' for a classification head"),
    ],
)
def test_signal_heads_json_is_validated(
    signal_checkpoint: Path, tmp_path: Path, edit: Callable[[dict[str, Any]], object], message: str
) -> None:
    folder = _copy(signal_checkpoint, tmp_path)
    data = json.loads((folder / CONFIG_FILE).read_text())
    edit(data)
    (folder / CONFIG_FILE).write_text(json.dumps(data))
    with pytest.raises(CheckpointError) as err:
        read_config(folder)
    assert str(err.value).startswith(f"{folder / CONFIG_FILE}: ")
    assert message in str(err.value)
