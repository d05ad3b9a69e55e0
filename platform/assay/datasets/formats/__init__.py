"""Input formats: each module parses one kind of human-judgment release into canonical tables.

A format is a module-level object with ``name``, ``description``, ``detect(path) -> bool`` and
``parse(path, options) -> ParsedDataset``. ``options`` are the ``--option KEY=VALUE`` pairs given to
``assay ingest`` (only the generic format needs any: its column declarations).

Parsers raise :class:`assay.errors.InputError` for any defect, naming the file, the line and what
was expected, before anything is written; recoverable quirks go to ``ParsedDataset.warnings``.

``__all__`` names its public modules (the formats and the modules they share) and the names defined
here; the package imports no format until :func:`registry` is called.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

from assay.datasets.parsed import ParsedDataset
from assay.errors import InputError

__all__ = [
    "Format", "SplitFormat", "detect_format", "esa", "generic", "huse", "input_files", "mqm_tsv", "mtme",
    "mtme_files", "mtme_meta", "parse", "registry", "splits", "webnlg2017", "wmt16_daseg", "wmt_da",
]


class Format(Protocol):
    name: str
    description: str

    def detect(self, path: Path) -> bool: ...

    def parse(self, path: Path, options: Mapping[str, str]) -> ParsedDataset: ...


@runtime_checkable
class SplitFormat(Format, Protocol):
    """A format whose one input holds several dataset versions (``mtme``: a test-set folder holds one
    per language pair). ``splits`` gives the options of each: ``parse(path, {**options, **split})``
    parses that one version."""

    def splits(self, path: Path, options: Mapping[str, str]) -> list[dict[str, str]]: ...


def registry() -> dict[str, Format]:
    """All known formats by name, in detection order (most specific first)."""
    from assay.datasets.formats import esa, generic, huse, mqm_tsv, mtme, webnlg2017, wmt16_daseg, wmt_da

    formats: list[Format] = [
        wmt_da.FORMAT,
        wmt16_daseg.FORMAT,
        webnlg2017.FORMAT,
        huse.FORMAT,
        mtme.FORMAT,
        mqm_tsv.FORMAT,
        esa.FORMAT,
        generic.FORMAT,
    ]
    return {f.name: f for f in formats}


def detect_format(path: Path) -> str:
    """The name of the first format that recognises ``path``."""
    for name, fmt in registry().items():
        if fmt.detect(path):
            return name
    raise InputError(
        path,
        "cannot tell which format this is",
        expected="one of: " + ", ".join(registry()) + " (or pass --format)",
    )


def parse(path: Path, format_name: str | None = None, options: Mapping[str, str] | None = None) -> ParsedDataset:
    """Parse ``path`` with the named format, or the detected one when ``format_name`` is None."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "no such file or folder")
    formats = registry()
    name = format_name or detect_format(path)
    if name not in formats:
        raise InputError(path, f"unknown format {name!r}", expected="one of: " + ", ".join(formats))
    return formats[name].parse(path, options or {})


def splits(path: Path, format_name: str, options: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """The options of each dataset version ``path`` holds in format ``format_name``: one empty set for a
    format whose input is one version, one set per version for a :class:`SplitFormat`."""
    fmt = registry()[format_name]
    return fmt.splits(Path(path), options or {}) if isinstance(fmt, SplitFormat) else [{}]
