"""MQM error-span ratings as Google releases them (format ``mqm-tsv``).

github.com/google/wmt-mqm-human-evaluation publishes MQM (Freitag et al. 2021, "Experts, Errors,
and Context") as one tab-separated file per test set and language pair, one row per error a rater
marked. Its releases differ in their columns (``/work/shared/data/mqm-ted-ende/PROVENANCE.md``,
``mqm-wmt23-ende/PROVENANCE.md``; the data format of google-research's MQM Viewer, ``mqm_viewer/README.md``)::

    system doc doc_id seg_id rater source target category severity comment          (WMT21 TED en-de)
    system doc doc_id seg_id rater source target category severity                  (TED zh-en, newstest2020)
    system doc docSegId globalSegId rater source target category severity metadata  (WMT23 side by side)

so the columns are read by name (compared without case, ``_`` or ``-``; in any order), as
mt-metrics-eval's ``converters/score_mqm.py`` reads them with ``csv.DictReader``:

* required: ``system``, ``rater``, ``source``, ``target``, ``category``, ``severity``, and what names
  the segment: ``seg_id`` or ``globalSegId`` (its id in the test set), or else ``doc`` with ``doc_id``
  or ``docSegId`` (its position in its document, which is how ``score_mqm.py`` keys segments);
* read when present: ``doc`` and ``doc_id``/``docSegId``. Where a global id lumps together document
  positions that each have one id (MQM Viewer's format allows a constant ``globalSegId`` when a
  release has no global numbering), the segment is named ``doc:docSegId`` instead, with a warning;
* documented but carrying nothing a score needs: ``comment``, ``note`` and ``metadata`` (rater
  notes; MQM Viewer's JSON of timings and tokens): ignored;
* any other column is ignored, named in one warning. A missing required column is one error that
  names it.

The error's span is marked inline with ``<v>...</v>`` in ``target`` (or in ``source`` for a source
error, :mod:`assay.mqm.spans`). A rater who found no error gives one ``No-error`` row. A row with an
empty rater, category and severity carries only segment metadata (MQM Viewer's format) and is skipped
with a count. The files are read without quoting (``QUOTE_NONE``): a tab separates cells, a line
break ends a row.

What the parser stores:

* ``errors``: every error row (not ``No-error``; not the ``HOTW-test`` attention checks of WMT23,
  planted errors that are not translation errors, counted in a warning), with its side, the span's
  offsets in the clean text, category, severity and line;
* ``ratings``: per (system, segment, rater) the penalty under the weighting scheme (option
  ``mqm_weights``: a scheme name or its rules, default ``mtme``, :mod:`assay.mqm.weights`);
* ``segments``: one row per rated output of a candidate system, its human score ``human_raw`` the
  segment MQM (minus the mean penalty over raters; per-rater scores in ``ratings``), its references
  the reference system's text of the same segment (none in a release without a reference). ``aspect``
  is ``mqm:<scheme>`` (``mqm:mtme``): the scheme is part of what the human score is, so two schemes are
  never ranked together;
* ``systems``: per system the mean segment MQM; ``outputs``: every candidate system's outputs, for
  corpus-level metrics.

References follow the release's naming: a system named ``ref``, ``refA``, ``refB``, ``ref-A``,
``ref.C``, ``Human-A``, ``Human-P.0`` (``ref`` or ``human``, then an optional letter, then an optional
WMT submission number) is a human translation. One of them is the reference: the system named by
option ``reference_system`` (``assay ingest --reference-system NAME``); else the standard reference
that mt-metrics-eval's ``meta_info.py`` names for the release's test set and pair (``std_ref``, as
:mod:`assay.datasets.formats.mtme_meta` transcribes it: ``refB`` for WMT21 TED zh-en, whose ``ref``
(A) has a worse MQM than every MT system; ``refC`` for newstest2021 en-de; ``refA`` mostly), found by
its letter (``ref`` alone is A); else the first by letter. The reference's ratings and errors are
kept, and it is not a candidate. The other human translations (and the systems in option
``human_systems``) are candidates marked ``is_human``, which evaluation leaves out unless asked to
include them, as mt-metrics-eval does without ``--include_human``. A machine system promoted to
reference by the option is not marked human. A release in which no system is a human translation
(WMT23 zh-en side by side) is read without a reference: it has human scores, raters and agreement,
metrics that need no reference can score it, and scoring with one that needs a reference is refused
with the way to add one.

A folder may hold, beside the ratings file, the published segment averages
``<name>.avg_seg_scores.tsv`` (``system mqm_avg_score seg_id``, ``None`` for an unrated segment). Under
the ``mtme`` scheme the computed scores are checked against it and the result recorded.

Defects are refused with the file and line (:class:`~assay.errors.InputError`): a header without a
required column, a column named twice, a row with the wrong number of cells, an unbalanced or nested
``<v>`` marker, an unknown severity, an error without a category, a row whose text differs from
another row of the same (system, segment), a segment rated by fewer or more raters than the file name
claims (``3ratingsPerSegment``), and a missing or non-numeric score in the averages file where the
segment was rated. Recoverable quirks are warnings with counts: attention-check rows, metadata rows,
columns that are not read, a trailing header cell that is a documentation link, a text that differs
from the segment's other rows only by trailing white space (a span that marked the final space), a
text with one ``<v>`` and no ``</v>`` (read as a span to the end of the text), and a reference system
named differently in the averages file (``ref`` vs ``ref-A``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.datasets.formats.input_files import InputFiles, count, listing, split_lines, table_from_columns
from assay.datasets.formats.mtme_meta import facts_for
from assay.datasets.parsed import ParsedDataset
from assay.errors import InputError
from assay.mqm.scores import ErrorRow, segment_scores
from assay.mqm.spans import CLOSE, OPEN, parse_span
from assay.mqm.weights import WeightingScheme, scheme

NAME = "mqm-tsv"
NO_ERROR = "No-error"
ATTENTION_CHECK = "HOTW-test"
AVERAGES_SUFFIX = ".avg_seg_scores.tsv"

#: The columns read, by role: the names the releases give them (compared by :func:`column_key`).
COLUMNS: dict[str, tuple[str, ...]] = {
    "system": ("system",),
    "doc": ("doc",),
    "doc_segment": ("doc_id", "docSegId"),  # the segment's position in its document
    "segment": ("seg_id", "globalSegId"),  # the segment's id in the test set
    "rater": ("rater",),
    "source": ("source",),
    "target": ("target",),
    "category": ("category",),
    "severity": ("severity",),
}
#: Roles every ratings file must have (and ``segment``, or ``doc`` with ``doc_segment``).
REQUIRED = ("system", "rater", "source", "target", "category", "severity")
#: Documented columns that carry nothing a score needs: rater notes, MQM Viewer's JSON metadata.
NOTE_COLUMNS = ("comment", "note", "metadata")

_HUMAN_NAME = re.compile(r"^(?:ref|human)(?:[-_.]?([a-z]))?(?:\.\d+)?$", re.IGNORECASE)
_FIXED_RATERS = re.compile(r"(\d+)ratingsPerSegment", re.IGNORECASE)
_LANGUAGE_PAIR = re.compile(r"(?:^|[_.-])([a-z]{2})-?([a-z]{2})(?=[_.-]|$)")
#: mt-metrics-eval's test set of each release, by the test-set name in the release's file names
#: (``mqm_newstest2021_ende.tsv``, ``mqm_ted_zhen.tsv``, ``sxs_mqm_generalMT2023_zhen...``)
MTME_TEST_SETS = {"newstest2020": "wmt20", "newstest2021": "wmt21.news", "ted": "wmt21.tedtalks",
                  "generalmt2022": "wmt22", "generalmt2023": "wmt23", "generalmt2024": "wmt24"}
#: agreement required with a published averages file (it holds 6 decimals in TED's case, but the
#: scores are sums of a few weights, so they agree to the last bit)
AVERAGES_TOLERANCE = 1e-9


def column_key(name: str) -> str:
    """How header names are compared: without case, ``_``, ``-`` or spaces (``globalSegId`` is
    ``global_seg_id``)."""
    return re.sub(r"[\s_-]", "", name).casefold()


_ROLE_OF = {column_key(name): role for role, names in COLUMNS.items() for name in names}
_NOTES = {column_key(name) for name in NOTE_COLUMNS}


def _header_cells(path: Path) -> list[str]:
    try:
        with path.open("rb") as handle:
            line = handle.readline(1 << 16).decode("utf-8", errors="replace")
    except OSError:
        return []
    return line.lstrip("\ufeff").rstrip("\r\n").split("\t")


def _is_ratings_file(path: Path, *, strict: bool) -> bool:
    """Whether the header is an MQM ratings header, in any column order: for format detection
    (``strict``) it names ``system`` and at least two of ``rater``, ``category`` and ``severity``;
    when the format was asked for by name, ``system`` or two of those. Either way a file missing one
    of the columns is still read, and the error names what it lacks."""
    keys = {column_key(cell) for cell in _header_cells(path)}
    named = len({"rater", "category", "severity"} & keys) >= 2
    return ("system" in keys and named) if strict else ("system" in keys or named)


def ratings_files(path: Path, *, strict: bool = True) -> list[Path]:
    """The MQM ratings files of ``path`` (itself, or the ``.tsv`` files of a folder)."""
    if path.is_file():
        return [path] if _is_ratings_file(path, strict=strict) else []
    if not path.is_dir():
        return []
    return [p for p in sorted(path.iterdir())
            if p.is_file() and p.suffix == ".tsv" and not p.name.endswith(AVERAGES_SUFFIX)
            and _is_ratings_file(p, strict=strict)]


class MqmTsvFormat:
    name = NAME
    description = ("MQM error-span ratings (google/wmt-mqm-human-evaluation): one row per error, "
                   "<v>-marked spans, columns read by name; optional <name>.avg_seg_scores.tsv")

    def detect(self, path: Path) -> bool:
        return bool(ratings_files(path))

    def parse(self, path: Path, options: Mapping[str, str]) -> ParsedDataset:
        found = ratings_files(path)
        if not found:  # asked for by name: read a file that begins like one, to name what it lacks
            loose = ratings_files(path, strict=False)
            found = loose if len(loose) == 1 else []
        if not found:
            raise InputError(
                path, "no MQM ratings file found" if path.is_dir() else "the header names no MQM column",
                line=None if path.is_dir() else 1,
                expected="a tab-separated file whose header names the columns " + _expected_columns(),
            )
        if len(found) > 1:
            raise InputError(path, f"the folder holds {len(found)} MQM ratings files: {listing(p.name for p in found)}",
                             expected="one ratings file per dataset (ingest each file on its own)")
        weights = scheme(options.get("mqm_weights") or None)
        files = InputFiles(path)
        release = _read_release(files, found[0], weights, options)
        averages = found[0].with_name(found[0].name[: -len(".tsv")] + AVERAGES_SUFFIX)
        if averages.is_file():
            release.check_averages(files, averages, weights)
        return files.parsed(NAME, release.tables(), release.warnings, release.metadata(found[0], weights))


FORMAT = MqmTsvFormat()


def _expected_columns() -> str:
    return ("system, rater, seg_id or globalSegId (or doc with doc_id or docSegId), source, target, "
            "category and severity, in any order")


# --- the header --------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Layout:
    """Where each role's column is in one file: ``index`` by role, ``names`` as the header spells them."""

    header: list[str]
    index: dict[str, int]
    names: dict[str, str]


