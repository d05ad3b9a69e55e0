"""docs/STORAGE.md is the spec of the results store: each schema it lists is the code's.

The "Results schemas" section has one table per store (``#### `name```, then ``| column | type |
meaning |`` rows); every store the code declares (:data:`assay.results.schemas.SCHEMAS`) must have
one, listing exactly its columns, in order, with their types and nullability (``, null``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from assay.datasets.schema import OPTIONAL_TABLES
from assay.results import parts
from assay.results.schemas import SCHEMAS

STORAGE = Path(__file__).resolve().parents[1] / "docs" / "STORAGE.md"
Column = tuple[str, str]


def type_text(data_type: pa.DataType) -> str:
    """How STORAGE.md writes an Arrow type."""
    if pa.types.is_map(data_type):
        return f"map<{type_text(data_type.key_type)}, {type_text(data_type.item_type)}>"
    if pa.types.is_list(data_type):
        return f"list<{type_text(data_type.value_type)}>"
    if pa.types.is_timestamp(data_type):
        return f"timestamp[{data_type.unit}, {data_type.tz}]"
    return {"double": "float64"}.get(str(data_type), str(data_type))


def code_columns(schema: pa.Schema) -> list[Column]:
    return [(f.name, type_text(f.type) + (", null" if f.nullable else "")) for f in schema]


def documented_schemas(text: str, section_title: str = "### Results schemas") -> dict[str, list[Column]]:
    """store -> [(column, type)] from the tables of a section ("Results schemas" by default)."""
    section = text.split(section_title, 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    tables: dict[str, list[Column]] = {}
    for block in re.split(r"^#### ", section, flags=re.MULTILINE)[1:]:
        name = re.match(r"`([a-z_]+)`", block)
        assert name, f"a results schema heading without a `name`: {block.splitlines()[0]!r}"
        rows = [line for line in block.splitlines() if line.startswith("| `")]
        tables[name.group(1)] = [(cells[0].strip("`"), cells[1]) for cells in
                                 ([c.strip() for c in row.strip("|").split("|")] for row in rows)]
    return tables


def mismatches(documented: dict[str, list[Column]], declared: dict[str, pa.Schema]) -> list[str]:
    problems = [f"{name}: declared in code, not in STORAGE.md" for name in sorted(set(declared) - set(documented))]
    problems += [f"{name}: in STORAGE.md, not declared in code" for name in sorted(set(documented) - set(declared))]
    for name in sorted(set(declared) & set(documented)):
        code, doc = code_columns(declared[name]), documented[name]
        if code != doc:
            problems.append(f"{name}: only in code {[c for c in code if c not in doc]}, "
                            f"only in STORAGE.md {[c for c in doc if c not in code]}"
                            + (", order differs" if sorted(code) == sorted(doc) else ""))
    return problems


def test_every_results_schema_in_storage_md_is_the_code_s() -> None:
    documented = documented_schemas(STORAGE.read_text(encoding="utf-8"))
    assert set(documented) == set(SCHEMAS) and len(SCHEMAS) == 8
    assert mismatches(documented, SCHEMAS) == []


@pytest.mark.parametrize("change", ["column added in code", "column added in the doc", "type changed in code",
                                    "nullability changed in code", "store missing from the doc"])
def test_the_check_fails_when_code_and_doc_disagree(change: str) -> None:
    documented = documented_schemas(STORAGE.read_text(encoding="utf-8"))
    declared = dict(SCHEMAS)
    if change == "column added in code":
        declared["correlations"] = declared["correlations"].append(pa.field("new_column", pa.string()))
    elif change == "column added in the doc":
        documented["significance"] = [*documented["significance"], ("new_column", "string")]
    elif change == "type changed in code":
        index = declared["model_selection"].get_field_index("n_trials")
        declared["model_selection"] = declared["model_selection"].set(index, pa.field("n_trials", pa.int32(), False))
    elif change == "nullability changed in code":
        index = declared["robustness"].get_field_index("value")
        declared["robustness"] = declared["robustness"].set(index, pa.field("value", pa.float64(), False))
    else:
        del documented["system_points"]
    assert len(mismatches(documented, declared)) == 1


def test_storage_md_lists_every_renamed_column() -> None:
    text = STORAGE.read_text(encoding="utf-8").split("### Renamed columns", 1)[1].split("\n## ", 1)[0]
    listed = dict(re.findall(r"^\| `([a-z_]+)` \| `([a-z_]+)` \|", text, flags=re.MULTILINE))
    assert listed == parts.RENAMED


def test_the_mqm_tables_in_storage_md_are_the_code_s() -> None:
    # the optional dataset tables of error-annotated releases (errors, ratings)
    documented = documented_schemas(STORAGE.read_text(encoding="utf-8"), "### MQM versions")
    assert set(documented) == {"errors", "ratings"}
    assert mismatches(documented, {name: OPTIONAL_TABLES[name] for name in documented}) == []


def test_the_mtme_tables_in_storage_md_are_the_code_s() -> None:
    # the optional dataset tables of mt-metrics-eval's data directories (format mtme)
    documented = documented_schemas(STORAGE.read_text(encoding="utf-8"), "### MTME versions")
    assert set(documented) == {"document_scores", "reference_texts", "metric_scores"}
    assert mismatches(documented, {name: OPTIONAL_TABLES[name] for name in documented}) == []
