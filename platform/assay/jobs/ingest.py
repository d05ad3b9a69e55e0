"""Ingesting a human-judgment release: parse, digest, store once, record in the catalog.

The order matters for the "nothing is written on error" guarantee: the input is parsed and
validated completely in memory first (any defect raises :class:`InputError`), then
:func:`assay.datasets.versions.store_version` writes the version folder atomically and inserts the
catalog rows in one transaction; if the catalog write fails, the folder this call created is
removed again.

Re-ingesting an unchanged source is a no-op twice over. Before parsing, :func:`find_unchanged`
compares the source with what the existing versions recorded when they were parsed: the files the
parser read (by sha256), the names of every file under the ingested path (so a file added where a
parser would look for one is noticed), the format, the options and whether the name was given. A
match returns that version without parsing (``IngestResult.parsed`` is False): for WMT17 that is
hashing 27 MB instead of parsing it. Otherwise the source is parsed and the content digest decides,
as before: identical tables return the existing version. What the source check cannot see is a
change in Assay's parsers themselves; ``reparse=True`` (``assay ingest --reparse``) parses anyway.

Only an ingest that creates a version records a run (``kind="ingest"``, through
:class:`assay.jobs.runs.RunRecorder`, inputs by digest: the source files and the new version). A no-op
records nothing: it wrote nothing and changed nothing, and the version's own run already says where
it came from; a run row per unchanged nightly re-ingest would only bury the ones that did work.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import selectinload

from assay.catalog.dataset_versions import find_version_by_digest
from assay.catalog.engine import session_scope
from assay.catalog.models import DatasetVersion
from assay.config import Settings, load_settings
from assay.datasets import formats, store
from assay.datasets.names import VersionRef, slug, validate_name
from assay.datasets.parsed import ParsedDataset, SourceFile
from assay.datasets.versions import store_version
from assay.errors import InputError
from assay.jobs.runs import RunRecorder
from assay.provenance import code_version, table_digest

#: the key of ``DatasetVersion.info`` (and of the manifest) that holds :func:`source_key`
SOURCE_KEY = "ingest"


@dataclass(frozen=True)
class IngestResult:
    version: VersionRef
    format: str
    created: bool
    """False when identical content was already stored (the re-ingest was a no-op)."""
    row_counts: dict[str, int]
    warnings: list[str] = field(default_factory=list)
    parsed: bool = True
    """False when the source files matched an existing version's and were not parsed again."""
    run_id: str | None = None
    """The ingest run that created the version; None for a no-op, which records no run."""

    @property
    def label(self) -> str:
        return self.version.label

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON (``assay ingest --json``): the version as ``name``, ``version_number``,
        ``version_digest`` (sha256 hex) and ``label`` (``name@N``), then the ingest's own fields."""
        return {
            "name": self.version.name,
            "version_number": self.version.number,
            "version_digest": self.version.digest,
            "label": self.version.label,
            "format": self.format,
            "created": self.created,
            "row_counts": self.row_counts,
            "warnings": self.warnings,
            "parsed": self.parsed,
            "run_id": self.run_id,
        }


def default_name(parsed: ParsedDataset, path: Path) -> str:
    """The name a dataset gets when none is given: ``wmt17`` for a WMT package of 2017, etc."""
    year = parsed.metadata.get("year")
    if parsed.format in ("wmt-da", "wmt16-daseg") and year:
        return f"wmt{int(year) % 100:02d}"
    if parsed.format in ("webnlg2017", "huse"):
        return parsed.format
    return slug(path.stem if path.is_file() else path.name)


def source_listing(path: Path) -> str:
    """sha256 over the relative names of every file under ``path`` (symbolic links followed).

    Names only: the content of the files a parser read is compared one by one, and a file it did
    not read cannot change its result unless the file's *presence* does (a new system output).
    """
    if path.is_file():
        names = [path.name]
    else:
        names = []
        seen: set[str] = set()
        for folder, dirs, files in os.walk(path, followlinks=True):
            real = os.path.realpath(folder)
            if real in seen:  # a link back up the tree
                dirs[:] = []
                continue
            seen.add(real)
            dirs.sort()
            rel = os.path.relpath(folder, path)
            names.extend(name if rel == "." else f"{rel}/{name}" for name in files)
    return hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest()


