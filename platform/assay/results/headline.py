"""Headline and side evaluations: which stored correlations stand for a dataset's result.

An evaluation is the *headline* of its dataset version, level and statistic when its judgments and
protocol settings are the protocol's reference defaults: every rater's mean, the release's rule for
human translations, and (WMT24) mt-metrics-eval's SPA permutations. Any other choice makes it a
*side* evaluation, stored with a ``side`` label that says what differs (``rater rater3``, ``human
translations included``, ``SPA permutations 200, seed 4``). Views show the headline
by default and a side evaluation only when asked for it, always under its label: a one-rater run
evaluated last never takes the headline's place (issue 30's finding: the report showed rater3's
0.752 in place of the all-rater 0.721).

The bootstrap seed and number of resamples are not a side: they change intervals and clusters, not a
point estimate, and every row keeps them in its ``protocol_signature``. WMT24's permutation seed and
count are, because SPA's value itself is computed from the permuted p-values. Leaving language pairs
out is not a side either: each pair's value is the headline's own, and the mean over the pairs left
in carries the item set it covers, which a leaderboard never ranks beside another item set (the
nightly evaluation of an English-only checkpoint leaves out the pairs into other languages, and it
belongs on the team's leaderboard).

Parts written before the ``side`` column existed read it as null; their side is read from the one side
choice that the protocol signature of that time spelled (``|rater:``), in :data:`SIDE_SQL` and
:func:`side_of`, the one place that reads it (a changed human rule or SPA setting was not told
apart from the default then).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["COLUMN", "SIDE_SQL", "side_label", "side_of"]

COLUMN = "side"
"""The correlation store's column holding a side evaluation's label (null: the headline)."""

_LEGACY_RATER = re.compile(r"\|rater:([^|]*)")


def side_label(*, rater: str | None = None, human_included: bool | None = None,
               human_included_by_default: bool = True,
               spa_permutations: tuple[int, int] | None = None,
               spa_default: tuple[int, int] | None = None) -> str | None:
    """The label of an evaluation's side choices, or None for the headline (the reference defaults).

    ``human_included`` None follows the release's rule (``human_included_by_default``);
    ``spa_permutations`` and ``spa_default`` are WMT24's (count, seed) as run and as mt-metrics-eval
    runs them."""
    parts: list[str] = []
    if rater:
        parts.append(f"rater {rater}")
    if human_included is not None and human_included != human_included_by_default:
        parts.append("human translations included" if human_included else "human translations excluded")
    if spa_permutations is not None and spa_permutations != spa_default:
        count, seed = spa_permutations
        parts.append(f"SPA permutations {count}, seed {seed}")
    return "; ".join(parts) or None


def _legacy_side(protocol_signature: str | None) -> str | None:
    found = _LEGACY_RATER.search(protocol_signature or "")
    return f"rater {found.group(1)}" if found and found.group(1) else None


def _column(row: Any, name: str) -> Any:
    if isinstance(row, Mapping):
        return row.get(name)
    return getattr(row, name, None)


def side_of(row: Any) -> str | None:
    """The side label of a stored correlation row (a mapping or a record), None for the headline."""
    stored = _column(row, COLUMN)
    return str(stored) if stored else _legacy_side(_column(row, "protocol_signature"))


SIDE_SQL = ("coalesce(side, 'rater ' || "
            "nullif(regexp_extract(coalesce(protocol_signature, ''), '\\|rater:([^|]*)', 1), ''))")
""":func:`side_of` as a DuckDB expression over the correlation store's columns."""