def _layout(path: Path, line: str, warnings: list[str]) -> _Layout:
    cells = line.split("\t")
    if cells and (cells[-1].startswith("#") or "http://" in cells[-1] or "https://" in cells[-1]):
        warnings.append(f"{path.name}: the last header cell is a documentation link, not a column "
                        f"({cells[-1].lstrip('# ')[:80]}); it was ignored.")
        cells = cells[:-1]
    keys = [column_key(cell) for cell in cells]
    twice = sorted({cells[i] for i, key in enumerate(keys) if key and keys.count(key) > 1})
    if twice:
        raise InputError(path, f"the header names column(s) {', '.join(twice)} more than once", line=1,
                         expected="each column once (names compared without case, '_' or '-')")
    index: dict[str, int] = {}
    extra: list[str] = []
    for i, key in enumerate(keys):
        role = _ROLE_OF.get(key)
        if role is not None and role not in index:
            index[role] = i
        elif key not in _NOTES:
            extra.append(cells[i] or f"(unnamed column {i + 1})")
    missing = [f"no {role} column" for role in REQUIRED if role not in index]
    if "segment" not in index and not ("doc" in index and "doc_segment" in index):
        missing.append("no seg_id or globalSegId column" + (
            f", nor a doc column for {cells[index['doc_segment']]}" if "doc_segment" in index else
            ", nor a doc_id or docSegId column to go with doc" if "doc" in index else ""))
    if missing:
        raise InputError(path, f"the header ({' '.join(cells)}) has {', '.join(missing)}", line=1,
                         expected="the columns " + _expected_columns())
    if extra:
        warnings.append(f"{path.name}: {count(len(extra), 'column')} that an MQM release does not have "
                        f"({listing(extra)}) {'was' if len(extra) == 1 else 'were'} ignored.")
    return _Layout(cells, index, {role: cells[i] for role, i in index.items()})


