"""The input files of a format: the reading helpers every format parser shares.

Every helper turns a defect into an :class:`~assay.errors.InputError` that names the file, the
physical line (1-based) and what was expected, so the parsers themselves stay short:

* :class:`InputFiles` reads files under one input root with strict UTF-8 decoding, strips a UTF-8
  byte-order mark (several WMT system outputs start with one) and records every file it read as a
  :class:`~assay.datasets.parsed.SourceFile`;
* :func:`split_lines` splits line-aligned text files (one segment per line) on ``\\n`` only;
* :func:`read_delimited` reads space- or tab-separated tables with a header line, and
  :func:`read_csv` reads RFC 4180 CSV (quoted fields may hold line breaks) with the physical line
  on which each record starts;
* :func:`parse_float` and :func:`parse_int` reject NaN, infinities and non-numbers;
* :func:`table_from_columns` builds a canonical table from whole columns, which is much faster than
  appending hundreds of thousands of rows one by one.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from assay.datasets.parsed import ParsedDataset, SourceFile
from assay.datasets.schema import parser_schema
from assay.errors import InputError, PluginError

BOM = "\ufeff"

# How a delimiter is named in messages ("wrong delimiter? expected 5 columns separated by spaces").
_DELIMITER_NAMES = {" ": "spaces", "\t": "tabs", ",": "commas"}


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``count(1120, "row")`` -> ``"1,120 rows"``."""
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


def listing(names: Iterable[str], limit: int = 6) -> str:
    """``a, b, c`` or ``a, b, c and 4 more``: keeps aggregated warnings one short sentence."""
    items = list(names)
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f" and {len(items) - limit} more"


def decode_utf8(data: bytes, path: Path) -> str:
    """Strict UTF-8 decoding; the error names the line and byte offset of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise InputError(
            path,
            f"byte 0x{data[err.start]:02x} at offset {err.start:,} is not valid UTF-8",
            line=line,
            expected="UTF-8 text",
        ) from None


def split_lines(text: str) -> list[str]:
    """The lines of a text file without their line ends.

    Splits on ``\\n`` only: ``str.splitlines`` would also split on characters such as U+2028 or
    U+0085 that occur inside WMT sentences and would misalign line-aligned files. CRLF line ends
    are accepted; a final line end does not start an extra empty line.
    """
    if not text:
        return []
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


@dataclass
class InputFiles:
    """Reads the files of one input (a folder, or a single file) and remembers what it read.

    ``root`` is the ingested path; source file paths are recorded relative to it.
    """

    root: Path
    source_files: list[SourceFile] = field(default_factory=list)
    bom_files: list[str] = field(default_factory=list)
    _seen: set[Path] = field(default_factory=set)

    def rel(self, path: Path) -> str:
        """``path`` as it is named in messages and ``source_files``."""
        return path.name if path == self.root else str(path.relative_to(self.root))

    def read_bytes(self, path: Path) -> bytes:
        if not path.is_file():
            raise InputError(path, "no such file")
        if path not in self._seen:
            self._seen.add(path)
            self.source_files.append(SourceFile.of(path, self.root))
        return path.read_bytes()

    def read_text(self, path: Path) -> str:
        """The whole file as text: strict UTF-8, a leading byte-order mark removed (and noted)."""
        text = decode_utf8(self.read_bytes(path), path)
        if text.startswith(BOM):
            text = text[1:]
            if self.rel(path) not in self.bom_files:
                self.bom_files.append(self.rel(path))
        return text

    def read_lines(self, path: Path, *, allow_empty: bool = False) -> list[str]:
        """The lines of a line-aligned text file (one segment per line)."""
        lines = split_lines(self.read_text(path))
        if not lines and not allow_empty:
            raise InputError(path, "the file is empty", expected="one segment per line")
        return lines

    def parsed(self, format_name: str, tables: dict[str, pa.Table], warnings: list[str],
               metadata: dict[str, Any]) -> ParsedDataset:
        """The parse result of these files: every file read, the parser's warnings plus the one
        about removed byte-order marks (a recoverable quirk, recorded on the version)."""
        bom = self.bom_warning()
        return ParsedDataset(format=format_name, tables=tables, source_files=self.source_files,
                             warnings=[*warnings, bom] if bom else list(warnings), metadata=metadata)

    def bom_warning(self) -> str | None:
        """One sentence about the files that started with a byte-order mark, if any did."""
        if not self.bom_files:
            return None
        return (
            f"{count(len(self.bom_files), 'file')} started with a UTF-8 byte-order mark, which was "
            f"removed: {listing(self.bom_files)}."
        )


@dataclass
class Table:
    """A delimited table: the header's column names and the data rows with their line numbers."""

    path: Path
    header: list[str]
    rows: list[list[str]]
    lines: list[int]
    #: set when the header was repaired (see ``read_delimited(missing_name_ok=True)``)
    warning: str | None = None

    def index(self, name: str) -> int:
        return self.header.index(name)


