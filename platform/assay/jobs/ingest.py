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

One source can hold several versions: a format that splits its input (:class:`assay.datasets.formats.
SplitFormat`; ``mtme``: a test-set folder holds one version per language pair, MTME's data root one per
test set and language pair) is parsed once per split,
every split before anything is written, and each split becomes its own version, named with the
split's values when a name is given (``--name x`` -> ``x-en-de``). :func:`ingest_versions` returns them
all; :func:`ingest_path` is the one-version case and refuses a source that holds several. Each split's
version records the source key with its ``split`` and the source's ``splits``, so a no-op re-ingest
finds all of them without parsing.

A version that lists official submissions (``info["external_metrics"]``, format ``mtme``) gets their
segment scores written into the segment-score store when it is created, and when an identical ingest
finds it without them (:mod:`assay.jobs.external_scores`); a no-op re-ingest checks that they are
there (one folder listing per variant) and otherwise takes the parsing path, which writes them.

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
from assay.errors import InputError, UsageError
from assay.jobs.external_scores import (
    conflict_warning,
    external_metrics,
    has_external_scores,
    plan_external_scores,
    write_external_scores,
)
from assay.jobs.runs import RunRecorder, version_inputs
from assay.provenance import code_version, table_digest

#: the key of ``DatasetVersion.info`` (and of the manifest) that holds :func:`source_key`
SOURCE_KEY = "ingest"
#: the keys a split version adds to its source key: its own split and every split of the source
SPLIT_KEYS = ("split", "splits")


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
    external_scores: dict[str, Any] | None = None
    """What writing the official submissions' segment scores did (variants, written, rows, run_id);
    None for a version without them, and for a no-op that found them stored."""

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
            **({"external_scores": self.external_scores} if self.external_scores is not None else {}),
        }


def default_name(parsed: ParsedDataset, path: Path) -> str:
    """The name a dataset gets when none is given: ``wmt17`` for a WMT package of 2017, the parser's
    ``default_name`` (``mtme-wmt23-en-de``), etc."""
    if parsed.metadata.get("default_name"):
        return slug(str(parsed.metadata["default_name"]))
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
        if SourceFile.of(file, file.parent).sha256 != entry["sha256"]:  # a file may lie beside the path (esa)
            return False
    return True


def find_unchanged_versions(
    path: str | Path,
    *,
    format_name: str | None = None,
    name: str | None = None,
    options: Mapping[str, str] | None = None,
    settings: Settings | None = None,
) -> list[IngestResult] | None:
    """The existing versions that ingesting ``path`` would return (one per split of the source, in
    split order), found without parsing; None when the source must be parsed (new, changed, ingested
    before source keys were recorded, or a version lacks the official scores it lists).

    Cheap enough to ask in the CLI's process before starting a flow: it reads the catalog, lists
    the source folder and hashes the files the matching versions were parsed from.
    """
    settings = settings or load_settings()
    path = Path(path).resolve()
    if not path.exists():
        raise InputError(path, "no such file or folder")
    if name is not None:
        validate_name(name)
    with session_scope(settings) as session:
        candidates = [
            (IngestResult(v.ref, v.format, False, dict(v.row_counts), list(v.warnings), parsed=False),
             list(v.source_files), dict((v.info or {})[SOURCE_KEY]), dict(v.info or {}))
            for v in session.scalars(
                select(DatasetVersion).where(DatasetVersion.source_path == str(path))
                .options(selectinload(DatasetVersion.dataset)).order_by(DatasetVersion.id.desc())
            )
            if (v.info or {}).get(SOURCE_KEY)
        ]
    if not candidates:
        return None
    fmt = format_name or formats.detect_format(path)
    key = source_key(path, {**sidecar_options(path), **(options or {})}, name)
    found: dict[str, tuple[IngestResult, dict[str, Any]]] = {}
    splits: list[dict[str, str]] | None = None
    for existing, files, recorded, info in candidates:  # newest first
        split = _split_id(recorded.get("split"))
        base = {k: v for k, v in recorded.items() if k not in SPLIT_KEYS}
        if existing.format != fmt or split in found or base != key:
            continue
        if files and _files_unchanged(path, files):
            found[split] = (existing, info)
            splits = splits or list(recorded.get("splits") or [{}])
    if splits is None or any(_split_id(s) not in found for s in splits):
        return None
    chosen = [found[_split_id(s)] for s in splits]
    if not all(has_external_scores(settings, info) for _, info in chosen):
        return None
    return [result for result, _ in chosen]


def find_unchanged(
    path: str | Path,
    *,
    format_name: str | None = None,
    name: str | None = None,
    options: Mapping[str, str] | None = None,
    settings: Settings | None = None,
) -> IngestResult | None:
    """The one existing version that ingesting ``path`` would return, found without parsing
    (:func:`find_unchanged_versions`); None when it must be parsed or the source holds several."""
    found = find_unchanged_versions(path, format_name=format_name, name=name, options=options, settings=settings)
    return found[0] if found is not None and len(found) == 1 else None


