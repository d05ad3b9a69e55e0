"""Incremental scoring: signatures, the content-keyed cache, shards, and the library oracles."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import sacrebleu
from rouge_score import rouge_scorer

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.config import load_settings
from assay.datasets import store
from assay.fixtures import fixtures_dir
from assay.ingest import ingest_path
from assay.metrics.lexical import ChrF, CorpusBLEU, RougeL, SentenceBLEU
from assay.metrics.registry import METRICS, MetricSpec, create_metric
from assay.results.export import scored_segments
from assay.scoring import finish_scoring, plan_scoring, score_shard

DEMO_WMT = fixtures_dir() / "demo-wmt"


def run_scoring(dataset: str, metric: str, shard_size: int = 4000, scope: str = "judged", **params: object) -> dict:
    plan = plan_scoring(dataset, MetricSpec(metric, dict(params)), scope=scope, shard_size=shard_size)
    parts = [score_shard(plan, i) for i in range(len(plan.shards))]
    return finish_scoring(plan, parts)


def test_registry_names_every_metric() -> None:
    assert set(METRICS) == {"sentbleu", "bleu", "chrf", "ter", "rouge1", "rouge2", "rougeL", "bertscore",
                            "bleurt", "bleu-neighbors"}
    for name in ("sentbleu", "bleu", "chrf", "ter", "rouge1", "rouge2", "rougeL"):
        assert create_metric(name).signature().startswith(name + "|")


def test_lexical_metrics_equal_the_libraries() -> None:
    cands = ["the cat sat on the mat", "a dog", "", "completely different words here"]
    refs = [["the cat is on the mat"], ["a dog barks", "the dog"], ["something"], ["nothing in common"]]
    # oracle: sacrebleu.sentence_bleu with defaults (REFERENCE_NUMBERS.md's "independent" sentBLEU)
    expected = [sacrebleu.sentence_bleu(c, r).score for c, r in zip(cands, refs, strict=True)]
    np.testing.assert_allclose(SentenceBLEU().score(cands, refs).score, expected, atol=1e-12)
    expected_chrf = [sacrebleu.sentence_chrf(c, r).score for c, r in zip(cands, refs, strict=True)]
    np.testing.assert_allclose(ChrF().score(cands, refs).score, expected_chrf, atol=1e-12)
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    expected_rouge = [max(scorer.score(ref, c)["rougeL"].fmeasure for ref in r)
                      for c, r in zip(cands, refs, strict=True)]
    np.testing.assert_allclose(RougeL().score(cands, refs).score, expected_rouge, atol=1e-12)


def test_corpus_bleu_from_sufficient_statistics_equals_sacrebleu() -> None:
    outputs = (DEMO_WMT / "system-outputs/newstest2099/de-en/newstest2099.beta.102.de-en").read_text().splitlines()
    refs = (DEMO_WMT / "references/newstest2099-deen-ref.en").read_text().splitlines()
    metric = CorpusBLEU()
    stats = metric.score(outputs, [[r] for r in refs]).stats
    assert stats is not None
    # oracle: sacrebleu.corpus_bleu with defaults
    expected = sacrebleu.corpus_bleu(outputs, [refs]).score
    assert metric.corpus_score(stats) == pytest.approx(expected, abs=1e-9)
    # aggregating from any split of the statistics gives the same corpus score
    assert metric.corpus_score(np.vstack([stats[:2], stats[2:]])) == pytest.approx(expected, abs=1e-9)


def test_second_identical_request_computes_nothing() -> None:
    ingest_path(DEMO_WMT)
    first = run_scoring("wmt99", "sentbleu")
    assert first["computed"] == first["unique_segments"] == 36 and first["cached"] == 0
    second = run_scoring("wmt99", "sentbleu")
    assert second["computed"] == 0 and second["cached"] == 36 and second["files"] == []


def test_sharded_scoring_equals_one_pass(tmp_path: Path) -> None:
    ingest_path(DEMO_WMT)
    run_scoring("wmt99", "chrf", shard_size=5)
    sharded = scored_segments("wmt99", create_metric("chrf"))
    settings = load_settings()
    files = list((settings.home / "results/segment_scores/metric=chrf").rglob("part-*.parquet"))
    assert len(files) == 8  # 36 segments in shards of 5
    shutil.rmtree(settings.home / "results")
    run_scoring("wmt99", "chrf", shard_size=1000)
    single = scored_segments("wmt99", create_metric("chrf"))
    assert sharded.column("score").to_pylist() == single.column("score").to_pylist()


def test_new_system_in_a_new_version_scores_only_its_segments(tmp_path: Path) -> None:
    root = tmp_path / "demo-wmt"
    shutil.copytree(DEMO_WMT, root)
    ingest_path(root)
    run_scoring("wmt99", "sentbleu")
    # add a fourth de-en system with six judged segments
    out_dir = root / "system-outputs/newstest2099/de-en"
    lines = (out_dir / "newstest2099.alpha.101.de-en").read_text().splitlines()
    (out_dir / "newstest2099.delta.104.de-en").write_text("\n".join(s.upper() for s in lines) + "\n")
    with (root / "DA-seglevel.csv").open("a") as handle:
        for sid in range(1, 7):
            handle.write(f"de-en newstest2099 delta.104 {sid} 0.0\n")
    version = ingest_path(root)
    assert version.number == 2
    summary = run_scoring("wmt99@2", "sentbleu")
    assert summary["rows"] == 42 and summary["cached"] == 36 and summary["computed"] == 6
    # both versions stay exportable
    assert scored_segments("wmt99@1", create_metric("sentbleu")).num_rows == 36
    assert scored_segments("wmt99@2", create_metric("sentbleu")).num_rows == 42


def test_result_parts_are_immutable_files_recorded_in_the_catalog() -> None:
    from assay.catalog.engine import session_scope
    from assay.catalog.models import ResultFile, Run

    ingest_path(DEMO_WMT)
    summary = run_scoring("wmt99", "ter", shard_size=10)
    settings = load_settings()
    with session_scope(settings) as session:
        run = session.get(Run, summary["run_id"])
        assert run is not None and run.status == "completed" and run.kind == "score"
        assert run.inputs["signature"] == summary["signature"]
        files = session.query(ResultFile).filter_by(run_id=run.id).all()
    assert sorted(f.path for f in files) == sorted(summary["files"])
    for record in files:
        table = pq.read_table(settings.home / record.path)
        assert table.num_rows == record.rows
        assert "metric=ter" in record.path and "/sig=" in record.path
    assert not list((settings.home / "results").rglob(".tmp-*"))


@pytest.mark.prefect
def test_score_flow_on_the_prefect_engine(prefect_engine: None) -> None:
    from assay.flows.score import score_flow

    ingest_path(DEMO_WMT)
    first = score_flow("wmt99", {"name": "rouge1", "params": {}}, progress=False)
    second = score_flow("wmt99", {"name": "rouge1", "params": {}}, progress=False)
    assert first["computed"] == 36 and second["computed"] == 0
    table = scored_segments("wmt99", create_metric("rouge1"))
    assert {"precision", "recall", "f1", "score", "human", "signature"} <= set(table.column_names)


def test_bertscore_idf_shards_use_the_whole_sets_references() -> None:
    """idf (BERTScore §3) is computed over every reference of the scored set, never per shard: shards
    of 5 give the scores of one direct call over all 36 segments (tolerance 1e-6: batch
    composition changes float32 summation order only), and the reference multiset joins the
    signature, so a set with other references does not reuse these scores."""
    from assay.workers.metrics import BERTScore

    ingest_path(DEMO_WMT)
    summary = run_scoring("wmt99", "bertscore", shard_size=5, layer=4, idf=True)
    assert summary["computed"] == 36 and len(summary["files"]) == 8
    assert "|idf-refs:" in summary["signature"]
    metric = BERTScore(layer=4, idf=True)
    table = scored_segments("wmt99", metric)
    assert table.column("signature")[0].as_py() == summary["signature"]
    settings = load_settings()
    with session_scope(settings) as session:
        store_path = resolve(session, "wmt99").store_path
    segments = store.read_table(settings, store_path, "segments")
    candidates = segments.column("candidate").to_pylist()
    references = segments.column("references").to_pylist()
    direct = metric.score(candidates, references)  # idf from the references of this one call
    np.testing.assert_allclose(table.column("score").to_numpy(), direct.score, atol=1e-6, rtol=0)
    # without idf, shard-level idf is moot and the signature has no reference-set part
    plain = run_scoring("wmt99", "bertscore", shard_size=5, layer=4)
    assert "|idf-refs:" not in plain["signature"] and plain["computed"] == 36
    # the same request again computes nothing
    assert run_scoring("wmt99", "bertscore", shard_size=7, layer=4, idf=True)["computed"] == 0
