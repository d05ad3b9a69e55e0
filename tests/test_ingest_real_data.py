"""Every shared dataset ingests into one catalog with the shapes its PROVENANCE.md states,
re-ingesting all of them is a no-op, and `assay sql` sees them.

A source can hold several versions (an mt-metrics-eval data root: one per test set and language pair),
so each discovered path is ingested with ``ingest_versions``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from assay.catalog.dataset_versions import list_versions
from assay.catalog.engine import reset_engines, session_scope
from assay.config import load_settings
from assay.jobs.ingest import IngestResult, discover, ingest_versions
from assay.query.duck import run_user_query
from tests.conftest import assay_home_at

Ingested = dict[str, list[IngestResult]]


@pytest.fixture(scope="module")
def real_home(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Ingested]]:
    with assay_home_at(tmp_path_factory.mktemp("real_home")) as home:
        results = {path.name: ingest_versions(path) for path in discover(shared_data)}
    yield home, results


@pytest.fixture
def in_real_home(real_home: tuple[Path, Ingested], monkeypatch: pytest.MonkeyPatch) -> Ingested:
    monkeypatch.setenv("ASSAY_HOME", str(real_home[0]))
    reset_engines()
    return real_home[1]


def test_every_shared_dataset_is_discovered(in_real_home: Ingested) -> None:
    assert set(in_real_home) == {"wmt16-da-seg", "wmt17-da", "wmt18-da", "webnlg2017-human-eval", "huse",
                                 "mqm-ted-ende", "mqm-wmt23-ende", "mtme-wmt23", "esa-wmt24"}
    # mtme-wmt23 is mt-metrics-eval's data root with one test set (wmt23/) of one pair (en-de)
    assert {path: [r.label for r in results] for path, results in in_real_home.items()} == {
        "wmt16-da-seg": ["wmt16@1"], "wmt17-da": ["wmt17@1"], "wmt18-da": ["wmt18@1"],
        "webnlg2017-human-eval": ["webnlg2017@1"], "huse": ["huse@1"], "mqm-ted-ende": ["mqm-ted-ende@1"],
        "mqm-wmt23-ende": ["mqm-wmt23-ende@1"], "mtme-wmt23": ["mtme-wmt23-en-de@1"], "esa-wmt24": ["esa-wmt24@1"]}
    assert all(r.created and r.parsed for results in in_real_home.values() for r in results)


def test_shapes(in_real_home: Ingested, shared_data: Path) -> None:
    counts = {r.version.name: r.row_counts for results in in_real_home.values() for r in results}
    # WMT17 to-English: 7 pairs x 560 segments; DA-syslevel.csv: 152 rows (wmt17-da/PROVENANCE.md)
    assert counts["wmt17"]["segments"] == 3920 and counts["wmt17"]["systems"] == 152
    # WMT18: 149 system-level rows, outputs for 7 to-English pairs, no segment-level file
    assert counts["wmt18"]["systems"] == 149 and counts["wmt18"]["segments"] == 0
    assert counts["wmt16"]["segments"] == 7 * 560
    # WebNLG: 2,230 rated outputs x 3 aspects
    assert counts["webnlg2017"]["segments"] == 3 * 2230
    assert counts["huse"]["segments"] == 200
    # mtme-wmt23/PROVENANCE.md: 557 source segments, 14 system outputs (12 MT + refA + synthetic_ref),
    # two references, documents per segment
    mtme = counts["mtme-wmt23-en-de"]
    assert mtme["outputs"] == 14 * 557 and mtme["documents"] == 557 and mtme["reference_texts"] == 2 * 557
    # one metric_scores row per line of the metric files (wc -l)
    metric_files = sorted((shared_data / "mtme-wmt23/wmt23/metric-scores/en-de").glob("*.score"))
    assert mtme["metric_scores"] == sum(len(f.read_text().splitlines()) for f in metric_files)
    # REFERENCE_NUMBERS.md (ESA wave 2): scored outputs per pair, the reference refA's 297 included (one
    # annotator each): en-cs 4,752, en-hi 3,267, en-ja 3,861, en-zh 3,861; refA is no candidate
    esa = counts["esa-wmt24"]
    assert esa["rater_scores"] == 4752 + 3267 + 3861 + 3861
    assert esa["segments"] == esa["rater_scores"] - 4 * 297
    # two system scores (mean over segments, mean of domain means) per rated system: 16 + 11 + 13 + 13
    assert esa["systems"] == 2 * (16 + 11 + 13 + 13)


def test_duckdb_views_over_real_data(in_real_home: Ingested, shared_data: Path) -> None:
    _, rows = run_user_query('SELECT "group", count(*) FROM wmt17 GROUP BY 1 ORDER BY 1')
    assert rows == [(lp, 560) for lp in ("cs-en", "de-en", "fi-en", "lv-en", "ru-en", "tr-en", "zh-en")]
    _, rows = run_user_query(
        "SELECT count(DISTINCT segment_id), count(DISTINCT item_id), count(DISTINCT aspect) FROM webnlg2017"
    )
    assert rows == [(2230, 223, 3)]
    _, rows = run_user_query("SELECT count(*), min(len(ratings)), max(len(ratings)) FROM huse")
    assert rows == [(200, 20, 20)]
    _, rows = run_user_query("SELECT count(DISTINCT dataset) FROM segments")
    assert rows == [(8,)]  # wmt18 has no segment-level judgments
    # the MQM tables have views of their own (errors: 8,435 TED rows - 4,404 No-error, PROVENANCE.md)
    _, rows = run_user_query("SELECT count(*), count(DISTINCT rater) FROM mqm_ted_ende_errors")
    assert rows == [(4031, 4)]
    _, rows = run_user_query("SELECT count(*) FROM ratings WHERE dataset = 'mqm-wmt23-ende'")
    assert rows == [(3120,)]
    # REFERENCE_NUMBERS.md (WMT23 MTME): 5,520 (system, segment) cells with MQM, 12 MT systems x 460 segments
    _, rows = run_user_query("SELECT count(*), count(DISTINCT system) FROM mtme_wmt23_en_de "
                             "WHERE aspect = 'mqm' AND NOT is_human")
    assert rows == [(5520, 12)]
    # one official variant per NAME-REF prefix of the metric files
    variants = {f.name.rsplit(".", 2)[0] for f in (shared_data / "mtme-wmt23/wmt23/metric-scores/en-de").iterdir()}
    _, rows = run_user_query("SELECT count(DISTINCT metric || '-' || reference) FROM mtme_wmt23_en_de_metric_scores")
    assert rows == [(len(variants),)]
    # REFERENCE_NUMBERS.md (ESA wave 2): scored outputs per pair
    _, rows = run_user_query('SELECT "group", count(*) FROM esa_wmt24_rater_scores GROUP BY 1 ORDER BY 1')
    assert rows == [("en-cs", 4752), ("en-hi", 3267), ("en-ja", 3861), ("en-zh", 3861)]
    # the spans of those ratings, 642 "missing" (counted from the CSV with the organisers' filters, as in
    # tests/datasets/test_format_esa.py; REFERENCE_NUMBERS.md's "830 of 11,162" are waves 2 and 3 together)
    _, rows = run_user_query("SELECT count(*), count(*) FILTER (WHERE start IS NULL) FROM esa_wmt24_errors")
    assert rows == [(8604, 642)]


def test_joined_text_spot_check(in_real_home: Ingested, shared_data: Path) -> None:
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


def test_reingesting_everything_is_a_noop(in_real_home: Ingested, shared_data: Path) -> None:
    for path in discover(shared_data):
        again = ingest_versions(path)
        first = in_real_home[path.name]
        # found by the source files alone: nothing parsed, nothing created
        assert [(r.version, r.created, r.parsed) for r in again] == [(r.version, False, False) for r in first]
