"""The canonical tables of a dataset version, specified in one place.

Every ingested dataset version is stored as these Parquet tables (see ``docs/STORAGE.md``):

``segments``
    One row per *rated output* (a segment-level human judgment). ``human_z`` is the standardized
    score where the dataset has one (WMT DA), ``human_raw`` the score on the dataset's own scale
    (WebNLG 1-3, HUSE 0-5). ``aspect`` says what was rated (``da``, ``fluency``, ``grammar``,
    ``semantics``, ``typicality``). A WebNLG output rated on three aspects is three rows.
``systems``
    One row per system-level human judgment (WMT ``DA-syslevel.csv``).
``outputs``
    Every candidate a system produced for the test set, judged or not: the full test set that
    system-level (corpus) metrics such as corpus BLEU are computed on.
``rankings``
    Relative-ranking pairs (WMT DARR ``RR-seglevel.csv``): for a segment, one system's output was
    judged better than another's.

Two more tables exist only where a release has error annotations (MQM, :mod:`assay.mqm`); a version
without them has no file for them, so adding them changed no earlier version's digest:

``errors``
    One row per error a rater marked: system, segment, rater, side (``target`` or ``source``), the
    character offsets of its span in the clean text (null for an error without a span, such as an
    omission), category path and severity, and the line of the release it came from.
``ratings``
    One row per (system, segment, rater): the rater's penalty (the weighted sum of their errors under
    the version's weighting scheme, named in ``scheme``) and their error count. The segment's human
    score is minus the mean penalty over its raters.

Three more exist only where a release has them (ESA, :mod:`assay.datasets.formats.esa`):

``rater_scores``
    One row per (system, segment, rater) of a release whose raters give a score directly (ESA's
    0-100): the rater's score on the aspect's scale, the spans they marked, and the file and line it
    came from. The segment's human score is the mean over its raters.
``documents``
    One row per segment of the test set: the document it belongs to and the document's domain.
``domain_scores``
    One row per (system, domain): the system's human score on the segments of one domain.

mt-metrics-eval's data directories (format ``mtme``, :mod:`assay.datasets.formats.mtme`) also fill
``documents`` and ``domain_scores`` (with the released domain-level scores), and three more:

``document_scores``
    One row per (aspect, system, document): a released document-level human score.
``reference_texts``
    One row per (reference, segment): every reference's text, the standard one and the others.
``metric_scores``
    One row per score of an official metric submission, at every level (seg, doc, domain, sys),
    with the file and line it came from: the submissions are external metrics
    (:mod:`assay.results.external_scores`), never recomputed.

The columns ``dataset`` and ``version_digest`` (the first 12 hex digits of the version's digest)
are filled in by the store; parsers leave them out. Versions written before the column was renamed
call it ``version``; :data:`LEGACY_STORE_COLUMNS` maps the old names to the new, and the store
renames them when it reads (:func:`assay.datasets.store.read_table`).
"""

from __future__ import annotations

import pyarrow as pa

TEXT_LIST = pa.list_(pa.string())

SEGMENTS = pa.schema(
    [
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("version_digest", pa.string(), nullable=False),
        # language pair ("de-en") or task ("summarization", "webnlg-seen")
        pa.field("group", pa.string(), nullable=False),
        pa.field("aspect", pa.string(), nullable=False),
        # the input that was rated against (WMT source sentence, WebNLG triple set, HUSE article)
        pa.field("item_id", pa.string(), nullable=False),
        # the dataset's own id of the rated segment (WMT SID, WebNLG row id, HUSE sentence id)
        pa.field("segment_id", pa.string(), nullable=False),
        pa.field("system", pa.string(), nullable=False),
        pa.field("is_human", pa.bool_(), nullable=False),
        pa.field("source", pa.string()),
        pa.field("references", TEXT_LIST, nullable=False),
        pa.field("candidate", pa.string(), nullable=False),
        pa.field("human_z", pa.float64()),
        pa.field("human_raw", pa.float64()),
        pa.field("rating_count", pa.int32()),
        # individual ratings where the dataset publishes them (HUSE: 20 labels per sentence)
        pa.field("ratings", pa.list_(pa.float64())),
    ]
)

