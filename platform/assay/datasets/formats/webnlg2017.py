"""WebNLG Challenge 2017 human evaluation with the challenge's test references (format ``webnlg2017``).

The folder holds two files (see ``/work/shared/data/webnlg2017-human-eval/PROVENANCE.md``):

``all_data_final_averaged.csv``
    The averaged ratings of the WebNLG human evaluation (Shimorina et al. 2019), redistributed by
    tramanh1905/bleurt: 10 teams (9 systems and ``webnlg``, the human text) x 223 inputs. Columns
    ``id, mr, team, text, ..., fluency, grammar, semantics``; ratings are means on a 1-3 scale.
    Quoted fields contain line breaks and lines end in CRLF, so it is read with :mod:`csv`.
``testdata_with_lex.xml``
    The challenge test set: ``<entry category eid size>`` with a ``<modifiedtripleset>`` of
    ``<mtriple>`` and the reference texts ``<lex>``.

A CSV row's ``mr`` is joined to the entry whose ``<mtriple>`` texts joined with ``<br>`` equal it;
its references are all the entry's ``<lex>`` texts. Each rated output becomes three ``segments``
rows, one per aspect (semantics, grammar, fluency), with the rating as ``human_raw``.

Identifiers: ``item_id`` is ``"{category}/{size}/{eid}"`` of the XML entry, e.g.
``CelestialBody/1/Id1175`` (category and size keep it unique should ``eid`` repeat across
categories, as it can in other WebNLG files); ``segment_id`` is the CSV ``id``.
``team == "webnlg"`` marks the human text; note that the references contain the original (cased)
form of that very text, so reference-based metrics favour it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from assay.datasets.formats.input_files import InputFiles, count, listing, parse_float, read_csv
from assay.datasets.parsed import ParsedDataset, RowsBuilder
from assay.errors import InputError

RATINGS_FILE = "all_data_final_averaged.csv"
XML_FILE = "testdata_with_lex.xml"
ASPECTS = ("semantics", "grammar", "fluency")
SCALE = (1.0, 3.0)
HUMAN_TEAM = "webnlg"
GROUP = "webnlg2017"
COLUMNS = ("id", "mr", "team", "text", *ASPECTS)


@dataclass(frozen=True)
class Entry:
    """One test input of the XML: its identity and reference texts."""

    item_id: str
    references: list[str]


def read_entries(path: Path, files: InputFiles) -> dict[str, list[Entry]]:
    """The XML entries by their triple set (``<mtriple>`` texts joined with ``<br>``)."""
    data = files.read_bytes(path)
    try:
        root = ET.fromstring(data)
    except ET.ParseError as err:
        raise InputError(
            path, f"malformed XML: {err.msg}", line=err.position[0], expected="well-formed XML"
        ) from None
    entries: dict[str, list[Entry]] = {}
    for element in root.iter("entry"):
        triples = element.find("modifiedtripleset")
        if triples is None:
            continue
        key = "<br>".join((t.text or "").strip() for t in triples.iter("mtriple"))
        item_id = "/".join(element.get(a, "?") for a in ("category", "size", "eid"))
        references = [lex.text.strip() for lex in element.iter("lex") if lex.text and lex.text.strip()]
        entries.setdefault(key, []).append(Entry(item_id, references))
    if not entries:
        raise InputError(path, "no <entry> with a <modifiedtripleset> found", expected="the WebNLG test-set XML")
    return entries


class WebNlg2017Format:
    name = "webnlg2017"
    description = f"WebNLG 2017 human evaluation folder: {RATINGS_FILE} + {XML_FILE}"

    def detect(self, path: Path) -> bool:
        return path.is_dir() and (path / RATINGS_FILE).is_file() and (path / XML_FILE).is_file()

    def parse(self, path: Path, options: Mapping[str, str]) -> ParsedDataset:
        if not self.detect(path):
            raise InputError(path, "not a WebNLG 2017 human-evaluation folder",
                             expected=f"a folder with {RATINGS_FILE} and {XML_FILE}")
        files = InputFiles(path)
        ratings_path = path / RATINGS_FILE
        table = read_csv(ratings_path, files.read_text(ratings_path), required=COLUMNS)
        entries = read_entries(path / XML_FILE, files)
        col = {name: table.index(name) for name in COLUMNS}

        rows = RowsBuilder("segments")
        seen: dict[str, int] = {}
        empty: Counter[str] = Counter()
        line_breaks: Counter[str] = Counter()
        items: set[str] = set()
        for fields, line in zip(table.rows, table.lines, strict=True):
            segment_id, mr, team, text = (fields[col[c]] for c in ("id", "mr", "team", "text"))
            if segment_id in seen:
                raise InputError(ratings_path, f"id {segment_id} was already used on line {seen[segment_id]}",
                                 line=line, expected="a unique id per row")
            seen[segment_id] = line
            matched = entries.get(mr, [])
            if len(matched) != 1:
                found = "no entry" if not matched else f"{len(matched)} entries ({listing(e.item_id for e in matched)})"
                raise InputError(
                    ratings_path, f"the mr {mr[:120]!r} matches {found} of {XML_FILE}", line=line,
                    expected="exactly one <entry> whose <mtriple> texts joined with '<br>' equal the mr",
                )
            entry = matched[0]
            items.add(entry.item_id)
            # The human texts (team webnlg) end in a line break left over from a one-per-line file.
            candidate = text.rstrip("\r\n")
            if candidate != text:
                line_breaks[team] += 1
            if not candidate.strip():
                empty[team] += 1
            for aspect in ASPECTS:
                rating = parse_float(fields[col[aspect]], ratings_path, line, aspect)
                if not SCALE[0] <= rating <= SCALE[1]:
                    raise InputError(ratings_path, f"{aspect} rating {rating} is outside the scale", line=line,
                                     expected=f"a rating from {SCALE[0]:g} to {SCALE[1]:g}")
                rows.append(
                    group=GROUP, aspect=aspect, item_id=entry.item_id, segment_id=segment_id,
                    system=team, is_human=team == HUMAN_TEAM, source=mr, references=entry.references,
                    candidate=candidate, human_raw=rating,
                )

        warnings = []
        if empty:
            warnings.append(
                f"{count(sum(empty.values()), 'rated output')} of {', '.join(sorted(empty))} are empty "
                "(the system produced nothing) and were kept with candidate ''."
            )
        if line_breaks:
            warnings.append(
                f"{count(sum(line_breaks.values()), 'output')} of {', '.join(sorted(line_breaks))} ended "
                "in a line break, which was removed."
            )
        metadata = {
            "year": 2017,
            "challenge": "WebNLG Challenge 2017",
            "scale": list(SCALE),
            "inputs": len(items),
            "teams": sorted({row[col["team"]] for row in table.rows}),
            "xml_entries": sum(len(v) for v in entries.values()),
        }
        if "type" in table.header:
            metadata["types"] = dict(sorted(Counter(r[table.index("type")] for r in table.rows).items()))
        return files.parsed(FORMAT.name, {"segments": rows.build()}, warnings, metadata)


FORMAT = WebNlg2017Format()
