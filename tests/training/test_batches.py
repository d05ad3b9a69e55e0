"""Batches: the scoring input exactly (BleurtScorer's encoding and padding), extra padding that
changes no output, and a batch order that depends on (seed, epoch) only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

import assay.workers.training as training
from assay.workers.bleurt import BleurtScorer
from assay.workers.checkpoint import create_from_encoder
from assay.workers.training.batches import EpochSampler, PairCollator, PairDataset


def test_padding_to_a_multiple_changes_no_output(
    tiny_encoder: Path, tmp_path: Path, rows: list[dict[str, Any]],
) -> None:
    scorer = BleurtScorer(create_from_encoder(tiny_encoder, tmp_path / "ckpt", seed=1), device="cpu")
    pairs = scorer.encode([r["reference"] for r in rows[:8]], [r["candidate"] for r in rows[:8]])
    dataset = PairDataset(pairs, np.zeros((8, 1), dtype=np.float32))
    items = [dataset[i] for i in range(8)]
    plain, padded = PairCollator(scorer)(items), PairCollator(scorer, 16)(items)
    width = plain["input_ids"].shape[1]
    assert padded["input_ids"].shape == (8, 16 * -(-width // 16))
    for key in ("input_ids", "token_type_ids", "attention_mask"):
        assert torch.equal(padded[key][:, :width], plain[key])
    assert (padded["input_ids"][:, width:] == scorer.pad_id).all() and (padded["attention_mask"][:, width:] == 0).all()
    with torch.inference_mode():
        a = scorer.model(plain["input_ids"], plain["attention_mask"], plain["token_type_ids"])
        b = scorer.model(padded["input_ids"], padded["attention_mask"], padded["token_type_ids"])
    torch.testing.assert_close(a, b, rtol=0, atol=1e-6)  # float32 kernels over other shapes


def test_batch_order_depends_on_seed_and_epoch_only() -> None:
    lengths = [int(x) for x in np.random.default_rng(0).integers(5, 120, size=1000)]
    sampler = EpochSampler(lengths, batch_size=32, seed=3)
    first = list(sampler)
    assert sorted(first) == list(range(1000)) and list(sampler) == first
    sampler.set_epoch(1)
    second = list(sampler)
    assert second != first
    assert list(EpochSampler(lengths, 32, seed=3)) == first  # a new process, e.g. after a resume
    assert list(EpochSampler(lengths, 32, seed=4)) != first

    def padded_share(order: list[int]) -> float:
        batches = [order[i:i + 32] for i in range(0, len(order), 32)]
        padded = sum(len(b) * max(lengths[i] for i in b) for b in batches)
        return 1 - sum(lengths) / padded

    grouped, shuffled = padded_share(first), padded_share(list(EpochSampler(lengths, 32, 3, group_by_length=False)))
    # uniform lengths 5-119: random batches pad ~half; sorted mega-batches of 7 batches pad ~12%
    assert grouped < 0.15 and shuffled > 0.4


def test_public_api() -> None:
    names = ["Objective", "RATING", "TrainConfig", "TrainResult", "train", "training_table_from_segments"]
    modules = {p.stem for p in Path(training.__file__).parent.glob("*.py") if not p.name.startswith("_")}
    assert set(training.__all__) == {*names, *modules}  # the modules too (tests/test_exported_members.py)
    for name in names:
        assert getattr(training, name) is not None
