"""The quality-drift benchmark (BLEURT §5.2, appendix B.3) on the real WMT17 DA data."""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from sqlalchemy import select

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.catalog.models import Run
from assay.config import load_settings
from assay.datasets import store
from assay.errors import UsageError
from assay.jobs.ingest import ingest_path
from assay.jobs.quality_drift import (
    bin_edges,
    bin_index,
    draw_samples,
    drift_name,
    keep_probability,
    run_quality_drift,
    score_sample,
    split_pools,
)
from assay.jobs.runs import inputs_version
from assay.metrics.registry import MetricSpec
from assay.results import segment_scores

SENTBLEU = MetricSpec("sentbleu")


def test_bins_are_deciles_and_probabilities_follow_the_paper() -> None:
    human = np.random.default_rng(0).normal(size=1000)
    bins = bin_index(human, bin_edges(human))
    assert np.bincount(bins)[1:].tolist() == [100] * 10  # "10 bins of equal size" (B.3)
    width = bin_index(human, bin_edges(human, binning="width"))
    assert width.min() == 1 and width.max() == 10 and np.bincount(width)[1] < 100
    b = np.arange(1, 11)
    np.testing.assert_allclose(keep_probability(b, 2.0, "train"), 1 / b**2.0)
    np.testing.assert_allclose(keep_probability(b, 2.0, "test"), 1 / (11 - b) ** 2.0)
    assert keep_probability(b, 0.0, "test").tolist() == [1.0] * 10
    # expected kept shares with deciles: the paper's 50.7%, 30.3%, 20.4%, 11.9% of the records
    shares = [float(np.mean(keep_probability(b, a, "train"))) for a in (0.5, 1.0, 1.5, 3.0)]
    np.testing.assert_allclose(shares, [0.507, 0.303, 0.204, 0.119], atol=0.011)
    assert drift_name("wmt17", 0.5, "test") == "wmt17-drift-a0.5-test"
    assert drift_name("x", 3, "train") == "x-drift-a3-train"
    with pytest.raises(UsageError):
        keep_probability(b, 1.0, "validation")


def test_pools_split_items_not_segments() -> None:
    groups = ["de-en"] * 6 + ["fi-en"] * 4
    items = ["1", "1", "2", "3", "3", "4", "1", "2", "2", "3"]
    test = split_pools(groups, items, 0.5, np.random.default_rng(1))
    for group, item in set(zip(groups, items, strict=True)):
        sides = {t for g, i, t in zip(groups, items, test, strict=True) if (g, i) == (group, item)}
        assert len(sides) == 1  # every segment of an item is on one side
    test_items = {(g, i) for g, i, t in zip(groups, items, test, strict=True) if t}
    assert sum(g == "de-en" for g, _ in test_items) == 2 and sum(g == "fi-en" for g, _ in test_items) == 2  # round(1.5)


def _segments(label: str) -> dict:
    settings = load_settings()
    with session_scope(settings) as session:
        path = resolve(session, label).store_path
    return store.read_table(settings, path, "segments").to_pydict()


def _score_runs() -> list[dict]:
    with session_scope(load_settings()) as session:
        runs = session.scalars(select(Run).where(Run.kind == "score").order_by(Run.started_at)).all()
        return [{"dataset": inputs_version(r.inputs).label, **r.summary} for r in runs]


