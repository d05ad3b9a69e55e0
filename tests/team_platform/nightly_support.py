"""Small real nightly states for the regression and report tests.

Checkpoints are built on a tiny RANDOMLY initialised BERT (tests/robustness_support.py): their
scores mean nothing as a metric. What the tests need is an outcome known by construction, so:

* ``base``: :func:`assay.workers.checkpoint.create_from_encoder` (random head);
* ``fit``: the same encoder with its head fitted by least squares to the human scores of the test
  dataset itself (a linear probe on the [CLS] vectors). Ordinary least squares with an intercept
  maximises the in-sample Pearson correlation over *all* linear heads on those features, so
  ``fit`` correlates at least as well as ``base`` (whose head is one of them) by construction;
* ``flipped``: ``fit`` with its head negated, so its scores are exactly ``-fit``'s and its
  Pearson r and Kendall tau are exactly the negatives of ``fit``'s: clearly worse.

Ledger rows and the suite row are written directly with the catalog models (the ledger module is
not what these tests are about).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path

import numpy as np

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.catalog.models import Suite, SuiteEvaluation
from assay.config import Settings
from assay.datasets import store
from assay.datasets.human import human_array


def least_squares_checkpoint(base: Path, out: Path, settings: Settings, dataset: str) -> Path:
    """``base`` with its head refitted by least squares on ``dataset``'s judged segments."""
    import torch
    from torch import nn

    from assay.workers.bleurt import BleurtScorer
    from assay.workers.checkpoint import checkpoint_digest, save_checkpoint

    with session_scope(settings) as session:
        path = resolve(session, dataset).store_path
    seg = store.read_table(settings, path, "segments").to_pydict()
    scorer = BleurtScorer(base, device="cpu")
    pairs = scorer.encode([refs[0] for refs in seg["references"]], seg["candidate"])
    with torch.inference_mode():
        features = np.vstack([scorer.model.features(**scorer.collate(pairs[i:i + 64])).double().numpy()
                              for i in range(0, len(pairs), 64)])
    human = human_array(seg)
    ok = ~np.isnan(human)
    design = np.hstack([features, np.ones((len(features), 1))])
    coef, *_ = np.linalg.lstsq(design[ok], human[ok], rcond=None)
    head = nn.Linear(features.shape[1], 1)
    with torch.no_grad():
        head.weight.copy_(torch.tensor(coef[:-1], dtype=torch.float32).reshape(1, -1))
        head.bias.fill_(float(coef[-1]))
    return save_checkpoint(out, scorer.model.encoder, scorer.tokenizer, head,
                           base_encoder=scorer.config.base_encoder, max_length=scorer.max_length,
                           lineage={"operation": "finetune", "parent_digest": checkpoint_digest(base),
                                    "method": "least-squares head on the test data (a test fixture)"})


def negated_checkpoint(source: Path, out: Path) -> Path:
    """``source`` with its head's weight and bias negated: every score is exactly ``-source``'s."""
    import torch

    from assay.workers.checkpoint import checkpoint_digest, load_checkpoint, save_checkpoint

    loaded = load_checkpoint(source, "cpu")
    head = loaded.model.head
    with torch.no_grad():
        head.weight.neg_()
        head.bias.neg_()
    return save_checkpoint(out, loaded.model.encoder, loaded.tokenizer, head,
                           base_encoder=loaded.config.base_encoder, max_length=loaded.config.max_length,
                           lineage={"operation": "finetune", "parent_digest": checkpoint_digest(source),
                                    "method": "head negated (a test fixture)"})


def add_suite(settings: Settings, name: str, definition: dict[str, object]) -> tuple[int, str]:
    """A ``suites`` row; its signature is the sha256 of the canonical JSON (id, signature)."""
    signature = hashlib.sha256(json.dumps(definition, sort_keys=True).encode()).hexdigest()
    with session_scope(settings) as session:
        row = Suite(name=name, version=1, definition=definition, signature=signature)
        session.add(row)
        session.flush()
        return row.id, signature


def add_ledger_row(settings: Settings, *, suite_id: int, suite_signature: str, checkpoint_digest: str,
                   dataset: str, evaluate_run_id: str, finished_at: datetime, status: str = "completed") -> None:
    """One nightly ledger row: ``checkpoint_digest`` evaluated on ``dataset`` by ``evaluate_run_id``."""
    with session_scope(settings) as session:
        version = resolve(session, dataset)
        session.add(SuiteEvaluation(
            checkpoint_digest=checkpoint_digest, dataset_digest=version.digest, dataset_version_id=version.id,
            suite_id=suite_id, suite_signature=suite_signature, status=status, attempts=1,
            evaluate_run_id=evaluate_run_id, claimed_at=finished_at, finished_at=finished_at, summary={}))
