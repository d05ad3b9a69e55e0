"""A fixed, seeded sample of each group's segments, kept in every table of a parsed input.

``assay ingest PATH -o sample_segments=N [-o sample_seed=S]`` keeps, per group (language pair,
task), ``N`` of its source segments and drops every other row that names a segment: judgments,
relative rankings and the system outputs of the full test set alike. Every system of a group keeps
the *same* segments, so a system-level score computed from the sample (the mean of segment scores,
``assay score --scope outputs``) compares systems on the same items, as the full test set does; the
system-level human scores (no ``segment_id``) are kept whole.

Why: scoring every output of a full test set with a learned metric is slow on a CPU (WMT18's
to-English outputs: about 200,000 lines). A sample of segments per system is enough to rank the
systems, at a cost one can pay for each candidate setting (issue 31: choosing a recipe's defaults on
another year's system-level ranking). What is kept is a function of the seed, the group and the
segment id only (the first ``N`` by SHA-256 of ``seed, group, segment_id``), not of the file's
order, so the same option keeps the same segments of any input that holds them.

The options are part of the version's source key, so a sample is a dataset version of its own.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from assay.datasets.parsed import ParsedDataset
from assay.errors import InputError

SAMPLE_OPTION = "sample_segments"
"""``-o sample_segments=N``: keep N segments of each group (all of them where a group has fewer)."""
SEED_OPTION = "sample_seed"
"""``-o sample_seed=S``: which N (default 0); only with :data:`SAMPLE_OPTION`."""
DEFAULT_SEED = 0


def _whole_number(path: Path, key: str, raw: str, *, least: int) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        value = least - 1
    if value < least:
        raise InputError(path, f"option {key}={raw!r} is not a whole number of at least {least}",
                         expected=f"{key}=N with N >= {least}")
    return value


def sample_rank(seed: int, group: str, segment_id: str) -> bytes:
    """The order segments are taken in: SHA-256 of the seed, the group and the segment id."""
    return hashlib.sha256(f"{seed}\0{group}\0{segment_id}".encode()).digest()


def keep_sampled_segments(path: Path, parsed: ParsedDataset, size_option: str,
                          seed_option: str | None) -> ParsedDataset:
    """``parsed`` with only a seeded sample of ``size_option`` segments per group in every table that
    has ``group`` and ``segment_id`` columns; what was kept is recorded in the metadata and a warning."""
    size = _whole_number(path, SAMPLE_OPTION, size_option, least=1)
    seed = DEFAULT_SEED if seed_option is None else _whole_number(path, SEED_OPTION, seed_option, least=0)
    segment_tables = [name for name, table in parsed.tables.items()
                      if {"group", "segment_id"} <= set(table.column_names) and table.num_rows]
    if not segment_tables:
        raise InputError(path, f"option {SAMPLE_OPTION}={size_option!r}: this input has no per-segment rows",
                         expected="an input with judged segments or system outputs")
    segments: dict[str, set[str]] = defaultdict(set)
    for name in segment_tables:
        table = parsed.tables[name]
        for group, segment_id in zip(table.column("group").to_pylist(), table.column("segment_id").to_pylist(),
                                     strict=True):
            segments[group].add(segment_id)
    kept = {group: sorted(ids, key=partial(sample_rank, seed, group))[:size] for group, ids in segments.items()}
    wanted = pa.array([f"{group}\0{sid}" for group, ids in kept.items() for sid in ids], type=pa.string())
    for name in segment_tables:
        table = parsed.tables[name]
        keys = pc.binary_join_element_wise(table.column("group"), table.column("segment_id"), "\0")
        parsed.tables[name] = table.filter(pc.is_in(keys, value_set=wanted))
    of = {group: len(ids) for group, ids in sorted(segments.items())}
    parsed.metadata["segment_sample"] = {"size": size, "seed": seed, "of": of,
                                         "kept": {group: len(kept[group]) for group in of}}
    parsed.warnings.append(
        f"A seeded sample of segments was kept ({SAMPLE_OPTION}={size}, {SEED_OPTION}={seed}), the same for "
        "every system of a group: " + ", ".join(f"{group} {len(kept[group])} of {n}" for group, n in of.items())
        + "; system-level human scores are of the full test set.")
    return parsed
