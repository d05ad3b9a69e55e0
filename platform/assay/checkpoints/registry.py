"""The checkpoint registry: learned-metric checkpoints in the catalog, with their lineage.

A checkpoint (a BLEURT-style regressor, Sellam et al. 2020, §3; the folder format is described in
``docs/CHECKPOINTS.md``) is registered **once per content digest**: registering the same content
again is a no-op that answers with the existing entry. Registering places the checkpoint's files
in the shared store under its digest (:mod:`assay.checkpoints.store`), and the row records that
folder relative to ``ASSAY_HOME``, so every host reads it. Each entry has a unique name (what
``--checkpoint NAME`` resolves), the folder it lives in, its base encoder, the heads it carries
(the rating head and, after synthetic pre-training (§4), one head per pre-training signal), the run
that made it and its ``lineage``: the operation (``create_from_encoder``, ``pretrain``,
``finetune``), the parent checkpoint's digest, the dataset versions and digests it was trained on (``datasets``),
the hyper-parameters, the seed, the best step and the validation curve, and the code version.

The facts, the digest included, are read from the folder by the layer that can load models (once:
the digest is never recomputed here); this module only checks names, resolves references, places
files and writes rows, so the registry is usable without torch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from assay import slugs
from assay.catalog.engine import session_scope
from assay.catalog.models import Checkpoint
from assay.checkpoints import outbox
from assay.checkpoints.ref import RESOURCE_PREFIX, CheckpointRef, is_digest
from assay.checkpoints.store import place, stored_folder
from assay.config import Settings
from assay.errors import NotFoundError, UsageError
from assay.provenance import code_version, short

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,127}")
_HEX = re.compile(r"[0-9a-f]{6,64}")
#: shortest digest prefix accepted as a reference
MIN_PREFIX = 6


def validate_checkpoint_name(name: str) -> str:
    """A checkpoint name: 1-128 lowercase letters, digits, ``. _ -``, starting with a letter or
    digit; no path separators, no ``..``, no spaces or quotes (names reach SQL, paths and HTML)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise UsageError(
            f"invalid checkpoint name {name!r}: use 1-128 lowercase letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (no path separators, no '..')"
        )
    return name


def name_from_folder(folder: str | Path) -> str:
    """A valid checkpoint name derived from a folder name (``BLEURT MiniLM/`` -> ``bleurt-minilm``)."""
    return validate_checkpoint_name(slugs.slug(Path(folder).name, keep="._-", max_length=100, default="checkpoint"))


@dataclass(frozen=True)
class CheckpointFacts:
    """What the registry records about a checkpoint folder (read and verified by the caller)."""

    digest: str
    """computed once by the caller (at export, or when the folder was first read); trusted here"""
    path: str
    """the folder the files are read from when registering (the catalog records the store's folder)"""
    base_model: str | None
    config: dict[str, Any]
    heads: list[dict[str, Any]]
    lineage: dict[str, Any]
    size_bytes: int
    files: tuple[str, ...]
    """the checkpoint's files (relative to ``path``), placed in the store under ``digest``"""

    @property
    def parent_digest(self) -> str | None:
        parent = self.lineage.get("parent_digest")
        return str(parent) if parent else None


@dataclass(frozen=True)
class Registered:
    name: str
    digest: str
    path: str
    """the checkpoint's folder on this host (in the shared store for new registrations)"""
    created: bool
    """False when the same content was registered before (a no-op)."""
    notes: list[str] = field(default_factory=list)

    @property
    def ref(self) -> CheckpointRef:
        return CheckpointRef(self.digest, self.name)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "digest": self.digest, "path": self.path, "created": self.created,
                "notes": list(self.notes)}


#: called with each checkpoint newly registered in this process (never for a no-op); the flow layer
#: installs one that emits the ``assay.checkpoint.registered`` event (the platform never imports Prefect)
_registration_listeners: list[Callable[[Registered], None]] = []


def add_registration_listener(listener: Callable[[Registered], None]) -> None:
    """Call ``listener(registered)`` after every registration that created a catalog row. Adding
    the same listener twice is a no-op. A listener's failure is its own business: it must not
    raise (the row is committed by then)."""
    if listener not in _registration_listeners:
        _registration_listeners.append(listener)


