"""Reading mt-metrics-eval's score and rating files, with the rules of its own loader.

google-research/mt-metrics-eval (MTME) ``data.py`` and ``ratings.py`` read these files; this module
reads them the same way and turns every defect into an :class:`~assay.errors.InputError` naming the
file, the line and what was expected (MTME asserts or raises ``ValueError`` without a line).

Score files (``*.score``), whitespace-separated as ``ReadScoreFile`` splits them:

* ``seg``, ``doc`` and ``sys`` level: ``system score`` per line. A system's lines, in file order,
  are its scores of the units in order: every segment (``seg``), every document in the order of
  ``documents/<lp>.docs`` (``doc``), or its one score (``sys``). Each system must have exactly one
  line per unit (MTME ``CheckScores``: "wrong number of scores").
* ``domain`` level: ``domain system score`` per line (``ReadDomainScoreFile``), at most once per
  (domain, system); a domain not named is None.
* ``None`` is a missing score: allowed in human scores (an unrated segment), refused in metric
  scores (MTME: "contains None elements").
* A system that has no output is refused (MTME: "Unknown system").

Rating files (``<lp>.<name>.seg.rating``, ``ReadRatingFile``): per line ``system<TAB>rating`` or
``system<TAB>rating<TAB>rater``, where ``rating`` is ``None`` (not rated) or a JSON object
``{"errors": [{"start", "end", "category", "severity", "score", "is_source_error"}]}``
(``ratings.Rating``/``ratings.Error``: character offsets ``start`` to ``end`` (end exclusive) in the
output, or in the source where ``is_source_error``). A system's lines are its segments in order. A line
without a rater column is rated by the file's rating name (MTME's ``default_rater``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.datasets.formats.input_files import count, listing, parse_float, split_lines
from assay.errors import InputError

LEVELS = ("seg", "doc", "domain", "sys")
NONE = "None"


@dataclass
class Scores:
    """One score file: per system, one score per unit (in unit order) and the line it came from."""

    path: Path
    level: str
    #: the units scored: segment ids, document names, domain names, or ``[""]`` at system level
    units: Sequence[str]
    values: dict[str, list[float | None]] = field(default_factory=dict)
    #: the 1-based line of each value; 0 where the file has none (a domain it does not name)
    lines: dict[str, list[int]] = field(default_factory=dict)

    @property
    def none_count(self) -> int:
        return sum(v is None for values in self.values.values() for v in values)


def read_scores(path: Path, text: str, level: str, units: Sequence[str], systems: Collection[str], *,
                human: bool, what: str) -> Scores:
    """Parse a score file of ``level`` over ``units``; ``systems`` are those with outputs. ``what``
    names the file's scorer in messages (``human score mqm``, ``metric BLEU-refA``)."""
    found = Scores(path, level, units)
    if level == "domain":
        _read_domain_lines(found, text, systems, human=human, what=what)
        return found
    width = len(units)
    last_line: dict[str, int] = {}
    for number, line in enumerate(split_lines(text), start=1):
        cells = line.split()
        if len(cells) != 2:
            raise InputError(path, f"{len(cells)} whitespace-separated fields", line=number,
                             expected="2 fields: system and score (None where there is none)")
        system, value = cells
        values = found.values.get(system)
        if values is None:
            _known(path, number, system, systems, what)
            values = found.values[system] = []
            found.lines[system] = []
        if len(values) == width:
            raise InputError(path, f"{system} has more than {_units(level, width)}", line=number,
                             expected=f"one line per {_unit(level)} per system ({_units(level, width)})")
        values.append(_score(path, number, value, human, what))
        found.lines[system].append(number)
        last_line[system] = number
    for system, values in found.values.items():
        if len(values) != width:
            raise InputError(path, f"{system} has {_units(level, len(values))}", line=last_line[system],
                             expected=f"one line per {_unit(level)} per system ({_units(level, width)}, as "
                             f"{'the source has segments' if level == 'seg' else 'there are units'})")
    return found


def _read_domain_lines(found: Scores, text: str, systems: Collection[str], *, human: bool, what: str) -> None:
    path, index = found.path, {name: i for i, name in enumerate(found.units)}
    for number, line in enumerate(split_lines(text), start=1):
        cells = line.split()
        if len(cells) != 3:
            raise InputError(path, f"{len(cells)} whitespace-separated fields", line=number,
                             expected="3 fields: domain, system and score")
        domain, system, value = cells
        if domain not in index:
            raise InputError(path, f"unknown domain {domain!r}", line=number,
                             expected="a domain of documents/<lp>.docs: " + listing(found.units, 12))
        if system not in found.values:
            _known(path, number, system, systems, what)
            found.values[system] = [None] * len(found.units)
            found.lines[system] = [0] * len(found.units)
        if found.lines[system][index[domain]]:
            raise InputError(path, f"a second score for domain {domain} and system {system}", line=number,
                             expected=f"one line per (domain, system); the first is line "
                             f"{found.lines[system][index[domain]]}")
        found.values[system][index[domain]] = _score(path, number, value, human, what)
        found.lines[system][index[domain]] = number
    if not human:
        for system, lines in found.values.items():
            missing = [d for d, v in zip(found.units, lines, strict=True) if v is None]
            if missing:
                raise InputError(path, f"{what} has no score for system {system} in domain(s) {listing(missing)}",
                                 expected="a score for every domain and system (mt-metrics-eval refuses None "
                                 "in metric scores)")


def _known(path: Path, number: int, system: str, systems: Collection[str], what: str) -> None:
    if system not in systems:
        raise InputError(path, f"system {system!r} of {what} has no output", line=number,
                         expected="a system with a file in system-outputs/<lp>/: " + listing(sorted(systems), 20))


