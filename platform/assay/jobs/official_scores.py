"""The official submissions of a version: which signatures are its own, and their scores as given.

A version ingested from mt-metrics-eval's data (format ``mtme``) records its official (metric,
reference) variants with their external signatures in ``info["external_metrics"]``
(:mod:`assay.results.external_scores`) and keeps every score the submitters gave in its
``metric_scores`` table, one row per system and segment (or system, at system level). Evaluation
reads official scores from that table, never from the segment-score store: the store is keyed by a
segment's content, and where two systems produced the same output a submission may still have
given them different scores (document-level metrics, sampling; on WMT23 en-de 39 of 68 variants
do), which the store can only hold once. System scores of an official submission are the
submitted ones, never means of its segment scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from assay.config import Settings
from assay.datasets import store
from assay.results.external_scores import ExternalMetric, parse_external
from assay.results.segment_scores import ScoredMetric

FloatArray = npt.NDArray[np.float64]


def official_candidates(info: Mapping[str, Any]) -> list[ScoredMetric]:
    """The version's official submissions (every (metric, reference) variant the ingest recorded,
    with its external signature), whether or not they have segment scores."""
    return [ScoredMetric(str(entry["metric"]), str(entry["signature"]))
            for entry in info.get("external_metrics") or [] if entry.get("signature")]


def own_variant(info: Mapping[str, Any], signature: str) -> ExternalMetric | None:
    """The official variant ``signature`` names if it is one of this version's own (another pair's
    or another release's submission is not); None otherwise."""
    variant = parse_external(signature)
    if variant is None or signature not in {c.signature for c in official_candidates(info)}:
        return None
    return variant


class OfficialScores:
    """The official submissions' scores of a version (its ``metric_scores`` table, levels ``seg``
    and ``sys``), as (systems x items) matrices and system vectors, one row per system and segment
    as the submitters gave them."""

    def __init__(self, table: pa.Table) -> None:
        self._runs: dict[tuple[str, str, str, str], tuple[np.ndarray, np.ndarray, FloatArray]] = {}
        self._systems: dict[str, int] = {}
        self._segments: dict[str, int] = {}
        if table.num_rows == 0:
            return
        table = table.filter(pc.is_in(table.column("level"), pa.array(["seg", "sys"])))
        variant = pc.binary_join_element_wise(table.column("group"), table.column("metric"),
                                              table.column("reference"), table.column("level"), "\t")
        variants, systems, segments = (pc.dictionary_encode(c).combine_chunks() for c in (
            variant, table.column("system"), pc.fill_null(table.column("segment_id"), "")))
        self._systems = {name: code for code, name in enumerate(systems.dictionary.to_pylist())}
        self._segments = {name: code for code, name in enumerate(segments.dictionary.to_pylist())}
        codes = variants.indices.to_numpy()
        order = np.argsort(codes, kind="stable")
        bounds = np.flatnonzero(np.diff(codes[order])) + 1
        system_codes, segment_codes = systems.indices.to_numpy(), segments.indices.to_numpy()
        scores = table.column("score").to_numpy(zero_copy_only=False).astype(np.float64)  # null -> NaN
        names = variants.dictionary.to_pylist()
        for run in np.split(order, bounds):
            key = tuple(names[codes[run[0]]].split("\t"))
            self._runs[(key[0], key[1], key[2], key[3])] = (system_codes[run], segment_codes[run], scores[run])

    @classmethod
    def of(cls, settings: Settings, store_path: str) -> OfficialScores:
        """The version's official scores (none where it has no ``metric_scores`` table)."""
        if not store.has_table(settings, store_path, "metric_scores"):
            return cls(pa.table({}))
        return cls(store.read_table(settings, store_path, "metric_scores"))

    def has(self, group: str, variant: ExternalMetric) -> bool:
        return any((group, variant.name, variant.reference, level) in self._runs for level in ("seg", "sys"))

    def matrix(self, group: str, variant: ExternalMetric, level: str, systems: Sequence[str],
               units: Sequence[str]) -> FloatArray | None:
        """``(systems x units)`` scores of one variant at ``level`` (units: segment ids at ``seg``,
        ``[""]`` at ``sys``); NaN where the table has none; None where the variant has no such level."""
        found = self.lookup(group, variant, level, [s for s in systems for _ in units],
                            [u for _ in systems for u in units])
        return None if found is None else found.reshape(len(systems), len(units))

    def lookup(self, group: str, variant: ExternalMetric, level: str, systems: Sequence[str],
               units: Sequence[str]) -> FloatArray | None:
        """The scores of parallel (system, unit) entries (NaN where the table has none); None where
        the variant has no such level."""
        found = self._runs.get((group, variant.name, variant.reference, level))
        if found is None:
            return None
        system_codes, unit_codes, scores = found
        full = np.full((len(self._systems), len(self._segments)), np.nan)
        full[system_codes, unit_codes] = scores
        rows = np.array([self._systems.get(s, -1) for s in systems], dtype=np.intp)
        columns = np.array([self._segments.get(u, -1) for u in units], dtype=np.intp)
        known = (rows >= 0) & (columns >= 0)
        out = np.full(len(systems), np.nan)
        out[known] = full[rows[known], columns[known]]
        return out


class VersionOfficialScores:
    """The official scores of one version, by signature, read on first use (most evaluations have
    no official submission and never read the table)."""

    def __init__(self, settings: Settings, store_path: str, info: Mapping[str, Any]) -> None:
        self.settings, self.store_path, self.info = settings, store_path, info
        self._scores: OfficialScores | None = None

    @property
    def scores(self) -> OfficialScores:
        if self._scores is None:
            self._scores = OfficialScores.of(self.settings, self.store_path)
        return self._scores

    def segment_scores(self, signature: str, groups: Sequence[str], systems: Sequence[str],
                       segment_ids: Sequence[str], needed: Sequence[int] | None = None) -> FloatArray | None:
        """The submitted score of each (group, system, segment) row (NaN where the submitter gave
        none, and for rows not ``needed``); None unless ``signature`` is one of the version's own
        submissions with segment scores in every needed row's group."""
        variant = own_variant(self.info, signature)
        if variant is None:
            return None
        index = range(len(systems)) if needed is None else needed
        by_group: dict[str, list[int]] = {}
        for i in index:
            by_group.setdefault(groups[i], []).append(i)
        scores = np.full(len(systems), np.nan)
        for group, rows in by_group.items():
            found = self.scores.lookup(group, variant, "seg", [systems[i] for i in rows],
                                       [segment_ids[i] for i in rows])
            if found is None:
                return None
            scores[rows] = found
        return scores

    def system_scores(self, signature: str, group: str, systems: Sequence[str]) -> FloatArray | None:
        """The submitted system scores of ``systems``; None unless the signature is one of the
        version's own submissions and scored every one of them."""
        variant = own_variant(self.info, signature)
        found = None if variant is None else self.scores.lookup(group, variant, "sys", systems, [""] * len(systems))
        return None if found is None or np.isnan(found).any() else found
