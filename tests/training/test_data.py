"""Training tables: the WMT helper on the real WMT16 DAseg release, the item split of appendix B.2
("no leak" between training and validation), standardisation (appendix A.2), and bad tables
refused with one message naming the table, the column and the row."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from assay.config import load_settings
from assay.datasets import store
from assay.errors import InputError
from assay.jobs.ingest import ingest_path
from assay.workers.training import Objective, training_table_from_segments
from assay.workers.training.data import (
    Standardisation,
    check_split,
    items_digest,
    read_rows,
    split_by_item,
)

RATING = [Objective("rating", "human")]


def test_wmt16_segments_become_a_training_table(shared_data: Path) -> None:
    result = ingest_path(shared_data / "wmt16-da-seg")
    settings = load_settings()
    version = result.version
    segments = store.read_table(settings, store.relative_version_path(version.name, version.digest), "segments")
    to_english = sorted(g for g in set(segments.column("group").to_pylist()) if g.endswith("-en"))
    assert to_english == ["cs-en", "de-en", "fi-en", "ro-en", "ru-en", "tr-en"]

    table = training_table_from_segments(segments, groups=to_english)
    assert table.num_rows == 6 * 560  # PROVENANCE.md: 560 segments per pair
    assert table.schema.field("human_z").type == pa.float64()
    first = table.slice(0, 1).to_pylist()[0]
    de_en = shared_data / "wmt16-da-seg"
    group = first["group"]
    line = int(first["item_id"].split("/")[1])
    assert first["item_id"] == f"{group}/{line}"
    refs = (de_en / f"DAseg.newstest2016.reference.{group}").read_text(encoding="utf-8").splitlines()
    hyps = (de_en / f"DAseg.newstest2016.mt-system.{group}").read_text(encoding="utf-8").splitlines()
    scores = (de_en / f"DAseg.newstest2016.human.{group}").read_text(encoding="utf-8").splitlines()
    assert first["reference"] == refs[line - 1].strip()
    assert first["candidate"] == hyps[line - 1].strip()
    assert first["human_z"] == pytest.approx(float(scores[line - 1]), abs=1e-12)
    # item ids are unique per language pair: the same line number in two pairs is two items
    assert len(set(table.column("item_id").to_pylist())) == 6 * 560

    rows = read_rows(table, [Objective("rating", "human_z")])
    _, val_idx = split_by_item(rows.item_ids, 0.1, seed=12345)
    assert len(val_idx) == round(0.1 * 6 * 560)

    with pytest.raises(InputError, match=r"segments: no rows in groups xx-en"):
        training_table_from_segments(segments, groups=["xx-en"])
    with pytest.raises(InputError, match=r"segments: missing column\(s\) human_raw"):
        training_table_from_segments(segments.drop_columns(["human_raw"]), target="human_raw")


def test_split_holds_out_whole_items(rows: list[dict[str, Any]]) -> None:
    table = read_rows(rows, RATING)
    train_idx, val_idx = split_by_item(table.item_ids, 0.1, seed=3)
    train_items = {table.item_ids[i] for i in train_idx}
    val_items = {table.item_ids[i] for i in val_idx}
    assert not train_items & val_items
    assert len(val_items) == 6 and len(train_items) == 54  # 10% of 60 items, all 4 pairs of each
    assert len(val_idx) == 24 and sorted([*train_idx, *val_idx]) == list(range(len(rows)))
    again = split_by_item(table.item_ids, 0.1, seed=3)
    assert np.array_equal(again[1], val_idx)
    assert not np.array_equal(split_by_item(table.item_ids, 0.1, seed=4)[1], val_idx)
    assert items_digest([table.item_ids[i] for i in val_idx]) == items_digest(sorted(val_items))


def test_standardisation_uses_present_training_values() -> None:
    values = np.array([1.0, 2.0, math.nan, 3.0, 4.0])
    norm = Standardisation.fit(values, "human", "t")
    assert norm.mean == pytest.approx(2.5) and norm.std == pytest.approx(np.std([1, 2, 3, 4]))
    z = norm.apply(values)
    assert np.isnan(z[2]) and np.nanmean(z) == pytest.approx(0, abs=1e-12)
    assert norm.to_json() == {"type": "affine", "mean": norm.mean, "std": norm.std}
    with pytest.raises(InputError, match="column 'human' is constant"):
        Standardisation.fit(np.array([2.0, 2.0, math.nan]), "human", "training table")


def _edit(rows: list[dict[str, Any]], row: int, **changes: Any) -> list[dict[str, Any]]:
    copy = [dict(r) for r in rows]
    copy[row].update(changes)
    return copy


@pytest.mark.parametrize(
    ("change", "objectives", "message"),
    [
        (lambda rows: [{k: v for k, v in r.items() if k != "human"} for r in rows], RATING,
         r"training table: missing column\(s\) human"),
        (lambda rows: _edit(rows, 5, human=math.inf), RATING,
         r"training table: column 'human', row 5: inf \(1 infinite value\(s\)\) \(expected finite numbers"),
        (lambda rows: _edit(rows, 7, human="high"), RATING, r"column 'human' is not numeric"),
        (lambda rows: _edit(rows, 3, candidate=None), RATING,
         r"column 'candidate', row 3: NoneType None \(expected a string\)"),
        (lambda rows: _edit(rows, 2, label=3.0), [Objective("e", "label", kind="classification", n_classes=3)],
         r"column 'label', row 2: 3.0 \(expected a class index 0..2"),
        (lambda rows: _edit(rows, 4, p0=0.9), [Objective("e", ("p0", "p1", "p2"), kind="classification",
                                                         n_classes=3)],
         r"columns p0, p1, p2, row 4: .* \(expected class probabilities"),
        (lambda rows: pa.Table.from_pylist(rows).slice(0, 0), RATING, "training table: has no rows"),
    ],
)
def test_bad_tables_are_refused(rows: list[dict[str, Any]], change: Any, objectives: list[Objective],
                                message: str) -> None:
    with pytest.raises(InputError, match=message):
        read_rows(change(rows), objectives)


def test_bad_splits_are_refused(rows: list[dict[str, Any]]) -> None:
    table = read_rows(rows, RATING)
    train = table.take(np.arange(0, 200))
    overlapping = read_rows(rows[196:], RATING, source="validation table")
    with pytest.raises(InputError, match=r"validation table: shares 1 item\(s\) with the training split "
                                         r"\(e.g. 'item-49'\)"):
        check_split(train, overlapping, "human")
    empty = table.take(np.arange(0))
    with pytest.raises(InputError, match="the validation split is empty"):
        check_split(train, empty, "human")
    missing = read_rows([{**r, "human": math.nan} for r in rows[200:]], RATING, source="validation table")
    with pytest.raises(InputError, match=r"has 0 present value\(s\) of the primary column 'human'"):
        check_split(train, missing, "human")
    with pytest.raises(InputError, match=r"has 1 distinct item_id\(s\)"):
        split_by_item(["a", "a", "a"], 0.1, 0)
