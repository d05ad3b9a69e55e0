"""ESA judgments as WMT's Appraise exports them (format ``esa``).

Error Span Annotation (Kocmi et al. 2024, "Error Span Annotation: A Balanced Approach for Human
Evaluation of Machine Translation") is the human protocol of the WMT24 general MT task: an annotator
marks the error spans of a translation, each ``minor`` or ``major`` (no category), then scores the
translation from 0 to 100. The organisers publish Appraise's export beside the texts it points into
(github.com/wmt-conference/wmt24-news-systems; ``/work/shared/data/esa-wmt24/PROVENANCE.md``)::

    humeval/esa_generalMT2024_wave<N>.csv    one row per rating, no header
    txt/sources/<lp>.txt                     one segment per line; line 0 is the WMT24 canary
    txt/documents/<lp>.docs                  "domain<TAB>document" per line
    txt/references/<lp>.<ref>.txt            refA, refB, ...
    txt/system-outputs/<lp>/<system>.txt

A row has 12 cells: ``user, system, line_id, type, source language, target language, score,
document, is-document, spans (JSON), start time, end time``. The ingested path is that folder (or
its ``humeval`` folder, or one CSV file; the texts are then found in ``txt`` beside or above it, or
where option ``texts`` says). Every CSV file of ``humeval`` whose rows have that shape is read; the
waves of one year are one release.

What is kept follows the organisers' loader, ``humeval/tools.py`` ``load_data``, step by step:

* rows of a type other than ``TGT`` are quality control (``BAD``: attention checks, deliberately
  damaged outputs) and rows of tutorial items (``ende-tutorial1``) are dropped; so are rows of
  documents marked ``#incomplete`` (filler) or ``#dup`` (duplicated accounts), of the ``canary``
  document, and document-level rows (is-document ``True``, none in WMT24; the loader has no rule for
  them, but a document's score is not a segment's);
* a user's repeat rating of an item keeps only the latest (by end time), as the loader's
  ``drop_duplicates`` after sorting by end time (whose key includes the file: a user who rated an item
  in two waves would keep both there; not the case in WMT24's waves 2 and 3);
* ``line_id`` is the 0-based line of ``txt/*`` where line 0 is the canary (the organisers re-indexed
  on 2024-11-29, ``fix_canary_indexing.py``). Every kept row's document must be the document of
  that line, as the loader's ``attach_resources`` asserts. A file written before the fix (every row
  aligned one line later) is read with the shift and a warning.

Each counted in a warning. Then, per language pair (``<source>-<target>`` in the two-letter codes of
the text files' names, from the rows' ISO 639-3 codes):

* ``segments``: one row per rated output of a candidate system, aspect ``esa``; ``human_raw`` the
  mean of its annotators' scores (their scores in ``ratings``, in user order; ``rating_count`` their
  number); ``item_id`` and ``segment_id`` are the ``line_id`` (the line of the source in
  ``txt/sources``, which is mt-metrics-eval's 0-based segment index of WMT24); ``references`` the
  standard reference's line;
* ``rater_scores`` and ``errors``: every kept rating and the spans it marked. Appraise's ESA view
  (``direct-assessment-document-mqm-esa.js``) wraps each UTF-16 code unit of the output in its own
  element (JavaScript's ``split("")``) and colours those from ``start_i`` to ``end_i`` *inclusive*;
  ``[MISSING]``, an element after the text, is exported as ``"missing"``. So ``start``/``end`` are
  stored as Python character offsets with ``end`` just past the span (``text[start:end]``): in wave
  2, read naively, 72 % of en-cs spans would end inside a word (4.7 % read inclusive), and every
  offset after an emoji would point one character too far per emoji (``病院の`` would read ``院の``).
  ``"missing"`` spans (an omission) have null offsets; ``category`` is ``""`` (ESA has none) unless
  the span gives an ``error_type``; ``severity`` is kept as spelled (wave 2 has 5 ``undecided``,
  an Appraise state);
* ``systems``: per rated system, aspect ``esa`` the mean over its rated segments (what the
  organisers' ``convert_to_metrics.py`` writes as mt-metrics-eval's ``<lp>.esa.sys.score``), and
  aspect ``esa:domain-macro`` the mean of its per-domain means: the official WMT24 human ranking
  (``calculate_clusters.py``). ``rating_count`` is the number of rated segments;
* ``domain_scores``: per system and domain, the mean over its rated segments of the domain;
  ``documents``: the document and domain of every segment; ``outputs``: every line of every rated
  candidate system's output file, for corpus-level metrics.

One version holds every language pair of the release, a group each (``-o language_pair=en-cs,en-ja``
keeps some), so ``--protocol wmt24`` averages over them as the metrics task does. It is named after
the year of the file names (``esa_generalMT2024_*`` -> ``esa-wmt24``), else after the folder.

The reference (option ``reference``, default ``refA``, else the first reference file) gives every
candidate its reference and is not a candidate itself: Appraise rated it like a system, so its
ratings are kept in ``rater_scores``, ``errors``, ``systems`` and ``domain_scores`` (``is_human``
true). Another rated reference is a candidate marked ``is_human``, left out of evaluation unless
asked for, as mt-metrics-eval leaves out human systems.

Where an item has several annotators, the segment score is their mean and a system's score the mean
over its segments (``calculate_clusters.py --micro`` after its per-item averaging). The organisers'
``convert_to_metrics.py`` instead averages all ratings of a system at once, which weighs an item by
its number of annotators; ``calculate_clusters.py`` keeps an item rated in two waves as two items.
WMT24's wave 2 has one annotator per item and the numbers agree (REFERENCE_NUMBERS.md).

Defects are refused, naming the file and line (:class:`~assay.errors.InputError`): a row with other
than 12 cells, a language code that is neither ISO 639-3 nor used by the text files, a score that
is not a number from 0 to 100, a ``line_id`` that is not a line of the system's output, a row whose
document is not the line's, a system without an output file, spans that are not a JSON list of
spans, a span without a severity, and a span beyond the text.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.datasets.formats.input_files import InputFiles, count, listing, table_from_columns
from assay.datasets.parsed import ParsedDataset, SourceFile
from assay.errors import InputError

NAME = "esa"
ASPECT = "esa"
#: the official WMT24 system score: the mean of a system's per-domain means
MACRO_ASPECT = "esa:domain-macro"
#: ``errors.category`` of a span without a category (ESA marks severity only)
NO_CATEGORY = ""
COLUMNS = ("user", "system", "line_id", "type", "source_language", "target_language", "score", "document",
           "is_document", "spans", "start_time", "end_time")
#: Appraise item types; every type but TGT is quality control (BAD: a deliberately damaged output)
RATED_TYPE = "TGT"
ITEM_TYPES = frozenset({"TGT", "BAD", "REF", "CHK"})
SCORE_RANGE = (0.0, 100.0)
#: severities the ESA protocol defines (others are kept as spelled, and counted in a warning)
SEVERITIES = frozenset({"minor", "major"})
MISSING = "missing"
CANARY = "canary"
DEFAULT_REFERENCE = "refA"
OPTIONS = ("language_pair", "reference", "texts")
_YEAR = re.compile(r"(?<!\d)(20\d\d)(?!\d)")

#: ISO 639-3 (and 639-2/B) codes of the languages of WMT's test sets, to the codes of its file names.
#: A code not listed here is accepted as it is when the text files use it (``en-bho``).
LANGUAGES = {
    "ara": "ar", "ben": "bn", "bul": "bg", "ces": "cs", "cze": "cs", "chi": "zh", "dan": "da", "deu": "de",
    "ell": "el", "eng": "en", "est": "et", "fas": "fa", "fin": "fi", "fra": "fr", "fre": "fr", "ger": "de",
    "gle": "ga", "gre": "el", "guj": "gu", "hau": "ha", "heb": "he", "hin": "hi", "hrv": "hr", "hun": "hu",
    "ice": "is", "ind": "id", "isl": "is", "ita": "it", "iku": "iu", "jpn": "ja", "kaz": "kk", "khm": "km",
    "kor": "ko", "lav": "lv", "lit": "lt", "mar": "mr", "msa": "ms", "nld": "nl", "nor": "no", "per": "fa",
    "pol": "pl", "por": "pt", "pus": "ps", "ron": "ro", "rum": "ro", "rus": "ru", "slk": "sk", "slo": "sk",
    "slv": "sl", "spa": "es", "srp": "sr", "swe": "sv", "tam": "ta", "tha": "th", "tur": "tr", "ukr": "uk",
    "vie": "vi", "xho": "xh", "yor": "yo", "zho": "zh", "zul": "zu",
}


# --- finding the release ---------------------------------------------------------------------------

def _first_record(path: Path) -> list[str]:
    try:
        with path.open("rb") as handle:
            head = handle.read(1 << 16).decode("utf-8", errors="replace")
    except OSError:
        return []
    try:
        return next(csv.reader(io.StringIO(head.lstrip("\ufeff"), newline="")), [])
    except csv.Error:
        return []


def _looks_like_esa(path: Path) -> bool:
    """Appraise's export: the item type (``TGT``, ``BAD``...) fourth and a JSON list of spans tenth."""
    cells = _first_record(path)
    return len(cells) >= 10 and cells[3] in ITEM_TYPES and cells[9].lstrip().startswith("[")


