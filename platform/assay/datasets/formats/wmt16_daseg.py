"""The WMT16 segment-level DA release "DAseg-wmt-newstest2016" (format ``wmt16-daseg``).

A folder of line-aligned files, four per language pair (see
``/work/shared/data/wmt16-da-seg/PROVENANCE.md``; copied from NL2G/effeval
``datasets/wmt16-selection/``)::

    DAseg.newstestYYYY.human.<lp>       standardized (z) mean DA score, one float per line
    DAseg.newstestYYYY.mt-system.<lp>   the rated MT output
    DAseg.newstestYYYY.reference.<lp>   the reference translation
    DAseg.newstestYYYY.source.<lp>      the source sentence

Line i of every file is segment i (1-based), which is both ``item_id`` and ``segment_id``. The
release does not name the systems, so every row has system ``mt-system`` (warned once). The same
layout was used for WMT15, so the year is read from the file names. There are no system-level
scores and no full system outputs: only the ``segments`` table is filled.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from assay.datasets.formats.input_files import InputFiles, parse_float, table_from_columns
from assay.datasets.parsed import ParsedDataset
from assay.errors import InputError

KINDS = ("human", "mt-system", "reference", "source")
SYSTEM = "mt-system"
_NAME = re.compile(
    r"^DAseg\.(?P<testset>newstest(?P<year>\d{4}))\.(?P<kind>human|mt-system|reference|source)\.(?P<lp>[^.]+)$"
)


def _matches(path: Path) -> list[re.Match[str]]:
    return [m for p in sorted(path.iterdir()) if p.is_file() and (m := _NAME.match(p.name))]


class Wmt16DasegFormat:
    name = "wmt16-daseg"
    description = "WMT16 DAseg folder: DAseg.newstestYYYY.{human,mt-system,reference,source}.<lp> line-aligned files"

    def detect(self, path: Path) -> bool:
        return path.is_dir() and bool(_matches(path))

    def parse(self, path: Path, options: Mapping[str, str]) -> ParsedDataset:
        matches = _matches(path) if path.is_dir() else []
        if not matches:
            raise InputError(
                path, "no DAseg files found",
                expected="a folder of DAseg.newstestYYYY.{human,mt-system,reference,source}.<lp> files",
            )
        test_sets = sorted({m["testset"] for m in matches})
        if len(test_sets) > 1:
            raise InputError(
                path, f"the folder holds the files of several test sets: {', '.join(test_sets)}",
                expected="the DAseg files of one test set",
            )
        test_set, year = test_sets[0], int(matches[0]["year"])
        files = InputFiles(path)
        columns: dict[str, list[object]] = {
            name: []
            for name in ("group", "item_id", "segment_id", "source", "references", "candidate", "human_z")
        }
        pairs = sorted({m["lp"] for m in matches})
        for lp in pairs:
            texts = {}
            for kind in KINDS:
                file = path / f"DAseg.{test_set}.{kind}.{lp}"
                if not file.is_file():
                    raise InputError(
                        file, f"the {kind} file of {lp} is missing",
                        expected=f"all four files {', '.join(KINDS)} for each language pair",
                    )
                texts[kind] = files.read_lines(file)
            human_path = path / f"DAseg.{test_set}.human.{lp}"
            n = len(texts["human"])
            for kind in KINDS[1:]:
                if len(texts[kind]) != n:
                    raise InputError(
                        path / f"DAseg.{test_set}.{kind}.{lp}",
                        f"the file has {len(texts[kind]):,} lines but {human_path.name} has {n:,}",
                        expected=f"{n:,} lines, line-aligned with the other files of {lp}",
                    )
            scores = [parse_float(v, human_path, i, "the DA score") for i, v in enumerate(texts["human"], 1)]
            ids = [str(i) for i in range(1, n + 1)]
            columns["group"].extend([lp] * n)
            columns["item_id"].extend(ids)
            columns["segment_id"].extend(ids)
            columns["source"].extend(texts["source"])
            columns["references"].extend([r] for r in texts["reference"])
            columns["candidate"].extend(texts["mt-system"])
            columns["human_z"].extend(scores)
        size = len(columns["group"])
        columns.update(aspect=["da"] * size, system=[SYSTEM] * size, is_human=[False] * size)
        warnings = [
            f"The release does not name the MT systems: all {size:,} segments have system {SYSTEM!r}."
        ]
        return files.parsed(FORMAT.name, {"segments": table_from_columns("segments", columns)}, warnings,
                            {"test_set": test_set, "year": year, "language_pairs": pairs})


FORMAT = Wmt16DasegFormat()
