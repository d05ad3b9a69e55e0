"""Checking metric parameters where they enter: in the constructors, with one-line messages.

A parameter comes from a user (``assay score -p tau=-1``, a flow's JSON, a notebook), so a bad one
is a :class:`~assay.errors.UsageError` that names the metric, the parameter, what was given and
what is accepted, before any model is loaded or anything is scored.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from assay.errors import UsageError


def choice(metric: str, key: str, value: Any, choices: Iterable[str]) -> str:
    options = list(choices)
    if value not in options:
        raise UsageError(f"{metric}: {key} is {value!r} (expected one of {', '.join(options)})")
    return str(value)


def flag(metric: str, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise UsageError(f"{metric}: {key} is {value!r} (expected true or false)")
    return value


def integer(metric: str, key: str, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{metric}: {key} is {value!r} (expected an integer)")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise UsageError(f"{metric}: {key} is {value} (expected an integer {_bounds(minimum, maximum)})")
    return int(value)


def number(metric: str, key: str, value: Any, *, low: float | None = None, high: float | None = None,
           low_open: bool = False, high_open: bool = False) -> float:
    """A finite number in ``[low, high]`` (``(low`` / ``high)`` where open)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UsageError(f"{metric}: {key} is {value!r} (expected a finite number)")
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        interval = f"{left}{'-inf' if low is None else f'{low:g}'}, {'inf' if high is None else f'{high:g}'}{right}"
        raise UsageError(f"{metric}: {key} is {value:g} (expected a number in {interval})")
    return float(value)


def text(metric: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise UsageError(f"{metric}: {key} is {value!r} (expected a non-empty string)")
    return value


def _bounds(minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f"from {minimum} to {maximum}"
    return f">= {minimum}" if minimum is not None else f"<= {maximum}"
