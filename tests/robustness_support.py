"""Small real states for the robustness tests (tests/training/test_robustness*.py).

The data are real (WMT16/WMT17 DA and the WebNLG 2017 human evaluation from the shared data),
cut to subsets (derived versions, kind ``test-subset``) so that a few tiny trainings, their scoring
and evaluation run in seconds on a shared CPU. The "no pre-training" encoder of most tests is a
tiny *randomly initialised* BERT (2 layers, hidden 32; not a trained model) with the real
all-MiniLM-L6-v2 WordPiece tokenizer: the numbers it produces mean nothing and are not checked,
only the protocol, the records and the reuse. One test trains the real embedded MiniLM.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

#: two optimizer steps, validated once: the mechanics, not a metric
TINY_CONFIG = {"max_steps": 2, "eval_every": 2, "save_every": 2, "batch_size": 8}


def save_tiny_encoder(folder: Path) -> Path:
    """A tiny RANDOM BERT (BertConfig, 2 layers, hidden 32) with MiniLM's real tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from assay.workers.encoder import default_model_path

    tokenizer = AutoTokenizer.from_pretrained(str(default_model_path()))
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=512, type_vocab_size=2)
    torch.manual_seed(0)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def use_home(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """Point Assay at ``home`` (its catalog and stores) for the rest of the test."""
    from assay.catalog.engine import reset_engines

    monkeypatch.setenv("ASSAY_HOME", str(home))
    reset_engines()


def subset(parent: str, name: str, *, groups: Sequence[str] | None = None, n_items: int | None = None) -> str:
    """A derived version of ``parent`` with some groups, or its first ``n_items`` items (sorted)."""
    from assay.catalog.dataset_versions import resolve
    from assay.catalog.engine import session_scope
    from assay.config import load_settings
    from assay.datasets import store
    from assay.jobs.ingest import derive_version

    settings = load_settings()
    with session_scope(settings) as session:
        path = resolve(session, parent).store_path
    segments = store.read_table(settings, path, "segments")
    if groups:
        segments = segments.filter(pc.is_in(segments.column("group"), pa.array(list(groups))))
    if n_items:
        items = sorted(set(segments.column("item_id").to_pylist()))[:n_items]
        segments = segments.filter(pc.is_in(segments.column("item_id"), pa.array(items)))
    result = derive_version(parent, name, {"segments": segments},
                            {"kind": "test-subset", "groups": list(groups or []), "n_items": n_items})
    return f"{result.version.name}@{result.version.number}"
