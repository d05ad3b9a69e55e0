"""The input of MQM error analysis: rated outputs with their error records and a metric's scores.

A *rated output* is one system's translation (the candidate) of one source segment (the item),
rated by one or more MQM raters. :class:`RatedOutputs` holds parallel sequences, one entry per
output: the item, the system, the human MQM score (minus the rater-averaged weighted error count,
:mod:`assay.mqm.scores`; higher is better), the metric's score (higher is better), the number of
raters, the candidate, source and reference texts, and the errors the raters marked
(:class:`ErrorRecord`, with the span as character offsets into the clean text, :mod:`assay.mqm.spans`).
An error may have an empty category: ESA (Kocmi et al. 2024, "Error Span Annotation") marks spans
with a severity only.

The caller reads the release and filters it: ``No-error`` rows and attention checks are not errors
and are not in :attr:`RatedOutputs.errors`; an output rated without errors has an empty tuple. No
I/O happens here. Inconsistent input raises :class:`~assay.errors.UsageError` naming the output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from assay.errors import UsageError

Side = Literal["target", "source"]
SIDES: tuple[str, ...] = ("target", "source")

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]


class ErrorRecord(NamedTuple):
    """One error one rater marked on one output; a plain 6-tuple in this order is accepted too."""

    category: str  # the category path, e.g. ``Accuracy/Mistranslation``; "" for a severity-only error (ESA)
    severity: str  # ``Major``, ``Minor``, ``Neutral``...
    rater: str
    side: str  # ``target`` (in the candidate) or ``source`` (in the source text)
    start: int | None  # span offsets into the clean text of ``side``; None without a span
    end: int | None

    def as_dict(self) -> dict[str, Any]:
        return self._asdict()


@dataclass(frozen=True, eq=False)
class RatedOutputs:
    """Rated outputs and one metric's scores, as parallel sequences (one entry per output).

    ``human`` and ``metric`` are read-only float arrays once built; the other fields are tuples.
    """

    item: tuple[str, ...]  # source segment id: outputs with the same item translate the same source
    system: tuple[str, ...]
    human: FloatArray  # MQM score, higher is better
    metric: FloatArray  # the metric's score, higher is better
    errors: tuple[tuple[ErrorRecord, ...], ...]
    raters: tuple[int, ...]  # how many raters rated the output (>= 1): errors are averaged over them
    candidate: tuple[str, ...]
    source: tuple[str, ...]
    references: tuple[tuple[str, ...], ...]  # the output's references (none in a reference-free release)
    # item id -> 0..m-1 in order of first appearance, and each output's code
    _item_codes: IntArray = field(init=False, repr=False)
    _item_ids: tuple[str, ...] = field(init=False, repr=False)

    def __init__(self, item: Sequence[str], system: Sequence[str], human: Sequence[float] | npt.ArrayLike,
                 metric: Sequence[float] | npt.ArrayLike, errors: Sequence[Sequence[Sequence[Any]]],
                 raters: Sequence[int], candidate: Sequence[str], source: Sequence[str],
                 references: Sequence[Sequence[str]] | None = None) -> None:
        n = len(item)
        if references is None:
            references = [()] * n
        lengths = {"system": len(system), "human": len(np.atleast_1d(np.asarray(human))),
                   "metric": len(np.atleast_1d(np.asarray(metric))), "errors": len(errors),
                   "raters": len(raters), "candidate": len(candidate), "source": len(source),
                   "references": len(references)}
        wrong = {name: length for name, length in lengths.items() if length != n}
        if wrong:
            found = ", ".join(f"{name} has {length}" for name, length in wrong.items())
            raise UsageError(f"rated outputs: {n} items but {found}; expected one entry per output in every field")
        if n == 0:
            raise UsageError("rated outputs: no outputs given; expected at least one rated output")
        set_ = object.__setattr__
        set_(self, "item", tuple(str(v) for v in item))
        set_(self, "system", tuple(str(v) for v in system))
        set_(self, "human", _scores(human, "human"))
        set_(self, "metric", _scores(metric, "metric"))
        set_(self, "candidate", tuple(candidate))
        set_(self, "source", tuple(source))
        set_(self, "references", tuple(tuple(str(r) for r in refs) for refs in references))
        set_(self, "raters", tuple(_raters(raters)))
        set_(self, "errors", tuple(tuple(self._record(i, e) for e in output) for i, output in enumerate(errors)))
        seen: set[tuple[str, str]] = set()
        for i, key in enumerate(zip(self.item, self.system, strict=True)):
            if key in seen:
                raise UsageError(f"rated outputs: output {i} repeats item {key[0]!r} of system {key[1]!r}; "
                                 f"expected one output per (item, system)")
            seen.add(key)
        ids: dict[str, int] = {}
        codes = np.fromiter((ids.setdefault(v, len(ids)) for v in self.item), dtype=np.intp, count=n)
        set_(self, "_item_codes", codes)
        set_(self, "_item_ids", tuple(ids))

    def _record(self, output: int, raw: Sequence[Any]) -> ErrorRecord:
        if len(raw) != 6:
            raise UsageError(f"rated outputs: output {output} has an error record of {len(raw)} fields; expected "
                             f"(category, severity, rater, side, start, end)")
        record = ErrorRecord(*raw)
        where = f"rated outputs: output {output} (item {self.item[output]!r}, system {self.system[output]!r})"
        if record.category is None:  # a severity-only error (ESA)
            record = record._replace(category="")
        if not isinstance(record.category, str):
            raise UsageError(f"{where}: an error's category is {record.category!r}; expected a path like "
                             "'Accuracy/Mistranslation', or '' for a severity-only error")
        if not isinstance(record.severity, str) or not record.severity.strip():
            raise UsageError(f"{where}: the {record.category or 'uncategorised'!r} error has no severity; "
                             "expected e.g. 'Major'")
        if record.side not in SIDES:
            raise UsageError(f"{where}: error side {record.side!r}; expected 'target' or 'source'")
        text = self.candidate[output] if record.side == "target" else self.source[output]
        if (record.start is None) != (record.end is None):
            raise UsageError(f"{where}: error span ({record.start}, {record.end}); expected both offsets or neither")
        if record.start is not None and record.end is not None and not 0 <= record.start <= record.end <= len(text):
            raise UsageError(f"{where}: error span ({record.start}, {record.end}) outside its {record.side} text of "
                             f"{len(text)} characters; expected 0 <= start <= end <= {len(text)}")
        return record

    @property
    def size(self) -> int:
        """The number of rated outputs."""
        return len(self.item)

    @property
    def item_codes(self) -> IntArray:
        """Each output's item as 0..m-1, numbered in order of first appearance."""
        return self._item_codes

    @property
    def item_ids(self) -> tuple[str, ...]:
        """The item ids, in the order of :attr:`item_codes`."""
        return self._item_ids

    def with_metric(self, metric: Sequence[float] | npt.ArrayLike) -> RatedOutputs:
        """The same outputs scored by another metric."""
        if len(np.atleast_1d(np.asarray(metric))) != self.size:
            raise UsageError(f"rated outputs: {len(np.atleast_1d(np.asarray(metric)))} metric scores for "
                             f"{self.size} outputs; expected one per output")
        return replace(self, metric=_scores(metric, "metric"))

    def same_outputs(self, other: RatedOutputs) -> bool:
        """Whether ``other`` holds the same outputs, human scores and errors (its metric may differ)."""
        return (self.item == other.item and self.system == other.system and self.raters == other.raters
                and self.errors == other.errors and bool(np.array_equal(self.human, other.human)))


def _scores(values: Sequence[float] | npt.ArrayLike, name: str) -> FloatArray:
    try:
        array = np.array(values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise UsageError(f"rated outputs: the {name} scores are not all numbers; expected one float per output"
                         ) from None
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise UsageError(f"rated outputs: {bad.size} {name} scores are not finite (first at output {bad[0]}); "
                         f"expected a finite score for every output")
    array.flags.writeable = False
    return array


def _raters(values: Sequence[int]) -> list[int]:
    checked = []
    for i, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise UsageError(f"rated outputs: output {i} has {value!r} raters; expected an integer >= 1")
        checked.append(int(value))
    return checked


__all__ = ["SIDES", "ErrorRecord", "RatedOutputs", "Side"]
