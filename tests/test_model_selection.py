"""Model selection with hybrid systems (BERTScore §4, appendix F.2) on the real WebNLG 2017 ratings,
where every one of the 9 systems (plus the human-written texts) was rated on all 223 inputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from click.testing import CliRunner

from assay.catalog.engine import session_scope
from assay.catalog.models import ResultFile, Run
from assay.cli.main import cli
from assay.config import load_settings
from assay.jobs.ingest import ingest_path
from assay.jobs.model_selection import select_models
from assay.jobs.score_export import scored_segments
from assay.jobs.scoring import finish_scoring, plan_scoring, score_shard
from assay.metrics.registry import MetricSpec, create_metric
from assay.stats.model_selection import model_selection, sample_hybrid_systems


def _score(metric: str) -> None:
    plan = plan_scoring("webnlg2017", MetricSpec(metric))
    finish_scoring(plan, [score_shard(plan, i) for i in range(len(plan.shards))])


def test_model_selection_on_webnlg_equals_the_statistics_on_the_exported_matrix(shared_data: Path) -> None:
    ingest_path(shared_data / "webnlg2017-human-eval")
    _score("chrf")
    result = select_models("webnlg2017", n_hybrid=500, n_candidates=20, n_trials=2000, seed=7)
    rows = {(r["aspect"], r["metric"]): r for r in result["rows"]}
    assert set(rows) == {(a, "chrf") for a in ("fluency", "grammar", "semantics")}
    # the human-written texts (team webnlg) are not candidates: 9 systems x 223 inputs
    assert {(r["n_systems"], r["n_items"]) for r in rows.values()} == {(9, 223)}

    # independent: pivot the exported segment scores by hand and call the statistics directly
    table = scored_segments("webnlg2017", create_metric("chrf")).to_pylist()
    semantics = [r for r in table if r["aspect"] == "semantics" and r["system"] != "webnlg"]
    systems = sorted({r["system"] for r in semantics})
    items = sorted({r["item_id"] for r in semantics})
    at = {(r["system"], r["item_id"]): r for r in semantics}
    human = np.array([[at[(s, i)]["human"] for i in items] for s in systems])
    metric = np.array([[at[(s, i)]["score"] for i in items] for s in systems])
    hybrids = sample_hybrid_systems(human, metric, n_hybrid=500, seed=7)
    expected = model_selection(hybrids.human, hybrids.metric, n_candidates=20, n_trials=2000, seed=7)
    got = rows[("semantics", "chrf")]
    assert (got["hits_at_1"], got["mrr"], got["mean_abs_human_diff"]) == (
        expected.hits_at_1, expected.mrr, expected.mean_abs_human_diff)
    assert 0 <= got["hits_at_1"] <= got["mrr"] <= 1 and got["mean_abs_human_diff"] >= 0

    settings = load_settings()
    with session_scope(settings) as session:
        run = session.get(Run, result["run_id"])
        assert run is not None and run.kind == "select" and run.parameters["seed"] == 7
        record = session.query(ResultFile).filter_by(run_id=run.id).one()
    assert pq.read_table(settings.home / record.path).num_rows == 3


def test_select_command_prints_json_rows(shared_data: Path) -> None:
    ingest_path(shared_data / "webnlg2017-human-eval")
    runner = CliRunner()
    failed = runner.invoke(cli, ["select", "--dataset", "webnlg2017"])
    assert failed.exit_code == 2 and "score it first" in failed.stderr
    _score("sentbleu")
    result = runner.invoke(cli, ["select", "--dataset", "webnlg2017", "--hybrids", "200", "--candidates", "10",
                                 "--draws", "500", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert len(rows) == 3 and {r["metric"] for r in rows} == {"sentbleu"}
    assert {"hits_at_1", "mrr", "mean_abs_human_diff", "signature", "group", "aspect", "seed"} <= set(rows[0])
