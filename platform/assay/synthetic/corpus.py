"""The English sentences that synthetic pairs are made from, and where each came from.

BLEURT perturbs "1.8 million segments z from Wikipedia" (Sellam et al., 2020, §4.1), chosen to be
"large and diverse" (§4, requirement 1). Assay draws them from stored dataset versions instead,
named by the caller (``wmt16``, ``wmt18@1``), and only where the text is English:

``references``
    the references of to-English groups (WMT ``*-en``; WebNLG and HUSE, which are English);
``sources``
    the source side of from-English groups (WMT ``en-*``, e.g. WMT16 ``en-ru``);
``outputs``
    the system outputs of to-English groups: every row of the ``outputs`` table, or, for a group
    the version has no outputs for (WMT16), its judged machine outputs in ``segments``. Each output
    is kept with its reference, for the ``system_outputs`` perturbation.

Sentences are whitespace-normalised (runs of spaces collapsed, ends stripped), deduplicated across
kinds and versions, and kept when their word count (whitespace tokens, the unit that
:mod:`assay.synthetic.masking` and word dropping work on) lies within ``[min_tokens, max_tokens]``.
An output pair is kept when both sides are.

``exclude`` names datasets that must never be drawn from: a recipe that evaluates on WMT17 passes
``exclude=["wmt17"]``. Naming an excluded dataset (or a version derived from one) as a source is a
:class:`~assay.errors.UsageError`; and where an excluded dataset is in the catalog, every sentence
that occurs in any of its versions is removed from the corpus (counted in ``removed_excluded``), so
no evaluation sentence leaks into pre-training through another dataset.

Each sentence's id is the first 16 hex digits of the sha256 of its text: the same sentence has the
same id whichever dataset it came from, so a split by id never puts one sentence on both sides.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlalchemy import select

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.catalog.models import Dataset, DatasetVersion
from assay.config import Settings, load_settings
from assay.datasets import store
from assay.datasets.names import DatasetRef, VersionRef, validate_name
from assay.errors import UsageError

KINDS = ("references", "sources", "outputs")
#: formats whose groups are not language pairs but whose texts are English
ENGLISH_FORMATS = frozenset({"webnlg2017", "huse"})
#: the format of stored synthetic versions (never a source of sentences)
SYNTHETIC_FORMAT = "synthetic"
_PAIR = re.compile(r"([a-z]{2,3})-([a-z]{2,3})")


def normalise(text: str) -> str:
    """Whitespace collapsed to single spaces, ends stripped (so words join back to the text)."""
    return " ".join(text.split())


def sentence_id(text: str) -> str:
    """The id of a (normalised) sentence: the first 16 hex digits of its sha256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def english_sides(group: str, fmt: str) -> tuple[bool, bool]:
    """(target side is English, source side is English) for a group of a version of format ``fmt``."""
    match = _PAIR.fullmatch(group)
    if match:
        return match.group(2) == "en", match.group(1) == "en"
    return fmt in ENGLISH_FORMATS, False


@dataclass(frozen=True)
class SourceVersion:
    """A dataset version sentences were drawn from, and its format."""

    version: VersionRef
    format: str

    @property
    def label(self) -> str:
        return self.version.label

    def as_dict(self) -> dict[str, Any]:
        """What a synthetic version's lineage records of a source: ``label``, ``digest``, ``format``."""
        return {"label": self.label, "digest": self.version.digest, "format": self.format}


@dataclass
class Corpus:
    """Unique English sentences with their kinds, the (reference, output) pairs, and provenance."""

    sentences: list[str]
    kinds: np.ndarray
    """uint8 per sentence: bit k set when the sentence occurs as ``KINDS[k]``."""
    output_pairs: np.ndarray
    """int64 (n, 2): (reference index, output index) of every distinct to-English system output."""
    sources: tuple[SourceVersion, ...]
    exclude: tuple[str, ...]
    min_tokens: int
    max_tokens: int | None
    counts: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.sentences)

    def indices(self, kinds: Iterable[str]) -> np.ndarray:
        """Indices of the sentences that occur as any of ``kinds``."""
        bits = 0
        for kind in kinds:
            bits |= _bit(kind)
        return np.flatnonzero(self.kinds & bits)

    def item_ids(self, indices: Sequence[int] | np.ndarray) -> list[str]:
        return [sentence_id(self.sentences[int(i)]) for i in indices]

    def provenance(self) -> dict[str, Any]:
        """What the lineage of a synthetic version records about its sentences."""
        return {"sources": [s.as_dict() for s in self.sources], "exclude": list(self.exclude),
                "min_tokens": self.min_tokens, "max_tokens": self.max_tokens, "counts": self.counts}