def ratings_files(path: Path) -> list[Path]:
    """The ESA exports of ``path``: itself, or the CSV files of its ``humeval`` folder (or its own)."""
    if path.is_file():
        return [path] if path.suffix.lower() == ".csv" and _looks_like_esa(path) else []
    if not path.is_dir():
        return []
    for folder in (path / "humeval", path):
        if folder.is_dir():
            found = [p for p in sorted(folder.iterdir())
                     if p.is_file() and p.suffix.lower() == ".csv" and _looks_like_esa(p)]
            if found:
                return found
    return []


def texts_folder(path: Path, options: Mapping[str, str]) -> Path:
    """The ``txt`` folder the rows point into: option ``texts``, else ``txt`` beside or above."""
    given = options.get("texts")
    if given:
        folder = Path(given)
        if not folder.is_absolute():
            folder = (path if path.is_dir() else path.parent) / folder
        if not (folder / "sources").is_dir():
            raise InputError(folder, "no sources folder here", expected="the txt folder of the release "
                             "(sources/, documents/, references/, system-outputs/)")
        return folder
    start = path if path.is_dir() else path.parent
    for folder in (start, *start.parents[:2]):
        if (folder / "txt" / "sources").is_dir():
            return folder / "txt"
    raise InputError(path, "no txt folder with the texts the ratings point into",
                     expected="txt/{sources,documents,references,system-outputs} beside the humeval folder, "
                     "or -o texts=PATH")