def source_key(path: Path, options: Mapping[str, str], name: str | None) -> dict[str, Any]:
    """What, besides the files' content and the format, decides a parse: recorded on each version."""
    return {"options": dict(sorted(options.items())), "name_given": name, "listing": source_listing(path)}


def _files_unchanged(path: Path, recorded: list[dict[str, Any]]) -> bool:
    # recorded paths are relative to the ingested folder; a single file is recorded by its name
    root = path if path.is_dir() else path.parent
    for entry in recorded:
        file = root / entry["path"]
        try:
            if file.stat().st_size != entry["size"]:
                return False  # cheap first: most edits change the size
        except OSError:
            return False
        if SourceFile.of(file, path).sha256 != entry["sha256"]:
            return False
    return True


def find_unchanged(
    path: str | Path,
    *,
    format_name: str | None = None,
    name: str | None = None,
    options: Mapping[str, str] | None = None,
    settings: Settings | None = None,
) -> IngestResult | None:
    """The existing version that ingesting ``path`` would return, found without parsing, or None
    when the source must be parsed (new, changed, or ingested before source keys were recorded).

    Cheap enough to ask in the CLI's process before starting a flow: it reads the catalog, lists
    the source folder and hashes the files the matching version was parsed from.
    """
    settings = settings or load_settings()
    path = Path(path).resolve()
    if not path.exists():
        raise InputError(path, "no such file or folder")
    if name is not None:
        validate_name(name)
    with session_scope(settings) as session:
        candidates = [
            (IngestResult(v.ref, v.format, False, dict(v.row_counts), list(v.warnings),
                          parsed=False), list(v.source_files), (v.info or {}).get(SOURCE_KEY))
            for v in session.scalars(
                select(DatasetVersion).where(DatasetVersion.source_path == str(path))
                .options(selectinload(DatasetVersion.dataset)).order_by(DatasetVersion.id.desc())
            )
            if (v.info or {}).get(SOURCE_KEY) and (name is None or v.dataset.name == name)
        ]
    if not candidates:
        return None
    fmt = format_name or formats.detect_format(path)
    key = source_key(path, {**sidecar_options(path), **(options or {})}, name)
    for existing, files, recorded in candidates:
        if existing.format == fmt and recorded == key and files and _files_unchanged(path, files):
            return existing
    return None


def ingest_path(
    path: str | Path,
    *,
    format_name: str | None = None,
    name: str | None = None,
    options: Mapping[str, str] | None = None,
    reparse: bool = False,
    settings: Settings | None = None,
) -> IngestResult:
    """Ingest one file or folder; an unchanged source or identical content returns the existing
    version unchanged. ``reparse``: parse even when the source files are unchanged (after an
    upgrade of Assay's parsers; identical content is still a no-op)."""
    settings = settings or load_settings()
    started = time.time()
    path = Path(path).resolve()
    if name is not None:
        validate_name(name)
    if not reparse:
        unchanged = find_unchanged(path, format_name=format_name, name=name, options=options, settings=settings)
        if unchanged is not None:
            return unchanged
    all_options = {**sidecar_options(path), **(options or {})}
    key = source_key(path, all_options, name) if path.exists() else None
    parsed = formats.parse(path, format_name, all_options)
    given_name = name
    name = name or default_name(parsed, path)
    digest = table_digest(parsed.tables)
    row_counts = parsed.row_counts()

    with session_scope(settings) as session:
        existing = find_version_by_digest(session, name, digest)
        if existing is not None:
            return IngestResult(VersionRef(name, existing.number, digest), parsed.format, False, row_counts,
                                list(existing.warnings))

    tables = {
        table_name: store.with_store_columns(table, table_name, name, digest)
        for table_name, table in parsed.tables.items()
    }
    source_files = [vars(f) for f in parsed.source_files]
    manifest = {
        "dataset": name,
        "digest": digest,
        "format": parsed.format,
        "source_path": str(path),
        "source_files": source_files,
        "row_counts": row_counts,
        "warnings": parsed.warnings,
        "info": parsed.metadata,
        SOURCE_KEY: key,
        "code_version": code_version(),
    }
    version = store_version(
        settings, name=name, digest=digest, tables=tables, manifest=manifest,
        format=parsed.format, source_path=str(path), source_files=source_files, row_counts=row_counts,
        warnings=list(parsed.warnings), info={**parsed.metadata, SOURCE_KEY: key}, code_version=code_version(),
    )
    recorder = RunRecorder(
        settings, "ingest",
        inputs={"source_path": str(path), "source_files": [{"path": f["path"], "sha256": f["sha256"]}
                                                           for f in source_files],
                "dataset": name, "version": version.number, "dataset_digest": digest},
        parameters={"format": parsed.format, "name": given_name, "options": all_options, "reparse": reparse},
        started=started,
    )
    recorder.record({"dataset": version.label, "digest": digest, "row_counts": row_counts,
                     "warnings": len(parsed.warnings)})
    return IngestResult(version, parsed.format, True, row_counts, list(parsed.warnings),
                        run_id=recorder.run_id)


