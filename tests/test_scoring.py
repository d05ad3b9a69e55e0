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
from assay.jobs.ingest import ingest_path
from assay.jobs.score_export import scored_segments
from assay.jobs.scoring import finish_scoring, plan_scoring, score_shard
from assay.metrics.lexical import ChrF, CorpusBLEU, RougeL, SentenceBLEU
from assay.metrics.registry import MetricSpec, create_metric, metric_names

DEMO_WMT = fixtures_dir() / "demo-wmt"


def run_scoring(dataset: str, metric: str, shard_size: int = 4000, scope: str = "judged", **params: object) -> dict:
    plan = plan_scoring(dataset, MetricSpec(metric, dict(params)), scope=scope, shard_size=shard_size)
    parts = [score_shard(plan, i) for i in range(len(plan.shards))]
    return finish_scoring(plan, parts)


def test_registry_names_every_metric() -> None:
    assert set(metric_names()) == {"sentbleu", "bleu", "chrf", "corpus-chrf", "ter", "rouge1", "rouge2", "rougeL",
                            "bertscore", "bleurt", "bleu-neighbors"}
    for name in ("sentbleu", "bleu", "chrf", "corpus-chrf", "ter", "rouge1", "rouge2", "rougeL"):
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


def test_bleu_on_outputs_that_share_references_equals_sacrebleu(shared_data: Path) -> None:
    """sentBLEU and BLEU's statistics count each distinct reference once per call
    (TargetLanguageBLEU.sentence_statistics); the oracle is sacrebleu's public sentence API on real
    WMT17 de-en outputs of four systems, which share the reference of each source."""
    root = shared_data / "wmt17-da"
    refs = (root / "references" / "newstest2017-deen-ref.en").read_text(encoding="utf-8").splitlines()[:150]
    cands, shared = [], []
    for path in sorted((root / "system-outputs" / "newstest2017" / "de-en").iterdir())[:4]:
        cands += path.read_text(encoding="utf-8").splitlines()[:150]
        shared += [[ref] for ref in refs]
    shared[3] = [refs[3], refs[4]]  # one segment with two references
    expected = [sacrebleu.sentence_bleu(c, r) for c, r in zip(cands, shared, strict=True)]
    np.testing.assert_allclose(SentenceBLEU().score(cands, shared).score, [e.score for e in expected], atol=1e-12)
    from sacrebleu.metrics import BLEU

    oracle = BLEU(effective_order=True)
    stats = CorpusBLEU().score(cands, shared).stats
    assert stats is not None
    for got, cand, ref in zip(stats, cands, shared, strict=True):
        result = oracle.sentence_score(cand, ref)
        assert list(got) == [result.sys_len, result.ref_len, *result.counts, *result.totals]


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
    assert version.version.number == 2
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
    # shards of 10 segments: several parts, which together hold every computed segment
    assert len(files) > 1 and sum(f.rows for f in files) == summary["computed"]
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


@pytest.mark.prefect
def test_score_flow_computes_the_plan_it_is_handed(prefect_engine: None) -> None:
    """A caller that has planned (``assay score``, a rerun) hands its plan on: the flow computes that
    plan (its run id, its work file) without planning again, and still brings it up to date under
    the signature lock (what another request stored meanwhile is not computed twice)."""
    from assay.errors import UsageError
    from assay.flows.score import score_flow
    from assay.jobs.scoring import score_dataset

    ingest_path(DEMO_WMT)
    spec = MetricSpec("rouge2")
    handed = plan_scoring("wmt99", spec, shard_size=10)
    summary = score_flow("wmt99", spec.as_dict(), shard_size=10, progress=False, plan=handed.as_dict())
    assert summary["run_id"] == handed.run_id and summary["computed"] == 36 and len(summary["files"]) == 4
    assert handed.todo_path is not None and not Path(handed.todo_path).exists()

    stale = plan_scoring("wmt99", MetricSpec("rouge1"), shard_size=10)
    assert score_dataset("wmt99", MetricSpec("rouge1"))["computed"] == 36  # stored meanwhile
    late = score_flow("wmt99", {"name": "rouge1", "params": {}}, progress=False, plan=stale.as_dict())
    assert late["run_id"] is None and late["computed"] == 0 and late["cached"] == 36

    other = plan_scoring("wmt99", spec)
    with pytest.raises(UsageError, match="plan handed on"):
        score_dataset("wmt99", MetricSpec("chrf"), plan=other)