def _check_header(
    path: Path, header: list[str], required: Sequence[str], delimiter: str, line: int = 1
) -> None:
    """Raise for a one-column header (wrong delimiter) or duplicate column names."""
    delimiter_name = _DELIMITER_NAMES.get(delimiter, repr(delimiter))
    if len(header) == 1 and len(required) > 1:
        raise InputError(
            path,
            f"the header {header[0][:80]!r} has a single column: wrong delimiter?",
            line=line,
            expected=f"{len(required)} or more columns separated by {delimiter_name}: {' '.join(required)}",
        )
    duplicates = sorted({name for name in header if header.count(name) > 1})
    if duplicates:
        raise InputError(
            path,
            f"the header names column(s) {', '.join(duplicates)} more than once",
            line=line,
            expected="each column named once",
        )


def _missing_columns_error(path: Path, header: list[str], missing: list[str]) -> InputError:
    return InputError(
        path,
        f"missing column(s) {', '.join(missing)}; the header has {listing(header, 20) or 'no names'}",
        line=1,
        expected="a header with the columns " + ", ".join(missing),
    )


def _split(line: str, delimiter: str) -> list[str]:
    if delimiter == " ":
        # runs of spaces separate fields; a tab does not (so a tab-separated file is detected)
        return [f for f in line.split(" ") if f]
    return line.split(delimiter)


def read_delimited(
    path: Path,
    text: str,
    *,
    delimiter: str,
    required: Sequence[str],
    missing_name_ok: bool = False,
) -> Table:
    """Parse a delimited table with a header line (no quoting) and check its shape.

    ``delimiter=" "`` means runs of single spaces (the WMT metrics-package files). Raises for an
    empty file, a one-column header (wrong delimiter), missing columns and rows whose field count
    differs from the header's (truncated rows). Blank lines are skipped.

    With ``missing_name_ok``, a header that lacks exactly one of the ``required`` names while the
    data rows have one field more is repaired by inserting that name where ``required`` puts it
    (the WMT18 ``RR-seglevel.csv`` header is known to lack ``LP``); ``Table.warning`` says so.
    """
    lines = split_lines(text)
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise InputError(path, "the file is empty", expected="a header line: " + " ".join(required))
    header = _split(lines[first].strip("\r"), delimiter)
    if delimiter == "\t":
        header = [name.strip() for name in header]
    _check_header(path, header, required, delimiter, line=first + 1)

    rows: list[list[str]] = []
    numbers: list[int] = []
    for i in range(first + 1, len(lines)):
        line = lines[i]
        if not line.strip():
            continue
        rows.append(_split(line, delimiter))
        numbers.append(i + 1)

    warning = None
    missing = [name for name in required if name not in header]
    if missing:
        repairable = (
            missing_name_ok
            and len(missing) == 1
            and rows
            and len(rows[0]) == len(header) + 1
            and [name for name in required if name in header] == header[: len(required) - 1]
        )
        if not repairable:
            raise _missing_columns_error(path, header, missing)
        position = list(required).index(missing[0])
        header = [*header[:position], missing[0], *header[position:]]
        warning = (
            f"The header of {path.name} names {len(header) - 1} of its {len(header)} columns; "
            f"the missing name {missing[0]} was inserted in the documented order {' '.join(required)}."
        )

    width = len(header)
    for fields, number in zip(rows, numbers, strict=True):
        if len(fields) != width:
            raise InputError(
                path,
                f"the row has {len(fields)} fields but the header has {width}"
                + (" (truncated row?)" if len(fields) < width else ""),
                line=number,
                expected=f"{width} fields: {' '.join(header)}",
            )
    return Table(path, header, rows, numbers, warning)


