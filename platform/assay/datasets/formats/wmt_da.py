"""WMT metrics-task packages with Direct Assessment judgments (format ``wmt-da``).

The layout is that of the WMT metrics-task package as redistributed by XMoverScore and MENLI (see
``/work/shared/data/wmt17-da/PROVENANCE.md`` and ``wmt18-da/PROVENANCE.md``)::

    DA-seglevel.csv      space-separated "LP DATA SYSTEM SID HUMAN": segment z-scores
    DA-syslevel.csv      space-separated "LP HUMAN SYSTEM": system z-scores
    RR-seglevel.csv      space-separated "LP DATA SID BETTER WORSE": DARR pairs (WMT18 header lacks a name)
    sources/ or source/  <testset>-<xx><yy>-src.<xx>          one sentence per line
    references/          <testset>-<xx><yy>-ref.<yy>
    system-outputs/[<testset>/]<lp>/<testset>.<SYSTEM>.<lp>   raw, cased submissions
    metrics-package-preprocessed/system-outputs/<lp>/<testset>.<SYSTEM>.<lp>   lowercased copies

Nothing about a particular year is built in: the test set (``newstest2017``) and the year come
from the ``DATA`` column and the file names. ``SID`` is a 1-based line number into the source,
reference and system-output files of its language pair.

A judged ``SYSTEM`` is resolved to an output file by generic rules, in this order:

1. the file of that exact name;
2. the file of any ``+``-joined alternative (WMT joins systems that produced identical output);
3. the only raw file with the same submission id, the trailing ``.NNNN`` (WMT17 judged
   ``CASICT-cons.5144``; its raw submission file is ``CASICT-DCU-NMT.5144``). Id 0 is not a
   submission id: every online system has it;
4. for segments only, a lowercased, tokenized file in ``metrics-package-preprocessed`` (WMT17's
   ``ROCMT.5167`` exists only there).

Rules 3 and 4 are recorded as warnings. The segment keeps the judged name as ``system``; a
system-level row records the raw output's name in ``output_system`` (rules 1-3 only, since the
``outputs`` table holds raw cased files only).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from assay.datasets.formats.input_files import (
    InputFiles,
    Table,
    count,
    listing,
    parse_float,
    parse_int,
    read_delimited,
    table_from_columns,
)
from assay.datasets.parsed import ParsedDataset, RowsBuilder
from assay.errors import InputError

SEGMENT_FILE = "DA-seglevel.csv"
SYSTEM_FILE = "DA-syslevel.csv"
RANKING_FILE = "RR-seglevel.csv"
SEGMENT_COLUMNS = ("LP", "DATA", "SYSTEM", "SID", "HUMAN")
SYSTEM_COLUMNS = ("LP", "HUMAN", "SYSTEM")
RANKING_COLUMNS = ("LP", "DATA", "SID", "BETTER", "WORSE")
PREPROCESSED_OUTPUTS = Path("metrics-package-preprocessed") / "system-outputs"

# <testset>-<xx><yy>-src.<xx> and <testset>-<xx><yy>-ref.<yy>
_TEXT_NAME = re.compile(
    r"^(?P<testset>[A-Za-z][A-Za-z0-9]*\d{4})-(?P<pair>[A-Za-z]+)-(?P<kind>src|ref)\.(?P<ext>[A-Za-z]+)$"
)
_SUBMISSION_ID = re.compile(r"\.(\d+)$")


def submission_id(system: str) -> str | None:
    """The WMT submission id of a system name (``KIT.4951`` -> ``4951``); None for online systems."""
    match = _SUBMISSION_ID.search(system)
    if match is None or int(match.group(1)) == 0:
        return None
    return match.group(1)


@dataclass
class LanguagePair:
    """The text files of one language pair found in the package."""

    lp: str
    source: Path | None = None
    reference: Path | None = None
    outputs_dir: Path | None = None
    outputs: dict[str, Path] = field(default_factory=dict)  # system -> raw cased file
    lowercased: dict[str, Path] = field(default_factory=dict)  # system -> preprocessed file

    @property
    def in_package(self) -> bool:
        return bool(self.source or self.reference or self.outputs)

    @property
    def has_texts(self) -> bool:
        return self.source is not None and self.reference is not None


@dataclass
class Texts:
    """The line-aligned texts of one language pair (list index i holds segment SID = i + 1)."""

    source: list[str]
    reference: list[str]
    outputs: dict[str, list[str]]


@dataclass(frozen=True)
class Resolution:
    """Where the candidates of a judged system name come from."""

    system: str  # the file's system name
    rule: str  # "file", "submission-id" or "lowercased"
    judged: str  # the judged alternative that led to the file


class Package:
    """The files of a WMT package folder and the texts read from them (read once, on demand)."""

    def __init__(self, root: Path, files: InputFiles) -> None:
        self.root = root
        self.files = files
        self.pairs: dict[str, LanguagePair] = {}
        self.ignored: list[str] = []
        self.test_sets: set[str] = set()
        self.sources_dir = next((root / d for d in ("sources", "source") if (root / d).is_dir()), None)
        self.outputs_base = root / "system-outputs"
        self._texts: dict[str, Texts] = {}
        self._lowercased: dict[Path, list[str]] = {}
        self._scan()

    def pair(self, lp: str) -> LanguagePair:
        return self.pairs.setdefault(lp, LanguagePair(lp))

    @property
    def test_set(self) -> str | None:
        return next(iter(self.test_sets)) if len(self.test_sets) == 1 else None

    def _scan(self) -> None:
        for folder in (self.sources_dir, self.root / "references"):
            if folder is not None and folder.is_dir():
                for path in sorted(folder.iterdir()):
                    self._add_text_file(path)
        if self.outputs_base.is_dir():
            # system-outputs/<testset>/<lp>/ (WMT17) or system-outputs/<lp>/ (WMT18)
            lp_dirs = []
            for child in sorted(d for d in self.outputs_base.iterdir() if d.is_dir()):
                nested = sorted(d for d in child.iterdir() if d.is_dir())
                if nested:  # child is a test-set level
                    self.outputs_base = child
                    lp_dirs.extend(nested)
                else:
                    lp_dirs.append(child)
            for lp_dir in lp_dirs:
                self.pair(lp_dir.name).outputs_dir = lp_dir
                self._add_outputs(lp_dir, self.pair(lp_dir.name).outputs)
        preprocessed = self.root / PREPROCESSED_OUTPUTS
        if preprocessed.is_dir():
            for lp_dir in sorted(d for d in preprocessed.iterdir() if d.is_dir()):
                self._add_outputs(lp_dir, self.pair(lp_dir.name).lowercased)
        if len(self.test_sets) > 1:
            raise InputError(
                self.root,
                f"the text files belong to several test sets: {', '.join(sorted(self.test_sets))}",
                expected="the files of one test set per package",
            )

    def _add_text_file(self, path: Path) -> None:
        match = _TEXT_NAME.match(path.name)
        if not path.is_file() or match is None:
            self.ignored.append(self.files.rel(path))
            return
        pair, ext = match["pair"], match["ext"]
        if match["kind"] == "src" and pair.startswith(ext) and len(pair) > len(ext):
            self.pair(f"{ext}-{pair[len(ext):]}").source = path
        elif match["kind"] == "ref" and pair.endswith(ext) and len(pair) > len(ext):
            self.pair(f"{pair[: -len(ext)]}-{ext}").reference = path
        else:
            self.ignored.append(self.files.rel(path))
            return
        self.test_sets.add(match["testset"])

    def _add_outputs(self, lp_dir: Path, into: dict[str, Path]) -> None:
        suffix = "." + lp_dir.name
        for path in sorted(lp_dir.iterdir()):
            test_set, _, rest = path.name.partition(".")
            if not path.is_file() or not rest.endswith(suffix) or len(rest) == len(suffix):
                self.ignored.append(self.files.rel(path))
                continue
            into[rest[: -len(suffix)]] = path
            self.test_sets.add(test_set)

    def expected_text(self, lp: str, kind: str) -> str:
        """Where the source/reference file of ``lp`` would be, for error messages."""
        xx, _, yy = lp.partition("-")
        test_set = self.test_set or "<testset>"
        if kind == "source":
            folder = self.files.rel(self.sources_dir) if self.sources_dir else "sources"
            return f"{folder}/{test_set}-{xx}{yy}-src.{xx}"
        return f"references/{test_set}-{xx}{yy}-ref.{yy}"

    def expected_output(self, lp: str, system: str) -> str:
        folder = self.pairs[lp].outputs_dir or self.outputs_base / lp
        return self.files.rel(folder / f"{self.test_set or '<testset>'}.{system}.{lp}")

    def texts(self, lp: str) -> Texts:
        """Source, reference and all raw outputs of ``lp``, checked to have equal line counts."""
        if lp not in self._texts:
            pair = self.pairs[lp]
            assert pair.source is not None and pair.reference is not None
            read = {pair.source: self.files.read_lines(pair.source)}
            read[pair.reference] = self.files.read_lines(pair.reference)
            for path in pair.outputs.values():
                read[path] = self.files.read_lines(path, allow_empty=True)
            self._check_lengths(lp, read)
            outputs = {system: read[path] for system, path in pair.outputs.items()}
            self._texts[lp] = Texts(read[pair.source], read[pair.reference], outputs)
        return self._texts[lp]

    def lowercased(self, lp: str, system: str) -> list[str]:
        path = self.pairs[lp].lowercased[system]
        if path not in self._lowercased:
            lines = self.files.read_lines(path, allow_empty=True)
            reference = self.pairs[lp].reference
            assert reference is not None  # lowercased() is only called for pairs with texts
            self._check_lengths(lp, {reference: self.texts(lp).reference, path: lines})
            self._lowercased[path] = lines
        return self._lowercased[path]

    def _check_lengths(self, lp: str, read: dict[Path, list[str]]) -> None:
        """All text files of a language pair must have the same number of lines.

        The count most files share is taken as right (ties: the reference's), so the error
        names the one file that is off, e.g. a truncated source.
        """
        lengths = {path: len(lines) for path, lines in read.items()}
        tally = Counter(lengths.values())
        expected = tally.most_common(1)[0][0]
        reference = self.pairs[lp].reference
        if reference in lengths and tally[lengths[reference]] == tally[expected]:
            expected = lengths[reference]
        for path, n in lengths.items():
            if n != expected:
                example = next(p for p, m in lengths.items() if m == expected)
                raise InputError(
                    path,
                    f"the file has {n:,} lines but {self.files.rel(example)} has {expected:,}",
                    expected=f"{expected:,} lines, one per segment, like the other text files of {lp}",
                )

    def resolve(self, lp: str, name: str, *, lowercased_ok: bool) -> Resolution | None:
        """The output file for a judged system name, by the rules in the module docstring."""
        pair = self.pairs[lp]
        parts = name.split("+")
        alternatives = [name, *parts] if len(parts) > 1 else parts
        for alt in alternatives:
            if alt in pair.outputs:
                return Resolution(alt, "file", alt)
        for alt in parts:
            sid = submission_id(alt)
            same = [s for s in pair.outputs if sid is not None and submission_id(s) == sid]
            if len(same) == 1:
                return Resolution(same[0], "submission-id", alt)
        if lowercased_ok:
            for alt in alternatives:
                if alt in pair.lowercased:
                    return Resolution(alt, "lowercased", alt)
        return None


def _year(test_set: str | None) -> int | None:
    match = re.search(r"\d{4}", test_set or "")
    return int(match.group(0)) if match else None


class WmtDaFormat:
    name = "wmt-da"
    description = (
        "WMT metrics-task package folder: DA-seglevel.csv / DA-syslevel.csv / RR-seglevel.csv with "
        "sources/, references/ and system-outputs/ (WMT17, WMT18 layout)"
    )

    def detect(self, path: Path) -> bool:
        return path.is_dir() and any(
            (path / name).is_file() for name in (SEGMENT_FILE, SYSTEM_FILE, RANKING_FILE)
        )

    def parse(self, path: Path, options: Mapping[str, str]) -> ParsedDataset:
        if not self.detect(path):
            raise InputError(
                path, "not a WMT package folder",
                expected=f"a folder with {SEGMENT_FILE}, {SYSTEM_FILE} or {RANKING_FILE}",
            )
        return _Parser(path).parse()


class _Parser:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.files = InputFiles(root)
        self.package = Package(root, self.files)
        self.warnings: list[str] = []
        self.metadata: dict[str, Any] = {}

    def parse(self) -> ParsedDataset:
        package = self.package
        segments_table = self._read(SEGMENT_FILE, SEGMENT_COLUMNS)
        test_set = package.test_set or self._first_value(segments_table, "DATA")
        if segments_table is not None:
            self._check_test_set(segments_table, test_set)
        outputs = self._outputs()
        segments = self._segments(segments_table) if segments_table is not None else None
        if segments is None:
            self.warnings.append(f"The package has no {SEGMENT_FILE}: there are no segment-level DA scores.")
        systems_table = self._read(SYSTEM_FILE, SYSTEM_COLUMNS)
        systems = self._systems(systems_table) if systems_table is not None else None
        rankings_table = self._read(RANKING_FILE, RANKING_COLUMNS, missing_name_ok=True)
        if rankings_table is not None:
            self._check_test_set(rankings_table, test_set)
        rankings = self._rankings(rankings_table) if rankings_table is not None else None
        if package.ignored:
            self.warnings.append(
                f"{count(len(package.ignored), 'file')} in the text folders did not follow the WMT "
                f"naming pattern and were ignored: {listing(package.ignored)}."
            )
        self.metadata.update(test_set=test_set, year=_year(test_set))
        tables = {"outputs": outputs}
        for name, table in (("segments", segments), ("systems", systems), ("rankings", rankings)):
            if table is not None:
                tables[name] = table
        return self.files.parsed(FORMAT.name, tables, self.warnings, self.metadata)

    def _read(self, name: str, columns: tuple[str, ...], *, missing_name_ok: bool = False) -> Table | None:
        path = self.root / name
        if not path.exists():
            return None
        table = read_delimited(
            path, self.files.read_text(path), delimiter=" ", required=columns, missing_name_ok=missing_name_ok
        )
        if table.warning:
            self.warnings.append(table.warning)
        return table

    @staticmethod
    def _first_value(table: Table | None, column: str) -> str | None:
        return table.rows[0][table.index(column)] if table is not None and table.rows else None

    def _check_test_set(self, table: Table, expected: str | None) -> None:
        """Every DATA value must name the package's test set (that of the text files, or else the
        first DATA value of DA-seglevel.csv)."""
        data = table.index("DATA")
        for fields, line in zip(table.rows, table.lines, strict=True):
            if expected is None:
                expected = fields[data]
            if fields[data] != expected:
                raise InputError(
                    table.path, f"DATA is {fields[data]!r}, another test set than the rest of the package",
                    line=line, expected=repr(expected),
                )

    # -- outputs -----------------------------------------------------------------------------

    def _outputs(self) -> pa.Table:
        """Every line of every raw output file of each language pair with source and reference."""
        columns: dict[str, list[Any]] = {
            name: [] for name in ("group", "segment_id", "system", "source", "references", "candidate")
        }
        skipped = []
        counts = {}
        for lp, pair in sorted(self.package.pairs.items()):
            if not pair.outputs:
                continue
            if not pair.has_texts:
                skipped.append(lp)
                continue
            texts = self.package.texts(lp)
            n = len(texts.source)
            ids = [str(i) for i in range(1, n + 1)]
            references = [[line] for line in texts.reference]
            for system, lines in sorted(texts.outputs.items()):
                columns["group"].extend([lp] * n)
                columns["segment_id"].extend(ids)
                columns["system"].extend([system] * n)
                columns["source"].extend(texts.source)
                columns["references"].extend(references)
                columns["candidate"].extend(lines)
            counts[lp] = len(texts.outputs)
        if skipped:
            self.warnings.append(
                f"The system outputs of {', '.join(skipped)} were not read: the package has no "
                "source or reference file for them."
            )
        self.metadata["output_systems"] = counts
        return table_from_columns("outputs", columns)

    # -- segments ----------------------------------------------------------------------------

    def _segments(self, table: Table) -> pa.Table:
        package = self.package
        lp_col, system_col, sid_col, human_col = (table.index(c) for c in ("LP", "SYSTEM", "SID", "HUMAN"))
        rows = RowsBuilder("segments")
        seen: dict[tuple[str, str, int], int] = {}
        skipped: Counter[str] = Counter()
        resolved: Counter[tuple[str, str, str, str]] = Counter()
        for fields, line in zip(table.rows, table.lines, strict=True):
            lp, system = fields[lp_col], fields[system_col]
            sid = parse_int(fields[sid_col], table.path, line, "SID")
            human = parse_float(fields[human_col], table.path, line, "HUMAN")
            key = (lp, system, sid)
            if key in seen:
                raise InputError(
                    table.path, f"{lp} {system} SID {sid} was already scored on line {seen[key]}",
                    line=line, expected="one row per (LP, SYSTEM, SID)",
                )
            seen[key] = line
            pair = package.pairs.get(lp)
            if pair is None or not pair.in_package:
                skipped[lp] += 1
                continue
            for kind, present in (("source", pair.source), ("reference", pair.reference)):
                if present is None:
                    raise InputError(
                        table.path, f"there is no {kind} file for {lp}", line=line,
                        expected=package.expected_text(lp, kind),
                    )
            texts = package.texts(lp)
            if sid > len(texts.source):
                raise InputError(
                    table.path, f"SID {sid} is beyond the {len(texts.source):,} lines of {lp}",
                    line=line, expected=f"a line number from 1 to {len(texts.source):,}",
                )
            resolution = package.resolve(lp, system, lowercased_ok=True)
            if resolution is None:
                raise InputError(
                    table.path, f"there is no system-output file for {system} ({lp})", line=line,
                    expected=f"{package.expected_output(lp, system.split('+')[0])}, or the file of a "
                    "'+'-joined alternative, of the same submission id or in "
                    f"{PREPROCESSED_OUTPUTS}/{lp}/",
                )
            if resolution.rule == "lowercased":
                candidate = package.lowercased(lp, resolution.system)[sid - 1]
            else:
                candidate = texts.outputs[resolution.system][sid - 1]
            if resolution.rule != "file":
                resolved[(lp, resolution.rule, resolution.judged, resolution.system)] += 1
            rows.append(
                group=lp, aspect="da", item_id=str(sid), segment_id=str(sid), system=system,
                is_human=False, source=texts.source[sid - 1], references=[texts.reference[sid - 1]],
                candidate=candidate, human_z=human,
            )
        if skipped:
            self.warnings.append(
                f"{count(sum(skipped.values()), 'row')} of {', '.join(sorted(skipped))} in {SEGMENT_FILE} "
                "were skipped: their texts are not in the package."
            )
        for (lp, rule, judged, system), n in sorted(resolved.items()):
            if rule == "submission-id":
                self.warnings.append(
                    f"{count(n, 'row')} of {lp} in {SEGMENT_FILE} judge {judged}, which has no output "
                    f"file of that name; their candidates come from {system}, the raw output with the "
                    f"same submission id."
                )
            else:
                self.warnings.append(
                    f"{count(n, 'row')} of {lp} in {SEGMENT_FILE} use lowercased, tokenized text: "
                    f"{judged} has no raw cased output, only "
                    f"{self.files.rel(package.pairs[lp].lowercased[system])}."
                )
        self.metadata["segment_language_pairs"] = sorted({lp for lp, _, _ in seen} - set(skipped))
        return rows.build()

    # -- systems -----------------------------------------------------------------------------

    def _systems(self, table: Table) -> pa.Table:
        package = self.package
        lp_col, human_col, system_col = (table.index(c) for c in SYSTEM_COLUMNS)
        rows = RowsBuilder("systems")
        seen: dict[tuple[str, str], int] = {}
        no_text: Counter[str] = Counter()
        unresolved: list[str] = []
        for fields, line in zip(table.rows, table.lines, strict=True):
            lp, system = fields[lp_col], fields[system_col]
            human = parse_float(fields[human_col], table.path, line, "HUMAN")
            if (lp, system) in seen:
                raise InputError(
                    table.path, f"{lp} {system} was already scored on line {seen[(lp, system)]}",
                    line=line, expected="one row per (LP, SYSTEM)",
                )
            seen[(lp, system)] = line
            output_system = None
            pair = package.pairs.get(lp)
            if pair is None or not pair.has_texts or not pair.outputs:
                no_text[lp] += 1
            else:
                package.texts(lp)  # outputs of this pair are in the outputs table: check them
                resolution = package.resolve(lp, system, lowercased_ok=False)
                if resolution is None:
                    unresolved.append(f"{lp} {system}")
                else:
                    output_system = resolution.system
                    if resolution.rule == "submission-id":
                        self.warnings.append(
                            f"{SYSTEM_FILE}'s {lp} system {system} has its outputs under "
                            f"{resolution.system}, the raw output with the same submission id."
                        )
            rows.append(
                group=lp, aspect="da", system=system, is_human=False, human_z=human,
                output_system=output_system,
            )
        missing = sum(no_text.values()) + len(unresolved)
        if missing:
            parts = []
            if no_text:
                parts.append(f"the {count(sum(no_text.values()), 'system')} of {', '.join(sorted(no_text))} "
                             "(not in the package)")
            if unresolved:
                parts.append(", ".join(unresolved))
            self.warnings.append(
                f"{missing:,} of the {len(table.rows):,} systems in {SYSTEM_FILE} have no raw output "
                f"file, so their output_system is null: {' and '.join(parts)}."
            )
        return rows.build()

    # -- rankings ----------------------------------------------------------------------------

    def _rankings(self, table: Table) -> pa.Table:
        lp_col, sid_col, better_col, worse_col = (table.index(c) for c in ("LP", "SID", "BETTER", "WORSE"))
        columns: dict[str, list[Any]] = {
            name: [] for name in ("group", "segment_id", "better_system", "worse_system")
        }
        for fields, line in zip(table.rows, table.lines, strict=True):
            lp = fields[lp_col]
            sid = parse_int(fields[sid_col], table.path, line, "SID")
            pair = self.package.pairs.get(lp)
            if pair is not None and pair.has_texts and sid > len(self.package.texts(lp).source):
                raise InputError(
                    table.path, f"SID {sid} is beyond the {len(self.package.texts(lp).source):,} lines of {lp}",
                    line=line, expected="a line number of the language pair's source",
                )
            columns["group"].append(lp)
            columns["segment_id"].append(str(sid))
            columns["better_system"].append(fields[better_col])
            columns["worse_system"].append(fields[worse_col])
        return table_from_columns("rankings", columns)


FORMAT = WmtDaFormat()