def test_bertscore_idf_shards_use_the_whole_sets_references() -> None:
    """idf (BERTScore §3) is computed over every reference of the scored set, never per shard: shards
    of 5 give the scores of one direct call over all 36 segments (tolerance 1e-6: batch
    composition changes float32 summation order only), and the reference multiset joins the
    signature, so a set with other references does not reuse these scores."""
    from assay.workers.metrics import BERTScore

    ingest_path(DEMO_WMT)
    summary = run_scoring("wmt99", "bertscore", shard_size=5, layer=4, idf=True)
    assert summary["computed"] == 36 and len(summary["files"]) == 8
    assert "|refs:" in summary["signature"]
    metric = BERTScore(layer=4, idf=True)
    table = scored_segments("wmt99", metric)
    assert table.column("signature")[0].as_py() == summary["signature"]
    settings = load_settings()
    with session_scope(settings) as session:
        store_path = resolve(session, "wmt99").store_path
    segments = store.read_table(settings, store_path, "segments")
    candidates = segments.column("candidate").to_pylist()
    references = segments.column("references").to_pylist()
    direct = metric.score(candidates, references)  # idf from the references of this one call (= the set's)
    np.testing.assert_allclose(table.column("score").to_numpy(), direct.score, atol=1e-6, rtol=0)
    # without idf, shard-level idf is moot and the signature has no reference-set part
    plain = run_scoring("wmt99", "bertscore", shard_size=5, layer=4)
    assert "|refs:" not in plain["signature"] and plain["computed"] == 36
    # the same request again computes nothing
    assert run_scoring("wmt99", "bertscore", shard_size=7, layer=4, idf=True)["computed"] == 0


# --- plan -> start -> compute -> record --------------------------------------------------------


def _runs() -> list:
    from assay.catalog.models import Run

    with session_scope(load_settings()) as session:
        return [(r.id, r.kind, r.status) for r in session.query(Run).filter_by(kind="score").all()]


def test_planning_writes_no_run_and_a_cached_plan_needs_none() -> None:
    from assay.jobs.scoring import discard, score_dataset

    ingest_path(DEMO_WMT)
    plan = plan_scoring("wmt99", MetricSpec("chrf"), shard_size=10)
    assert plan.to_compute == 36 and len(plan.shards) == 4 and plan.run is None
    assert _runs() == []  # planning is pure: the run is recorded when computing starts
    discard(plan)
    assert not Path(plan.todo_path or "").exists()

    first = score_dataset("wmt99", MetricSpec("chrf"))
    assert _runs() == [(first["run_id"], "score", "completed")]
    again = plan_scoring("wmt99", MetricSpec("chrf"))
    assert again.to_compute == 0 and again.shards == [] and again.todo_path is None
    summary = finish_scoring(again, [])
    assert summary["run_id"] is None and summary["computed"] == 0 and summary["cached"] == 36
    assert len(_runs()) == 1  # nothing computed, nothing recorded


def test_bleu_neighbors_abstentions_are_stored_as_null() -> None:
    """BLEU Neighbors declares may_abstain: a NaN ("no prediction", Ethayarajh & Sadigh 2020 eq. 3)
    is stored as null, where any other metric's NaN is refused. On 36 demo segments most
    neighbourhoods have fewer than a = 5 members, so most predictions are undefined."""
    from assay.jobs.scoring import score_dataset

    ingest_path(DEMO_WMT)
    summary = score_dataset("wmt99", MetricSpec("bleu-neighbors"))
    assert summary["computed"] == 36 and "|set:" in summary["signature"] and "|mode:loo|" in summary["signature"]
    table = pq.read_table(load_settings().home / summary["files"][0])
    scores = table.column("score").to_pylist()
    undefined = sum(s is None for s in scores)
    assert undefined > 0 and any("predictions undefined" in w for w in summary["warnings"])
    assert f"{undefined} of 36" in " ".join(summary["warnings"])


def test_metric_contract_is_declared() -> None:
    from assay.metrics.bleu_neighbors_metric import BleuNeighborsMetric
    from assay.workers.metrics import BERTScore

    assert CorpusBLEU.has_sufficient_statistics and CorpusBLEU.stats_columns
    assert not SentenceBLEU.has_sufficient_statistics and not SentenceBLEU.model_based
    assert BleuNeighborsMetric.needs_human_scores and BleuNeighborsMetric.may_abstain
    assert not BleuNeighborsMetric.needs_references
    assert BleuNeighborsMetric().depends_on_segment_set and not BleuNeighborsMetric().depends_on_reference_corpus
    assert BERTScore(idf=True).depends_on_reference_corpus and not BERTScore().depends_on_scored_set
    assert BERTScore.model_based and BERTScore().languages == {"en"}  # the embedded English MiniLM
    assert BERTScore(model="some/multilingual-model", layer=9).languages is None