def read_csv(
    path: Path,
    text: str,
    *,
    required: Sequence[str],
    check_width: bool = True,
) -> Table:
    """Parse CSV with the :mod:`csv` module; ``Table.lines`` holds each record's first line.

    Header names are stripped of surrounding spaces (``summary_clean.csv`` writes ``", Label"``).
    Raises for an empty file, a one-column header (wrong delimiter), missing columns, malformed
    quoting and, with ``check_width``, records with a different field count than the header.
    """
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    records: list[list[str]] = []
    numbers: list[int] = []
    header: list[str] | None = None
    start = 1
    try:
        for record in reader:
            if not record:  # csv yields [] for a blank line
                start = reader.line_num + 1
                continue
            if header is None:
                # check the header before reading on: a wrong delimiter shows there first
                header = [name.strip() for name in record]
                _check_header(path, header, required, ",", line=start)
                missing = [name for name in required if name not in header]
                if missing:
                    raise _missing_columns_error(path, header, missing)
            else:
                records.append(record)
                numbers.append(start)
            start = reader.line_num + 1
    except csv.Error as err:
        raise InputError(path, f"malformed CSV: {err}", line=start, expected="RFC 4180 CSV") from None
    if header is None:
        raise InputError(path, "the file is empty", expected="a header line: " + ",".join(required))
    table = Table(path, header, records, numbers)
    if check_width:
        check_row_widths(table)
    return table


def check_row_widths(table: Table) -> None:
    """Raise for the first row whose field count differs from the header's."""
    width = len(table.header)
    for fields, number in zip(table.rows, table.lines, strict=True):
        if len(fields) != width:
            raise InputError(
                table.path,
                f"the row has {len(fields)} fields but the header has {width}"
                + (" (truncated row?)" if len(fields) < width else ""),
                line=number,
                expected=f"{width} fields",
            )


def parse_float(value: Any, path: Path, line: int | None, what: str) -> float:
    """A finite float from a text field (or a JSON number); NaN, inf and non-numbers raise."""
    if isinstance(value, bool):  # JSON true/false are ints to Python, not scores
        number = math.nan
    else:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise InputError(
                path, f"{what} {value!r} is not a number", line=line, expected="a finite number"
            ) from None
    if not math.isfinite(number):
        raise InputError(path, f"{what} is {value!r}", line=line, expected="a finite number")
    return number


def parse_int(value: str, path: Path, line: int | None, what: str, *, minimum: int = 1) -> int:
    """An integer of at least ``minimum`` from a text field."""
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is None or number < minimum:
        raise InputError(
            path, f"{what} {value!r} is not an integer of at least {minimum}", line=line,
            expected=f"an integer >= {minimum}",
        )
    return number


def table_from_columns(table: str, columns: dict[str, list[Any]]) -> pa.Table:
    """A canonical parser table from whole columns; columns left out are all null."""
    schema = parser_schema(table)
    unknown = set(columns) - set(schema.names)
    if unknown:
        raise PluginError(f"table {table!r} has no column(s) {sorted(unknown)}")
    lengths = {len(values) for values in columns.values()}
    if len(lengths) > 1:
        raise PluginError(f"columns of table {table!r} differ in length: {sorted(lengths)}")
    size = lengths.pop() if lengths else 0
    arrays = [
        pa.array(columns[f.name], type=f.type) if f.name in columns else pa.nulls(size, type=f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)