SYSTEMS = pa.schema(
    [
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("version_digest", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("aspect", pa.string(), nullable=False),
        pa.field("system", pa.string(), nullable=False),
        pa.field("is_human", pa.bool_(), nullable=False),
        pa.field("human_z", pa.float64()),
        pa.field("human_raw", pa.float64()),
        pa.field("rating_count", pa.int32()),
        # the name under which this system's candidates are stored in ``outputs`` (the judged
        # name can differ from the file name, e.g. WMT17 ``CASICT-cons.5144``); null when none
        pa.field("output_system", pa.string()),
    ]
)

OUTPUTS = pa.schema(
    [
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("version_digest", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("segment_id", pa.string(), nullable=False),
        pa.field("system", pa.string(), nullable=False),
        pa.field("source", pa.string()),
        pa.field("references", TEXT_LIST, nullable=False),
        pa.field("candidate", pa.string(), nullable=False),
    ]
)

RANKINGS = pa.schema(
    [
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("version_digest", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("segment_id", pa.string(), nullable=False),
        pa.field("better_system", pa.string(), nullable=False),
        pa.field("worse_system", pa.string(), nullable=False),
    ]
)

ERRORS = pa.schema(
    [
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("version_digest", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("segment_id", pa.string(), nullable=False),
        pa.field("system", pa.string(), nullable=False),
        pa.field("rater", pa.string(), nullable=False),
        # where the span is: "target" (the rated output) or "source"
        pa.field("side", pa.string(), nullable=False),
        # character offsets of the span in the clean text of that side; null without a span
        pa.field("start", pa.int32()),
        pa.field("end", pa.int32()),
        # hierarchical category path as the release spells it ("Accuracy/Mistranslation")
        pa.field("category", pa.string(), nullable=False),
        pa.field("severity", pa.string(), nullable=False),
        # the physical line of the release file the error came from (1-based)
        pa.field("line", pa.int32(), nullable=False),
    ]
)

RATINGS = pa.schema(
    [
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("version_digest", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("segment_id", pa.string(), nullable=False),
        pa.field("system", pa.string(), nullable=False),
        pa.field("rater", pa.string(), nullable=False),
        # the weighting scheme's signature (assay.mqm.weights), e.g. "mqm-weights:mtme"
        pa.field("scheme", pa.string(), nullable=False),
        # sum of the rater's error weights on the segment (>= 0; the score is minus the mean)
        pa.field("penalty", pa.float64(), nullable=False),
        pa.field("errors", pa.int32(), nullable=False),
    ]
)

RATER_SCORES = pa.schema(
    [
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("version_digest", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("aspect", pa.string(), nullable=False),
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("segment_id", pa.string(), nullable=False),
        pa.field("system", pa.string(), nullable=False),
        pa.field("rater", pa.string(), nullable=False),
        # the rater's own score on the aspect's scale (ESA: 0-100)
        pa.field("score", pa.float64(), nullable=False),
        # the error spans the rater marked on the output (``errors`` rows)
        pa.field("errors", pa.int32(), nullable=False),
        # the release file (relative to the ingested path) and its physical line (1-based)
        pa.field("file", pa.string(), nullable=False),
        pa.field("line", pa.int32(), nullable=False),
    ]
)

DOCUMENTS = pa.schema(
    [
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("version_digest", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("segment_id", pa.string(), nullable=False),
        pa.field("document", pa.string(), nullable=False),
        pa.field("domain", pa.string()),
    ]
)

DOMAIN_SCORES = pa.schema(
    [
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("version_digest", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("aspect", pa.string(), nullable=False),
        pa.field("domain", pa.string(), nullable=False),
        pa.field("system", pa.string(), nullable=False),
        pa.field("is_human", pa.bool_(), nullable=False),
        # mean segment score of the system over its rated segments of the domain
        pa.field("human_raw", pa.float64(), nullable=False),
        # the number of those segments
        pa.field("rating_count", pa.int32(), nullable=False),
    ]
)

# The tables of mt-metrics-eval's data directories (format ``mtme``, :mod:`assay.datasets.formats.mtme`)

DOCUMENT_SCORES = pa.schema(
    [
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("version_digest", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        pa.field("aspect", pa.string(), nullable=False),
        pa.field("document", pa.string(), nullable=False),
        pa.field("system", pa.string(), nullable=False),
        pa.field("is_human", pa.bool_(), nullable=False),
        # the released document-level human score (mt-metrics-eval's ``doc`` level)
        pa.field("human_raw", pa.float64(), nullable=False),
    ]
)

REFERENCE_TEXTS = pa.schema(
    [
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("version_digest", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        # the reference's name (``refA``, ``synthetic_ref``)
        pa.field("reference", pa.string(), nullable=False),
        pa.field("segment_id", pa.string(), nullable=False),
        # null where the release has no text (mt-metrics-eval's ``[No translation supplied]``)
        pa.field("text", pa.string()),
    ]
)

METRIC_SCORES = pa.schema(
    [
        pa.field("dataset", pa.string(), nullable=False),
        pa.field("version_digest", pa.string(), nullable=False),
        pa.field("group", pa.string(), nullable=False),
        # the submission's base name as the file name gives it (``XCOMET-Ensemble``)
        pa.field("metric", pa.string(), nullable=False),
        # the reference(s) it used (``refA``, ``refA.refB``, ``all``), or ``src`` (reference-free)
        pa.field("reference", pa.string(), nullable=False),
        # ``seg``, ``doc``, ``domain`` or ``sys``
        pa.field("level", pa.string(), nullable=False),
        pa.field("domain", pa.string()),  # level ``domain`` only
        pa.field("system", pa.string(), nullable=False),
        pa.field("segment_id", pa.string()),  # level ``seg`` only
        pa.field("score", pa.float64()),
        # the score file, relative to the ingested folder, and its 1-based line (0: a score the file
        # lacks, given 0 by mt-metrics-eval's repair, option ``missing_metric_scores=zero``)
        pa.field("file", pa.string(), nullable=False),
        pa.field("line", pa.int32(), nullable=False),
        pa.field("document", pa.string()),  # level ``doc`` only
    ]
)

TABLES: dict[str, pa.Schema] = {
    "segments": SEGMENTS,
    "systems": SYSTEMS,
    "outputs": OUTPUTS,
    "rankings": RANKINGS,
}

#: tables a version holds only when its release has them (absent otherwise, no empty file)
OPTIONAL_TABLES: dict[str, pa.Schema] = {
    "errors": ERRORS,
    "ratings": RATINGS,
    "rater_scores": RATER_SCORES,
    "documents": DOCUMENTS,
    "domain_scores": DOMAIN_SCORES,
    "document_scores": DOCUMENT_SCORES,
    "reference_texts": REFERENCE_TEXTS,
    "metric_scores": METRIC_SCORES,
}

#: Columns the store adds; parsers produce every other column.
STORE_COLUMNS = ("dataset", "version_digest")
#: store columns under the names versions written earlier have them: old name -> current name
LEGACY_STORE_COLUMNS = {"version": "version_digest"}


def parser_schema(table: str) -> pa.Schema:
    """The schema a parser produces for ``table``: the canonical one without store columns."""
    schema = TABLES.get(table) or OPTIONAL_TABLES[table]
    return pa.schema([f for f in schema if f.name not in STORE_COLUMNS])