def _score(path: Path, number: int, value: str, human: bool, what: str) -> float | None:
    if value == NONE:
        if not human:
            raise InputError(path, f"{what} has a None score", line=number,
                             expected="a number (mt-metrics-eval refuses None in metric scores)")
        return None
    return parse_float(value, path, number, "the score")


def _unit(level: str) -> str:
    return {"seg": "segment", "doc": "document", "sys": "system score"}[level]


def _units(level: str, n: int) -> str:
    return count(n, "line") if level == "sys" else count(n, "line") + f" ({count(n, _unit(level))})"


# --- rating files ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ErrorSpan:
    """One error of a rating (``ratings.Error``)."""

    start: int
    end: int
    category: str | None
    severity: str | None
    score: float | None
    is_source_error: bool


@dataclass(frozen=True)
class Rating:
    """One rater's rating of one system's output of one segment."""

    system: str
    segment: int
    rater: str
    errors: tuple[ErrorSpan, ...]
    line: int


@dataclass
class RatingFile:
    path: Path
    ratings: list[Rating] = field(default_factory=list)
    #: lines that say ``None``: the segment was not rated (by this rater)
    unrated: int = 0
    #: whether any line names its rater in a third column
    has_rater_column: bool = False
    #: errors whose JSON gives no ``score`` (they weigh 0 in the penalty)
    unscored_errors: int = 0


#: text of (system, segment index, source side?); None where the output is missing
TextOf = Callable[[str, int, bool], str | None]


def read_ratings(path: Path, text: str, segments: int, systems: Collection[str], default_rater: str,
                 text_of: TextOf) -> RatingFile:
    """Parse a ``.seg.rating`` file of ``segments`` segments per system; each span must lie in its
    text (``text_of``: the output, or the source for a source error)."""
    found = RatingFile(path)
    position: dict[str, int] = {}
    last_line: dict[str, int] = {}
    for number, line in enumerate(split_lines(text), start=1):
        cells = line.rstrip("\r").split("\t")
        if len(cells) not in (2, 3):
            raise InputError(path, f"{len(cells)} tab-separated fields", line=number,
                             expected="system<TAB>rating or system<TAB>rating<TAB>rater")
        system = cells[0].strip()
        if system not in position:
            _known(path, number, system, systems, "the ratings")
            position[system] = 0
        segment = position[system]
        if segment == segments:
            raise InputError(path, f"{system} has more than {count(segments, 'line')}", line=number,
                             expected=f"one line per segment per system ({count(segments, 'segment')})")
        position[system] = segment + 1
        last_line[system] = number
        rating = cells[1].strip()
        if rating == NONE:
            found.unrated += 1
            continue
        rater = cells[2].strip() if len(cells) == 3 and cells[2].strip() else default_rater
        found.has_rater_column |= len(cells) == 3
        errors = _errors(path, number, rating, found)
        for error in errors:
            _check_span(path, number, error, text_of(system, segment, error.is_source_error), system, segment)
        found.ratings.append(Rating(system, segment, rater, errors, number))
    for system, seen in position.items():
        if seen != segments:
            raise InputError(path, f"{system} has {count(seen, 'line')}", line=last_line[system],
                             expected=f"one line per segment per system ({count(segments, 'segment')})")
    return found


def _errors(path: Path, number: int, rating: str, found: RatingFile) -> tuple[ErrorSpan, ...]:
    try:
        data = json.loads(rating)
    except ValueError:
        raise InputError(path, f"the rating {rating[:60]!r} is neither JSON nor None", line=number,
                         expected='None, or a JSON object {"errors": [...]}') from None
    if not isinstance(data, dict) or not isinstance(data.get("errors"), list):
        raise InputError(path, "the rating has no list of errors", line=number,
                         expected='a JSON object {"errors": [{"start", "end", "category", "severity", "score"}, ...]}')
    errors = []
    for item in data["errors"]:
        if not isinstance(item, dict):
            raise InputError(path, f"an error that is not a JSON object: {item!r}"[:120], line=number,
                             expected='{"start": int, "end": int, "category", "severity", "score", "is_source_error"}')
        start, end = _offset(path, number, item, "start"), _offset(path, number, item, "end")
        score = item.get("score")
        if score is None:
            found.unscored_errors += 1
        else:
            score = parse_float(score, path, number, "the error's score")
        is_source = item.get("is_source_error", False)
        if not isinstance(is_source, bool):
            raise InputError(path, f"is_source_error is {is_source!r}", line=number, expected="true or false")
        errors.append(ErrorSpan(start, end, _text(path, number, item, "category"),
                                _text(path, number, item, "severity"), score, is_source))
    return tuple(errors)


def _offset(path: Path, number: int, item: dict[str, Any], key: str) -> int:
    value = item.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or int(value) != value:
        raise InputError(path, f"the error's {key} is {value!r}", line=number,
                         expected=f"an integer character offset as {key}")
    return int(value)


def _text(path: Path, number: int, item: dict[str, Any], key: str) -> str | None:
    value = item.get(key)
    if value is not None and not isinstance(value, str):
        raise InputError(path, f"the error's {key} is {value!r}", line=number, expected=f"a string or null as {key}")
    return value


def _check_span(path: Path, number: int, error: ErrorSpan, text: str | None, system: str, segment: int) -> None:
    side = "source" if error.is_source_error else f"output of {system}"
    if text is None:
        raise InputError(path, f"an error span in the {side} of segment {segment}, which has no text", line=number,
                         expected="spans only in texts that exist")
    if not 0 <= error.start <= error.end <= len(text):
        raise InputError(path, f"the span {error.start}-{error.end} lies outside the {side} of segment {segment} "
                         f"({count(len(text), 'character')})", line=number,
                         expected=f"0 <= start <= end <= {len(text)}")
