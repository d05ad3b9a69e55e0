"""Encoded pairs, their batches and the order they are trained in.

Pairs are encoded once, before training, by :meth:`assay.workers.bleurt.BleurtScorer.encode`, so a
model is trained on exactly the inputs it is scored on: ``[CLS] reference [SEP] candidate [SEP]``,
token types 0/1, longest-first truncation as google-research/bleurt. A batch is padded to its
longest pair only (dynamic padding, :meth:`BleurtScorer.collate`).

Batch order (:class:`EpochSampler`): a permutation of the training pairs drawn from a generator
seeded by ``(seed, epoch)``, so the order of every epoch is a function of the seed alone: a resumed
run (which skips the batches already trained in its epoch) sees the same batches as an
uninterrupted one, and so does every process of a data-parallel run. With ``group_by_length`` the
permutation is cut into mega-batches of 50 batches, each sorted by length, as transformers'
``LengthGroupedSampler`` does (:func:`transformers.trainer_pt_utils.get_length_grouped_indices`):
pairs in a batch have similar lengths, so little of the padded batch is padding, while the order of
the mega-batches stays random.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset, Sampler
from transformers.trainer_pt_utils import get_length_grouped_indices

from assay.workers.bleurt import BleurtScorer, EncodedPair

__all__ = ["EpochSampler", "PairCollator", "PairDataset"]


class PairDataset(Dataset[dict[str, Any]]):
    """Encoded pairs with their label rows (float32, NaN = missing)."""

    def __init__(self, pairs: Sequence[EncodedPair], labels: np.ndarray) -> None:
        if len(pairs) != len(labels):
            raise ValueError(f"{len(pairs)} pairs but {len(labels)} label rows")
        self.pairs = list(pairs)
        self.labels = np.ascontiguousarray(labels, dtype=np.float32)

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return {"pair": self.pairs[index], "labels": self.labels[index]}

    @property
    def lengths(self) -> list[int]:
        return [len(p) for p in self.pairs]

    def sorted_by_length(self) -> PairDataset:
        """The same pairs, longest first (validation order: fewer padded positions; metrics do not
        depend on the order)."""
        order = sorted(range(len(self)), key=lambda i: (-len(self.pairs[i]), i))
        return PairDataset([self.pairs[i] for i in order], self.labels[order])


class PairCollator:
    """Pads a batch with :meth:`BleurtScorer.collate` and stacks its labels.

    ``pad_to_multiple_of`` > 1 widens the batch to the next multiple with more padding (masked, so
    the outputs do not change beyond float rounding). On CUDA each new sequence length costs a
    one-time ~0.1 s (kernel selection; measured on an H100 with MiniLM), so a run whose batches take
    every length from 10 to 150 spends seconds on it; multiples of 16 leave ~10 lengths.
    """

    def __init__(self, scorer: BleurtScorer, pad_to_multiple_of: int = 1) -> None:
        if scorer.device.type != "cpu":
            raise ValueError("the collator's scorer must be on the CPU (the Trainer moves batches)")
        if pad_to_multiple_of < 1:
            raise ValueError(f"pad_to_multiple_of must be >= 1, not {pad_to_multiple_of}")
        self.scorer = scorer
        self.multiple = int(pad_to_multiple_of)

    def __call__(self, items: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        batch = self.scorer.collate([item["pair"] for item in items])
        extra = -batch["input_ids"].shape[1] % self.multiple
        if extra:
            batch["input_ids"] = F.pad(batch["input_ids"], (0, extra), value=self.scorer.pad_id)
            batch["token_type_ids"] = F.pad(batch["token_type_ids"], (0, extra), value=0)
            batch["attention_mask"] = F.pad(batch["attention_mask"], (0, extra), value=0)
        batch["labels"] = torch.from_numpy(np.stack([item["labels"] for item in items]))
        return batch


class EpochSampler(Sampler[int]):
    """Indices of one epoch: seeded by ``(seed, epoch)``, grouped by length when asked (see the
    module docstring). The Trainer calls :meth:`set_epoch` before each epoch."""

    def __init__(self, lengths: Sequence[int], batch_size: int, seed: int, group_by_length: bool = True) -> None:
        self.lengths = list(lengths)
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self.group_by_length = bool(group_by_length)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return len(self.lengths)

    def generator(self) -> torch.Generator:
        state = np.random.SeedSequence([self.seed, self.epoch]).generate_state(2, dtype=np.uint32)
        return torch.Generator().manual_seed(int(state[0]) << 32 | int(state[1]))

    def __iter__(self) -> Iterator[int]:
        gen = self.generator()
        if self.group_by_length:
            order = get_length_grouped_indices(self.lengths, self.batch_size, generator=gen)
        else:
            order = torch.randperm(len(self.lengths), generator=gen).tolist()
        return iter(order)
