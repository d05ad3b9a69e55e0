"""``-o groups=...``: every format keeps only the named groups of its input, on the real releases."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from assay.datasets import formats
from assay.errors import InputError
from assay.jobs.ingest import ingest_path


def _groups(parsed: formats.ParsedDataset) -> dict[str, set[str]]:
    return {name: set(table.column("group").to_pylist()) for name, table in parsed.tables.items()
            if "group" in table.column_names and table.num_rows}


def test_kept_groups_are_the_same_rows_of_every_table(shared_data: Path) -> None:
    path = shared_data / "wmt16-da-seg"
    full = formats.parse(path)
    kept = formats.parse(path, options={"groups": "de-en, cs-en"})
    assert set().union(*_groups(full).values()) > {"cs-en", "de-en"}
    wanted = pa.array(["cs-en", "de-en"])
    for name, table in full.tables.items():
        if "group" in table.column_names:
            assert kept.tables[name].equals(table.filter(pc.is_in(table.column("group"), value_set=wanted))), name
    assert set().union(*_groups(kept).values()) == {"cs-en", "de-en"}
    assert kept.tables["segments"].num_rows == sum(
        g in ("cs-en", "de-en") for g in full.tables["segments"].column("group").to_pylist())
    assert kept.metadata["groups_kept"] == ["cs-en", "de-en"]
    assert any("groups were kept (option groups): cs-en, de-en" in w for w in kept.warnings)


def test_a_format_that_checks_its_own_options_takes_groups_too(shared_data: Path) -> None:
    # the ESA parser refuses options it does not know; groups is handled before it
    parsed = formats.parse(shared_data / "esa-wmt24", options={"groups": "en-cs"})
    assert set().union(*_groups(parsed).values()) == {"en-cs"}


def test_an_unknown_group_is_refused_naming_the_input_and_what_it_has(shared_data: Path) -> None:
    path = shared_data / "wmt16-da-seg"
    with pytest.raises(InputError, match="this input has no group xx-en") as raised:
        ingest_path(path, options={"groups": "cs-en,xx-en"})
    assert str(path.resolve()) in str(raised.value) and "cs-en, de-en" in str(raised.value)
    with pytest.raises(InputError, match="names no group"):
        formats.parse(path, options={"groups": " , "})


def test_a_subset_is_a_version_of_its_own(shared_data: Path) -> None:
    path = shared_data / "wmt16-da-seg"
    subset = ingest_path(path, options={"groups": "cs-en"})
    full = ingest_path(path)
    assert subset.version.digest != full.version.digest
    assert ingest_path(path, options={"groups": "cs-en"}).version.digest == subset.version.digest
