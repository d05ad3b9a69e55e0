"""Synthetic pairs stored as dataset versions like any other (docs/STORAGE.md).

A synthetic version is a folder ``datasets/<name>/<digest>/`` holding ``pairs.parquet`` (the table
of :mod:`assay.synthetic.synthesize`) beside the four canonical tables, empty (so every reader of
dataset versions works on it unchanged), and a row in ``dataset_versions`` with format
``synthetic``. The digest is :func:`assay.provenance.table_digest` of the tables, the pairs
table's schema metadata included: the spec, the sources' digests, the plugins' signatures and the
γ weights are part of the content, so two specs that differ only in γ are two versions. The same
content stored twice is a no-op (the existing version is returned). The folder is written under a
temporary name and renamed into place; the catalog row follows in one transaction, and if that
fails the folder this call created is removed: nothing is left on failure
(:func:`assay.datasets.versions.store_version`, as for every version).

Lineage (``derivation`` and ``info["derivation"]`` of the catalog row, ``derivation`` of the
manifest; the same object as the pairs table's schema metadata): ``{"kind": "synthetic", "spec",
"seed", "sources": [{label, digest, format}], "exclude", "min_tokens", "max_tokens",
"perturbations": [{name, share, role, family, signature}], "signals": [{key, signal, columns, kind,
classes, weight, signature}], "counts": {pairs, items, by_perturbation, corpus}, "chunk"}``. A
``synthesize`` run records the creation (inputs by digest).

:func:`store_synthetic` returns the existing version without synthesizing when one of ``name``
already holds pairs of the same spec from the same source versions with the same plugin
signatures (the check :func:`find_synthesized` makes), since synthesis takes minutes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from sqlalchemy import select
from sqlalchemy.orm import selectinload

from assay.catalog.dataset_versions import find_version_by_digest, resolve
from assay.catalog.engine import session_scope
from assay.catalog.models import Dataset, DatasetVersion
from assay.config import Settings, load_settings
from assay.datasets import store
from assay.datasets.names import DatasetRef, VersionRef, validate_name
from assay.datasets.schema import TABLES, parser_schema
from assay.datasets.versions import store_version
from assay.errors import UsageError
from assay.jobs.runs import RunRecorder, version_inputs
from assay.provenance import code_version, table_digest
from assay.synthetic.corpus import SYNTHETIC_FORMAT, resolve_sources
from assay.synthetic.spec import SynthesisSpec
from assay.synthetic.synthesize import (
    ProgressCallback,
    SignalTask,
    description_of,
    load_plugins,
    synthesize,
)

PAIRS = "pairs"


@dataclass(frozen=True)
class SyntheticVersion:
    """A stored synthetic version."""

    version: VersionRef
    created: bool
    """False when identical pairs were already stored (the call was a no-op)."""
    rows: int
    run_id: str | None = None

    @property
    def label(self) -> str:
        return self.version.label

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON (``assay synth --json``): ``name``, ``version_number``, ``version_digest``, ``label``,
        ``created``, ``rows``, ``run_id``."""
        return {"name": self.version.name, "version_number": self.version.number,
                "version_digest": self.version.digest, "label": self.label, "created": self.created,
                "rows": self.rows, "run_id": self.run_id}


def default_name(spec: SynthesisSpec) -> str:
    """``synth-`` and the sources' dataset names: ``synth-wmt16-wmt18``."""
    names = sorted({DatasetRef.parse(s).name for s in spec.sources})
    return validate_name(("synth-" + "-".join(names))[:64])


def _lineage_key(spec: SynthesisSpec, sources: list[dict[str, Any]], description: dict[str, Any]) -> dict[str, Any]:
    return {"spec": spec.as_dict(), "sources": [s["digest"] for s in sources],
            "perturbations": [p["signature"] for p in description["perturbations"]],
            "signals": [(s["key"], s["signature"], s["weight"]) for s in description["signals"]]}


def find_synthesized(spec: SynthesisSpec, name: str, *, settings: Settings | None = None) -> SyntheticVersion | None:
    """The stored version of ``name`` made from ``spec``, the same source versions and plugins
    with the same signatures, or None (then the pairs must be synthesized)."""
    settings = settings or load_settings()
    plugins = load_plugins(spec)
    sources = [info.as_dict() for info, _ in resolve_sources(settings, spec.sources, spec.exclude)]
    wanted = _lineage_key(spec, sources, plugins.description())
    with session_scope(settings) as session:
        for version in session.scalars(
            select(DatasetVersion).join(Dataset).where(Dataset.name == name, DatasetVersion.format == SYNTHETIC_FORMAT)
            .options(selectinload(DatasetVersion.dataset)).order_by(DatasetVersion.number.desc())
        ):
            lineage = version.derivation or {}
            if lineage.get("spec") and _lineage_key(SynthesisSpec.from_dict(lineage["spec"]), lineage["sources"],
                                                    lineage) == wanted:
                return SyntheticVersion(version.ref, False,
                                        int(version.row_counts.get(PAIRS, 0)))
    return None


