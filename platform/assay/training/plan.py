"""Planning a training stage: which data, pinned by version and digest, and the lineage record.

BLEURT (Sellam et al., 2020) trains in stages: pre-training on synthetic sentence pairs with
several signals (§4), then fine-tuning on human ratings (§3), optionally a second fine-tuning on
another task's ratings (WebNLG, §5.3). Every stage here is planned before anything is computed:
its data are resolved to dataset versions (label and content digest), the datasets a recipe
evaluates on are checked never to be drawn from, and the lineage that the checkpoint and the
catalog will carry is assembled. The computation itself (the model, the optimiser) belongs to the
layer that imports torch; this module has no model code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from assay import slugs
from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.checkpoints.registry import validate_checkpoint_name
from assay.config import DEFAULT_SEED, Settings
from assay.datasets import store
from assay.datasets.human import human_array
from assay.datasets.names import DatasetRef, VersionRef
from assay.errors import NotFoundError, UsageError
from assay.provenance import short

STAGES = ("pretrain", "finetune")
#: the column names of a training table (what the trainer reads)
TRAINING_COLUMNS = ("reference", "candidate", "item_id")
RATING_COLUMN = "rating"


@dataclass(frozen=True)
class DataVersion:
    """One dataset version a stage trains on (or a recipe evaluates on), and what of it is used."""

    role: str
    version: VersionRef
    rows: int
    groups: list[str] = field(default_factory=list)
    aspect: str | None = None

    @property
    def label(self) -> str:
        return self.version.label

    def as_dict(self) -> dict[str, Any]:
        """As a checkpoint's lineage records it (``docs/CHECKPOINTS.md``): ``role``, ``label``
        (``name@N``), ``digest`` (of the dataset version), ``rows``, ``groups``, ``aspect``."""
        return {"role": self.role, "label": self.label, "digest": self.version.digest, "rows": self.rows,
                "groups": list(self.groups), "aspect": self.aspect}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DataVersion:
        return cls(data["role"], VersionRef.parse(data["label"], data["digest"]), int(data["rows"]),
                   list(data.get("groups") or []), data.get("aspect"))


def check_not_excluded(labels: Sequence[str], excluded: Sequence[str], what: str) -> None:
    """Refuse drawing ``what`` from a dataset the recipe evaluates on (BLEURT §5.1 keeps the
    test year out of training)."""
    names = {DatasetRef.parse(label).name for label in labels}
    clash = sorted(names & {DatasetRef.parse(e).name for e in excluded})
    if clash:
        raise UsageError(f"{what} would draw from {', '.join(clash)}, which this recipe evaluates on; "
                         "choose other datasets (the evaluation set is never trained on)")


def _to_english(groups: Sequence[str]) -> list[str]:
    return sorted(g for g in set(groups) if re.fullmatch(r"[a-z]{2,3}-en", g))


def ratings_table(settings: Settings, ref: str, *, groups: Sequence[str] | None = None,
                  aspect: str | None = None, to_english: bool = True) -> tuple[pa.Table, DataVersion]:
    """The rated segments of a stored dataset version as a training table.

    Columns: ``reference`` (the first reference; BLEURT is trained on one reference per pair),
    ``candidate``, ``item_id`` (``group/item``: the unit the validation split holds out, so one
    source sentence is never on both sides), ``group`` and ``rating`` (``human_z``, else
    ``human_raw``). ``groups`` picks groups (default: every to-English pair when ``to_english``,
    as the paper's WMT experiments do, else all); ``aspect`` picks one rated aspect (required when
    the version has several, e.g. WebNLG's fluency, grammar and semantics).
    """
    with session_scope(settings) as session:
        version = resolve(session, ref)
        resolved, label, store_path = version.ref, version.label, version.store_path
    segments = store.read_table(settings, store_path, "segments")
    aspects = sorted(set(segments.column("aspect").to_pylist()))
    if aspect is None:
        if len(aspects) > 1:
            raise UsageError(f"{label} rates {len(aspects)} aspects ({', '.join(aspects)}); choose one with --aspect")
        aspect = aspects[0] if aspects else None
    elif aspect not in aspects:
        raise UsageError(f"{label} has no aspect {aspect!r} (aspects: {', '.join(aspects)})")
    if aspect is not None:
        segments = segments.filter(pc.equal(segments.column("aspect"), aspect))
    present = sorted(set(segments.column("group").to_pylist()))
    if groups:
        missing = sorted(set(groups) - set(present))
        if missing:
            raise UsageError(f"{label} has no group {', '.join(missing)} (groups: {', '.join(present)})")
        chosen = sorted(set(groups))
    elif to_english and _to_english(present):
        chosen = _to_english(present)
    else:
        chosen = present
    segments = segments.filter(pc.is_in(segments.column("group"), pa.array(chosen)))
    rating = human_array(segments)
    keep = np.isfinite(rating)
    segments = segments.filter(pa.array(keep))
    rating = rating[keep]
    if segments.num_rows == 0:
        raise UsageError(f"{label} has no rated segments in groups {', '.join(chosen)}")
    refs = segments.column("references").to_pylist()
    group_col = segments.column("group").to_pylist()
    items = segments.column("item_id").to_pylist()
    table = pa.table({
        "reference": [r[0] if r else "" for r in refs],
        "candidate": segments.column("candidate"),
        "item_id": [f"{g}/{i}" for g, i in zip(group_col, items, strict=True)],
        "group": group_col,
        RATING_COLUMN: pa.array(rating, pa.float64()),
    })
    empty = [i for i, r in enumerate(table.column("reference").to_pylist()) if not r]
    if empty:
        raise UsageError(f"{label}: {len(empty)} rated segments have no reference (first at row {empty[0]})")
    return table, DataVersion("finetune", resolved, table.num_rows, chosen, aspect)


def concat_ratings(parts: Sequence[tuple[pa.Table, DataVersion]]) -> tuple[pa.Table, list[DataVersion]]:
    """Several rating tables trained on together (e.g. WMT15 and WMT16, as the paper does)."""
    if not parts:
        raise UsageError("no training data named; give --data NAME[@VERSION]")
    tables = [t for t, _ in parts]
    return pa.concat_tables(tables), [d for _, d in parts]


def default_checkpoint_name(stage: str, data: Sequence[DataVersion], seed: int) -> str:
    """``finetune-wmt16-1-s12345``: stage, data and seed (the catalog adds a digest on a clash)."""
    parts = "-".join(slugs.slug(d.label) for d in data)[:80]
    return validate_checkpoint_name(f"{stage}-{parts}-s{seed}")


def lineage(operation: str, data: Sequence[DataVersion], *, hyperparameters: dict[str, Any], seed: int,
            excluded: Sequence[str] = (), parent_digest: str | None = None,
            extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The lineage record of a training stage, as the checkpoint JSON and the catalog carry it."""
    return {
        "operation": operation,
        "parent_digest": parent_digest,
        "datasets": [d.as_dict() for d in data],
        "excluded": sorted({DatasetRef.parse(e).name for e in excluded}),
        "hyperparameters": dict(hyperparameters),
        "seed": int(seed),
        **(extra or {}),
    }


@dataclass(frozen=True)
class StagePlan:
    """A training stage, fully resolved before anything runs (JSON-able: flows pass it around).

    ``data`` pins every input by version label and digest; ``objectives`` are the heads to train
    (``{"name", "column", "kind", "n_classes", "weight"}``); ``config`` holds the trainer's
    hyper-parameters; ``out`` is the checkpoint folder (it appears only when complete) and
    ``work_dir`` the resumable training state.
    """

    stage: str
    name: str
    init: str | None
    init_digest: str | None
    data: list[DataVersion]
    objectives: list[dict[str, Any]]
    primary: str
    config: dict[str, Any]
    excluded: list[str]
    out: str
    work_dir: str

    def as_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "name": self.name, "init": self.init, "init_digest": self.init_digest,
                "data": [d.as_dict() for d in self.data], "objectives": list(self.objectives),
                "primary": self.primary, "config": dict(self.config), "excluded": list(self.excluded),
                "out": self.out, "work_dir": self.work_dir}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StagePlan:
        return cls(
            stage=data["stage"], name=data["name"], init=data["init"], init_digest=data["init_digest"],
            data=[DataVersion.from_dict(d) for d in data["data"]], objectives=list(data["objectives"]),
            primary=data["primary"], config=dict(data["config"]), excluded=list(data["excluded"]),
            out=data["out"], work_dir=data["work_dir"],
        )

    def lineage(self) -> dict[str, Any]:
        seed = int(self.config.get("seed", DEFAULT_SEED))
        return lineage(self.stage, self.data, hyperparameters=self.config, seed=seed, excluded=self.excluded,
                       parent_digest=self.init_digest, extra={"name": self.name})


