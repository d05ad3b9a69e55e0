"""Any segment-level judgment file with declared columns: TSV or JSONL (format ``generic``).

``.tsv``: a header row, then tab-separated rows (no quoting). ``.jsonl``: one JSON object per
line; there, ``references`` may hold a list. Options (``assay ingest --option KEY=VALUE``) map a
canonical column to the input's column, e.g. ``candidate=hyp references=ref1,ref2 human_z=z
group=lp system=sys segment_id=id``. A canonical column that is not declared is read from a
column of the same name when the file has one.

Required: ``candidate``, ``segment_id`` and at least one of ``human_z`` / ``human_raw``.
Optional: ``group``, ``aspect``, ``system`` (or the constants ``group_value``, ``aspect_value``,
``system_value``; defaults ``default``, ``score``, ``unknown``), ``item_id`` (defaults to the
segment id), ``source``, ``references`` (empty references are dropped), ``is_human``
(true/false/1/0). ``scale=LOW,HIGH`` bounds ``human_raw``.

Every defect raises :class:`InputError`: a declared column the file lacks (naming the columns it
has), a wrong delimiter, bad JSON, a non-numeric or NaN score, a score outside ``scale`` and a
duplicate (group, aspect, system, segment_id).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from assay.datasets.formats.input_files import InputFiles, parse_float, read_delimited, split_lines
from assay.datasets.parsed import ParsedDataset, RowsBuilder
from assay.errors import InputError

COLUMNS = (
    "group", "aspect", "system", "item_id", "segment_id", "is_human",
    "source", "references", "candidate", "human_z", "human_raw",
)
CONSTANTS = {"group_value": "default", "aspect_value": "score", "system_value": "unknown"}
OPTIONS = (*COLUMNS, *CONSTANTS, "scale")
SUFFIXES = (".tsv", ".jsonl")
_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no", ""}

Record = tuple[int, Mapping[str, Any]]


def _tsv_records(path: Path, text: str, declared: list[str]) -> tuple[list[str], Iterator[Record]]:
    table = read_delimited(path, text, delimiter="\t", required=declared)
    header = table.header
    records = ((line, dict(zip(header, row, strict=True))) for row, line in zip(table.rows, table.lines, strict=True))
    return header, records


def _jsonl_records(path: Path, text: str) -> tuple[list[str], list[Record]]:
    records: list[Record] = []
    for number, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(path, f"invalid JSON: {err.msg} at column {err.colno}", line=number,
                             expected="one JSON object per line") from None
        if not isinstance(record, dict):
            raise InputError(path, f"the line holds a JSON {type(record).__name__}, not an object",
                             line=number, expected="one JSON object per line")
        records.append((number, record))
    if not records:
        raise InputError(path, "the file is empty", expected="one JSON object per line")
    return list(records[0][1]), records


def _scale(path: Path, value: str | None) -> tuple[float, float] | None:
    if value is None:
        return None
    parts = value.split(",")
    try:
        low, high = (float(p) for p in parts)
    except ValueError:
        low = high = float("nan")
    if not low < high:  # also false for NaN
        raise InputError(
            path, f"option scale={value!r} is not a range", expected="scale=LOW,HIGH with LOW < HIGH, e.g. 1,5"
        )
    return low, high


class GenericFormat:
    name = "generic"
    description = "TSV (header row) or JSONL file with columns declared by options (candidate=..., human_z=...)"

    def detect(self, path: Path) -> bool:
        return path.is_file() and path.suffix.lower() in SUFFIXES

    def parse(self, path: Path, options: Mapping[str, str]) -> ParsedDataset:
        if not self.detect(path):
            raise InputError(path, "not a .tsv or .jsonl file", expected="a file ending in .tsv or .jsonl")
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise InputError(
                path, f"unknown option(s) {', '.join(unknown)}", expected="options from: " + ", ".join(OPTIONS)
            )
        for name in CONSTANTS:
            column = name.removesuffix("_value")
            if name in options and column in options:
                raise InputError(path, f"options {column} and {name} are both given", expected="one of them")
        scale = _scale(path, options.get("scale"))

        files = InputFiles(path)
        text = files.read_text(path)
        declared = {name: options[name] for name in COLUMNS if options.get(name)}
        declared_columns = [c for name, value in declared.items() for c in _split_names(name, value)]
        if path.suffix.lower() == ".tsv":
            header, records = _tsv_records(path, text, declared_columns)
        else:
            header, jsonl = _jsonl_records(path, text)
            records = iter(jsonl)
        mapping = self._mapping(path, declared, header, is_tsv=path.suffix.lower() == ".tsv")
        if scale is not None and "human_raw" not in mapping:
            raise InputError(path, "option scale is given but there is no human_raw column",
                             expected="human_raw=COLUMN with scale=LOW,HIGH")

        rows = RowsBuilder("segments")
        seen: dict[tuple[str, str, str, str], int] = {}
        for line, record in records:
            values = _Values(path, line, record, mapping, options)
            key = (values.text("group"), values.text("aspect"), values.text("system"), values.text("segment_id"))
            if key in seen:
                raise InputError(
                    path, f"group/aspect/system/segment_id {'/'.join(key)} already appears on line {seen[key]}",
                    line=line, expected="one row per (group, aspect, system, segment_id)",
                )
            seen[key] = line
            human_raw = values.score("human_raw")
            if scale is not None and human_raw is not None and not scale[0] <= human_raw <= scale[1]:
                raise InputError(path, f"human_raw {human_raw:g} is outside the scale", line=line,
                                 expected=f"a score from {scale[0]:g} to {scale[1]:g}")
            rows.append(
                group=key[0], aspect=key[1], system=key[2], segment_id=key[3],
                item_id=values.text("item_id") if "item_id" in mapping else key[3],
                is_human=values.flag("is_human"), source=values.optional_text("source"),
                references=values.references(), candidate=values.text("candidate"),
                human_z=values.score("human_z"), human_raw=human_raw,
            )
        metadata: dict[str, Any] = {"columns": {k: v for k, v in mapping.items()}}
        metadata["constants"] = {c.removesuffix("_value"): options.get(c, d) for c, d in CONSTANTS.items()
                                 if c.removesuffix("_value") not in mapping}
        if scale is not None:
            metadata["scale"] = list(scale)
        return files.parsed(FORMAT.name, {"segments": rows.build()}, [], metadata)

    @staticmethod
    def _mapping(path: Path, declared: dict[str, str], header: list[str], *, is_tsv: bool) -> dict[str, list[str]]:
        """Canonical column -> input column(s): declared ones, else same-named columns of the file."""
        mapping = {name: _split_names(name, value) for name, value in declared.items()}
        for name in COLUMNS:
            if name not in mapping and name in header:
                mapping[name] = [name]
        problems = [f"column {c!r} declared for {name}" for name, cols in mapping.items()
                    for c in cols if c not in header]
        for name in ("candidate", "segment_id"):
            if name not in mapping:
                problems.append(f"a {name} column")
        if "human_z" not in mapping and "human_raw" not in mapping:
            problems.append("a human_z or human_raw column")
        if problems:
            where = "the header" if is_tsv else "the first record"
            if is_tsv and len(header) == 1:
                raise InputError(path, f"the header {header[0][:80]!r} has a single column: wrong delimiter?",
                                 line=1, expected="tab-separated columns")
            raise InputError(path, f"missing {'; '.join(problems)}; {where} has: {', '.join(header)}",
                             line=1, expected="the columns declared by the options (e.g. candidate=hyp)")
        return mapping


def _split_names(name: str, value: str) -> list[str]:
    if name == "references":
        return [c.strip() for c in value.split(",") if c.strip()]
    return [value]


class _Values:
    """Typed access to one record's canonical values, raising InputError on bad ones."""

    def __init__(self, path: Path, line: int, record: Mapping[str, Any], mapping: dict[str, list[str]],
                 options: Mapping[str, str]) -> None:
        self.path, self.line, self.record, self.mapping, self.options = path, line, record, mapping, options

    def _raw(self, name: str) -> Any:
        column = self.mapping[name][0]
        if column not in self.record:
            raise InputError(self.path, f"missing column {column!r}; this record has: {', '.join(self.record)}",
                             line=self.line, expected=f"a {column!r} value in every record")
        return self.record[column]

    def text(self, name: str) -> str:
        if name not in self.mapping:  # group/aspect/system without a column: the constant
            return self.options.get(f"{name}_value", CONSTANTS[f"{name}_value"])
        value = self._raw(name)
        if value is None or isinstance(value, (dict, list)) or (name != "candidate" and str(value) == ""):
            raise InputError(self.path, f"{self.mapping[name][0]} is {json.dumps(value)}", line=self.line,
                             expected=f"a text value for {name}")
        return str(value)

    def optional_text(self, name: str) -> str | None:
        return None if name not in self.mapping or self._raw(name) is None else self.text(name)

    def flag(self, name: str) -> bool:
        if name not in self.mapping:
            return False
        value = self._raw(name)
        if isinstance(value, bool):
            return value
        if str(value).strip().lower() in _TRUE | _FALSE:
            return str(value).strip().lower() in _TRUE
        raise InputError(self.path, f"{self.mapping[name][0]} is {value!r}", line=self.line, expected="true or false")

    def score(self, name: str) -> float | None:
        if name not in self.mapping:
            return None
        return parse_float(self._raw(name), self.path, self.line, self.mapping[name][0])

    def references(self) -> list[str]:
        if "references" not in self.mapping:
            return []
        refs: list[str] = []
        for column in self.mapping["references"]:
            if column not in self.record:
                raise InputError(self.path, f"missing column {column!r}; this record has: {', '.join(self.record)}",
                                 line=self.line, expected=f"a {column!r} value in every record")
            value = self.record[column]
            items = value if isinstance(value, list) else [value]
            for item in items:
                if item is not None and not isinstance(item, str):
                    raise InputError(self.path, f"{column} holds {json.dumps(item)}", line=self.line,
                                     expected="reference texts (strings)")
                if item:
                    refs.append(item)
        return refs


FORMAT = GenericFormat()