def store_synthetic(
    spec: SynthesisSpec,
    *,
    name: str | None = None,
    settings: Settings | None = None,
    progress: ProgressCallback | None = None,
    reuse: bool = True,
) -> SyntheticVersion:
    """Synthesize the pairs of ``spec`` and store them as a version of ``name`` (default
    :func:`default_name`). ``reuse``: return a version already made from the same spec, sources and
    plugins without synthesizing (``False``: synthesize anyway; identical content is still a no-op)."""
    settings = settings or load_settings()
    name = validate_name(name or default_name(spec))
    started = time.time()
    if reuse:
        found = find_synthesized(spec, name, settings=settings)
        if found is not None:
            return found
    pairs = synthesize(spec, settings=settings, progress=progress)
    return store_pairs(pairs, name, settings=settings, started=started)


def store_pairs(pairs: pa.Table, name: str, *, settings: Settings | None = None,
                started: float | None = None) -> SyntheticVersion:
    """Store a pairs table made by :func:`assay.synthetic.synthesize.synthesize` as a version of
    ``name`` (see the module docstring)."""
    settings = settings or load_settings()
    validate_name(name)
    started = started if started is not None else time.time()
    lineage = description_of(pairs)
    pairs = pairs.combine_chunks()
    empty = {t: parser_schema(t).empty_table() for t in TABLES}
    digest = table_digest({**empty, PAIRS: pairs})
    row_counts = {**{t: 0 for t in TABLES}, PAIRS: pairs.num_rows}
    with session_scope(settings) as session:
        existing = find_version_by_digest(session, name, digest)
        if existing is not None:
            return SyntheticVersion(VersionRef(name, existing.number, digest), False, pairs.num_rows)
    stored: dict[str, pa.Table] = {t: store.with_store_columns(tb, t, name, digest) for t, tb in empty.items()}
    stored[PAIRS] = pairs
    source_path = "synthesized from " + ", ".join(s["label"] for s in lineage["sources"])
    manifest = {"dataset": name, "digest": digest, "format": SYNTHETIC_FORMAT, "derivation": lineage,
                "row_counts": row_counts, "code_version": code_version()}
    version = store_version(
        settings, name=name, digest=digest, tables=stored, manifest=manifest, format=SYNTHETIC_FORMAT,
        source_path=source_path, source_files=[], row_counts=row_counts, warnings=[], info={"derivation": lineage},
        code_version=code_version(), derivation=lineage,
    )
    recorder = RunRecorder(
        settings, "synthesize",
        inputs=version_inputs(version, sources=lineage["sources"], exclude=lineage["exclude"]),
        parameters=lineage["spec"], started=started,
    )
    recorder.record({"dataset": version.label, "digest": digest, "counts": lineage["counts"]})
    return SyntheticVersion(version, True, pairs.num_rows, run_id=recorder.run_id)


def _synthetic_version(settings: Settings, ref: str) -> tuple[str, dict[str, Any]]:
    with session_scope(settings) as session:
        version = resolve(session, ref)
        if version.format != SYNTHETIC_FORMAT:
            raise UsageError(f"{version.label} is a {version.format} dataset version, not synthetic pairs "
                             "(make them with assay.synthetic.store_synthetic)")
        return version.store_path, dict(version.derivation or {})


def load_pairs(settings: Settings, ref: str) -> pa.Table:
    """The pairs table of a stored synthetic version (``NAME``, ``NAME@N`` or ``NAME@DIGEST``)."""
    store_path, _ = _synthetic_version(settings, ref)
    return store.read_table(settings, store_path, PAIRS)


def signal_tasks(settings: Settings, ref: str) -> list[SignalTask]:
    """The pre-training tasks of a stored synthetic version: each signal's key, target columns,
    kind, classes and weight γ_k (eq. 1), in the spec's order."""
    _, lineage = _synthetic_version(settings, ref)
    return [SignalTask.from_dict(s) for s in lineage.get("signals", [])]


def signal_weights(settings: Settings, ref: str) -> dict[str, float]:
    """γ_k of every signal of a stored synthetic version, by key."""
    return {task.key: task.weight for task in signal_tasks(settings, ref)}