def _split_id(split: Mapping[str, str] | None) -> str:
    return json.dumps(dict(split or {}), sort_keys=True)


def ingest_path(
    path: str | Path,
    *,
    format_name: str | None = None,
    name: str | None = None,
    options: Mapping[str, str] | None = None,
    reparse: bool = False,
    settings: Settings | None = None,
) -> IngestResult:
    """Ingest one file or folder that holds one dataset version (:func:`ingest_versions` for a source
    that holds several, which this refuses before parsing)."""
    return ingest_versions(path, format_name=format_name, name=name, options=options, reparse=reparse,
                           settings=settings, single=True)[0]


def ingest_versions(
    path: str | Path,
    *,
    format_name: str | None = None,
    name: str | None = None,
    options: Mapping[str, str] | None = None,
    reparse: bool = False,
    settings: Settings | None = None,
    single: bool = False,
) -> list[IngestResult]:
    """Ingest one file or folder: one version per split of the source (one for most formats); an
    unchanged source or identical content returns the existing versions unchanged. Every split is
    parsed before anything is written, so a defect anywhere writes nothing. ``reparse``: parse even
    when the source files are unchanged (after an upgrade of Assay's parsers; identical content is
    still a no-op). ``single``: refuse a source that holds several versions."""
    settings = settings or load_settings()
    started = time.time()
    path = Path(path).resolve()
    if name is not None:
        validate_name(name)
    if not reparse:
        unchanged = find_unchanged_versions(path, format_name=format_name, name=name, options=options,
                                            settings=settings)
        if unchanged is not None and not (single and len(unchanged) > 1):
            return unchanged
    if not path.exists():
        raise InputError(path, "no such file or folder")
    all_options = {**sidecar_options(path), **(options or {})}
    fmt = format_name or formats.detect_format(path)
    splits = formats.splits(path, fmt, all_options)
    if single and len(splits) > 1:
        listed = "; ".join(" ".join(f"-o {k}={v}" for k, v in split.items()) for split in splits)
        raise UsageError(f"{path} holds {len(splits)} dataset versions ({listed}): ingest them all with "
                         "ingest_versions (assay ingest does), or name one with its option")
    parsed = [formats.parse(path, fmt, {**all_options, **split}) for split in splits]
    key = source_key(path, all_options, name)
    return [_store(settings, path, one, key, split if len(splits) > 1 else {}, splits, name, all_options, reparse,
                   started) for one, split in zip(parsed, splits, strict=True)]


def _store(settings: Settings, path: Path, parsed: ParsedDataset, key: dict[str, Any], split: dict[str, str],
           splits: list[dict[str, str]], given_name: str | None, all_options: dict[str, str], reparse: bool,
           started: float) -> IngestResult:
    """Store one parsed version (or find it stored) and write its official segment scores."""
    name = given_name or default_name(parsed, path)
    if given_name and split:
        name = slug("-".join([given_name, *split.values()]))
    digest = table_digest(parsed.tables)
    row_counts = parsed.row_counts()
    metrics = external_metrics(parsed.metadata) if "metric_scores" in parsed.tables else []
    plan = plan_external_scores(parsed.tables["outputs"], parsed.tables["metric_scores"], metrics) if metrics else None
    warnings = list(parsed.warnings)
    conflicts = conflict_warning(plan) if plan is not None else None
    if conflicts:
        warnings.append(conflicts)
    if split or len(splits) > 1:
        key = {**key, "split": split, "splits": splits}

    with session_scope(settings) as session:
        existing = find_version_by_digest(session, name, digest)
        found = None if existing is None else (VersionRef(name, existing.number, digest), list(existing.warnings))
    if found is not None:
        external = write_external_scores(settings, plan, found[0]) if plan is not None else None
        return IngestResult(found[0], parsed.format, False, row_counts, found[1],
                            external_scores=external if external and external["run_id"] else None)

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
        "warnings": warnings,
        "info": parsed.metadata,
        SOURCE_KEY: key,
        "code_version": code_version(),
    }
    version = store_version(
        settings, name=name, digest=digest, tables=tables, manifest=manifest,
        format=parsed.format, source_path=str(path), source_files=source_files, row_counts=row_counts,
        warnings=warnings, info={**parsed.metadata, SOURCE_KEY: key}, code_version=code_version(),
    )
    recorder = RunRecorder(
        settings, "ingest",
        inputs=version_inputs(version, source_path=str(path),
                              source_files=[{"path": f["path"], "sha256": f["sha256"]} for f in source_files]),
        parameters={"format": parsed.format, "name": given_name, "options": {**all_options, **split},
                    "reparse": reparse},
        started=started,
    )
    recorder.record({"dataset": version.label, "digest": digest, "row_counts": row_counts,
                     "warnings": len(warnings)})
    external = write_external_scores(settings, plan, version) if plan is not None else None
    return IngestResult(version, parsed.format, True, row_counts, warnings, run_id=recorder.run_id,
                        external_scores=external)


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
    """The datasets in ``data_dir``: every entry (folder or file) that some format recognises (a folder
    may hold several versions: ingest each with :func:`ingest_versions`)."""
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
