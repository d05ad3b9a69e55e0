"""Content digests identify content, not how it was built."""

from __future__ import annotations

import pyarrow as pa

from assay.provenance import code_version, table_digest


def _tables() -> dict[str, pa.Table]:
    table = pa.table({
        "group": ["de-en", "de-en", "fi-en", None],
        "references": [["a b"], ["c", "d"], [], ["e"]],
        "human_z": [0.1, -0.2, None, 1.5],
    })
    return {"segments": table, "systems": pa.table({"system": ["x"]})}


def test_digest_ignores_chunking_and_table_order() -> None:
    tables = _tables()
    expected = table_digest(tables)
    seg = tables["segments"]
    rechunked = {"systems": tables["systems"], "segments": pa.concat_tables([seg.slice(0, 1), seg.slice(1)])}
    assert table_digest(rechunked) == expected


def test_digest_changes_with_any_value_or_name() -> None:
    tables = _tables()
    expected = table_digest(tables)
    changed = dict(tables)
    changed["segments"] = tables["segments"].set_column(2, "human_z", pa.array([0.1, -0.2, None, 1.25]))
    assert table_digest(changed) != expected
    renamed = {"segments": tables["segments"], "system": tables["systems"]}
    assert table_digest(renamed) != expected
    assert table_digest({**tables, "segments": tables["segments"].slice(0, 3)}) != expected


def test_code_version_names_the_package() -> None:
    assert code_version().startswith("assay-0.1.0")
