"""Input formats: each module parses one kind of human-judgment release into canonical tables.

A format is a module-level object with ``name``, ``description``, ``detect(path) -> bool`` and
``parse(path, options) -> ParsedDataset``. ``options`` are the ``--option KEY=VALUE`` pairs given to
``assay ingest``, each format's own, except :data:`GROUPS_OPTION`, which every format takes: it keeps
only the named groups (language pairs, tasks) of the input, after the format has parsed all of it;
and :data:`GENERIC_OPTIONS`' sample of segments (:mod:`.segment_sample`), applied after that.

Parsers raise :class:`assay.errors.InputError` for any defect, naming the file, the line and what
was expected, before anything is written; recoverable quirks go to ``ParsedDataset.warnings``.

``__all__`` names its public modules (the formats and the modules they share) and the names defined
here; the package imports no format until :func:`registry` is called.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

from assay.datasets.formats.segment_sample import SAMPLE_OPTION, SEED_OPTION, keep_sampled_segments
from assay.datasets.parsed import ParsedDataset
from assay.errors import InputError

GROUPS_OPTION = "groups"
"""``-o groups=cs-en,de-en``: keep only these groups of an input of any format (a release's language
pairs one wants, say); a version of its own, since the options are part of a version's source key."""
GENERIC_OPTIONS = frozenset({GROUPS_OPTION, SAMPLE_OPTION, SEED_OPTION})
"""The options every format takes (:data:`GROUPS_OPTION`; :mod:`.segment_sample`'s), not passed to a format."""

__all__ = [
    "GENERIC_OPTIONS", "GROUPS_OPTION", "Format", "SplitFormat", "detect_format", "esa", "generic", "huse",
    "input_files", "mqm_tsv", "mtme", "mtme_files", "mtme_meta", "parse", "registry", "segment_sample", "splits",
    "webnlg2017", "wmt16_daseg", "wmt_da",
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
    given = {key: value for key, value in (options or {}).items() if key not in GENERIC_OPTIONS}
    generic = {key: value for key, value in (options or {}).items() if key in GENERIC_OPTIONS}
    if SEED_OPTION in generic and SAMPLE_OPTION not in generic:
        raise InputError(path, f"option {SEED_OPTION} needs {SAMPLE_OPTION}",
                         expected=f"-o {SAMPLE_OPTION}=N beside it")
    parsed = formats[name].parse(path, given)
    if GROUPS_OPTION in generic:
        parsed = _keep_groups(path, parsed, generic[GROUPS_OPTION])
    if SAMPLE_OPTION in generic:
        parsed = keep_sampled_segments(path, parsed, generic[SAMPLE_OPTION], generic.get(SEED_OPTION))
    return parsed


def _keep_groups(path: Path, parsed: ParsedDataset, option: str) -> ParsedDataset:
    """``parsed`` with only the rows of the groups listed in ``option`` (comma-separated), in every table."""
    import pyarrow as pa
    import pyarrow.compute as pc

    wanted = sorted({group.strip() for group in option.split(",") if group.strip()})
    present = sorted({group for table in parsed.tables.values() if "group" in table.column_names
                      for group in table.column("group").unique().to_pylist()})
    missing = [group for group in wanted if group not in present]
    if not wanted or missing:
        raise InputError(path, f"option {GROUPS_OPTION}={option!r}: "
                         + (f"this input has no group {', '.join(missing)}" if missing else "names no group"),
                         expected="a comma-separated list from: " + ", ".join(present))
    keep = pa.array(wanted, type=pa.string())
    for name, table in parsed.tables.items():
        if "group" in table.column_names:
            parsed.tables[name] = table.filter(pc.is_in(table.column("group"), value_set=keep))
    if len(wanted) < len(present):
        parsed.warnings.append(f"Only {len(wanted)} of the input's {len(present)} groups were kept "
                               f"(option {GROUPS_OPTION}): {', '.join(wanted)}.")
    parsed.metadata["groups_kept"] = wanted
    return parsed


def splits(path: Path, format_name: str, options: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """The options of each dataset version ``path`` holds in format ``format_name``: one empty set for a
    format whose input is one version, one set per version for a :class:`SplitFormat`."""
    fmt = registry()[format_name]
    given = {key: value for key, value in (options or {}).items() if key not in GENERIC_OPTIONS}
    return fmt.splits(Path(path), given) if isinstance(fmt, SplitFormat) else [{}]
