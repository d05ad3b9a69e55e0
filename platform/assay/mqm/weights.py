"""Error weights of MQM: how much each (severity, category) costs.

An MQM rater marks each error with a severity (``Major``, ``Minor``, ``Neutral``) and a hierarchical
category (``Accuracy/Mistranslation``, ``Fluency/Punctuation``, ``Non-translation!``). A
:class:`WeightingScheme` is a list of rules ``severity[/category[/subcategory]]:weight``; an error
takes the weight of the **most specific** rule that matches it, as google-research/mt-metrics-eval
``converters/score_mqm.py`` does: it tries ``severity/category/subcategory``, then
``severity/category``, then ``severity``, and weighs 0 when none matches. Its default, named ``mtme``
here (Freitag et al., 2021, "Experts, Errors, and Context")::

    Major:5 Minor:1 Neutral:0 Major/Non-translation!:25 Minor/Fluency/Punctuation:0.1

So ``Minor`` ``Fluency/Punctuation`` weighs 0.1, ``Minor`` ``Fluency/Grammar`` 1, and ``Major``
``Non-translation!`` 25.

Matching (a choice of Assay's; on the released files it gives mt-metrics-eval's numbers exactly):

* severities and category levels are compared **case-insensitively** (``str.casefold``). The
  releases spell each value one way (``Major``, ``No-error``, ``Accuracy/Mistranslation``), where
  mt-metrics-eval's exact comparison and this one agree; a hand-written ``major:5`` or
  ``Minor/fluency/punctuation:0.1`` then does what its author meant instead of silently weighing 0;
* a category path is split on ``/`` only, and whitespace around each level is dropped. Spaces and
  other punctuation belong to a level: ``Terminology/Inappropriate for context`` has two levels and
  ``Accuracy/Omission (Translation)`` two, ``Non-translation!`` one;
* a severity must be known: named by a rule, or one of :data:`UNWEIGHTED_SEVERITIES` (``No-error``
  marks a segment rated without errors; ``HOTW-test`` marks the attention checks of the WMT23 release,
  planted errors that are not translation errors). Both weigh 0 but still count the rater as having
  rated the segment, as in mt-metrics-eval. Any other severity is an error rather than a silent 0,
  so a typo in a file is found.

A scheme's :attr:`~WeightingScheme.signature` (``mqm-weights:mtme``, or ``mqm-weights:custom-`` and
12 hex digits of a digest of its rules) is derived from its content, so it can be part of a score's
identity: two schemes with the same rules have the same signature, whatever they are called.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from assay.errors import InputError, UsageError
from assay.provenance import short

SEPARATOR = "/"

# Severities that weigh nothing whatever the rules say but still mark a segment as rated.
UNWEIGHTED_SEVERITIES: tuple[str, ...] = ("No-error", "HOTW-test")

# mt-metrics-eval converters/score_mqm.py, the default of its --weights flag.
MTME_SPEC = "Major:5 Minor:1 Neutral:0 Major/Non-translation!:25 Minor/Fluency/Punctuation:0.1"

# One rule: a pattern (no colon in it), a colon, a number (no space in it).
_RULE = re.compile(r"\s*([^:]+?)\s*:\s*(\S*)")


def levels(severity: str, category: str = "") -> tuple[str, ...]:
    """The normalised path ``(severity, level1, level2, ...)`` that rules are matched on."""
    parts = [severity, *category.split(SEPARATOR)] if category else [severity]
    return tuple(p.strip().casefold() for p in parts if p.strip())


@dataclass(frozen=True)
class WeightingScheme:
    """Rules ``pattern -> weight``; an error takes the weight of the most specific matching rule.

    Build one with :meth:`parse` or :func:`named`; ``rules`` keeps each pattern as written.
    """

    # (pattern as written, weight), in the order given; patterns are unique once normalised.
    rules: tuple[tuple[str, float], ...]
    # Known severities that weigh 0 whatever the rules say (see the module docstring).
    unweighted: tuple[str, ...] = UNWEIGHTED_SEVERITIES
    _table: dict[tuple[str, ...], float] = field(init=False, repr=False, compare=False)
    _severities: frozenset[str] = field(init=False, repr=False, compare=False)
    _unweighted: frozenset[str] = field(init=False, repr=False, compare=False)
    _known: str = field(init=False, repr=False, compare=False)  # the severities as written

    def __post_init__(self) -> None:
        table: dict[tuple[str, ...], float] = {}
        for pattern, weight in self.rules:
            key = _pattern_levels(pattern)
            if key in table:
                raise UsageError(f"MQM weights: the pattern {pattern!r} is given twice "
                                 f"(case and spaces around {SEPARATOR!r} do not count)")
            table[key] = _checked_weight(pattern, weight)
        object.__setattr__(self, "_table", table)
        unweighted = {levels(s)[0] for s in self.unweighted}
        object.__setattr__(self, "_severities", frozenset({k[0] for k in table} | unweighted))
        object.__setattr__(self, "_unweighted", frozenset(unweighted))
        written = {p.split(SEPARATOR)[0].strip(): None for p, _ in self.rules}
        written.update({s.strip(): None for s in self.unweighted})
        object.__setattr__(self, "_known", ", ".join(written))

    @classmethod
    def parse(cls, text: str) -> WeightingScheme:
        """``"Major:5 Minor:1 Minor/Fluency/Punctuation:0.1"`` -> a scheme.

        Rules are separated by whitespace; a pattern may itself hold spaces
        (``Minor/Terminology/Inappropriate for context:0.5``) since it ends at its colon.
        """
        rules: list[tuple[str, float]] = []
        at = 0
        text = text.rstrip()
        while at < len(text):
            match = _RULE.match(text, at)
            if match is None:
                raise UsageError(f"MQM weights: cannot read {text[at:].strip()!r}; expected rules "
                                 f"like 'Major:5 Minor/Fluency/Punctuation:0.1'")
            pattern, number = match.groups()
            try:
                weight = float(number)
            except ValueError:
                raise UsageError(f"MQM weights: the weight of {pattern!r} is {number!r}, "
                                 f"not a number; expected e.g. '{pattern}:5'") from None
            rules.append((pattern, weight))
            at = match.end()
        if not rules:
            raise UsageError(f"MQM weights: no rules given; expected e.g. {MTME_SPEC!r}")
        return cls(tuple(rules))

    @property
    def spec(self) -> str:
        """The rules as :meth:`parse` reads them, in the order given."""
        return " ".join(f"{pattern}:{weight:g}" for pattern, weight in self.rules)

    @property
    def severities(self) -> frozenset[str]:
        """The known severities, case-folded."""
        return self._severities

    def knows(self, severity: str) -> bool:
        return severity.strip().casefold() in self._severities

    def weight(self, severity: str, category: str = "", *, path: str | Path | None = None,
               line: int | None = None) -> float:
        """The weight of one error: the most specific rule matching ``severity/category``.

        An unknown severity raises :class:`InputError` naming ``path`` and ``line`` when the error
        comes from a file, :class:`UsageError` otherwise.
        """
        items = levels(severity, category)
        if not items or items[0] not in self._severities:
            known = self._known
            if path is not None:
                raise InputError(path, f"unknown MQM severity {severity!r}", line=line,
                                 expected=f"one of {known}")
            raise UsageError(f"unknown MQM severity {severity!r}; expected one of {known}")
        if items[0] in self._unweighted:
            return 0.0
        while items:
            found = self._table.get(items)
            if found is not None:
                return found
            items = items[:-1]
        return 0.0

    @property
    def canonical(self) -> str:
        """The content that identifies the scheme: normalised rules, sorted, and the unweighted."""
        rules = " ".join(f"{SEPARATOR.join(k)}:{w!r}" for k, w in sorted(self._table.items()))
        return f"{rules}|unweighted:{','.join(sorted(self._unweighted))}"

    @property
    def name(self) -> str | None:
        """The name of the named scheme with the same content, if any."""
        for name, scheme in NAMED.items():
            if scheme.canonical == self.canonical:
                return name
        return None

    @property
    def signature(self) -> str:
        """``mqm-weights:mtme`` for a named scheme, ``mqm-weights:custom-<12 hex>`` otherwise."""
        name = self.name
        if name is not None:
            return f"mqm-weights:{name}"
        digest = short(hashlib.sha256(self.canonical.encode("utf-8")).hexdigest())
        return f"mqm-weights:custom-{digest}"


def _pattern_levels(pattern: str) -> tuple[str, ...]:
    if ":" in pattern:
        raise UsageError(f"MQM weights: the pattern {pattern!r} holds a colon; expected "
                         f"severity[/category[/subcategory]]")
    parts = pattern.split(SEPARATOR)
    if any(not p.strip() for p in parts):
        raise UsageError(f"MQM weights: the pattern {pattern!r} has an empty level; expected "
                         f"severity[/category[/subcategory]], e.g. 'Minor/Fluency/Punctuation'")
    return levels(pattern.split(SEPARATOR)[0], SEPARATOR.join(parts[1:]))


def _checked_weight(pattern: str, weight: float) -> float:
    if not math.isfinite(weight) or weight < 0:
        raise UsageError(f"MQM weights: the weight of {pattern!r} is {weight!r}; expected a "
                         f"finite number >= 0 (an error costs, it never earns)")
    return float(weight)


def _named_schemes(specs: Mapping[str, str]) -> dict[str, WeightingScheme]:
    return {name: WeightingScheme.parse(spec) for name, spec in specs.items()}


NAMED: dict[str, WeightingScheme] = _named_schemes({"mtme": MTME_SPEC})
MTME = NAMED["mtme"]
DEFAULT = MTME


def named(name: str) -> WeightingScheme:
    """A named scheme (``mtme``, the default)."""
    try:
        return NAMED[name]
    except KeyError:
        raise UsageError(f"unknown MQM weighting scheme {name!r}; "
                         f"expected one of {', '.join(sorted(NAMED))} or rules like {MTME_SPEC!r}") from None


def scheme(value: str | WeightingScheme | None = None) -> WeightingScheme:
    """A scheme from a name, rules text, or a scheme; None is the default (``mtme``)."""
    if value is None:
        return DEFAULT
    if isinstance(value, WeightingScheme):
        return value
    return NAMED[value] if value in NAMED else WeightingScheme.parse(value)


__all__ = ["DEFAULT", "MTME", "MTME_SPEC", "NAMED", "UNWEIGHTED_SEVERITIES",
                          "WeightingScheme", "levels", "named", "scheme"]
