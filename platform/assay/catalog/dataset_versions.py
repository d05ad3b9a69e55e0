"""Catalog queries and records for datasets, their versions and their systems."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, selectinload

from assay.catalog.models import Dataset, DatasetVersion, System
from assay.datasets.names import DatasetRef, VersionRef
from assay.errors import NotFoundError
from assay.provenance import short

if TYPE_CHECKING:  # the tables are handed in: resolving a name (every command) needs no pyarrow
    import pyarrow as pa


def find_version_by_digest(session: Session, name: str, digest: str) -> DatasetVersion | None:
    return session.scalars(
        select(DatasetVersion)
        .join(Dataset)
        .where(Dataset.name == name, DatasetVersion.digest == digest)
        .options(selectinload(DatasetVersion.dataset))
    ).one_or_none()


def resolve(session: Session, ref: VersionRef | DatasetRef | str) -> DatasetVersion:
    """The version a ``NAME[@VERSION]`` reference names: latest, by number, or by digest prefix; or
    the row of a :class:`VersionRef` already resolved (by its digest: carried, never parsed again)."""
    if isinstance(ref, VersionRef):
        found = find_version_by_digest(session, ref.name, ref.digest)
        if found is None:
            raise NotFoundError(f"{ref.label} ({short(ref.digest)}) is no longer in the catalog")
        return found
    if isinstance(ref, str):
        ref = DatasetRef.parse(ref)
    dataset = session.scalars(select(Dataset).where(Dataset.name == ref.name)).one_or_none()
    if dataset is None:
        known = ", ".join(session.scalars(select(Dataset.name).order_by(Dataset.name))) or "none"
        raise NotFoundError(f"no dataset named {ref.name!r} (known: {known}); ingest it with `assay ingest`")
    versions = dataset.versions
    if not versions:
        raise NotFoundError(f"dataset {ref.name!r} has no versions")
    if ref.version_number is not None:
        for version in versions:
            if version.number == ref.version_number:
                return version
    elif ref.version_digest is not None:
        matches = [v for v in versions if v.digest.startswith(ref.version_digest)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise NotFoundError(f"{ref}: the digest prefix matches {len(matches)} versions; give more digits")
    else:
        return versions[-1]
    listed = ", ".join(f"{v.number} ({short(v.digest)})" for v in versions)
    raise NotFoundError(f"{ref}: no such version of {ref.name!r} (versions: {listed})")


def record_version(
    session: Session,
    *,
    name: str,
    digest: str,
    format: str,
    store_path: str,
    source_path: str,
    source_files: list[dict[str, Any]],
    row_counts: dict[str, int],
    warnings: list[str],
    info: dict[str, Any],
    code_version: str,
    tables: dict[str, pa.Table],
    parent: DatasetVersion | None = None,
    derivation: dict[str, Any] | None = None,
) -> DatasetVersion:
    """Insert a dataset version (creating the dataset on first use) and its systems."""
    dataset = session.scalars(select(Dataset).where(Dataset.name == name)).one_or_none()
    if dataset is None:
        dataset = Dataset(name=name)
        session.add(dataset)
        session.flush()
    number = (
        session.scalar(select(func.max(DatasetVersion.number)).where(DatasetVersion.dataset_id == dataset.id))
        or 0
    ) + 1
    version = DatasetVersion(
        dataset=dataset,
        number=number,
        digest=digest,
        format=format,
        store_path=store_path,
        source_path=source_path,
        source_files=source_files,
        row_counts=row_counts,
        warnings=warnings,
        info=info,
        code_version=code_version,
        parent_version_id=parent.id if parent is not None else None,
        derivation=derivation,
    )
    session.add(version)
    for system in systems_of(tables):
        session.add(System(version=version, **system))
    session.flush()
    return version


def systems_of(tables: dict[str, pa.Table]) -> list[dict[str, Any]]:
    """Per (group, system): whether human-written and how many rows each table holds."""
    found: dict[tuple[str, str], dict[str, Any]] = {}

    def count(table: pa.Table, column: str) -> None:
        if table.num_rows == 0:
            return
        keys = ["group", "system"]
        has_human = "is_human" in table.column_names
        aggs = [("system", "count")] + ([("is_human", "max")] if has_human else [])
        grouped = table.select([*keys, *(["is_human"] if has_human else [])]).group_by(keys).aggregate(aggs)
        for row in grouped.to_pylist():
            entry = found.setdefault(
                (row["group"], row["system"]),
                {"group": row["group"], "name": row["system"], "is_human": False,
                 "segment_judgments": 0, "system_judgments": 0, "outputs": 0},
            )
            entry[column] += row["system_count"]
            if has_human and row["is_human_max"]:
                entry["is_human"] = True

    count(tables["segments"], "segment_judgments")
    count(tables["systems"], "system_judgments")
    count(tables["outputs"], "outputs")
    return [found[key] for key in sorted(found)]


def list_versions(session: Session, *, all_versions: bool = False) -> list[DatasetVersion]:
    """Latest version of every dataset (or every version), ordered by name and number."""
    versions = list(
        session.scalars(
            select(DatasetVersion)
            .join(Dataset)
            .options(selectinload(DatasetVersion.dataset))
            .order_by(Dataset.name, DatasetVersion.number)
        )
    )
    if all_versions:
        return versions
    latest: dict[str, DatasetVersion] = {}
    for version in versions:
        latest[version.dataset.name] = version
    return list(latest.values())