def _bit(kind: str) -> int:
    if kind not in KINDS:
        raise UsageError(f"unknown sentence kind {kind!r} (expected one of {', '.join(KINDS)})")
    return 1 << KINDS.index(kind)


def _column(table: pa.Table, name: str) -> list[Any]:
    return table.column(name).to_pylist()


def _distinct_texts(table: pa.Table, name: str) -> list[str]:
    """The distinct non-empty strings of a string or list-of-strings column."""
    column = table.column(name)
    if pa.types.is_list(column.type):
        column = pc.list_flatten(column)
    return [t for t in pc.unique(column).to_pylist() if t]


def _texts_of(settings: Settings, store_path: str, fmt: str) -> dict[str, Any]:
    """The English texts of one version: references, sources, (reference, output) pairs, and the
    groups left out as not English."""
    segments = store.read_table(settings, store_path, "segments")
    outputs = store.read_table(settings, store_path, "outputs")
    references: list[str] = []
    sources: list[str] = []
    pairs: list[tuple[str, str]] = []
    skipped: set[str] = set()
    groups_with_outputs = set(_column(outputs, "group"))
    for table, is_outputs in ((segments, False), (outputs, True)):
        if table.num_rows == 0:
            continue
        for group in sorted(set(_column(table, "group"))):
            target_en, source_en = english_sides(group, fmt)
            if not target_en and not source_en:
                skipped.add(group)
                continue
            rows = table.filter(pc.equal(table.column("group"), group))
            if source_en:
                sources.extend(_distinct_texts(rows, "source"))
            if not target_en:
                continue
            references.extend(_distinct_texts(rows, "references"))
            if is_outputs or group not in groups_with_outputs:
                machine = rows if is_outputs else rows.filter(pc.invert(rows.column("is_human")))
                cands = _column(machine, "candidate")
                m_refs = _column(machine, "references")
                pairs.extend((r[0], c) for r, c in zip(m_refs, cands, strict=True) if r)
    return {"references": references, "sources": sources, "pairs": pairs, "skipped_groups": sorted(skipped)}


def excluded_texts(settings: Settings, names: Sequence[str]) -> set[str]:
    """Every normalised text of every version of the excluded datasets that are in the catalog."""
    texts: set[str] = set()
    if not names:
        return texts
    with session_scope(settings) as session:
        paths = list(session.scalars(
            select(DatasetVersion.store_path).join(Dataset)
            .where(Dataset.name.in_(list(names)), DatasetVersion.format != SYNTHETIC_FORMAT)
        ))
    for path in paths:
        for table_name in ("segments", "outputs"):
            table = store.read_table(settings, path, table_name)
            if table.num_rows == 0:
                continue
            for column in ("candidate", "source", "references"):
                texts.update(_distinct_texts(table, column))
    return {normalise(t) for t in texts}


def _derived_from(version: DatasetVersion) -> str | None:
    """The dataset name a derived version's lineage names as its parent, if any."""
    derivation = version.derivation or {}
    parent = derivation.get("parent")
    return DatasetRef.parse(str(parent)).name if parent else None


def resolve_sources(settings: Settings, sources: Sequence[str],
                    exclude: Sequence[str]) -> list[tuple[SourceVersion, str]]:
    """The versions ``sources`` name, checked against ``exclude``, with their store paths; sorted by
    name and number, duplicates merged."""
    if isinstance(sources, str):
        sources = [sources]
    if not sources:
        raise UsageError("sources: name at least one dataset version to draw sentences from (e.g. wmt16, wmt18@1)")
    excluded = {validate_name(e) for e in exclude}
    found: dict[str, tuple[SourceVersion, str]] = {}
    with session_scope(settings) as session:
        for text in sources:
            ref = DatasetRef.parse(text)
            if ref.name in excluded:
                raise UsageError(f"sources: {text!r} is excluded (exclude={sorted(excluded)}); "
                                 "remove it from the sources or from exclude")
            version = resolve(session, ref)
            if version.format == SYNTHETIC_FORMAT:
                raise UsageError(f"sources: {version.label} is a synthetic version; name human-judgment datasets")
            parent = _derived_from(version)
            if parent in excluded:
                raise UsageError(f"sources: {version.label} is derived from the excluded dataset {parent!r}")
            info = SourceVersion(version.ref, version.format)
            found[info.version.digest] = (info, version.store_path)
    return sorted(found.values(), key=lambda v: (v[0].version.name, v[0].version.number))