def register(settings: Settings, facts: CheckpointFacts, *, name: str | None = None,
             run_id: str | None = None) -> Registered:
    """Record ``facts`` under ``name`` (default: from the folder name, with the digest appended
    when another checkpoint already has it). The same digest again is a no-op. A new row and its
    owed announcement (:mod:`assay.checkpoints.outbox`) are written in one transaction; then the
    registration listeners (:func:`add_registration_listener`) are called, which deliver it."""
    registered = _register(settings, facts, name=name, run_id=run_id)
    if registered.created:
        for listener in list(_registration_listeners):
            listener(registered)
    return registered


def _register(settings: Settings, facts: CheckpointFacts, *, name: str | None, run_id: str | None) -> Registered:
    if name is not None:
        validate_checkpoint_name(name)
    if not is_digest(facts.digest):
        raise UsageError(f"checkpoint digest {facts.digest!r} is not a sha256 hex digest")
    with session_scope(settings) as session:
        existing = session.scalar(select(Checkpoint).where(Checkpoint.digest == facts.digest))
        if existing is not None:
            notes = []
            if name is not None and name != existing.name:
                notes.append(f"this content is already registered as {existing.name!r}; the name {name!r} was not used")
            return Registered(existing.name, existing.digest, str(stored_folder(settings, existing.path)), False,
                              notes)
        chosen = name or name_from_folder(facts.path)
        taken = session.scalar(select(Checkpoint).where(Checkpoint.name == chosen))
        if taken is not None:
            if name is not None:
                raise UsageError(f"the name {name!r} is taken by checkpoint {taken.ref.short}; choose another --name")
            chosen = validate_checkpoint_name(f"{chosen[:100]}-{facts.digest[:8]}")
        parent_id = None
        if facts.parent_digest:
            parent = session.scalar(select(Checkpoint).where(Checkpoint.digest == facts.parent_digest))
            parent_id = parent.id if parent is not None else None
        path = place(settings, Path(facts.path), facts.digest, facts.files)
        session.add(Checkpoint(
            name=chosen, path=path, digest=facts.digest, base_model=facts.base_model, config=facts.config,
            parent_id=parent_id, run_id=run_id, lineage=facts.lineage, heads=facts.heads,
            code_version=code_version(), size_bytes=facts.size_bytes,
        ))
        outbox.owe(session, facts.digest)  # the announcement is owed from the same transaction on
        try:
            session.flush()
        except IntegrityError:  # a concurrent registration of the same content won the race
            session.rollback()
            won = session.scalar(select(Checkpoint).where(Checkpoint.digest == facts.digest))
            if won is None:
                raise
            return Registered(won.name, won.digest, str(stored_folder(settings, won.path)), False)
    return Registered(chosen, facts.digest, str(stored_folder(settings, path)), True)


def find(session: Session, ref: str) -> Checkpoint:
    """The checkpoint a reference names: its exact name, a digest prefix of at least
    :data:`MIN_PREFIX` hex digits that only one checkpoint has, or its event resource
    (:attr:`CheckpointRef.resource`, ``assay.checkpoint.<digest>``, what a deployment trigger passes).
    The one resolver of what people and triggers write for a checkpoint."""
    row = session.scalar(select(Checkpoint).where(Checkpoint.name == ref))
    if row is not None:
        return row
    prefix = ref.removeprefix(RESOURCE_PREFIX).lower()
    if _HEX.fullmatch(prefix):
        rows = list(session.scalars(select(Checkpoint).where(Checkpoint.digest.startswith(prefix))))
        if len(rows) == 1:
            return rows[0]
        if len(rows) > 1:
            raise UsageError(f"digest prefix {ref!r} matches {len(rows)} checkpoints; give more digits")
    raise NotFoundError(f"no checkpoint named {ref!r} in the catalog; `assay checkpoints list` shows them, "
                        "`assay checkpoints register PATH` adds one")


def resolve_folder(settings: Settings, ref: str | Path) -> Path:
    """The folder of ``ref``: an existing folder as given, else a registered name or digest prefix."""
    path = Path(ref).expanduser()
    if path.is_dir():
        return path.resolve()
    with session_scope(settings) as session:
        row = find(session, str(ref))
        return _existing_folder(settings, row.name, row.path)


