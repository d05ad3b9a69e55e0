"""Fixtures for the synthetic-pairs tests.

``wmt_home``: an ``ASSAY_HOME`` with the real WMT16 (``wmt16-da-seg``), WMT17 (``wmt17-da``) and
WMT18 (``wmt18-da``) data of ``../shared/data`` ingested, copied per test from the suite's template
(tests/ingested_homes.py: ingesting is the same work every time; each test still gets its own home).

The model fixtures are tiny *randomly initialised* models built from a config and saved with
``save_pretrained`` (no trained model is reachable offline): a BERT masked LM and a BERT NLI
classifier over a 25-word WordPiece vocabulary, and a BART translation model over the same
vocabulary. Their outputs mean nothing; the tests check the mechanics (beam search, masking,
likelihoods, label mapping) against direct computations with the same models.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    BertConfig,
    BertForMaskedLM,
    BertForSequenceClassification,
    BertTokenizer,
)

from tests.ingested_homes import copy_ingested
from tests.torch_support import WORDS, one_torch_thread  # noqa: F401  (an autouse fixture)

WMT = ("wmt16-da-seg", "wmt17-da", "wmt18-da")
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]


@pytest.fixture
def wmt_home(tmp_path_factory: pytest.TempPathFactory, shared_data: Path, isolated_assay_home: Path) -> Path:
    """This test's ASSAY_HOME, holding wmt16@1, wmt17@1 and wmt18@1."""
    return copy_ingested(isolated_assay_home, tmp_path_factory, shared_data, *WMT)


def _tokenizer() -> BertTokenizer:
    return BertTokenizer(vocab={w: i for i, w in enumerate(VOCAB)})


def _bert_config(**extra: object) -> BertConfig:
    return BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=37, max_position_embeddings=64, **extra)


@pytest.fixture(scope="session")
def tiny_mlm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny RANDOM BertForMaskedLM (25-word vocabulary), saved with save_pretrained."""
    folder = tmp_path_factory.mktemp("tiny-mlm") / "tiny-mlm"
    torch.manual_seed(0)
    BertForMaskedLM(_bert_config()).save_pretrained(folder)
    _tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_nli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny RANDOM BertForSequenceClassification whose 3 classes are labelled as an MNLI model's,
    in an order other than entail/neutral/contradict."""
    folder = tmp_path_factory.mktemp("tiny-nli") / "tiny-nli"
    labels = {0: "CONTRADICTION", 1: "ENTAILMENT", 2: "NEUTRAL"}
    torch.manual_seed(1)
    config = _bert_config(num_labels=3, id2label=labels, label2id={v: k for k, v in labels.items()})
    BertForSequenceClassification(config).save_pretrained(folder)
    _tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_translator(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny RANDOM BartForConditionalGeneration over the same vocabulary ([SEP] ends a sentence)."""
    folder = tmp_path_factory.mktemp("tiny-bart") / "tiny-bart"
    tokenizer = _tokenizer()
    config = BartConfig(vocab_size=len(VOCAB), d_model=32, encoder_layers=1, decoder_layers=1,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=37,
                        decoder_ffn_dim=37, max_position_embeddings=64, pad_token_id=tokenizer.pad_token_id,
                        bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
                        decoder_start_token_id=tokenizer.sep_token_id, forced_eos_token_id=tokenizer.sep_token_id)
    torch.manual_seed(2)
    BartForConditionalGeneration(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