def test_quality_drift_on_wmt17(shared_data: Path) -> None:
    ingest_path(shared_data / "wmt17-da")
    parent = score_sample("wmt17", SENTBLEU)
    assert parent["computed"] == 3920
    alphas = [0.0, 1.5, 3.0]
    rows = run_quality_drift("wmt17", [SENTBLEU], alphas=alphas, seed=7, n_resamples=100)

    # rows: one per alpha and group, each with the metric's signature and the sample sizes
    headline = sorted((r for r in rows if r["group"] == "all"), key=lambda r: r["alpha"])
    assert [r["alpha"] for r in headline] == alphas
    for row in headline:
        assert row["metric"] == "sentbleu" and row["signature"] == parent["signature"]
        assert row["statistic"] == "kendall" and 0 < row["value"] < 1
        assert row["ci_low"] <= row["value"] <= row["ci_high"]
        assert row["test_dataset"].startswith(drift_name("wmt17", row["alpha"], "test") + "@")
        assert row["n_test"] == len(_segments(row["test_dataset"])["candidate"])
    assert len({r["group"] for r in rows}) == 8  # 7 to-English pairs + their mean
    assert headline[0]["n_train"] > headline[1]["n_train"] > headline[2]["n_train"]

    # determinism: the same seed stores nothing new; another seed draws other samples
    samples = draw_samples("wmt17", alphas=alphas, seed=7)
    assert not any(s.created for s in samples)
    by_label = {r["test_dataset"] for r in rows}
    assert {s.label for s in samples if s.split == "test"} == by_label
    again = draw_samples("wmt17", alphas=alphas, seed=7)
    assert [s.version.digest for s in again] == [s.version.digest for s in samples]
    other = draw_samples("wmt17", alphas=alphas, seed=8)
    assert all(o.created and o.version.digest != s.version.digest for o, s in zip(other, samples, strict=True))

    # the drift: test ratings rise with alpha, train ratings fall; alpha 0 keeps whole pools
    test = {s.alpha: s for s in samples if s.split == "test"}
    train = {s.alpha: s for s in samples if s.split == "train"}
    assert test[0.0].mean_human < test[1.5].mean_human < test[3.0].mean_human
    assert train[0.0].mean_human > train[1.5].mean_human > train[3.0].mean_human
    assert test[0.0].rows == test[0.0].pool_rows and train[0.0].rows + test[0.0].rows == 3920
    assert 0.08 < test[3.0].rows / test[3.0].pool_rows < 0.16  # the paper: 11.9% at alpha 3

    # train and test never share a source sentence; samples are nested across alpha
    items = {label: set(zip(seg["group"], seg["item_id"], strict=True))
             for label, seg in ((s.label, _segments(s.label)) for s in samples)}
    assert not items[train[0.0].label] & items[test[0.0].label]
    keys = {s.label: set(zip(*(_segments(s.label)[c] for c in ("group", "segment_id", "system")), strict=True))
            for s in test.values()}
    assert keys[test[3.0].label] <= keys[test[1.5].label] <= keys[test[0.0].label]

    # lineage in the catalog
    with session_scope(load_settings()) as session:
        parent_version = resolve(session, "wmt17")
        for sample in samples:
            version = resolve(session, sample.label)
            assert version.parent_version_id == parent_version.id and version.format == "derived"
            derivation = version.derivation or {}
            assert derivation["kind"] == "quality-drift" and derivation["alpha"] == sample.alpha
            assert derivation["split"] == sample.split and derivation["seed"] == 7 and derivation["bins"] == 10
            assert derivation["parent"] == "wmt17@1" and derivation["parent_digest"] == parent_version.digest
        drift_runs = session.scalars(select(Run).where(Run.kind == "quality-drift")).all()
        assert len(drift_runs) == 1 and drift_runs[0].parameters["seed"] == 7

    # no segment key is ever scored twice: the samples reuse the parent's scores, also on a rerun
    run_quality_drift("wmt17", [SENTBLEU], alphas=alphas, seed=7, n_resamples=100)
    runs = _score_runs()
    # a request with nothing to compute records no run: the only score run is the parent's
    assert len(runs) == 1 and runs[0]["computed"] == 3920
    stored = [pq.read_table(p, columns=["key"]) for p in
              (load_settings().home / segment_scores.ROOT).rglob("part-*.parquet")]
    stored_keys = [k for t in stored for k in t.column("key").to_pylist()]
    assert len(stored_keys) == len(set(stored_keys)) == 3920


def test_drift_refuses_corpus_metrics_and_unknown_statistics() -> None:
    with pytest.raises(UsageError, match="corpus-level"):
        run_quality_drift("wmt17", [MetricSpec("bleu")])
    with pytest.raises(UsageError, match="statistic"):
        run_quality_drift("wmt17", [SENTBLEU], statistic="kendall_like")


@pytest.mark.prefect
def test_drift_command_runs_the_flow(shared_data: Path, prefect_engine: None) -> None:
    from assay.cli.drift_commands import register

    ingest_path(shared_data / "wmt17-da")

    @click.group()
    def group() -> None:
        pass

    register(group)
    args = ["drift", "--dataset", "wmt17@1", "--metric", "sentbleu", "--alpha", "0", "--alpha", "2",
            "--seed", "3", "--resamples", "50", "--json"]
    result = CliRunner().invoke(group, args)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)  # Prefect logs go to stderr
    headline = sorted((r for r in rows if r["group"] == "all"), key=lambda r: r["alpha"])
    assert [r["alpha"] for r in headline] == [0.0, 2.0]
    assert all(r["signature"].startswith("sentbleu|") and r["drift_run_id"] for r in headline)
    assert headline[0]["test_dataset"] == "wmt17-drift-a0-test@1"
    table = CliRunner().invoke(group, [*args[:5], "--alpha", "2", "--seed", "3", "--resamples", "50"])
    assert table.exit_code == 0, table.output
    assert "wmt17-drift-a2-test@1" in table.stdout
