"""HUSE summarization typicality judgments, raw Mechanical Turk batch results (format ``huse``).

Source: hughbzhang/HUSE ``data/summarization_raw_outputs.csv`` (Hashimoto, Zhang & Liang 2019;
see ``/work/shared/data/huse/PROVENANCE.md``). Each row is one MTurk assignment: a worker rated the
25 items of one HIT. Item ``i`` of a row is ``Input.CTX{i}`` (the article), ``Input.TYPE{i}``
(``SUM`` = model headline, ``HUMAN_SUM`` = human headline), ``Input.OUT{i}`` (the headline),
``Input.LOGP{i}`` (the model's log-probability) and the answer ``Answer.{i}``, one of six
typicality buckets: Invalid 0, Rare 1, Specific 2, Average 3, Typical 4, Very Typical 5.

**What a sentence is.** ``Input.IDX{i}`` is only the position inside the HIT (0-24), and the
(article, headline) text does not identify a sentence either: for one article the model headline
equals the human headline, so 199 distinct texts carry 4,000 judgments (one of them 40). A
sentence is a *HIT slot*, ``(HITId, i)``: the 8 HITs were each done by 20 workers, which gives
8 x 25 = 200 sentences with 20 judgments each. ``segment_id`` is ``"{HITId}-{i}"``; ``item_id``
identifies the article (the first 12 hex digits of the SHA-256 of its text), so a model headline
and the human headline of the same article share it. Rows are sorted by (HITId, i).

**Header quirk.** The header names two more columns than the rows have fields: MTurk appends
the reviewer columns ``Approve`` and ``Reject``, which were never filled. Trailing header columns
without values are dropped (with a warning) when every row lacks exactly those.

**Cross-check.** When a folder is given and it holds ``summary_clean.csv`` (the repository's
per-sentence summary: ``HumanJudgement, ModelProbability, Label, LengthOfUtterance``), every
sentence's mean label, log-probability, type and token count must match one of its rows (as a
multiset). Empirically its ``HumanJudgement`` is the mean label **plus one** (a 1-6 scale, not the
0-5 its documentation states); the offset is found by trying 0 and 1 and is recorded in the
metadata and a warning. A mismatch means the two files disagree and raises :class:`InputError`.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.datasets.formats.input_files import (
    InputFiles,
    Table,
    check_row_widths,
    count,
    listing,
    parse_float,
    read_csv,
)
from assay.datasets.parsed import ParsedDataset, RowsBuilder
from assay.errors import InputError
from assay.provenance import short

RAW_FILE = "summarization_raw_outputs.csv"
CLEAN_FILE = "summary_clean.csv"
GROUP = "summarization"
ASPECT = "typicality"
LABELS = {"Invalid": 0, "Rare": 1, "Specific": 2, "Average": 3, "Typical": 4, "Very Typical": 5}
TYPES = {"SUM": "model", "HUMAN_SUM": "human"}  # Input.TYPE -> system
CLEAN_COLUMNS = ("HumanJudgement", "ModelProbability", "Label")
RAW_COLUMNS = ("HITId", "Input.CTX0", "Input.TYPE0", "Input.OUT0", "Answer.0")  # at least one item


@dataclass
class Sentence:
    """One HIT slot: the rated headline and its judgments."""

    hit: str
    slot: int
    line: int  # first row that shows it
    article: str
    headline: str
    type: str
    logp: float | None
    labels: list[float] = field(default_factory=list)

    @property
    def segment_id(self) -> str:
        return f"{self.hit}-{self.slot}"

    @property
    def mean(self) -> float:
        return sum(self.labels) / len(self.labels)


def _slots(header: list[str]) -> list[int]:
    """The item positions i that have an ``Answer.{i}`` column, in numeric order."""
    return sorted(int(name[7:]) for name in header if name.startswith("Answer.") and name[7:].isdigit())


def _drop_unfilled_columns(table: Table) -> str | None:
    """Drop trailing header columns that the rows have no fields for (MTurk's Approve/Reject).

    The rows' usual width decides; only columns the parser does not need may be dropped. Rows
    of another width are then reported by :func:`check_row_widths` (truncated rows).
    """
    width = len(table.header)
    usual = Counter(len(row) for row in table.rows).most_common(1)[0][0] if table.rows else width
    dropped = table.header[usual:]
    if not dropped or any(name.startswith(("Input.", "Answer.")) or name == "HITId" for name in dropped):
        check_row_widths(table)
        return None
    table.header = table.header[:usual]
    check_row_widths(table)
    return (
        f"The header of {table.path.name} names {width} columns but its {count(len(table.rows), 'row')} "
        f"have {usual} fields: the last {len(dropped)} header columns ({', '.join(dropped)}) have no "
        "values and were ignored."
    )


def read_sentences(path: Path, table: Table) -> list[Sentence]:
    """Group the judgments of all assignments by HIT slot; validates labels, types and texts."""
    slots = _slots(table.header)  # read_csv has checked that Answer.0 is there
    needed = [f"Input.{kind}{i}" for i in slots for kind in ("CTX", "TYPE", "OUT")]
    missing = [name for name in needed if name not in table.header]
    if missing:
        raise InputError(path, f"missing column(s) {listing(missing)}", line=1,
                         expected="Input.CTX{i}, Input.TYPE{i} and Input.OUT{i} for every Answer.{i}")
    index = {name: i for i, name in enumerate(table.header)}
    hit_col = index["HITId"]
    sentences: dict[tuple[str, int], Sentence] = {}
    for row, line in zip(table.rows, table.lines, strict=True):
        hit = row[hit_col]
        for i in slots:
            answer = row[index[f"Answer.{i}"]]
            if answer not in LABELS:
                raise InputError(path, f"Answer.{i} is {answer!r}", line=line,
                                 expected="one of " + ", ".join(LABELS))
            kind = row[index[f"Input.TYPE{i}"]]
            if kind not in TYPES:
                raise InputError(path, f"Input.TYPE{i} is {kind!r}", line=line, expected="SUM or HUMAN_SUM")
            logp_col = index.get(f"Input.LOGP{i}")
            logp = None if logp_col is None else parse_float(row[logp_col], path, line, f"Input.LOGP{i}")
            shown = Sentence(hit, i, line, row[index[f"Input.CTX{i}"]], row[index[f"Input.OUT{i}"]], kind, logp)
            sentence = sentences.setdefault((hit, i), shown)
            if (sentence.article, sentence.headline, sentence.type, sentence.logp) != (
                shown.article, shown.headline, shown.type, shown.logp
            ):
                raise InputError(
                    path, f"HIT {hit} item {i} shows another article or headline than on line {sentence.line}",
                    line=line, expected="the same inputs in every assignment of a HIT",
                )
            sentence.labels.append(float(LABELS[answer]))
    return [sentences[key] for key in sorted(sentences)]


def cross_check(path: Path, table: Table, sentences: list[Sentence]) -> int:
    """Match ``summary_clean.csv`` against the sentences; return its scale offset (0 or 1)."""
    index = {name: table.index(name) for name in CLEAN_COLUMNS}
    length_col = table.header.index("LengthOfUtterance") if "LengthOfUtterance" in table.header else None
    use_logp = all(s.logp is not None for s in sentences)
    clean = []
    for row, line in zip(table.rows, table.lines, strict=True):
        label = row[index["Label"]].strip()
        if label not in ("True", "False"):
            raise InputError(path, f"Label is {label!r}", line=line, expected="True (model) or False (human)")
        key: tuple[Any, ...] = (
            round(parse_float(row[index["HumanJudgement"]], path, line, "HumanJudgement"), 6),
            round(parse_float(row[index["ModelProbability"]], path, line, "ModelProbability"), 4) if use_logp else None,
            label == "True",
            int(parse_float(row[length_col], path, line, "LengthOfUtterance")) if length_col is not None else None,
        )
        clean.append((line, key))

    best: tuple[int, int, list[int]] | None = None
    for offset in (0, 1):
        pool = Counter(
            (
                round(s.mean + offset, 6),
                round(s.logp, 4) if use_logp and s.logp is not None else None,
                s.type == "SUM",
                len(s.headline.split()) if length_col is not None else None,
            )
            for s in sentences
        )
        unmatched = []
        for line, key in clean:
            if pool[key] > 0:
                pool[key] -= 1
            else:
                unmatched.append(line)
        if not unmatched and len(clean) == len(sentences):
            return offset
        if best is None or len(unmatched) < best[1]:
            best = (offset, len(unmatched), unmatched)
    assert best is not None
    offset, _, unmatched = best
    if unmatched:
        raise InputError(
            path, f"{count(len(unmatched), 'row')} {'matches' if len(unmatched) == 1 else 'match'} no "
            f"sentence of {RAW_FILE}", line=unmatched[0],
            expected=f"each row to be a sentence's mean label (+{offset}), log-probability, type and length",
        )
    raise InputError(path, f"the file has {count(len(clean), 'row')} but {RAW_FILE} has "
                     f"{count(len(sentences), 'sentence')}", expected="one row per sentence")


def _article_id(text: str) -> str:
    return short(hashlib.sha256(text.encode("utf-8")).hexdigest())


class HuseFormat:
    name = "huse"
    description = f"HUSE raw MTurk batch results ({RAW_FILE}, or its folder with {CLEAN_FILE})"

    def detect(self, path: Path) -> bool:
        if path.is_dir():
            return (path / RAW_FILE).is_file()
        if path.suffix.lower() != ".csv" or not path.is_file():
            return False
        try:
            with path.open(encoding="utf-8", errors="replace") as handle:
                header = handle.readline()
        except OSError:
            return False
        return "Input.OUT0" in header and "Answer.0" in header

    def parse(self, path: Path, options: Mapping[str, str]) -> ParsedDataset:
        raw_path = path / RAW_FILE if path.is_dir() else path
        files = InputFiles(path)
        table = read_csv(raw_path, files.read_text(raw_path), required=RAW_COLUMNS, check_width=False)
        warnings = []
        if header_warning := _drop_unfilled_columns(table):
            warnings.append(header_warning)
        sentences = read_sentences(raw_path, table)

        rows = RowsBuilder("segments")
        for s in sentences:
            rows.append(
                group=GROUP, aspect=ASPECT, item_id=_article_id(s.article), segment_id=s.segment_id,
                system=TYPES[s.type], is_human=s.type == "HUMAN_SUM", source=s.article, references=[],
                candidate=s.headline, human_raw=s.mean, rating_count=len(s.labels), ratings=s.labels,
            )

        metadata: dict[str, Any] = {
            "task": GROUP,
            "labels": LABELS,
            "sentences": len(sentences),
            "hits": len({s.hit for s in sentences}),
            "judgments": sum(len(s.labels) for s in sentences),
            # the model's log p of each sentence (HUSE combines it with the human judgments)
            "model_logp": {s.segment_id: s.logp for s in sentences if s.logp is not None},
        }
        if "WorkerId" in table.header:
            metadata["workers"] = len({row[table.index("WorkerId")] for row in table.rows})
        human_headlines = {(s.article, s.headline) for s in sentences if s.type == "HUMAN_SUM"}
        same = sum(1 for s in sentences if s.type == "SUM" and (s.article, s.headline) in human_headlines)
        if same:
            warnings.append(
                f"{count(same, 'model headline')} {'equals' if same == 1 else 'equal'} the human headline "
                "of the same article; both "
                "are kept as separate sentences (they are separate HIT slots with their own judgments)."
            )

        clean_path = path / CLEAN_FILE
        if path.is_dir() and clean_path.is_file():
            clean = read_csv(clean_path, files.read_text(clean_path), required=CLEAN_COLUMNS)
            offset = cross_check(clean_path, clean, sentences)
            metadata["summary_clean_scale"] = f"{offset}-{5 + offset}"
            if offset:
                warnings.append(
                    f"{CLEAN_FILE} gives each sentence's mean label plus {offset} (a {offset}-{5 + offset} "
                    f"scale); with that offset all its {count(len(clean.rows), 'row')} match {RAW_FILE}."
                )
        return files.parsed(FORMAT.name, {"segments": rows.build()}, warnings, metadata)


FORMAT = HuseFormat()
