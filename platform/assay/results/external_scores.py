"""Official submissions of a shared task as external metrics: their signatures and stored scores.

A shared task's metric submissions (WMT's metrics task, as mt-metrics-eval distributes them in
``metric-scores/<lp>/NAME-REF.{seg,sys,domain}.score``) are scores Assay did not compute and never
recomputes. Each (metric, reference) variant is an *external metric* with its own signature::

    <name>|official:<task>|ref:<reference>|files:<digest>

    XCOMET-Ensemble|official:wmt23|ref:refA|files:3f9a0c2b7d41

* ``name``: the submission's base name as MTME's file names give it (``XCOMET-Ensemble``, ``BLEU``);
* ``official``: the task it was submitted to, the data folder's name (``wmt23``, ``wmt21.news``);
* ``ref``: the reference(s) it used (``refA``, ``refA.refB``, ``all``), or ``src`` for a
  reference-free (QE) metric;
* ``files``: the first 12 hex digits of the sha256 over the variant's score files
  (:func:`files_digest`), so a corrected release is another signature.

Values are rendered as every signature renders them (:func:`assay.metrics.signature.render_value`).
There is no ``assay:`` version field: the numbers are the submitters', not Assay's.

Segment scores are written once, at ingest, into the segment-score store
(:mod:`assay.results.segment_scores`) under that signature, keyed like every metric's by the segment
key of the version's ``outputs`` rows, so evaluation and leaderboards find them with
:func:`~assay.results.segment_scores.scored_signatures` like Assay's own metrics. Their other levels
(system, domain) are never derived from segment scores: they stay in the version's ``metric_scores``
table (``docs/STORAGE.md``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from assay.config import Settings
from assay.metrics.signature import render_value
from assay.provenance import short
from assay.results import segment_scores

OFFICIAL = "official"
#: the reference of a reference-free (quality-estimation) submission, as MTME's file names say it
REFERENCE_FREE = "src"


@dataclass(frozen=True)
class ExternalMetric:
    """One official (metric, reference) variant of a shared task."""

    name: str
    reference: str
    task: str
    files_digest: str
    signature: str
    is_reference_free: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_reference_free", self.reference == REFERENCE_FREE)


def files_digest(files: Iterable[tuple[str, str]]) -> str:
    """The ``files`` field: the first 12 hex digits of the sha256 over ``path<TAB>sha256`` lines of
    the variant's files (path relative to the ingested folder), sorted by path."""
    lines = "".join(f"{path}\t{sha256}\n" for path, sha256 in sorted(files))
    return short(hashlib.sha256(lines.encode()).hexdigest())


def external_metric(name: str, reference: str, task: str, digest: str) -> ExternalMetric:
    """The external metric of a variant, its signature rendered."""
    signature = "|".join([render_value(name), f"{OFFICIAL}:{render_value(task)}", f"ref:{render_value(reference)}",
                          f"files:{render_value(digest)}"])
    return ExternalMetric(render_value(name), render_value(reference), render_value(task), render_value(digest),
                          signature)


def parse_external(signature: str) -> ExternalMetric | None:
    """The external metric a signature names; None for any other signature (Assay's own metrics)."""
    parts = signature.split("|")
    if len(parts) != 4:
        return None
    fields = dict(part.partition(":")[::2] for part in parts[1:])
    if list(fields) != [OFFICIAL, "ref", "files"] or not all(fields.values()) or not parts[0]:
        return None
    return ExternalMetric(parts[0], fields["ref"], fields[OFFICIAL], fields["files"], signature)


def is_external(signature: str) -> bool:
    """Whether ``signature`` is an official submission's (:func:`parse_external`)."""
    return parse_external(signature) is not None


def write_scores(settings: Settings, metric: ExternalMetric, keys: Sequence[str], scores: Sequence[float],
                 run_id: str) -> Path:
    """Write one immutable part of ``metric``'s segment scores (``keys`` are segment keys); returns its
    path relative to ``ASSAY_HOME``."""
    rows = segment_scores.rows_table(metric.signature, keys, scores, None, None, run_id)
    return segment_scores.write_part(settings, metric.name, metric.signature, run_id, 0, rows)


def has_scores(settings: Settings, metric: ExternalMetric) -> bool:
    """Whether the store holds a part of ``metric``'s segment scores (a cheap check: one folder listing)."""
    folder = segment_scores.partition_dir(settings, metric.name, metric.signature)
    return folder.is_dir() and any(folder.glob("part-*.parquet"))
