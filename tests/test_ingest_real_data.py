"""Every shared dataset ingests into one catalog with the shapes its PROVENANCE.md states,
re-ingesting all of them is a no-op, and `assay sql` sees them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from assay.catalog.dataset_versions import list_versions
from assay.catalog.engine import reset_engines, session_scope
from assay.config import load_settings
from assay.jobs.ingest import IngestResult, discover, ingest_path
from assay.query.duck import run_user_query

Ingested = dict[str, IngestResult]


@pytest.fixture(scope="module")
def real_home(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Ingested]]:
    home = tmp_path_factory.mktemp("real_home")
    previous = os.environ.get("ASSAY_HOME")
    os.environ["ASSAY_HOME"] = str(home)
    reset_engines()
    results = {path.name: ingest_path(path) for path in discover(shared_data)}
    reset_engines()
    if previous is not None:
        os.environ["ASSAY_HOME"] = previous
    yield home, results


@pytest.fixture
def in_real_home(real_home: tuple[Path, Ingested], monkeypatch: pytest.MonkeyPatch) -> Ingested:
    monkeypatch.setenv("ASSAY_HOME", str(real_home[0]))
    reset_engines()
    return real_home[1]


def test_every_shared_dataset_is_discovered(in_real_home: dict[str, IngestResult]) -> None:
    assert set(in_real_home) == {"wmt16-da-seg", "wmt17-da", "wmt18-da", "webnlg2017-human-eval", "huse",
                                 "mqm-ted-ende", "mqm-wmt23-ende"}
    assert {r.label for r in in_real_home.values()} == {"wmt16@1", "wmt17@1", "wmt18@1", "webnlg2017@1", "huse@1",
                                                        "mqm-ted-ende@1", "mqm-wmt23-ende@1"}


def test_shapes(in_real_home: dict[str, IngestResult]) -> None:
    counts = {r.version.name: r.row_counts for r in in_real_home.values()}
    # WMT17 to-English: 7 pairs x 560 segments; DA-syslevel.csv: 152 rows (wmt17-da/PROVENANCE.md)
    assert counts["wmt17"]["segments"] == 3920 and counts["wmt17"]["systems"] == 152
    # WMT18: 149 system-level rows, outputs for 7 to-English pairs, no segment-level file
    assert counts["wmt18"]["systems"] == 149 and counts["wmt18"]["segments"] == 0
    assert counts["wmt16"]["segments"] == 7 * 560
    # WebNLG: 2,230 rated outputs x 3 aspects
    assert counts["webnlg2017"]["segments"] == 3 * 2230
    assert counts["huse"]["segments"] == 200


def test_duckdb_views_over_real_data(in_real_home: dict[str, IngestResult]) -> None:
    _, rows = run_user_query('SELECT "group", count(*) FROM wmt17 GROUP BY 1 ORDER BY 1')
    assert rows == [(lp, 560) for lp in ("cs-en", "de-en", "fi-en", "lv-en", "ru-en", "tr-en", "zh-en")]
    _, rows = run_user_query(
        "SELECT count(DISTINCT segment_id), count(DISTINCT item_id), count(DISTINCT aspect) FROM webnlg2017"
    )
    assert rows == [(2230, 223, 3)]
    _, rows = run_user_query("SELECT count(*), min(len(ratings)), max(len(ratings)) FROM huse")
    assert rows == [(200, 20, 20)]
    _, rows = run_user_query("SELECT count(DISTINCT dataset) FROM segments")
    assert rows == [(6,)]  # wmt18 has no segment-level judgments
    # the MQM tables have views of their own (errors: 8,435 TED rows - 4,404 No-error, PROVENANCE.md)
    _, rows = run_user_query("SELECT count(*), count(DISTINCT rater) FROM mqm_ted_ende_errors")
    assert rows == [(4031, 4)]
    _, rows = run_user_query("SELECT count(*) FROM ratings WHERE dataset = 'mqm-wmt23-ende'")
    assert rows == [(3120,)]


def test_joined_text_spot_check(in_real_home: dict[str, IngestResult], shared_data: Path) -> None:
    settings = load_settings()
    with session_scope(settings) as session:
        version = next(v for v in list_versions(session) if v.dataset.name == "wmt17")
        path = settings.home / version.store_path / "segments.parquet"
    table = pq.read_table(path, filters=[("group", "=", "de-en"), ("system", "=", "KIT.4951")])
    row = table.slice(0, 1).to_pylist()[0]
    sid = int(row["segment_id"])
    out = shared_data / "wmt17-da/system-outputs/newstest2017/de-en/newstest2017.KIT.4951.de-en"
    ref = shared_data / "wmt17-da/references/newstest2017-deen-ref.en"
    assert row["candidate"] == out.read_text(encoding="utf-8-sig").split("\n")[sid - 1]
    assert row["references"] == [ref.read_text(encoding="utf-8-sig").split("\n")[sid - 1]]


def test_reingesting_everything_is_a_noop(in_real_home: dict[str, IngestResult], shared_data: Path) -> None:
    for path in discover(shared_data):
        again = ingest_path(path)
        first = in_real_home[path.name]
        assert not again.created
        assert again.version == first.version