class EsaFormat:
    name = NAME
    description = ("ESA (Error Span Annotation) judgments as Appraise exports them (WMT24): "
                   "humeval/*.csv with the txt/ folder of the texts")

    def detect(self, path: Path) -> bool:
        return bool(ratings_files(path))

    def parse(self, path: Path, options: Mapping[str, str]) -> ParsedDataset:
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise InputError(path, f"unknown option(s) {', '.join(unknown)}", expected="options from: "
                             + ", ".join(OPTIONS))
        found = ratings_files(path)
        if not found:
            raise InputError(path, "no ESA export found", expected="a humeval folder of Appraise CSV exports "
                             "(12 cells a row: user, system, line_id, TGT|BAD, ...)")
        files = _ReleaseFiles(path)
        texts = _Texts(files, texts_folder(path, options))
        wanted = {lp.strip() for lp in options.get("language_pair", "").split(",") if lp.strip()}
        release = _Release(files, texts, wanted)
        for csv_path in found:
            release.read(csv_path)
        release.choose_references(options.get("reference"))
        return files.parsed(NAME, release.tables(), release.warnings(), release.metadata(found))


FORMAT = EsaFormat()


class _ReleaseFiles(InputFiles):
    """:class:`InputFiles` whose files may lie beside the ingested path (``humeval/../txt``): they
    are recorded relative to the folder that re-ingesting compares them in."""

    def rel(self, path: Path) -> str:
        base = self.root if self.root.is_dir() else self.root.parent
        return os.path.relpath(path, base)

    def read_bytes(self, path: Path) -> bytes:
        if not path.is_file():
            raise InputError(path, "no such file")
        if path not in self._seen:
            self._seen.add(path)
            digest = SourceFile.of(path, path.parent)
            self.source_files.append(SourceFile(self.rel(path), digest.sha256, digest.size))
        return path.read_bytes()


# --- the texts -------------------------------------------------------------------------------------

@dataclass
class _Pair:
    """The texts of one language pair: line 0 is the canary, line ``i`` segment ``i``."""

    sources: list[str]
    documents: list[tuple[str, str]]  # (domain, document)
    references: dict[str, Path]
    outputs: dict[str, list[str]] = field(default_factory=dict)