def _segment_ids(path: Path, rows: list[tuple[int, list[str]]], layout: _Layout,
                 warnings: list[str]) -> tuple[list[str], str]:
    """Each row's segment id and the column(s) it comes from: the global id; or ``doc:position``
    where there is no global id, or where it lumps together document positions that each have one
    id (a constant ``globalSegId``, which MQM Viewer's format allows)."""
    at, names = layout.index, layout.names
    if "doc" not in at or "doc_segment" not in at:
        return [cells[at["segment"]] for _, cells in rows], names["segment"]
    positions = [(cells[at["doc"]], cells[at["doc_segment"]]) for _, cells in rows]
    by_position = f"{names['doc']}:{names['doc_segment']}"
    if "segment" in at:
        ids = [cells[at["segment"]] for _, cells in rows]
        positions_of: dict[str, set[tuple[str, str]]] = {}
        ids_of: dict[tuple[str, str], set[str]] = {}
        for segment, position in zip(ids, positions, strict=True):
            positions_of.setdefault(segment, set()).add(position)
            ids_of.setdefault(position, set()).add(segment)
        lumped = {segment: len(found) for segment, found in positions_of.items() if len(found) > 1}
        if not lumped or any(len(found) > 1 for found in ids_of.values()):
            return ids, names["segment"]
        segment, many = next(iter(lumped.items()))
        warnings.append(f"{path.name}: {names['segment']} does not tell segments apart ({segment!r} names "
                        f"{many:,} document positions); segments are named {by_position} instead.")
    return [f"{doc}:{position}" if doc and position else "" for doc, position in positions], by_position