def choose_name(settings: Settings, stage: str, data: Sequence[DataVersion], seed: int, name: str | None,
                resume: bool) -> str:
    """The checkpoint's name: the one given, or ``{stage}-{data}-s{seed}`` with ``-2``, ``-3``...
    appended until neither a registered checkpoint nor a folder has it. A new run refuses a name
    whose folder exists; ``--resume`` requires the name of the run to continue."""
    from sqlalchemy import select

    from assay.catalog.models import Checkpoint

    if resume and name is None:
        raise UsageError("--resume continues a named run: give its --name (printed when the run started)")
    with session_scope(settings) as session:
        taken = set(session.scalars(select(Checkpoint.name)))
    if name is not None:
        validate_checkpoint_name(name)
        if not resume and (name in taken or (settings.checkpoints_dir / name).exists()):
            raise UsageError(f"a checkpoint named {name!r} exists already; choose another --name")
        return name
    base = default_checkpoint_name(stage, data, seed)
    candidate, n = base, 1
    while candidate in taken or (settings.checkpoints_dir / candidate).exists() \
            or (settings.work_dir / "training" / candidate).exists():
        n += 1
        candidate = f"{base}-{n}"
    return candidate


#: the data a run was planned on, written into its work folder when it starts (``--resume`` checks it)
PLAN_RECORD = "plan.json"


