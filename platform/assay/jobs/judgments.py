"""Which human judgments an evaluation reads: groups left out, human candidates, one rater.

Evaluation reads a version's tables through a :class:`JudgmentFilter`:

* ``excluded_groups``: groups (language pairs, tasks) left out (``assay evaluate --exclude-group``);
* ``drop_human``: rows of human translations (``is_human``) are not candidates. A release decides
  its default: MQM releases (``info["exclude_human_by_default"]``) rate human translations like
  systems, and mt-metrics-eval leaves them out of the candidates unless ``--include_human`` is
  given; releases whose human rows always were candidates (WebNLG 2017's reference texts, HUSE's
  human summaries) keep them, so earlier numbers do not change;
* ``rater``: MQM and ESA. The human score of each segment is that rater's own instead of the mean
  over raters, read from whichever table holds the version's per-rater scores
  (:mod:`assay.datasets.rater_scores`: minus an MQM rater's penalty, or an ESA annotator's score);
  segments the rater did not rate have no human score, and judgments of another kind than the
  rater's (an ``mtme`` version's ``da-sqm`` beside its MQM ratings) are left out. The aspect becomes
  ``<aspect>:rater=<rater>``, so one rater's numbers are never ranked with the mean's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from assay.config import Settings
from assay.datasets import store
from assay.datasets.rater_scores import RaterScores, read_rater_scores, score_kind
from assay.errors import UsageError

#: raters named in the message that refuses an unknown one (ESA releases have hundreds)
_RATERS_LISTED = 12


@dataclass(frozen=True)
class JudgmentFilter:
    excluded_groups: frozenset[str] = frozenset()
    drop_human: bool = False
    rater: str | None = None

    @classmethod
    def of(cls, info: Mapping[str, Any], *, exclude_groups: Sequence[str] = (), include_human: bool | None = None,
           rater: str | None = None) -> JudgmentFilter:
        """The filter of a request on a version whose catalog ``info`` is given: ``include_human``
        None follows the release's default."""
        drop = bool(info.get("exclude_human_by_default")) if include_human is None else not include_human
        return cls(frozenset(exclude_groups), drop, rater)

    def as_dict(self) -> dict[str, Any]:
        return {"exclude_groups": sorted(self.excluded_groups), "drop_human": self.drop_human, "rater": self.rater}

    def table(self, settings: Settings, store_path: str, name: str) -> pa.Table:
        """The stored table ``name`` with the filter applied."""
        table = store.read_table(settings, store_path, name)
        if table.num_rows == 0:
            return table
        if self.excluded_groups:
            table = table.filter(pc.invert(pc.is_in(table.column("group"),
                                                    pa.array(sorted(self.excluded_groups), pa.string()))))
        if self.drop_human and "is_human" in table.column_names:
            table = table.filter(pc.invert(table.column("is_human")))
        if self.rater is not None and name in ("segments", "systems"):
            table = self._one_rater(settings, store_path, name, table)
        return table

    def rater_scores(self, settings: Settings, store_path: str) -> RaterScores:
        """The version's per-rater scores, refusing a version that has none or none of ``rater``
        (``assay evaluate`` asks before its flow starts, so a bad ``--rater`` costs no run)."""
        scores = read_rater_scores(settings, store_path)
        if scores is None:
            raise UsageError("--rater needs per-rater scores, which only MQM releases (ratings) and ESA releases "
                             "(annotators' scores) have")
        raters = scores.raters()
        if self.rater not in raters:
            shown = ", ".join(raters[:_RATERS_LISTED]) + (f" and {len(raters) - _RATERS_LISTED} more"
                                                          if len(raters) > _RATERS_LISTED else "")
            raise UsageError(f"no rater {self.rater!r} in this version ({len(raters)} raters: {shown})")
        return scores

    def _one_rater(self, settings: Settings, store_path: str, name: str, table: pa.Table) -> pa.Table:
        scores = self.rater_scores(settings, store_path)
        assert self.rater is not None  # table() asks for one rater's scores only with a rater
        if name == "systems":
            raise UsageError("--rater works on segment scores: use --level seg, or --protocol wmt24 (whose "
                             "system level is computed from the segment scores)")
        mine = scores.of_rater(self.rater)
        aspects = table.column("aspect").to_pylist()
        table = table.filter(pa.array([score_kind(a) in scores.kinds for a in aspects], pa.bool_()))
        keys = zip((score_kind(a) for a in table.column("aspect").to_pylist()), table.column("group").to_pylist(),
                   table.column("system").to_pylist(), table.column("segment_id").to_pylist(), strict=True)
        human = [mine.get(k) for k in keys]
        aspect = pa.array([f"{a}:rater={self.rater}" for a in table.column("aspect").to_pylist()], pa.string())
        replaced = [("human_raw", pa.array(human, pa.float64())), ("human_z", pa.nulls(table.num_rows, pa.float64())),
                    ("aspect", aspect), ("rating_count", pa.array([1] * table.num_rows, pa.int32()))]
        if "ratings" in table.column_names:  # the rater's own score, not the list of every rater's
            replaced.append(("ratings", pa.array([None if h is None else [h] for h in human],
                                                 table.schema.field("ratings").type)))
        for column, values in replaced:
            table = table.set_column(table.column_names.index(column), column, values)
        return table