class _Texts:
    def __init__(self, files: InputFiles, folder: Path) -> None:
        self.files, self.folder = files, folder
        self.pairs: dict[str, _Pair] = {}
        self.codes = self._codes()

    def _codes(self) -> set[str]:
        """Every language code in the names of the source files (``en-cs.txt``)."""
        return {code for p in (self.folder / "sources").glob("*.txt") for code in p.stem.split("-")}

    def language(self, code: str, path: Path, line: int, which: str) -> str:
        code = code.strip()
        known = LANGUAGES.get(code.lower()) or (code if code in self.codes else None)
        if known is None:
            raise InputError(path, f"unknown {which} language code {code!r}", line=line,
                             expected="an ISO 639-3 code (eng, ces, jpn, ...) or a code the text files use ("
                             + ", ".join(sorted(self.codes)) + ")")
        return known

    def pair(self, lp: str, path: Path, line: int) -> _Pair:
        if lp in self.pairs:
            return self.pairs[lp]
        source_file = self.folder / "sources" / f"{lp}.txt"
        if not source_file.is_file():
            raise InputError(path, f"the row is of language pair {lp}, which has no source file", line=line,
                             expected=f"{self.files.rel(source_file)}")
        sources = self.files.read_lines(source_file)
        docs_file = self.folder / "documents" / f"{lp}.docs"
        documents = []
        for number, text in enumerate(self._aligned(docs_file, len(sources)), start=1):
            cells = text.split("\t")
            if len(cells) != 2:
                raise InputError(docs_file, f"{len(cells)} tab-separated cells", line=number,
                                 expected="2 cells: domain and document")
            documents.append((cells[0], cells[1]))
        references = {p.name[len(lp) + 1: -len(".txt")]: p
                      for p in sorted((self.folder / "references").glob(f"{lp}.*.txt"))}
        self.pairs[lp] = _Pair(sources, documents, references)
        return self.pairs[lp]

    def _aligned(self, path: Path, lines: int) -> list[str]:
        text = self.files.read_lines(path)
        if len(text) != lines:
            raise InputError(path, f"{len(text):,} lines where the source has {lines:,}",
                             expected="one line per source line (the canary first)")
        return text

    def output(self, lp: str, system: str, path: Path, line: int) -> list[str]:
        """The lines of ``system``'s output (a reference's file for a reference)."""
        pair = self.pairs[lp]
        if system not in pair.outputs:
            file = pair.references.get(system) or self.folder / "system-outputs" / lp / f"{system}.txt"
            if not file.is_file():
                raise InputError(path, f"system {system!r} has no output file", line=line,
                                 expected=f"{self.files.rel(file)} (or a reference {lp}.{system}.txt)")
            pair.outputs[system] = self._aligned(file, len(pair.sources))
        return pair.outputs[system]


# --- the ratings -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Span:
    start: int | None  # character offsets (converted from UTF-16 code units); None: "missing"
    end: int | None
    severity: str
    category: str


@dataclass
class _Rating:
    lp: str
    system: str
    segment: int
    user: str
    score: float
    end_time: float
    spans: tuple[_Span, ...]
    file: str
    line: int
    order: int  # position among all kept rows read: of two ratings with one end time, the later wins


@dataclass
class _Row:
    """A kept row before its line is resolved."""

    cells: list[str]
    line: int
    lp: str
    score: float


