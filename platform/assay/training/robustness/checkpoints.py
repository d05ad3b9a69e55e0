"""The checkpoints of a robustness experiment, found again by what made them, not by name.

A registered fine-tuning whose lineage has the same training data (version digest and aspect),
the same parent (init digest, or the same encoder) and the same hyper-parameters is reused instead
of training again; a new one is named after its experiment, data, point and variant.
"""

from __future__ import annotations

import json
import re
from typing import Any

from sqlalchemy import select

from assay.catalog.engine import session_scope
from assay.catalog.models import Checkpoint
from assay.checkpoints.registry import validate_checkpoint_name
from assay.checkpoints.store import stored_folder
from assay.config import Settings
from assay.provenance import json_digest
from assay.training.robustness.variants import Variant


def training_key(train_digest: str, aspect: str | None, variant: Variant, hyperparameters: dict[str, Any]) -> str:
    """sha256 of what determines a fine-tuned checkpoint."""
    return json_digest({"train": train_digest, "aspect": aspect, "init": variant.identity()["init"],
                      "hyperparameters": hyperparameters})


def checkpoint_name(experiment: str, dataset: str, point: str, variant: str, key: str) -> str:
    """``rb-drift-wmt17-a1.5-no-pretraining-3f2a9c1b``: experiment, data, point, variant, key."""
    text = f"rb-{experiment}-{dataset}-{point}-{variant}"
    return validate_checkpoint_name(f"{re.sub(r'[^a-z0-9._-]+', '-', text.lower())[:110]}-{key[:8]}")


def find_trained(settings: Settings, *, train_digest: str, aspect: str | None, variant: Variant,
                 hyperparameters: dict[str, Any]) -> dict[str, Any] | None:
    """A registered fine-tuning of ``variant`` on exactly this data with these hyper-parameters,
    whose folder still exists: ``{"name", "digest", "path", "run_id", "n_train"}``; else None."""
    wanted = json.loads(json.dumps(hyperparameters))
    with session_scope(settings) as session:
        rows = list(session.scalars(select(Checkpoint).order_by(Checkpoint.created_at, Checkpoint.id)))
        for row in rows:
            lineage = dict(row.lineage or {})
            data = lineage.get("datasets") or []
            if lineage.get("operation") != "finetune" or len(data) != 1:
                continue
            if data[0].get("digest") != train_digest or data[0].get("aspect") != aspect:
                continue
            if lineage.get("parent_digest") != variant.digest:
                continue
            if variant.digest is None and (lineage.get("init") or {}).get("folder") != variant.folder:
                continue
            folder = stored_folder(settings, row.path)
            if lineage.get("hyperparameters") != wanted or not folder.is_dir():
                continue
            return {"name": row.name, "digest": row.digest, "path": str(folder), "run_id": row.run_id,
                    "n_train": int(data[0].get("rows") or 0)}
    return None