# --- reading the ratings file ----------------------------------------------------------------------

@dataclass
class _Output:
    """What the rows of one (system, segment) agree on."""

    source: str
    target: str
    line: int
    doc: str
    raters: list[str] = field(default_factory=list)


@dataclass
class _Release:
    path: Path
    language_pair: str
    segment_column: str
    weights: WeightingScheme
    reference: str | None = None
    reference_is_human: bool = False
    reference_rule: str = ""
    human_systems: frozenset[str] = frozenset()
    outputs: dict[tuple[str, str], _Output] = field(default_factory=dict)
    error_rows: list[ErrorRow] = field(default_factory=list)
    errors: dict[str, list[Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    averages: dict[str, Any] = field(default_factory=dict)

    # -- the canonical tables ------------------------------------------------------------------

    def tables(self) -> dict[str, Any]:
        scored = segment_scores(self.error_rows, self.weights, path=self.path)
        lp, aspect = self.language_pair, f"mqm:{self.weights.signature.split(':', 1)[1]}"
        keys = sorted(self.outputs, key=lambda k: (_natural(k[1]), k[0]))
        ratings: dict[str, list[Any]] = {c: [] for c in ("group", "item_id", "segment_id", "system", "rater",
                                                         "scheme", "penalty", "errors")}
        error_counts: dict[tuple[str, str, str], int] = {}
        for system, segment, rater in zip(self.errors["system"], self.errors["segment_id"], self.errors["rater"],
                                          strict=True):
            error_counts[(system, segment, rater)] = error_counts.get((system, segment, rater), 0) + 1
        for system, segment in keys:
            for rater, penalty in sorted(scored.penalties[(system, segment)].items()):
                ratings["group"].append(lp)
                ratings["item_id"].append(segment)
                ratings["segment_id"].append(segment)
                ratings["system"].append(system)
                ratings["rater"].append(rater)
                ratings["scheme"].append(self.weights.signature)
                ratings["penalty"].append(float(penalty))
                ratings["errors"].append(error_counts.get((system, segment, rater), 0))
        # without a reference system every segment has no reference; with one, its text of the segment
        references: dict[str, str] | None = None if self.reference is None else {
            segment: out.target for (system, segment), out in self.outputs.items() if system == self.reference}
        segments: dict[str, list[Any]] = {c: [] for c in (
            "group", "aspect", "item_id", "segment_id", "system", "is_human", "source", "references", "candidate",
            "human_raw", "rating_count", "ratings")}
        outputs: dict[str, list[Any]] = {c: [] for c in ("group", "segment_id", "system", "source", "references",
                                                         "candidate")}
        unreferenced = 0
        for system, segment in keys:
            if system == self.reference:
                continue
            out = self.outputs[(system, segment)]
            if references is not None and segment not in references:
                unreferenced += 1
                continue
            segment_references = [] if references is None else [references[segment]]
            penalties = scored.penalties[(system, segment)]
            segments["group"].append(lp)
            segments["aspect"].append(aspect)
            segments["item_id"].append(segment)
            segments["segment_id"].append(segment)
            segments["system"].append(system)
            segments["is_human"].append(system in self.human_systems)
            segments["source"].append(out.source)
            segments["references"].append(segment_references)
            segments["candidate"].append(out.target)
            segments["human_raw"].append(scored.mqm(system, segment))
            segments["rating_count"].append(len(penalties))
            segments["ratings"].append([-penalties[r] for r in sorted(penalties)])
            outputs["group"].append(lp)
            outputs["segment_id"].append(segment)
            outputs["system"].append(system)
            outputs["source"].append(out.source)
            outputs["references"].append(list(segment_references))
            outputs["candidate"].append(out.target)
        if unreferenced:
            self.warnings.append(
                f"{count(unreferenced, 'rated output')} of segments the reference system {self.reference!r} did "
                "not translate have no reference; they are kept in ratings and errors but are not candidates.")
        per_system: dict[str, list[float]] = {}
        for (system, _), score in scored.scores().items():
            per_system.setdefault(system, []).append(score)
        systems: dict[str, list[Any]] = {c: [] for c in ("group", "aspect", "system", "is_human", "human_raw",
                                                         "rating_count", "output_system")}
        for system in sorted(per_system):
            values = per_system[system]
            systems["group"].append(lp)
            systems["aspect"].append(aspect)
            systems["system"].append(system)
            systems["is_human"].append(system in self.human_systems
                                       or (system == self.reference and self.reference_is_human))
            systems["human_raw"].append(math.fsum(values) / len(values))
            systems["rating_count"].append(len(values))
            systems["output_system"].append(None if system == self.reference else system)
        errors = {**self.errors}
        return {
            "segments": table_from_columns("segments", segments),
            "systems": table_from_columns("systems", systems),
            "outputs": table_from_columns("outputs", outputs),
            "errors": table_from_columns("errors", errors),
            "ratings": table_from_columns("ratings", ratings),
        }

    def metadata(self, ratings_file: Path, weights: WeightingScheme) -> dict[str, Any]:
        systems = sorted({s for s, _ in self.outputs})
        return {
            "language_pairs": [self.language_pair],
            "mqm_weights": {"signature": weights.signature, "rules": weights.spec},
            "reference_system": self.reference,
            "reference_rule": self.reference_rule,
            "human_systems": sorted(self.human_systems),
            "candidates": "human systems are left out of evaluation unless included on request",
            "exclude_human_by_default": True,
            "systems": len(systems),
            "segments": len({seg for _, seg in self.outputs}),
            "segment_id_column": self.segment_column,
            "raters": sorted({r for out in self.outputs.values() for r in out.raters}),
            "ratings_file": ratings_file.name,
            **({"published_averages": self.averages} if self.averages else {}),
        }

    # -- the published averages ----------------------------------------------------------------

    def check_averages(self, files: InputFiles, path: Path, weights: WeightingScheme) -> None:
        """Read ``<name>.avg_seg_scores.tsv``: every rated (system, segment) it lists needs a number;
        under the ``mtme`` scheme the computed scores must equal it (else a warning with the count)."""
        lines = split_lines(files.read_text(path))
        if not lines or lines[0].split() != ["system", "mqm_avg_score", "seg_id"]:
            raise InputError(path, "the header matches no known averages layout", line=1,
                             expected="system mqm_avg_score seg_id")
        computed = segment_scores(self.error_rows, weights, path=self.path).scores()
        known = {s for s, _ in self.outputs}
        renamed: dict[tuple[str, str], int] = {}
        compared, differ, worst = 0, 0, 0.0
        for number, text in enumerate(lines[1:], start=2):
            cells = text.split()
            if not cells:
                continue
            if len(cells) != 3:
                raise InputError(path, f"{len(cells)} cells", line=number,
                                 expected="3 cells: system, mqm_avg_score and seg_id")
            system, value, segment = cells
            if system not in known:
                published = system
                system = _same_system(system, known) or system
                if system != published:
                    renamed[(published, system)] = renamed.get((published, system), 0) + 1
            rated = (system, segment) in self.outputs
            if value == "None":
                if rated:
                    raise InputError(path, f"the score of {system} segment {segment} is None but the segment was "
                                     "rated", line=number, expected="a number for every rated segment")
                continue
            try:
                score = float(value)
            except ValueError:
                raise InputError(path, f"the score {value!r} is not a number", line=number,
                                 expected="a number, or None for an unrated segment") from None
            if not math.isfinite(score):
                raise InputError(path, f"the score {value!r} is not finite", line=number, expected="a finite number")
            if not rated:
                continue
            compared += 1
            gap = abs(score - computed[(system, segment)])
            worst = max(worst, gap)
            differ += gap > AVERAGES_TOLERANCE
        for (published, ours), rows in sorted(renamed.items()):
            self.warnings.append(f"{files.rel(path)} names system {ours!r} {published!r}: its "
                                 f"{count(rows, 'row')} were matched to {ours!r}.")
        self.averages = {"file": files.rel(path), "compared": compared, "max_abs_difference": worst,
                         "checked": weights.name == "mtme"}
        if weights.name == "mtme" and differ:
            self.warnings.append(f"{count(differ, 'segment score')} of {compared:,} differ from {files.rel(path)} "
                                 f"by more than {AVERAGES_TOLERANCE:g} (largest {worst:.3g}).")


def _same_system(name: str, known: set[str]) -> str | None:
    """The system of the ratings file that ``name`` (from the averages file) is: the same name up to
    case and ``-``/``_``, else the one known name it extends (``ref-A`` for ``ref``)."""
    def norm(s: str) -> str:
        return re.sub(r"[-_]", "", s).casefold()

    exact = [k for k in known if norm(k) == norm(name)]
    if len(exact) == 1:
        return exact[0]
    prefixed = [k for k in known if norm(name).startswith(norm(k))]
    return prefixed[0] if len(prefixed) == 1 else None


def _natural(value: str) -> tuple[int, int | str]:
    return (0, int(value)) if value.isdigit() else (1, value)


def _language_pair(path: Path, options: Mapping[str, str]) -> str:
    given = options.get("language_pair")
    if given:
        return given
    for name in (path.name, path.parent.name):
        found = _LANGUAGE_PAIR.findall(name.lower().replace(".tsv", ""))
        if found:
            source, target = found[-1]
            return f"{source}-{target}"
    raise InputError(path, "cannot tell the language pair from the file or folder name",
                     expected="a name ending in the pair (mqm_ted_ende.tsv) or -o language_pair=en-de")


def _read_release(files: InputFiles, path: Path, weights: WeightingScheme, options: Mapping[str, str]) -> _Release:
    lines = split_lines(files.read_text(path))
    if not lines:
        raise InputError(path, "the file is empty", expected="a header and one row per error")
    warnings: list[str] = []
    layout = _layout(path, lines[0], warnings)
    at = layout.index
    width = len(layout.header)
    i_system, i_rater = at["system"], at["rater"]
    i_source, i_target, i_category, i_severity = at["source"], at["target"], at["category"], at["severity"]
    rows: list[tuple[int, list[str]]] = []
    metadata_rows = 0
    for number, text in enumerate(lines[1:], start=2):
        if not text:
            continue
        cells = text.split("\t")
        if len(cells) != width:
            raise InputError(path, f"{len(cells)} tab-separated cells", line=number,
                             expected=f"{width} cells ({' '.join(layout.header)})")
        if not cells[i_rater] and not cells[i_category].strip() and not cells[i_severity].strip():
            metadata_rows += 1  # MQM Viewer's format: a row that only carries the segment's metadata
            continue
        rows.append((number, cells))
    segment_ids, segment_column = _segment_ids(path, rows, layout, warnings)
    release = _Release(path, _language_pair(path, options), segment_column, weights, warnings=warnings)
    release.errors = {c: [] for c in ("group", "item_id", "segment_id", "system", "rater", "side", "start", "end",
                                      "category", "severity", "line")}
    no_error, attention_check = NO_ERROR.casefold(), ATTENTION_CHECK.casefold()
    attention, unclosed, trailing = 0, 0, 0
    end_offsets: list[tuple[int, str, tuple[str, str]]] = []  # error index, side, output key
    i_doc = at.get("doc")
    for (number, cells), segment in zip(rows, segment_ids, strict=True):
        system, rater = cells[i_system], cells[i_rater]
        severity, category = cells[i_severity].strip(), cells[i_category].strip()
        if not system or not rater or not segment:
            raise InputError(path, "an empty system, rater or segment id", line=number,
                             expected="every row to name its system, rater and segment")
        if not weights.knows(severity):
            weights.weight(severity, category, path=path, line=number)  # raises: unknown severity
        source_marked, target_marked = cells[i_source], cells[i_target]
        close = {}
        for column, raw in (("source", source_marked), ("target", target_marked)):
            at_end = raw.count(OPEN) == 1 and CLOSE not in raw
            close[column] = at_end
            unclosed += at_end
        source = parse_span(source_marked, path=path, line=number, column="source", close_at_end=close["source"])
        target = parse_span(target_marked, path=path, line=number, column="target", close_at_end=close["target"])
        key = (system, segment)
        out = release.outputs.get(key)
        if out is None:
            doc = cells[i_doc] if i_doc is not None else ""
            out = release.outputs[key] = _Output(source.text, target.text, number, doc)
        else:
            for side, seen, now in (("source", out.source, source.text), ("target", out.target, target.text)):
                if seen == now:
                    continue
                if seen.rstrip() != now.rstrip():
                    raise InputError(path, f"the {side} text of {system} segment {segment} differs from line "
                                     f"{out.line}'s", line=number,
                                     expected="the same text in every row of a (system, segment), up to the "
                                     "<v> markers")
                trailing += 1
                if len(now) < len(seen):  # keep the text without the span's extra white space
                    if side == "source":
                        out.source = now
                    else:
                        out.target = now
        if rater not in out.raters:
            out.raters.append(rater)
        release.error_rows.append(ErrorRow(system, segment, rater, severity, category, number))
        if severity.casefold() == attention_check:
            attention += 1
            continue
        if severity.casefold() == no_error:
            continue
        if not category:
            raise InputError(path, f"a {severity} error without a category", line=number,
                             expected="a category path such as Accuracy/Mistranslation for every error")
        marked = source if source.has_span else target
        side = "source" if source.has_span or (not target.has_span and category.casefold().startswith("source")) \
            else "target"
        errors = release.errors
        errors["group"].append(release.language_pair)
        errors["item_id"].append(segment)
        errors["segment_id"].append(segment)
        errors["system"].append(system)
        errors["rater"].append(rater)
        errors["side"].append(side)
        errors["start"].append(marked.start)
        errors["end"].append(marked.end)
        errors["category"].append(category)
        errors["severity"].append(severity)
        errors["line"].append(number)
        if marked.has_span:
            end_offsets.append((len(errors["line"]) - 1, side, key))
    # a span that marked a final space the segment's other rows do not have ends at the shared text
    for index, side, key in end_offsets:
        out = release.outputs[key]
        limit = len(out.source if side == "source" else out.target)
        release.errors["end"][index] = min(release.errors["end"][index], limit)
        release.errors["start"][index] = min(release.errors["start"][index], limit)
    _check_rater_counts(release, path)
    _choose_reference(release, path, options)
    if metadata_rows:
        warnings.append(f"{count(metadata_rows, 'row')} with no rater, category or severity carry only segment "
                        "metadata and were skipped.")
    if attention:
        warnings.append(f"{count(attention, 'attention-check row')} ({ATTENTION_CHECK}, planted errors) are not "
                        "translation errors: they count their rater as having rated the segment and weigh 0, as in "
                        "mt-metrics-eval, and are not stored as errors.")
    if unclosed:
        warnings.append(f"{count(unclosed, 'text')} had an {OPEN} that is never closed; read as a span to the end "
                        "of the text.")
    if trailing:
        warnings.append(f"{count(trailing, 'row')} differed from their segment's other rows only by trailing white "
                        "space (a span that marked the final space); the shorter text was kept and the span ends "
                        "at its end.")
    return release


def _check_rater_counts(release: _Release, path: Path) -> None:
    claimed = _FIXED_RATERS.search(path.name)
    if claimed is None:
        return
    expected = int(claimed.group(1))
    for (system, segment), out in release.outputs.items():
        if len(out.raters) != expected:
            raise InputError(path, f"{system} segment {segment} was rated by {len(out.raters)} rater(s) "
                             f"({', '.join(out.raters)})", line=out.line,
                             expected=f"{expected} raters per segment, as the file name says")


# --- the reference ---------------------------------------------------------------------------------

def human_letter(system: str) -> str | None:
    """The letter of a system named like a human translation (``refB`` -> ``B``, ``Human-P.0`` -> ``P``,
    ``ref`` -> ``A``); None for any other system."""
    match = _HUMAN_NAME.match(system)
    if match is None:
        return None
    return (match.group(1) or "A").upper()


def mtme_test_set(path: Path) -> str | None:
    """mt-metrics-eval's name of the release's test set, read from the file or folder names."""
    for name in (path.name, path.parent.name):
        for token in re.split(r"[_.\-/]", name.casefold()):
            if token in MTME_TEST_SETS:
                return MTME_TEST_SETS[token]
    return None


def _choose_reference(release: _Release, path: Path, options: Mapping[str, str]) -> None:
    systems = sorted({s for s, _ in release.outputs})
    named_human = [s for s in systems if human_letter(s) is not None]
    extra = {s.strip() for s in options.get("human_systems", "").split(",") if s.strip()}
    unknown = sorted(extra - set(systems))
    if unknown:
        raise InputError(path, f"human system(s) {', '.join(unknown)} rated nothing here",
                         expected="one of: " + ", ".join(systems))
    given = options.get("reference_system")
    humans = set(named_human) | extra
    if given:
        if given not in systems:
            raise InputError(path, f"the reference system {given!r} rated nothing here",
                             expected="one of: " + ", ".join(systems))
        reference, rule = given, "named by the reference_system option"
    elif named_human:
        reference, rule = _standard_reference(named_human, mtme_test_set(path), release.language_pair)
    else:
        release.human_systems = frozenset(extra)
        release.reference_rule = "none: no system is named like a human translation"
        release.warnings.append(
            f"No system is named like a human reference (ref, refA, ref-A, Human-A), so the "
            f"{count(len(release.outputs), 'rated output')} have no reference: human scores, raters and agreement "
            "are stored and metrics that need no reference can score them; to score with one that needs a "
            "reference, ingest again with --reference-system NAME (-o reference_system=NAME).")
        return
    release.reference = reference
    release.reference_is_human = reference in humans
    release.reference_rule = rule
    release.human_systems = frozenset(humans - {reference})
    others = sorted(release.human_systems)
    chosen = f" ({rule})" if len(named_human) > 1 or not release.reference_is_human else ""
    release.warnings.append(
        f"{reference!r} is the reference system{chosen}: its text is the reference of every other system's output "
        "and its ratings are kept, but it is not a candidate"
        + ("" if release.reference_is_human else " and not a human translation")
        + (f"; human translation(s) {', '.join(others)} are left out of evaluation unless included on request."
           if others else "."))


def _standard_reference(named_human: list[str], test_set: str | None, language_pair: str) -> tuple[str, str]:
    """The reference among the human translations: mt-metrics-eval's standard one for the test set
    and pair (``std_ref``), else the first by letter (A before B), then by the shortest name."""
    ordered = sorted(named_human, key=lambda s: (human_letter(s) or "", len(s), s))
    facts = facts_for(test_set, language_pair) if test_set is not None else None
    letter = human_letter(facts.std_ref) if facts is not None else None
    standard = [s for s in ordered if letter is not None and human_letter(s) == letter]
    if facts is not None and standard:
        return standard[0], f"mt-metrics-eval's standard reference of {test_set} {language_pair}, {facts.std_ref}"
    return ordered[0], "the first human translation by letter"