class _Release:
    def __init__(self, files: InputFiles, texts: _Texts, wanted: set[str]) -> None:
        self.files, self.texts, self.wanted = files, texts, wanted
        self.ratings: dict[tuple[str, str, int, str], _Rating] = {}
        self.references: dict[str, str] = {}  # language pair -> the reference's name
        self.dropped: dict[str, Counter[str]] = {k: Counter() for k in (
            "quality", "tutorial", "incomplete", "dup", "canary", "document", "repeat", "other_pair")}
        self.quality_types: Counter[str] = Counter()
        self.shifted: list[str] = []
        self.missing_spans = self.converted_spans = 0
        self.other_severities: Counter[str] = Counter()
        self.rows_read = 0

    # -- reading a file ------------------------------------------------------------------------

    def read(self, path: Path) -> None:
        kept = self._rows(path)
        shift = self._alignment(path, kept)
        rel = self.files.rel(path)
        for row in kept:
            self._rating(path, rel, row, shift)

    def _rows(self, path: Path) -> list[_Row]:
        """The rows of a file that carry a segment's rating; the others counted by why they are not."""
        text = self.files.read_text(path)
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        kept: list[_Row] = []
        start, before = 1, self.rows_read
        try:
            for cells in reader:
                line, start = start, reader.line_num + 1
                if not cells:
                    continue
                row = self._row(path, line, cells)
                if row is not None:
                    kept.append(row)
        except csv.Error as err:
            raise InputError(path, f"malformed CSV: {err}", line=start, expected="RFC 4180 CSV") from None
        if self.rows_read == before:
            raise InputError(path, "the file has no rows", expected="one row per rating")
        return kept

    def _row(self, path: Path, line: int, cells: list[str]) -> _Row | None:
        self.rows_read += 1
        if len(cells) != len(COLUMNS):
            raise InputError(path, f"{len(cells)} cells", line=line,
                             expected=f"{len(COLUMNS)} comma-separated cells: {', '.join(COLUMNS)}")
        c = dict(zip(COLUMNS, cells, strict=True))
        lp = (self.texts.language(c["source_language"], path, line, "source") + "-"
              + self.texts.language(c["target_language"], path, line, "target"))
        score = _number(c["score"], path, line, "score")
        low, high = SCORE_RANGE
        if not low <= score <= high:
            raise InputError(path, f"the score {c['score']} is outside {low:g}-{high:g}", line=line,
                             expected=f"an ESA score from {low:g} to {high:g}")
        document, system = c["document"], c["system"]
        if self.wanted and lp not in self.wanted:
            reason = "other_pair"
        elif c["type"] != RATED_TYPE or document.endswith("#bad"):
            reason = "quality"
            self.quality_types[c["type"]] += 1
        elif "tutorial" in system or "tutorial" in document:
            reason = "tutorial"
        elif "#incomplete" in document:
            reason = "incomplete"
        elif "#dup" in document:
            reason = "dup"
        elif document == CANARY:
            reason = "canary"
        elif _flag(c["is_document"], path, line):
            reason = "document"
        else:
            return _Row(cells, line, lp, score)
        self.dropped[reason][lp] += 1
        return None

    def _alignment(self, path: Path, rows: Sequence[_Row]) -> int:
        """0 when every row's document is its line's; 1 for a file of the indexing before the
        organisers' canary fix (every row aligned one line later); else the first misaligned row."""
        def aligned(row: _Row, shift: int) -> bool:
            pair = self.texts.pair(row.lp, path, row.line)
            index = _line_id(row.cells[2], path, row.line) + shift
            return index < len(pair.documents) and pair.documents[index][1] == row.cells[7]

        if all(aligned(row, 0) for row in rows):
            return 0
        if rows and all(aligned(row, 1) for row in rows):
            self.shifted.append(self.files.rel(path))
            return 1
        row = next(row for row in rows if not aligned(row, 0))
        pair, index = self.texts.pair(row.lp, path, row.line), _line_id(row.cells[2], path, row.line)
        docs = self.files.rel(self.texts.folder / "documents" / f"{row.lp}.docs")
        if index >= len(pair.documents):
            raise InputError(path, f"line_id {index} is beyond the output of {row.cells[1]} ({len(pair.sources):,} "
                             "lines, the canary first)", line=row.line,
                             expected=f"a line_id from 1 to {len(pair.sources) - 1}")
        raise InputError(path, f"the row's document {row.cells[7]!r} is not that of line_id {index} "
                         f"({pair.documents[index][1]!r} in {docs})", line=row.line,
                         expected="line_id to index txt/ with the canary as line 0 (the organisers' indexing "
                         "since 2024-11-29)")

    def _rating(self, path: Path, rel: str, row: _Row, shift: int) -> None:
        c = dict(zip(COLUMNS, row.cells, strict=True))
        segment = _line_id(c["line_id"], path, row.line) + shift
        text = self.texts.output(row.lp, c["system"], path, row.line)[segment]
        spans = self._spans(c["spans"], text, path, row.line)
        rating = _Rating(row.lp, c["system"], segment, c["user"], row.score,
                         _number(c["end_time"], path, row.line, "end time"), spans, rel, row.line,
                         len(self.ratings) + sum(self.dropped["repeat"].values()))
        key = (row.lp, rating.system, segment, rating.user)
        earlier = self.ratings.get(key)
        if earlier is not None:
            self.dropped["repeat"][row.lp] += 1
            if (earlier.end_time, earlier.order) > (rating.end_time, rating.order):
                return
        self.ratings[key] = rating

    def _spans(self, value: str, text: str, path: Path, line: int) -> tuple[_Span, ...]:
        expected = 'a JSON list of spans {"start_i": 3, "end_i": 9, "severity": "minor"}'
        try:
            spans = json.loads(value)
        except ValueError:
            raise InputError(path, f"the spans {value[:60]!r} are not JSON", line=line, expected=expected) from None
        if not isinstance(spans, list) or not all(isinstance(s, dict) for s in spans):
            raise InputError(path, f"the spans {value[:60]!r} are not a list of spans", line=line, expected=expected)
        units: list[int] | None = None
        result = []
        for span in spans:
            severity = span.get("severity")
            if not isinstance(severity, str) or not severity.strip():
                raise InputError(path, f"a span without a severity: {json.dumps(span)[:80]}", line=line,
                                 expected="a severity (minor or major) for every span")
            severity = severity.strip()
            if severity.casefold() not in SEVERITIES:
                self.other_severities[severity] += 1
            category = span.get("error_type")
            category = category.strip() if isinstance(category, str) else NO_CATEGORY
            start, end = span.get("start_i"), span.get("end_i")
            if MISSING in (start, end):
                self.missing_spans += 1
                result.append(_Span(None, None, severity, category))
                continue
            length = _utf16_length(text)
            if not (_offset(start) and _offset(end)) or start > end:
                raise InputError(path, f"the span offsets {start!r}-{end!r} are not a span", line=line,
                                 expected='start_i <= end_i, character offsets, or "missing"')
            if end >= length:
                raise InputError(path, f"the span {start}-{end} lies beyond the text ({length} characters)",
                                 line=line, expected=f"offsets from 0 to {length - 1}: the first and last character "
                                 "of the span in the rated output")
            end += 1  # Appraise's end_i is the span's last character; stored is the offset past it
            if length != len(text):
                units = units if units is not None else _code_points(text)
                inside = end < length and units[end] == units[end - 1]  # between two surrogates
                converted = (units[start], units[end] + inside)
                self.converted_spans += converted != (start, end)
                start, end = converted
            result.append(_Span(start, end, severity, category))
        return tuple(result)

    # -- the canonical tables ------------------------------------------------------------------

    def choose_references(self, option: str | None) -> None:
        """The reference of each language pair with ratings (option ``reference``, else ``refA``)."""
        rated = sorted({r.lp for r in self.ratings.values()})
        absent = sorted(self.wanted - set(rated))
        if absent or not rated:
            seen = sorted({lp for counts in self.dropped.values() for lp in counts} | set(rated))
            raise InputError(self.files.root, "no rating is left once quality control, tutorial and filler rows "
                             "are dropped" + (f" for {', '.join(absent)}" if absent else ""),
                             expected="TGT rows of rated segments" + (f" (the files' pairs: {', '.join(seen)})"
                                                                      if seen else ""))
        self.references = {lp: self._reference(lp, option) for lp in rated}

    def tables(self) -> dict[str, Any]:
        items: dict[tuple[str, str, int], list[_Rating]] = {}
        for key in sorted(self.ratings):
            rating = self.ratings[key]
            items.setdefault((rating.lp, rating.system, rating.segment), []).append(rating)
        columns: dict[str, dict[str, list[Any]]] = {name: {} for name in (
            "segments", "rater_scores", "errors", "systems", "domain_scores", "documents", "outputs")}

        def add(table: str, **values: Any) -> None:
            for name, value in values.items():
                columns[table].setdefault(name, []).append(value)

        by_system: dict[tuple[str, str], dict[str, list[float]]] = {}  # (lp, system) -> domain -> scores
        for (lp, system, segment), ratings in sorted(items.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][1])):
            pair, reference = self.texts.pairs[lp], self.references[lp]
            score = math.fsum(r.score for r in ratings) / len(ratings)
            sid = str(segment)
            by_system.setdefault((lp, system), {}).setdefault(pair.documents[segment][0], []).append(score)
            for r in ratings:
                add("rater_scores", group=lp, aspect=ASPECT, item_id=sid, segment_id=sid, system=system, rater=r.user,
                    score=r.score, errors=len(r.spans), file=r.file, line=r.line)
                for span in r.spans:
                    add("errors", group=lp, item_id=sid, segment_id=sid, system=system, rater=r.user, side="target",
                        start=span.start, end=span.end, category=span.category, severity=span.severity, line=r.line)
            if system == reference:
                continue
            add("segments", group=lp, aspect=ASPECT, item_id=sid, segment_id=sid, system=system,
                is_human=system in pair.references, source=pair.sources[segment],
                references=[pair.outputs[reference][segment]], candidate=pair.outputs[system][segment],
                human_raw=score, rating_count=len(ratings), ratings=[r.score for r in ratings])
        for (lp, system), domains in sorted(by_system.items()):
            pair = self.texts.pairs[lp]
            is_human, candidate = system in pair.references, system != self.references[lp]
            everything = [s for scores in domains.values() for s in scores]
            means = {domain: math.fsum(scores) / len(scores) for domain, scores in sorted(domains.items())}
            for aspect, value in ((ASPECT, math.fsum(everything) / len(everything)),
                                  (MACRO_ASPECT, math.fsum(means.values()) / len(means))):
                add("systems", group=lp, aspect=aspect, system=system, is_human=is_human, human_raw=value,
                    rating_count=len(everything), output_system=system if candidate else None)
            for domain, value in means.items():
                add("domain_scores", group=lp, aspect=ASPECT, domain=domain, system=system, is_human=is_human,
                    human_raw=value, rating_count=len(domains[domain]))
        for lp in sorted(self.references):
            pair = self.texts.pairs[lp]
            reference_lines = pair.outputs[self.references[lp]]
            for segment in range(1, len(pair.sources)):
                domain, document = pair.documents[segment]
                add("documents", group=lp, segment_id=str(segment), document=document, domain=domain or None)
            for system in sorted({s for (g, s) in by_system if g == lp} - {self.references[lp]}):
                lines = pair.outputs[system]
                for segment in range(1, len(pair.sources)):
                    add("outputs", group=lp, segment_id=str(segment), system=system, source=pair.sources[segment],
                        references=[reference_lines[segment]], candidate=lines[segment])
        return {name: table_from_columns(name, values) for name, values in columns.items()}

    def _reference(self, lp: str, option: str | None) -> str:
        pair = self.texts.pairs[lp]
        folder = self.texts.folder / "references"
        if option:
            if option not in pair.references:
                raise InputError(folder, f"no reference {option!r} for {lp}",
                                 expected="one of: " + (", ".join(pair.references) or f"{lp}.<name>.txt files"))
            name = option
        elif DEFAULT_REFERENCE in pair.references:
            name = DEFAULT_REFERENCE
        elif pair.references:
            name = next(iter(pair.references))
        else:
            raise InputError(folder, f"no reference for {lp}", expected=f"{lp}.refA.txt (one line per source line)")
        if name not in pair.outputs:
            pair.outputs[name] = self.texts._aligned(pair.references[name], len(pair.sources))
        return name

    # -- what the version records ----------------------------------------------------------------

    def warnings(self) -> list[str]:
        def per_pair(counts: Counter[str]) -> str:
            total = sum(counts.values())
            return f"{total:,}" + (f" ({', '.join(f'{lp} {n:,}' for lp, n in sorted(counts.items()))})"
                                   if len(counts) > 1 else "")

        d = self.dropped
        found = []
        if d["quality"]:
            kinds = ", ".join(f"{t or 'empty'} {n:,}" for t, n in sorted(self.quality_types.items()))
            found.append(f"{per_pair(d['quality'])} quality-control rows ({kinds}; BAD = attention checks on "
                         "deliberately damaged outputs) were dropped.")
        for reason, what in (("tutorial", "tutorial rows (ende-tutorial items)"),
                             ("incomplete", "rows of documents marked #incomplete (filler items)"),
                             ("dup", "rows of documents marked #dup (duplicated evaluations)"),
                             ("canary", "rows of the canary document"),
                             ("document", "document-level rows (is-document True)")):
            if d[reason]:
                found.append(f"{per_pair(d[reason])} {what} were dropped, as the organisers' loader does.")
        if d["repeat"]:
            found.append(f"{per_pair(d['repeat'])} repeat ratings of an item by the same user were dropped; the "
                         "latest (by end time) was kept, as the organisers' loader does.")
        if self.shifted:
            found.append(f"{count(len(self.shifted), 'file')} ({listing(self.shifted)}) index the texts without "
                         "the canary line, as the organisers did before their fix of 2024-11-29: every line_id was "
                         "read one line later.")
        if self.missing_spans:
            found.append(f"{count(self.missing_spans, 'error span')} had \"missing\" offsets (an omission marked "
                         "at the end of the text): stored as errors without a span.")
        if self.converted_spans:
            found.append(f"{count(self.converted_spans, 'error span')} lay after a character outside the Basic "
                         "Multilingual Plane (an emoji): Appraise's UTF-16 offsets were converted to characters.")
        if self.other_severities:
            found.append(f"{count(sum(self.other_severities.values()), 'error span')} had a severity ESA does not "
                         f"define ({', '.join(f'{s!r} {n}' for s, n in sorted(self.other_severities.items()))}); "
                         "kept as spelled.")
        return found

    def metadata(self, csv_files: Sequence[Path]) -> dict[str, Any]:
        pairs = sorted(self.references)
        users = {lp: {r.user for r in self.ratings.values() if r.lp == lp} for lp in pairs}
        # the year the file names give (esa_generalMT2024_wave2.csv) names the dataset: esa-wmt24
        years = {int(year) for p in csv_files for year in _YEAR.findall(p.name)}
        named = {"year": min(years), "default_name": f"esa-wmt{min(years) % 100:02d}"} if len(years) == 1 else {}
        return {
            **named,
            "protocol": "ESA (Kocmi et al. 2024)",
            "language_pairs": pairs,
            "ratings_files": [self.files.rel(p) for p in csv_files],
            "texts": self.files.rel(self.texts.folder),
            "reference_system": {lp: self.references[lp] for lp in pairs},
            "human_systems": {lp: sorted(set(self.texts.pairs[lp].references) & {r.system for r in
                                                                                 self.ratings.values() if r.lp == lp})
                              for lp in pairs},
            "exclude_human_by_default": True,
            "candidates": "human translations are left out of evaluation unless included on request",
            "raters": {lp: len(users[lp]) for lp in pairs},
            "ratings": len(self.ratings),
            "rows_read": self.rows_read,
            "dropped_rows": {reason: dict(sorted(c.items())) for reason, c in self.dropped.items() if c},
            "system_aspects": {ASPECT: "mean over rated segments (mt-metrics-eval <lp>.esa.sys.score)",
                               MACRO_ASPECT: "mean of the per-domain means (the official WMT24 ranking)"},
            "span_offsets": "characters (Appraise's UTF-16 code units converted)",
        }