def resolve_checkpoint(settings: Settings, ref: str) -> CheckpointRef:
    """The registered checkpoint ``ref`` names (:func:`find`), by the catalog's digest: nothing is hashed."""
    with session_scope(settings) as session:
        return find(session, ref).ref


def folder_of_digest(settings: Settings, digest: str) -> tuple[str, Path]:
    """``(name, folder)`` of the checkpoint registered with exactly ``digest``: the store's folder,
    or the absolute folder of a row registered before the shared store. The folder is not hashed
    here: the caller that loads it verifies it once against ``digest``."""
    if not is_digest(str(digest)):
        raise UsageError(f"checkpoint digest {digest!r} is not a sha256 hex digest")
    with session_scope(settings) as session:
        row = session.scalar(select(Checkpoint).where(Checkpoint.digest == digest))
        if row is None:
            raise NotFoundError(f"no checkpoint with digest {short(digest)} in the catalog; "
                                "`assay checkpoints register PATH` adds one")
        return row.name, _existing_folder(settings, row.name, row.path)


def _existing_folder(settings: Settings, name: str, path: str) -> Path:
    folder = stored_folder(settings, path)
    if not folder.is_dir():
        raise NotFoundError(f"checkpoint {name!r} is registered at {folder}, which no longer exists")
    return folder


def _row_dict(settings: Settings, row: Checkpoint, by_id: Mapping[int, Checkpoint]) -> dict[str, Any]:
    lineage = dict(row.lineage or {})
    parent = by_id.get(row.parent_id) if row.parent_id is not None else None
    return {
        "name": row.name,
        "digest": row.digest,
        "path": str(stored_folder(settings, row.path)),
        "base_model": row.base_model,
        "operation": lineage.get("operation"),
        "parent": parent.name if parent is not None else None,
        "parent_digest": lineage.get("parent_digest"),
        "heads": [h.get("name") for h in (row.heads or [])],
        "best_step": lineage.get("best_step"),
        "datasets": lineage.get("datasets", []),
        "seed": lineage.get("seed"),
        "run_id": row.run_id,
        "code_version": row.code_version,
        "size_bytes": row.size_bytes,
        "created_at": row.created_at.isoformat() if row.created_at else None,
    }


def list_checkpoints(settings: Settings) -> list[dict[str, Any]]:
    """Every registered checkpoint, oldest first, with its parent's name and its lineage summary."""
    with session_scope(settings) as session:
        rows = list(session.scalars(select(Checkpoint).order_by(Checkpoint.created_at, Checkpoint.id)))
        by_id = {r.id: r for r in rows}
        return [_row_dict(settings, r, by_id) for r in rows]


def describe(settings: Settings, ref: str) -> dict[str, Any]:
    """One checkpoint in full: the registry row, its whole lineage record and its ancestors."""
    with session_scope(settings) as session:
        row = find(session, ref)
        by_id = {r.id: r for r in session.scalars(select(Checkpoint))}
        out = _row_dict(settings, row, by_id)
        out["lineage"] = dict(row.lineage or {})
        out["heads"] = list(row.heads or [])
        ancestors = []
        seen = {row.id}
        current = row
        while current.parent_id is not None and current.parent_id in by_id and current.parent_id not in seen:
            current = by_id[current.parent_id]
            seen.add(current.id)
            ancestors.append({"name": current.name, "digest": current.digest,
                              "operation": (current.lineage or {}).get("operation")})
        out["ancestors"] = ancestors
        return out


def labels_by_digest(settings: Settings) -> dict[str, dict[str, Any]]:
    """For every registered checkpoint, keyed by digest and by its 12-digit prefix (as signatures
    show it): its name, operation and parent name, so tables can name checkpoints with lineage."""
    out: dict[str, dict[str, Any]] = {}
    for row in list_checkpoints(settings):
        label = {"name": row["name"], "operation": row["operation"], "parent": row["parent"],
                 "digest": row["digest"]}
        out[row["digest"]] = label
        out[short(row["digest"])] = label
    return out