def sidecar_options(path: Path) -> dict[str, str]:
    """Column declarations kept beside a file: ``data.tsv`` -> ``data.columns.json``.

    Lets ``assay run`` ingest generic files without command-line options; options given on the
    command line override the sidecar's.
    """
    sidecar = path.with_name(path.stem + ".columns.json")
    if not path.is_file() or not sidecar.is_file():
        return {}
    try:
        declared = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(sidecar, f"unreadable column declarations ({exc})",
                         expected="a JSON object mapping canonical names to input columns") from exc
    if not isinstance(declared, dict) or not all(isinstance(v, str) for v in declared.values()):
        raise InputError(sidecar, "column declarations must be a JSON object of strings",
                         expected='{"candidate": "hyp", "human_raw": "score", ...}')
    return {str(k): v for k, v in declared.items()}


def discover(data_dir: Path) -> list[Path]:
    """The datasets in ``data_dir``: every entry (folder or file) that some format recognises."""
    found = []
    registry = formats.registry()
    for entry in sorted(data_dir.iterdir()):
        if entry.name.startswith(".") or entry.name.endswith(".md"):
            continue
        if any(fmt.detect(entry) for fmt in registry.values()):
            found.append(entry)
    return found


def derive_version(
    parent: str,
    name: str,
    tables: dict[str, Any],
    derivation: dict[str, Any],
    *,
    settings: Settings | None = None,
) -> IngestResult:
    """Store tables derived from an existing version (a sample, a filtered copy) as a version of
    dataset ``name``, with its lineage (parent version and how it was derived) in the catalog.

    ``tables`` hold canonical rows (the store columns ``dataset``/``version_digest`` are replaced);
    identical derived content is a no-op, as for ingestion.
    """
    from assay.catalog.dataset_versions import resolve
    from assay.datasets.schema import STORE_COLUMNS, parser_schema

    settings = settings or load_settings()
    validate_name(name)
    canonical = {}
    for table_name in ("segments", "systems", "outputs", "rankings"):
        schema = parser_schema(table_name)
        table = tables.get(table_name)
        if table is None:
            canonical[table_name] = schema.empty_table()
        else:
            keep = [c for c in table.column_names if c not in STORE_COLUMNS]
            canonical[table_name] = table.select(keep).cast(schema)
    digest = table_digest(canonical)
    row_counts = {k: v.num_rows for k, v in canonical.items()}
    with session_scope(settings) as session:
        parent_version = resolve(session, parent)
        existing = find_version_by_digest(session, name, digest)
        if existing is not None:
            return IngestResult(VersionRef(name, existing.number, digest), "derived", False, row_counts, [])
        parent_ref, parent_info = parent_version.ref, dict(parent_version.info)
    lineage = {"parent": parent_ref.label, "parent_digest": parent_ref.digest, **derivation}
    stored = {t: store.with_store_columns(tb, t, name, digest) for t, tb in canonical.items()}
    manifest = {"dataset": name, "digest": digest, "format": "derived", "derivation": lineage,
                "row_counts": row_counts, "code_version": code_version()}
    version = store_version(
        settings, name=name, digest=digest, tables=stored, manifest=manifest, parent=parent_ref, format="derived",
        source_path=f"derived from {parent_ref.label}", source_files=[], row_counts=row_counts, warnings=[],
        info={"derivation": lineage, **{k: v for k, v in parent_info.items() if k in ("year", "testset")}},
        code_version=code_version(), derivation=lineage,
    )
    return IngestResult(version, "derived", True, row_counts, [])