@pytest.mark.parametrize(
    ("metric", "params", "message"),
    [
        ("bleu-neighbors", {"tau": -1}, r"^bleu-neighbors: tau is -1 \(expected a number in \(0, 1\]\)$"),
        ("bleu-neighbors", {"tau": 1.5}, r"tau is 1.5"),
        ("bleu-neighbors", {"a": 0}, r"^bleu-neighbors: a is 0 \(expected an integer >= 1\)$"),
        ("bleu-neighbors", {"b": 2}, r"b is 2 \(expected a number in \[0, 1\]\)"),
        ("bleu-neighbors", {"kernel": "cosine"}, r"kernel is 'cosine' \(expected one of bleu, rouge\)"),
        ("bleu-neighbors", {"smoothing": "add-two"}, r"smoothing"),
        ("bleu-neighbors", {"quality_scale": 0}, r"quality_scale is 0"),
        ("bleu-neighbors", {"taux": 0.1}, r"^metric 'bleu-neighbors' has no parameter 'taux' \(it accepts: kernel, "
                                          r"tau, a, b, smoothing, quality_scale\)$"),
        ("sentbleu", {"tokenize": "moses"}, r"tokenize is 'moses' \(expected one of .*13a"),
        ("bleu", {"smooth_method": "magic"}, r"smooth_method is 'magic'"),
        ("chrf", {"char_order": 0}, r"char_order is 0"),
        ("ter", {"normalized": "maybe"}, r"normalized is 'maybe' \(expected true or false\)"),
        ("rouge1", {"use_stemmer": 1}, r"use_stemmer is 1"),
        ("bertscore", {"layer": -2}, r"^bertscore: layer is -2 \(expected an integer >= 0\)$"),
        ("bertscore", {"idf": "yes please"}, r"idf is 'yes please'"),
        ("bertscore", {"layers": 4}, r"has no parameter 'layers'"),
    ],
)
def test_bad_metric_parameters_are_one_line_usage_errors(metric: str, params: dict, message: str) -> None:
    from assay.errors import UsageError

    with pytest.raises(UsageError, match=message) as err:
        create_metric(metric, **params)
    assert "\n" not in str(err.value)


def test_bertscore_layer_beyond_the_model_is_refused_at_load() -> None:
    from assay.errors import UsageError

    ingest_path(DEMO_WMT)
    with pytest.raises(UsageError, match=r"layer 9 does not exist in .*choose 0 \(embeddings\) to 6"):
        plan_scoring("wmt99", MetricSpec("bertscore", {"layer": 9}))


def _two_language_dataset(tmp_path: Path) -> Path:
    """A generic TSV with to-English (de-en) and from-English (en-de) segments."""
    rows = ["id\tlp\tsys\tcand\tref\tz"]
    for i, (lp, cand, ref) in enumerate([
        ("de-en", "the house is small", "the house is little"),
        ("de-en", "a cat sleeps", "the cat is sleeping"),
        ("en-de", "das Haus ist klein", "das Haus ist winzig"),
        ("en-de", "eine Katze schläft", "die Katze schläft"),
        ("en-de", "guten Morgen", "guten Tag"),
    ]):
        rows.append(f"{i}\t{lp}\ts1\t{cand}\t{ref}\t{0.1 * i}")
    path = tmp_path / "two-languages.tsv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "two-languages.columns.json").write_text(
        '{"group": "lp", "system": "sys", "segment_id": "id", "candidate": "cand", "references": "ref", '
        '"human_z": "z"}')
    return path


def test_language_pairs_the_model_does_not_cover_are_left_out(tmp_path: Path) -> None:
    """The embedded MiniLM covers English targets only: en-de is left out and the plan says so in
    one line, unless the caller allows any language."""
    from assay.jobs.scoring import discard, target_language

    assert (target_language("de-en"), target_language("EN-ZH"), target_language("summarization")) == \
        ("en", "zh", None)
    ingest_path(_two_language_dataset(tmp_path), name="twolang")
    plan = plan_scoring("twolang", MetricSpec("bertscore"))
    assert plan.excluded_groups == {"en-de": 3} and plan.rows == 2 and plan.to_compute == 2
    assert plan.note is not None and "\n" not in plan.note
    assert "covers target language en only: left out en-de (3 rows)" in plan.note and "--any-language" in plan.note
    discard(plan)
    everything = plan_scoring("twolang", MetricSpec("bertscore"), allow_languages=True)
    assert everything.excluded_groups == {} and everything.note is None and everything.rows == 5
    assert everything.parameters["allow_languages"] is True
    discard(everything)
    # a metric that declares no languages scores every pair
    lexical = plan_scoring("twolang", MetricSpec("chrf"))
    assert lexical.excluded_groups == {} and lexical.rows == 5
    discard(lexical)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--metric", "bleu-neighbors", "-p", "tau=-1"],
         "error: bleu-neighbors: tau is -1 (expected a number in (0, 1])"),
        (["--metric", "bleu-neighbors", "-p", "k=3"],
         "error: metric 'bleu-neighbors' has no parameter 'k' "
         "(it accepts: kernel, tau, a, b, smoothing, quality_scale)"),
        (["--metric", "chrf", "--layer", "4"],
         "error: --model/--layer/--idf/--rescale/--no-cache-undigested apply to bertscore, not chrf"),
        (["--metric", "nope"],
         "error: unknown metric 'nope' (registered: bertscore, bleu, bleu-neighbors, bleurt, chrf, corpus-chrf, "
         "rouge1, rouge2, rougeL, sentbleu, ter)"),
    ],
)
def test_cli_refuses_bad_metric_options_in_one_line_before_any_flow(args: list[str], message: str) -> None:
    from click.testing import CliRunner

    from assay.cli.main import cli

    result = CliRunner().invoke(cli, ["score", "--dataset", "wmt99", *args])
    assert result.exit_code == 2
    assert result.stderr.strip() == message
