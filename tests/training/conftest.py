"""Fixtures for the training tests.

The encoder is a tiny *randomly initialised* BERT (``BertConfig``: 2 layers, hidden 32, a 25-word
WordPiece vocabulary; not a trained model) saved with ``save_pretrained``; one test fine-tunes the
real all-MiniLM-L6-v2 for a few steps. Tables are synthetic: a "reference" of 3-12 words, four
"candidates" per reference copying a growing share of its words, and targets computed from the
texts (word overlap, a signal with missing values, a 3-class label), so the numbers mean nothing;
the tests check the mechanics of training, not the quality of a metric.

Factories are fixtures (pytest runs with ``--import-mode=importlib``); scripts run in subprocesses
(``launch``, SIGKILL, RLIMIT_FSIZE, torchrun) get their paths through a JSON specification.
"""

from __future__ import annotations

import math
import os
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import BertConfig, BertModel, BertTokenizer

from tests.torch_support import WORDS, one_torch_thread  # noqa: F401  (an autouse fixture)


def _save_tiny_bert(folder: Path, dropout: float) -> Path:
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    tokenizer = BertTokenizer(vocab={w: i for i, w in enumerate(vocab)})
    config = BertConfig(vocab_size=25, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64, type_vocab_size=2,
                        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    torch.manual_seed(0)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny RANDOM BERT with BERT's dropout (0.1) and its tokenizer, saved with save_pretrained."""
    return _save_tiny_bert(tmp_path_factory.mktemp("tiny-bert") / "tiny-bert", dropout=0.1)


@pytest.fixture(scope="session")
def tiny_encoder_no_dropout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same without dropout: data-parallel and single-process runs draw different dropout masks."""
    return _save_tiny_bert(tmp_path_factory.mktemp("tiny-bert-nd") / "tiny-bert-nd", dropout=0.0)


def synthetic_rows(n_items: int = 60, per_item: int = 4, seed: int = 0) -> list[dict[str, Any]]:
    """Synthetic pairs (see the module docstring): ``human`` = word overlap + N(0, 0.05²) noise,
    ``overlap`` = the exact overlap but NaN for ~30% of the pairs, ``label`` = 0/1/2 by overlap
    tercile, ``p0..p2`` = a soft version of it."""
    rng = random.Random(seed)
    rows = []
    for item in range(n_items):
        ref = [rng.choice(WORDS) for _ in range(rng.randint(3, 12))]
        for c in range(per_item):
            cand = [w if rng.random() < c / per_item + 0.1 else rng.choice(WORDS) for w in ref]
            overlap = sum(a == b for a, b in zip(ref, cand, strict=True)) / len(ref)
            label = 0 if overlap < 1 / 3 else 1 if overlap < 2 / 3 else 2
            probs = [0.1, 0.1, 0.1]
            probs[label] = 0.8
            rows.append({
                "reference": " ".join(ref), "candidate": " ".join(cand), "item_id": f"item-{item}",
                "human": overlap + rng.gauss(0, 0.05),
                "overlap": math.nan if rng.random() < 0.3 else overlap,
                "label": float(label), "p0": probs[0], "p1": probs[1], "p2": probs[2],
            })
    return rows


@pytest.fixture
def rows() -> list[dict[str, Any]]:
    return synthetic_rows()


@pytest.fixture(scope="session")
def make_rows() -> Callable[..., list[dict[str, Any]]]:
    return synthetic_rows


@pytest.fixture(scope="session")
def child_env() -> dict[str, str]:
    """Environment of the subprocesses: this interpreter's, one thread, no CUDA."""
    env = dict(os.environ)
    env.update({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "",
                "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1"})
    return env


@pytest.fixture(scope="session")
def python() -> str:
    return sys.executable