# --- small readers ---------------------------------------------------------------------------------

def _number(value: str, path: Path, line: int, what: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise InputError(path, f"the {what} {value!r} is not a number", line=line, expected="a finite number")
    return number


def _line_id(value: str, path: Path, line: int) -> int:
    if value.isdigit():
        return int(value)
    hint = " (a WMT25 item id: this format reads WMT24's line numbers into txt/)" if "_#_" in value else ""
    raise InputError(path, f"line_id {value[:80]!r} is not a line number{hint}", line=line,
                     expected="a 0-based line number of txt/ (line 0 the canary)")


def _flag(value: str, path: Path, line: int) -> bool:
    lowered = value.strip().lower()
    if lowered in ("false", "0", ""):
        return False
    if lowered in ("true", "1"):
        return True
    raise InputError(path, f"is-document {value!r}", line=line, expected="True or False")


def _offset(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _utf16_length(text: str) -> int:
    """The length of ``text`` in UTF-16 code units, as JavaScript (Appraise) counts it."""
    return len(text) + sum(ord(ch) > 0xFFFF for ch in text) if not text.isascii() else len(text)


def _code_points(text: str) -> list[int]:
    """For every UTF-16 code unit of ``text`` (and its end), the index of its character."""
    units: list[int] = []
    for index, ch in enumerate(text):
        units.append(index)
        if ord(ch) > 0xFFFF:
            units.append(index)  # the low surrogate belongs to the same character
    units.append(len(text))
    return units
