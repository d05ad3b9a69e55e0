"""Per-rater scores wherever a version keeps them (MQM ``ratings``, ESA ``rater_scores``): rater
agreement (``assay datasets show``) and one rater's judgments (``assay evaluate --rater``).

ESA copies are the first en-cs records of WMT24's wave 2 (``../shared/data/esa-wmt24``) in ``tmp_path``,
as ``tests/datasets/test_format_esa.py`` builds them; wave 2 gives each item one annotator, so a second
one is planted. Expected values follow from definitions: an annotator who scores every output
``100 - s`` where the others scored ``s`` ranks every pair of outputs the other way (Kendall's tau-b
-1), and a correlation with ``100 - s`` is minus the correlation with ``s``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.config import load_settings
from assay.datasets.rater_agreement import rater_agreement
from assay.datasets.rater_scores import read_rater_scores
from assay.errors import UsageError
from assay.jobs.evaluation import evaluate
from assay.jobs.ingest import ingest_path
from assay.jobs.judgments import JudgmentFilter
from assay.jobs.scoring import score_dataset
from assay.metrics.registry import MetricSpec

WAVE2 = "esa-wmt24/humeval/esa_generalMT2024_wave2.csv"
ROWS = 150  # the first 150 en-cs records: 113 kept ratings (19 of them refA's) by 3 annotators
SECOND = "second-annotator"
Records = list[list[str]]


def _kept(record: list[str]) -> bool:
    """A record the organisers' loader keeps: a TGT item, not a tutorial, not a #incomplete/#dup document."""
    return record[3] == "TGT" and "tutorial" not in record[1] and "#" not in record[7]


@pytest.fixture
def esa_copy(tmp_path: Path, shared_data: Path) -> Callable[..., str]:
    """Ingests ``<name>/humeval/esa_test.csv`` (the first en-cs records of wave 2, plus with ``second``
    a rating of every kept item by another annotator, ``100 - score``) with ``<name>/txt`` linking the
    real en-cs texts; returns the version's label."""
    real = shared_data / "esa-wmt24"

    def make(name: str, second: bool) -> str:
        root = tmp_path / name
        with (shared_data / WAVE2).open(encoding="utf-8", newline="") as handle:
            records: Records = [r for r in csv.reader(handle) if r[5] == "ces"][:ROWS]
        if second:
            records += [[SECOND, *r[1:6], f"{100 - float(r[6]):g}", *r[7:]] for r in records if _kept(r)]
        (root / "humeval").mkdir(parents=True)
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerows(records)
        (root / "humeval/esa_test.csv").write_text(buffer.getvalue(), encoding="utf-8")
        for part in ("sources/en-cs.txt", "documents/en-cs.docs", "references/en-cs.refA.txt"):
            (root / "txt" / part).parent.mkdir(parents=True, exist_ok=True)
            (root / "txt" / part).symlink_to(real / "txt" / part)
        (root / "txt/system-outputs").mkdir(parents=True)
        (root / "txt/system-outputs/en-cs").symlink_to(real / "txt/system-outputs/en-cs", target_is_directory=True)
        return ingest_path(root, name=name).label

    return make


def _store_path(label: str) -> str:
    with session_scope(load_settings()) as session:
        return resolve(session, label).store_path


def test_one_annotator_per_item_leaves_agreement_undefined(esa_copy: Callable[..., str]) -> None:
    agreement = rater_agreement(load_settings(), _store_path(esa_copy("esa-one", second=False)))
    assert agreement is not None and agreement["tables"] == ["rater_scores"] and agreement["kinds"] == ["esa"]
    assert (agreement["raters"], agreement["pairable_units"], agreement["units_rated_once"]) == (3, 0, 113)
    assert agreement["krippendorff_alpha_interval"] is None and agreement["kendall_tau_b_mean"] is None
    assert "single rater" in agreement["undefined"] and "undefined" in agreement["undefined"]
    assert (agreement["rater_pairs"], agreement["rater_pairs_sharing_outputs"], agreement["pairs"]) == (3, 0, [])


def test_two_annotators_on_the_same_items(esa_copy: Callable[..., str]) -> None:
    settings = load_settings()
    store_path = _store_path(esa_copy("esa-two", second=True))
    scores = read_rater_scores(settings, store_path)
    assert scores is not None and len(scores.score) == 2 * 113 and SECOND in scores.raters()
    agreement = rater_agreement(settings, store_path)
    assert agreement is not None and "undefined" not in agreement
    assert (agreement["raters"], agreement["pairable_units"], agreement["units_rated_once"]) == (4, 113, 0)
    assert agreement["krippendorff_alpha_interval"] is not None
    # each first annotator shares their items with the second (80, 29 and 4), who ranks them the other way
    shared = {tuple(sorted(p["raters"])): p for p in agreement["pairs"]}
    assert sorted(p["shared_units"] for p in shared.values()) == [4, 29, 80]
    assert all(SECOND in raters for raters in shared)
    assert all(p["tau_b"] == pytest.approx(-1.0, abs=1e-12) for p in shared.values() if p["note"] is None)
    assert agreement["kendall_tau_b_mean"] == pytest.approx(-1.0, abs=1e-12)


