"""Run inputs name their dataset version one way: ``version``, a ``VersionRef`` as JSON.

Until this revision a run's ``inputs`` spelled the dataset version it read in four ways: most jobs
wrote ``dataset`` (the name), ``version`` (the number) and ``dataset_digest`` side by side; a
``robustness`` run wrote ``dataset`` as the label ``NAME@N`` beside ``dataset_digest``; a ``rerun``
wrote ``dataset`` as ``NAME@DIGEST``; a training run (``pretrain``, ``finetune``) listed its
``data`` as ``{role, label, digest, rows, groups, aspect}``. From now on every one is
``{"name", "number", "digest", "label"}`` (``VersionRef.as_dict``) under the key ``version``, written
by ``assay.jobs.runs.version_inputs`` and read by ``assay.jobs.runs.inputs_version`` (a training run's
``data`` entries each carry one). This data migration rewrites the runs recorded before; the
downgrade writes them back as they were. A ``rerun`` whose pinned version is no longer in the
catalog is left as it is (nothing reads a rerun's inputs back).

The rules are written out here, not imported, so the migration stays what it was when the code moves on.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_RUNS = sa.table("runs", sa.column("id", sa.String), sa.column("kind", sa.String), sa.column("inputs", sa.JSON))
_DATASETS = sa.table("datasets", sa.column("id", sa.Integer), sa.column("name", sa.String))
_VERSIONS = sa.table("dataset_versions", sa.column("dataset_id", sa.Integer), sa.column("number", sa.Integer),
                     sa.column("digest", sa.String))
_OLD_KEYS = ("dataset", "version", "dataset_digest")
_TRAINING_KINDS = ("pretrain", "finetune")


def _version(name: str, number: int, digest: str) -> dict[str, Any]:
    return {"name": name, "number": number, "digest": digest, "label": f"{name}@{number}"}


def _split_label(text: str) -> tuple[str, str]:
    name, _, after = text.partition("@")
    return name, after


def _number_of(bind: sa.engine.Connection, name: str, digest: str) -> int | None:
    joined = _VERSIONS.join(_DATASETS, _VERSIONS.c.dataset_id == _DATASETS.c.id)
    return bind.execute(sa.select(_VERSIONS.c.number).select_from(joined)
                        .where(_DATASETS.c.name == name, _VERSIONS.c.digest == digest)).scalar()


def _new_inputs(bind: sa.engine.Connection, kind: str, inputs: dict[str, Any]) -> dict[str, Any] | None:
    """The inputs in the new shape, or None when they have no old spelling of a version."""
    if isinstance(inputs.get("version"), dict):
        return None  # written in the new shape already
    rest = {k: v for k, v in inputs.items() if k not in _OLD_KEYS}
    if kind in _TRAINING_KINDS and isinstance(inputs.get("data"), list):
        data = []
        for d in inputs["data"]:
            name, number = _split_label(str(d["label"]))
            data.append({"version": _version(name, int(number), str(d["digest"])),
                         **{k: v for k, v in d.items() if k not in ("label", "digest")}})
        return {**inputs, "data": data}
    if not isinstance(inputs.get("dataset"), str):
        return None
    if isinstance(inputs.get("version"), int) and "dataset_digest" in inputs:  # name, number, digest
        return {"version": _version(inputs["dataset"], inputs["version"], str(inputs["dataset_digest"])), **rest}
    name, after = _split_label(inputs["dataset"])
    if kind == "robustness" and "dataset_digest" in inputs and after.isdigit():  # NAME@N beside the digest
        return {"version": _version(name, int(after), str(inputs["dataset_digest"])), **rest}
    if kind == "rerun" and after:  # NAME@DIGEST
        number = _number_of(bind, name, after)
        return None if number is None else {"version": _version(name, number, after), **rest}
    return None


def _old_inputs(bind: sa.engine.Connection, kind: str, inputs: dict[str, Any]) -> dict[str, Any] | None:
    """The inputs as they were written before this revision, or None when there is nothing to undo."""
    if kind in _TRAINING_KINDS and isinstance(inputs.get("data"), list):
        data = []
        for d in inputs["data"]:
            if not isinstance(d.get("version"), dict):
                return None
            v = d["version"]
            data.append({"role": d.get("role"), "label": v["label"], "digest": v["digest"],
                         **{k: x for k, x in d.items() if k not in ("version", "role")}})
        return {**inputs, "data": data}
    version = inputs.get("version")
    if not isinstance(version, dict):
        return None
    rest = {k: v for k, v in inputs.items() if k != "version"}
    if kind == "robustness":
        return {"dataset": version["label"], "dataset_digest": version["digest"], **rest}
    if kind == "rerun":
        return {**rest, "dataset": f"{version['name']}@{version['digest']}"}
    return {**rest, "dataset": version["name"], "version": version["number"], "dataset_digest": version["digest"]}


def _rewrite(change: Callable[[sa.engine.Connection, str, dict[str, Any]], dict[str, Any] | None]) -> None:
    bind = op.get_bind()
    for run_id, kind, inputs in bind.execute(sa.select(_RUNS.c.id, _RUNS.c.kind, _RUNS.c.inputs)).all():
        new = change(bind, str(kind), dict(inputs or {}))
        if new is not None:
            bind.execute(_RUNS.update().where(_RUNS.c.id == run_id).values(inputs=new))


def upgrade() -> None:
    _rewrite(_new_inputs)


def downgrade() -> None:
    _rewrite(_old_inputs)
