"""Registering and exporting checkpoint folders: the facts the catalog records, read from the
folder by code that can load it (:mod:`assay.checkpoints.registry` writes the rows).

A folder is registered only after it was verified end to end: the JSON validates, every file is
there, the weights load strictly from safetensors, the tokenizer matches the encoder and the model
scores a few fixed pairs with finite numbers (:func:`assay.workers.checkpoint.verify_checkpoint`).
Anything else is one error naming the file, and nothing is registered.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from assay.atomic import atomic_path
from assay.checkpoints.folder import checkpoint_digest, checkpoint_files, read_config
from assay.checkpoints.registry import CheckpointFacts, Registered, register, resolve_folder
from assay.config import Settings
from assay.errors import CheckpointError, UsageError
from assay.provenance import short
from assay.workers.checkpoint import verify_checkpoint


def facts_of(folder: str | Path, digest: str | None = None) -> CheckpointFacts:
    """Verify ``folder`` and read what the registry records about it. ``digest``: the digest its
    writer computed when it exported the folder (training does); only a folder without one is hashed."""
    folder = Path(folder).resolve()
    verify_checkpoint(folder)
    config = read_config(folder)
    digest = digest or checkpoint_digest(folder)
    files = tuple(checkpoint_files(folder))
    size = sum((folder / name).stat().st_size for name in files)
    heads = [{"name": "rating", "kind": "regression", "out_dim": int(config.head["out_dim"]),
              "input": config.head.get("input", "cls")}]
    heads += [dict(h) for h in config.to_json().get("signal_heads", []) or []]
    return CheckpointFacts(
        digest=digest,
        path=str(folder),
        base_model=str(config.base_encoder.get("name") or "") or None,
        config={k: v for k, v in config.to_json().items() if k not in ("lineage", "encoder_config")},
        heads=heads,
        lineage=dict(config.lineage),
        size_bytes=size,
        files=files,
    )


def register_folder(settings: Settings, folder: str | Path, *, name: str | None = None,
                    run_id: str | None = None, digest: str | None = None) -> Registered:
    """Verify a checkpoint folder and register it (a no-op when its content is registered): its
    files go into the shared store under its digest. ``digest``: the one computed when the folder
    was exported (it is registered as given; otherwise the folder is hashed once here)."""
    return register(settings, facts_of(folder, digest), name=name, run_id=run_id)


def export_checkpoint(settings: Settings, ref: str, destination: str | Path) -> Path:
    """Copy checkpoint ``ref`` (a registered name, digest prefix or folder) to ``destination``: its
    files only, written beside the destination and renamed into place, and checked to have the
    registered digest afterwards. An existing destination is refused."""
    source = resolve_folder(settings, ref)
    expected = checkpoint_digest(source)
    target = Path(destination).expanduser().resolve()
    if target.exists():
        raise UsageError(f"{target} already exists; export into a new folder")
    with atomic_path(target) as tmp:
        tmp.mkdir(parents=True)
        for name in checkpoint_files(source):
            shutil.copy2(source / name, tmp / name)
        copied = checkpoint_digest(tmp)
        if copied != expected:
            raise CheckpointError(source, f"changed while it was copied (digest {short(copied)} != {short(expected)})")
    return target