def build_corpus(
    sources: Sequence[str],
    *,
    exclude: Sequence[str] = (),
    min_tokens: int = 1,
    max_tokens: int | None = None,
    settings: Settings | None = None,
) -> Corpus:
    """The corpus of English sentences of the named dataset versions (see the module docstring).

    ``min_tokens``/``max_tokens``: the accepted word counts (None: no upper bound).
    """
    settings = settings or load_settings()
    if min_tokens < 1 or (max_tokens is not None and max_tokens < min_tokens):
        raise UsageError(f"min_tokens/max_tokens must satisfy 1 <= min_tokens <= max_tokens, got "
                         f"{min_tokens}/{max_tokens}")
    upper = max_tokens if max_tokens is not None else 1 << 30
    resolved = resolve_sources(settings, sources, exclude)
    removed = excluded_texts(settings, exclude)

    index: dict[str, int] = {}
    kinds: list[int] = []
    sentences: list[str] = []
    counts: dict[str, Any] = {"by_source": {}}
    seen: dict[str, set[str]] = {k: set() for k in KINDS}
    removed_seen: set[str] = set()
    pair_set: dict[tuple[int, int], None] = {}
    output_rows = 0

    normalised: dict[str, str] = {}

    def keep(raw: str) -> str | None:
        text = normalised.get(raw)
        if text is None:
            text = normalised[raw] = normalise(raw)
        if text in removed:
            removed_seen.add(text)
            return None
        n = text.count(" ") + 1 if text else 0
        return text if min_tokens <= n <= upper else None

    def add(text: str, kind: str) -> int:
        i = index.get(text)
        if i is None:
            i = index[text] = len(sentences)
            sentences.append(text)
            kinds.append(0)
        kinds[i] |= _bit(kind)
        return i

    for info, store_path in resolved:
        texts = _texts_of(settings, store_path, info.format)
        per: dict[str, Any] = {}
        for kind in ("references", "sources"):
            unique = {normalise(t) for t in texts[kind]}
            seen[kind] |= unique
            kept = [t for t in (keep(u) for u in sorted(unique)) if t is not None]
            for text in kept:
                add(text, kind)
            per[kind] = {"unique": len(unique), "kept": len(kept)}
        outputs = {normalised.get(c) or normalise(c) for c in dict.fromkeys(c for _, c in texts["pairs"])}
        seen["outputs"] |= outputs
        kept_pairs = 0
        for ref, cand in texts["pairs"]:
            r, c = keep(ref), keep(cand)
            if r is None or c is None:
                continue
            pair = (add(r, "references"), add(c, "outputs"))
            if pair not in pair_set:
                pair_set[pair] = None
                kept_pairs += 1
        output_rows += len(texts["pairs"])
        per["outputs"] = {"rows": len(texts["pairs"]), "unique": len(outputs), "pairs_kept": kept_pairs}
        per["skipped_groups"] = texts["skipped_groups"]
        counts["by_source"][info.label] = per

    kind_array = np.asarray(kinds, dtype=np.uint8)
    for kind in KINDS:
        counts[kind] = {"unique": len(seen[kind]), "kept": int(np.count_nonzero(kind_array & _bit(kind)))}
    counts["outputs"]["rows"] = output_rows
    counts["outputs"]["pairs_kept"] = len(pair_set)
    counts["sentences"] = len(sentences)
    counts["removed_excluded"] = len(removed_seen)
    pairs = np.asarray(list(pair_set), dtype=np.int64).reshape(-1, 2)
    return Corpus(sentences, kind_array, pairs, tuple(info for info, _ in resolved), tuple(sorted(set(exclude))),
                  min_tokens, max_tokens, counts)