def record_plan_data(plan: StagePlan) -> None:
    """Write the versions ``plan`` trains on into its work folder (once, when the run starts)."""
    from assay.atomic import write_text

    folder = Path(plan.work_dir)
    if not (folder / PLAN_RECORD).is_file():
        folder.mkdir(parents=True, exist_ok=True)
        write_text(json.dumps({"name": plan.name, "data": [d.as_dict() for d in plan.data]}, indent=2) + "\n",
                   folder / PLAN_RECORD)


def check_resumable(settings: Settings, name: str | None, resume: bool) -> None:
    """``--resume NAME``: every version the interrupted run trained on must still be in the
    catalog and the store (a run cannot be finished on other data). Refused otherwise, before
    anything is written, naming the version and what to do."""
    record = settings.work_dir / "training" / str(name) / PLAN_RECORD
    if not resume or name is None or not record.is_file():
        return
    for data in json.loads(record.read_text(encoding="utf-8")).get("data", []):
        version = VersionRef.parse(str(data["label"]), str(data["digest"]))  # as DataVersion.as_dict records it
        gone = None
        try:
            with session_scope(settings) as session:
                store_path = resolve(session, version.pinned).store_path
        except NotFoundError:
            gone = "is no longer in the catalog"
        else:
            if not store.is_stored(settings, store_path):
                gone = f"has no files in the store any more ({store.version_folder(settings, store_path)})"
        if gone:
            raise UsageError(f"cannot resume {name!r}: it was training on {version.label} (digest "
                             f"{short(version.digest)}), which {gone}; a run cannot be finished on other data. "
                             "Start a new run instead (the same command without --resume, with another --name); "
                             f"nothing was changed ({record})")


def plan_finetune(settings: Settings, data: Sequence[str], *, init: str | None, init_digest: str | None,
                  config: dict[str, Any], name: str | None = None, resume: bool = False,
                  exclude: Sequence[str] = (), groups: Sequence[str] | None = None, aspect: str | None = None,
                  to_english: bool = True) -> StagePlan:
    """Fine-tuning on human ratings (§3): the data versions pinned, the rating head the objective."""
    check_not_excluded(list(data), exclude, "fine-tuning")
    check_resumable(settings, name, resume)
    versions = [ratings_table(settings, ref, groups=groups, aspect=aspect, to_english=to_english)[1]
                for ref in data]
    seed = int(config.get("seed", DEFAULT_SEED))
    chosen = choose_name(settings, "finetune", versions, seed, name, resume)
    return StagePlan(
        stage="finetune", name=chosen, init=init, init_digest=init_digest, data=versions,
        objectives=[{"name": RATING_COLUMN, "column": RATING_COLUMN, "kind": "regression", "n_classes": 1,
                     "weight": 1.0}],
        primary=RATING_COLUMN, config=dict(config), excluded=sorted(set(exclude)),
        out=str(settings.checkpoints_dir / chosen), work_dir=str(settings.work_dir / "training" / chosen),
    )


def finetune_table(settings: Settings, plan: StagePlan) -> pa.Table:
    """The rated pairs of a fine-tuning plan, read again from the versions it pinned by digest."""
    parts = []
    for d in plan.data:
        table, again = ratings_table(settings, d.version.pinned, groups=d.groups or None, aspect=d.aspect,
                                     to_english=False)
        if again.rows != d.rows:
            raise UsageError(f"{d.label}: {again.rows} rated pairs now, {d.rows} when planned")
        parts.append(table)
    return pa.concat_tables(parts)