def test_one_annotator_s_judgments(esa_copy: Callable[..., str]) -> None:
    settings = load_settings()
    one, two = esa_copy("esa-one", second=False), esa_copy("esa-two", second=True)
    path = _store_path(two)
    mean = {(r["system"], r["segment_id"]): r for r in
            JudgmentFilter().table(settings, _store_path(one), "segments").to_pylist()}
    mine = JudgmentFilter(rater=SECOND).table(settings, path, "segments").to_pylist()
    assert len(mine) == len(mean) == 113 - 19  # refA, the reference, is no candidate
    for row in mine:
        assert row["aspect"] == f"esa:rater={SECOND}" and row["ratings"] == [row["human_raw"]]
        assert row["human_raw"] == pytest.approx(100 - mean[(row["system"], row["segment_id"])]["human_raw"],
                                                 abs=1e-12)
    first = JudgmentFilter(rater="engces790b").table(settings, path, "segments").to_pylist()
    rated = [r for r in first if r["human_raw"] is not None]
    assert 0 < len(rated) < len(first)  # the others' items have no human score
    assert all(r["human_raw"] == mean[(r["system"], r["segment_id"])]["human_raw"] for r in rated)

    # evaluate --rater: the second annotator's correlations are minus those of the first annotators
    score_dataset(one, MetricSpec("chrf"))
    score_dataset(two, MetricSpec("chrf"))
    def rows(label: str, rater: str | None = None) -> list[dict]:
        return evaluate(label, level="seg", metrics=["chrf"], statistics=["kendall", "pearson"], n_resamples=20,
                        rater=rater)["rows"]

    base = {(r["group"], r["statistic"]): r for r in rows(one)}
    reversed_ = rows(two, SECOND)
    assert {r["aspect"] for r in reversed_} == {f"esa:rater={SECOND}"} and len(reversed_) == len(base) >= 2
    for row in reversed_:
        assert row["value"] == pytest.approx(-base[(row["group"], row["statistic"])]["value"], abs=1e-12)
    with pytest.raises(UsageError, match=r"no rater 'nobody' in this version \(4 raters: .*second-annotator"):
        JudgmentFilter(rater="nobody").table(settings, path, "segments")


def test_mqm_rater_scores_replace_only_mqm_judgments(tmp_path: Path, shared_data: Path) -> None:
    """An ``mtme`` version holds MQM ratings (``en-de.mqm.merged.seg.rating``) beside ``da-sqm`` scores:
    one MQM rater's judgments are MQM judgments only. The merged rating set's rater scores are minus its
    penalties, which sum to the released MQM segment scores (``tests/datasets/test_format_mtme.py``)."""
    wmt23 = shared_data / "mtme-wmt23" / "wmt23"
    root = tmp_path / "wmt23"
    root.mkdir()
    for sub in ("sources", "references", "documents", "human-scores", "system-outputs"):
        (root / sub).symlink_to(wmt23 / sub, target_is_directory=True)
    settings = load_settings()
    path = _store_path(ingest_path(root).label)
    everything = JudgmentFilter().table(settings, path, "segments").to_pylist()
    assert {r["aspect"] for r in everything} == {"mqm", "da-sqm"}
    mqm = {(r["system"], r["segment_id"]): r["human_raw"] for r in everything if r["aspect"] == "mqm"}
    merged = JudgmentFilter(rater="mqm.merged").table(settings, path, "segments").to_pylist()
    assert {r["aspect"] for r in merged} == {"mqm:rater=mqm.merged"} and len(merged) == len(mqm)
    assert max(abs(r["human_raw"] - mqm[(r["system"], r["segment_id"])]) for r in merged) < 1e-9
    agreement = rater_agreement(settings, path)
    assert agreement is not None and agreement["tables"] == ["ratings"] and agreement["kinds"] == ["mqm"]
    assert agreement["raters"] == 1 and "undefined" in agreement


def test_a_version_without_rater_scores(tmp_path: Path, shared_data: Path) -> None:
    path = _store_path(ingest_path(shared_data / "huse").label)
    assert read_rater_scores(load_settings(), path) is None and rater_agreement(load_settings(), path) is None
    with pytest.raises(UsageError, match="--rater needs per-rater scores"):
        JudgmentFilter(rater="r1").table(load_settings(), path, "segments")
