"""BERTScore baselines computed from a stored dataset (Zhang et al., 2020, §3 "Baseline Rescaling"),
kept as data with their signature and used by ``--rescale``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.catalog.models import ResultFile, Run
from assay.config import load_settings
from assay.fixtures import fixtures_dir
from assay.jobs.ingest import ingest_path
from assay.jobs.runs import inputs_version
from assay.jobs.score_export import scored_segments
from assay.jobs.scoring import finish_scoring, plan_scoring, score_shard
from assay.metrics.registry import MetricSpec
from assay.workers.bertscore import BERTScorer, compute_baseline, load_baseline
from assay.workers.encoder import load_encoder
from assay.workers.metrics import BERTScore
from assay.workers.rescale_baselines import compute_dataset_baseline, dataset_sentences, stored_baseline_file


def _score(**params: object) -> dict:
    plan = plan_scoring("wmt99", MetricSpec("bertscore", dict(params)))
    return finish_scoring(plan, [score_shard(plan, i) for i in range(len(plan.shards))])


def test_computed_baseline_is_stored_recorded_and_used_by_rescale() -> None:
    version = ingest_path(fixtures_dir() / "demo-wmt")
    settings = load_settings()
    result = compute_dataset_baseline("wmt99", layers=[4, 2], n_pairs=300, seed=7)
    path = stored_baseline_file(settings, "en", None)
    assert result["file"] == str(path) and path.is_file()
    # the file is in bert_score's layout and holds exactly what compute_baseline gives for these sentences
    with session_scope(settings) as session:
        store_path = resolve(session, "wmt99").store_path
    direct = compute_baseline(BERTScorer(encoder=load_encoder(None, 4)),
                              dataset_sentences(settings, store_path), n_pairs=300, seed=7)
    stored = load_baseline(path, 4)
    assert (stored.precision, stored.recall, stored.f1) == (direct.precision, direct.recall, direct.f1)
    assert load_baseline(path, 2).f1 == result["layers"]["2"]["F"]
    sidecar = json.loads(path.with_suffix(".json").read_text())
    assert "data:wmt99@1" in sidecar["layers"]["4"]["signature"] and "seed:7" in sidecar["layers"]["4"]["signature"]
    with session_scope(settings) as session:
        run = session.get(Run, result["run_id"])
        assert run is not None and run.kind == "baseline" and inputs_version(run.inputs) == version.version
        assert session.query(ResultFile).filter_by(run_id=run.id, kind="bertscore_baseline").count() == 1

    # --rescale uses it: rescaled = (raw - b) / (1 - b), per P, R and F
    raw = _score(layer=4)
    rescaled = _score(layer=4, rescale=True)
    assert rescaled["signature"] != raw["signature"] and rescaled["computed"] == 36
    raw_rows = scored_segments("wmt99", BERTScore(layer=4))
    new_rows = scored_segments("wmt99", BERTScore(layer=4, rescale=True))
    for column, b in (("precision", stored.precision), ("recall", stored.recall), ("f1", stored.f1)):
        expected = (raw_rows.column(column).to_numpy() - b) / (1 - b)
        np.testing.assert_allclose(new_rows.column(column).to_numpy(), expected, rtol=0, atol=1e-12)

    # a recomputed baseline changes the signature, so scores under the old one are not reused
    compute_dataset_baseline("wmt99", layers=[4], n_pairs=300, seed=8)
    again = _score(layer=4, rescale=True)
    assert again["signature"] != rescaled["signature"] and again["computed"] == 36
    assert load_baseline(path, 2).f1 == result["layers"]["2"]["F"]  # other layers' rows are kept


def test_a_baseline_needs_a_layer_for_other_models() -> None:
    from assay.errors import UsageError

    ingest_path(fixtures_dir() / "demo-wmt")
    with pytest.raises(UsageError, match="layer"):
        compute_dataset_baseline("wmt99", model="some/hub-model", layers=[])


def test_rescaling_without_any_baseline_says_how_to_compute_one() -> None:
    from assay.errors import NotFoundError

    with pytest.raises(NotFoundError, match="assay bertscore-baseline"):
        BERTScore(layer=4, rescale=True).signature()
