"""``-o sample_segments=N [-o sample_seed=S]``: a seeded sample of each group's segments, the same for
every system, kept in every table (assay.datasets.formats.segment_sample), on a copy of WMT17's cs-en
(the real package's first 300 lines: judgments, the full test set's outputs and system scores)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.datasets import formats
from assay.datasets.formats.segment_sample import sample_rank
from assay.errors import InputError
from assay.jobs.ingest import ingest_path


def _ids_by_system(parsed: formats.ParsedDataset) -> dict[str, set[str]]:
    ids: dict[str, set[str]] = defaultdict(set)
    table = parsed.tables["outputs"]
    for system, segment_id in zip(table.column("system").to_pylist(), table.column("segment_id").to_pylist(),
                                  strict=True):
        ids[system].add(segment_id)
    return ids


def test_every_system_keeps_the_same_seeded_segments_in_every_table(wmt_package: Callable[..., Path]) -> None:
    path = wmt_package(("cs-en",), lines=300)
    full = formats.parse(path)
    sampled = formats.parse(path, options={"sample_segments": "40", "sample_seed": "7"})
    by_system = _ids_by_system(sampled)
    assert len(by_system) == len(_ids_by_system(full)) >= 4  # every system is still there
    [kept] = {frozenset(ids) for ids in by_system.values()}  # ... with the same 40 segments
    assert len(kept) == 40
    # the 40 are the first by the documented rank, whatever the file order
    all_ids = set(full.tables["outputs"].column("segment_id").to_pylist())
    assert kept == set(sorted(all_ids, key=lambda sid: sample_rank(7, "cs-en", sid))[:40])
    judged = set(sampled.tables["segments"].column("segment_id").to_pylist())
    assert judged and judged <= kept
    assert sampled.tables["segments"].num_rows == sum(
        sid in kept for sid in full.tables["segments"].column("segment_id").to_pylist())
    assert sampled.tables["systems"].equals(full.tables["systems"])  # system-level human scores: whole
    assert sampled.metadata["segment_sample"] == {"size": 40, "seed": 7, "of": {"cs-en": 300},
                                                  "kept": {"cs-en": 40}}
    assert any("sample_segments=40, sample_seed=7" in w and "cs-en 40 of 300" in w for w in sampled.warnings)


def test_the_sample_depends_on_the_seed_only(wmt_package: Callable[..., Path]) -> None:
    path = wmt_package(("cs-en",), lines=300)
    first = _ids_by_system(formats.parse(path, options={"sample_segments": "25"}))
    again = _ids_by_system(formats.parse(path, options={"sample_segments": "25", "sample_seed": "0"}))
    other = _ids_by_system(formats.parse(path, options={"sample_segments": "25", "sample_seed": "1"}))
    assert first == again and first != other
    everything = formats.parse(path, options={"sample_segments": "1000"})  # more than the group has: all
    assert everything.metadata["segment_sample"]["kept"] == {"cs-en": 300}


@pytest.mark.parametrize(("options", "message"), [
    ({"sample_segments": "0"}, "option sample_segments='0' is not a whole number of at least 1"),
    ({"sample_segments": "ten"}, "option sample_segments='ten' is not a whole number of at least 1"),
    ({"sample_segments": "10", "sample_seed": "-1"}, "option sample_seed='-1' is not a whole number of at least 0"),
    ({"sample_seed": "3"}, "option sample_seed needs sample_segments"),
])
def test_a_bad_sample_option_is_one_error_naming_the_input(wmt_package: Callable[..., Path],
                                                           options: dict[str, str], message: str) -> None:
    path = wmt_package(("cs-en",), lines=30)
    with pytest.raises(InputError, match=message) as raised:
        formats.parse(path, options=options)
    assert str(path) in str(raised.value)


def test_a_sample_is_a_version_of_its_own(wmt_package: Callable[..., Path]) -> None:
    path = wmt_package(("cs-en",), lines=60)
    sample = ingest_path(path, options={"sample_segments": "20"})
    full = ingest_path(path)
    assert sample.version.digest != full.version.digest
    assert ingest_path(path, options={"sample_segments": "20"}).version.digest == sample.version.digest
    assert sample.row_counts["outputs"] == 20 * len(_ids_by_system(formats.parse(path)))
