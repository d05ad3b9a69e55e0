"""What model-based scoring refuses: weights it cannot digest, and numbers it cannot store.

Both tests use a tiny *randomly initialised* BERT (``BertConfig``: 2 layers, hidden 32, a 25-word
vocabulary; not a trained model) saved to a temporary folder with ``save_pretrained``. Its scores
are arbitrary: the tests check what is refused, stored and recorded, not quality.

* A model whose weights cannot be digested (here: its ``model.safetensors`` is removed after the
  model was loaded; the same path a hub model without a snapshot folder takes, which used to sign
  as ``@unknown``) is refused with :class:`UndigestedModelError`, unless the caller opts out with
  ``allow_undigested=True``: then it is scored, signed ``model:<name>@undigested`` and not stored.
* A BLEURT-style checkpoint (Sellam et al., 2020) made with ``create_from_encoder`` whose head
  weights are NaN scores NaN everywhere: one :class:`MetricOutputError` names the signature and the
  count, no part is written, the run is failed and no result file is recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import BertConfig, BertModel, BertTokenizer

from assay.catalog.engine import session_scope
from assay.catalog.models import ResultFile, Run
from assay.config import load_settings
from assay.errors import MetricOutputError, UndigestedModelError
from assay.fixtures import fixtures_dir
from assay.jobs import scoring
from assay.jobs.ingest import ingest_path
from assay.metrics.registry import MetricSpec
from assay.workers.bertscore import BERTScorer
from assay.workers.checkpoint import WEIGHTS_FILE, create_from_encoder
from assay.workers.encoder import Encoder, load_encoder, model_digest
from assay.workers.metrics import BLEURT, BERTScore
from tests.torch_support import WORDS, one_torch_thread  # noqa: F401  (an autouse fixture)


@pytest.fixture(autouse=True)
def fresh_metric_objects() -> Iterator[None]:
    scoring._metric.cache_clear()
    yield
    scoring._metric.cache_clear()


def _tiny_random_bert(folder: Path) -> Path:
    """A tiny RANDOMLY INITIALISED BERT (not pretrained) and its WordPiece tokenizer, saved."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    tokenizer = BertTokenizer(vocab={w: i for i, w in enumerate(vocab)})
    config = BertConfig(vocab_size=25, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64, type_vocab_size=2)
    torch.manual_seed(0)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_undigested_weights_are_refused_with_the_model_and_the_opt_out(tmp_path: Path) -> None:
    folder = _tiny_random_bert(tmp_path / "tiny-bert")
    metric = BERTScore(model=str(folder), layer=1)
    metric.scorer()  # the weights are in memory now
    (folder / "model.safetensors").unlink()
    with pytest.raises(UndigestedModelError) as err:
        metric.signature()
    message = str(err.value)
    assert "cannot digest the weights of" in message and "tiny-bert" in message and "no weight file" in message
    assert "allow_undigested=True" in message and "--no-cache-undigested" in message
    with pytest.raises(UndigestedModelError, match="tiny-bert"):
        model_digest(folder)

    # a hub model whose snapshot folder is unknown (``folder=None``) takes the same path: never "unknown"
    loaded = load_encoder(str(_tiny_random_bert(tmp_path / "hub-copy")), 1, device="cpu")
    hub = Encoder(model=loaded.model, tokenizer=loaded.tokenizer, name="some-org/tiny-bert", folder=None,
                  layer=1, total_layers=2, max_length=64, device=loaded.device)
    with pytest.raises(UndigestedModelError, match=r"'some-org/tiny-bert'.*snapshot folder"):
        BERTScorer(encoder=hub).signature()
    assert "|model:tiny-bert@undigested|" in BERTScorer(encoder=hub).signature(allow_undigested=True)
    assert "unknown" not in BERTScorer(encoder=hub).signature(allow_undigested=True)


def test_opting_out_scores_without_storing(tmp_path: Path) -> None:
    folder = _tiny_random_bert(tmp_path / "tiny-bert")
    ingest_path(fixtures_dir() / "demo-wmt")
    spec = MetricSpec("bertscore", {"model": str(folder), "layer": 1, "allow_undigested": True})
    scoring.metric_for(spec).scorer()  # loaded by this process's scoring
    (folder / "model.safetensors").unlink()
    summary = scoring.score_dataset("wmt99", spec, shard_size=20)
    assert "|model:tiny-bert@undigested|" in summary["signature"]
    assert summary["stored"] is False and summary["files"] == [] and summary["computed"] == 36
    assert summary["note"] and "never stored" in summary["note"]
    scores = summary["scores"]
    assert len(scores) == 36 and {"key", "score", "precision", "recall", "f1"} <= set(scores[0])
    assert all(np.isfinite(row["score"]) for row in scores)
    settings = load_settings()
    assert not (settings.results_dir / "segment_scores" / "metric=bertscore").exists()
    with session_scope(settings) as session:
        run = session.get(Run, summary["run_id"])
        assert run is not None and run.status == "completed" and run.summary["stored"] is False
        assert session.query(ResultFile).filter_by(run_id=run.id).count() == 0
    # nothing was cached, so the same request computes everything again
    assert scoring.score_dataset("wmt99", spec)["computed"] == 36


def test_nan_scores_are_refused_before_anything_is_stored(tmp_path: Path) -> None:
    checkpoint = create_from_encoder(_tiny_random_bert(tmp_path / "tiny-bert"), tmp_path / "nan-head", seed=0)
    tensors = load_file(str(checkpoint / WEIGHTS_FILE))
    tensors["head.weight"] = torch.full_like(tensors["head.weight"], float("nan"))
    save_file(tensors, str(checkpoint / WEIGHTS_FILE), metadata={"format": "pt"})
    assert BLEURT(str(checkpoint)).languages is None  # not built on the embedded English MiniLM

    ingest_path(fixtures_dir() / "demo-wmt")
    spec = MetricSpec("bleurt", {"checkpoint": str(checkpoint)})
    with pytest.raises(MetricOutputError) as err:
        scoring.score_dataset("wmt99", spec)
    message = str(err.value)
    signature = BLEURT(str(checkpoint)).signature()
    assert message.startswith(signature + ": NaN scores for 36 of 36 segments; nothing was stored")
    assert "\n" not in message

    settings = load_settings()
    assert not list(settings.results_dir.rglob("*.parquet"))
    with session_scope(settings) as session:
        runs = session.query(Run).filter_by(kind="score").all()
        assert [(r.status, r.inputs["signature"]) for r in runs] == [("failed", signature)]
        assert "MetricOutputError" in (runs[0].error or "") and "36 of 36" in (runs[0].error or "")
        assert session.query(ResultFile).count() == 0
    assert not list(settings.work_dir.rglob("*.parquet"))  # the plan's work files are gone too
