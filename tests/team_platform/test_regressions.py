"""Regression detection against the team's best checkpoint (assay.nightly.regressions), on real data.

A real WMT17 subset (de-en, the first 200 items: 223 judged segments) and three checkpoints on a
tiny RANDOM encoder whose order is known by construction (tests/team_platform/nightly_support.py):
``fit`` (least-squares head) correlates at least as well as ``base`` (random head), and
``flipped`` (``fit`` negated) has exactly the negated correlations. They are scored and evaluated
as the nightly flow would, one night each, and compared with the best after each night.
Oracles: scipy for the correlations, :func:`assay.stats.permutation_test` (PERM-BOTH, itself
checked against mt-metrics-eval in tests/stats) for the p-values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.stats
from sqlalchemy import func, select

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import reset_engines, session_scope, upgrade
from assay.catalog.models import Regression, Run
from assay.config import DEFAULT_SEED, load_settings
from assay.datasets import store
from assay.datasets.human import human_array
from assay.errors import NotFoundError, UsageError
from assay.jobs.evaluation import ScoredMetric, evaluate
from assay.jobs.ingest import ingest_path
from assay.jobs.scoring import score_dataset
from assay.metrics.registry import MetricSpec
from assay.nightly.regressions import Finding, SuiteCell, compare_with_best, list_regressions, record, suite_cells
from assay.nightly.suites import SuiteEntry
from assay.results.segment_scores import score_lookup, segment_key
from assay.stats import permutation_test
from tests.ingested_homes import copy_ingested
from tests.robustness_support import save_tiny_encoder, subset, use_home
from tests.team_platform.nightly_support import (
    add_ledger_row,
    add_suite,
    least_squares_checkpoint,
    negated_checkpoint,
)

RESAMPLES = 300
T0 = datetime(2026, 11, 20, 2, 0, tzinfo=UTC)
PERMUTATION_NAME = {"pearson": "pearson", "kendall": "kendall_b"}


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Iterator[dict[str, Any]]:
    from assay.workers.checkpoint import create_from_encoder
    from assay.workers.checkpoint_registration import register_folder

    home = tmp_path_factory.mktemp("regressions_home")
    folders = tmp_path_factory.mktemp("checkpoints")
    with pytest.MonkeyPatch.context() as mp:
        use_home(mp, home)
        settings = load_settings()
        copy_ingested(home, tmp_path_factory, shared_data, "wmt17-da")
        dataset = subset("wmt17", "wmt17-de200", groups=["de-en"], n_items=200)
        encoder = save_tiny_encoder(folders / "tiny-random-bert")
        base = create_from_encoder(encoder, folders / "base", seed=1)
        fit = least_squares_checkpoint(base, folders / "fit", settings, dataset)
        flipped = negated_checkpoint(fit, folders / "flipped")
        digests, signatures = {}, {}
        other = create_from_encoder(encoder, folders / "other", seed=2)  # another random head
        for name, folder in (("base", base), ("fit", fit), ("flipped", flipped), ("other", other)):
            digests[name] = register_folder(settings, folder, name=name).digest
            # by digest, as the nightly scores: resolved to the store's folder and verified once
            signatures[name] = score_dataset(dataset, MetricSpec("bleurt", {"checkpoint": digests[name]}))["signature"]
        suite_id, suite_signature = add_suite(settings, "nightly-wmt17", {
            "datasets": [dataset], "levels": ["seg"], "statistics": ["pearson", "kendall"]})
        cells = suite_cells([dataset], ["seg"], ["pearson", "kendall"])

        # a second suite (its own signature, so its own ledger) where only base and other ran
        random_suite = add_suite(settings, "random-heads", {"datasets": [dataset], "levels": ["seg"],
                                                            "statistics": ["pearson", "kendall"], "note": "random"})

        def night(name: str, day: int, evaluated: list[str], suite: tuple[int, str] = (suite_id, suite_signature)
                  ) -> dict[str, Any]:
            """One night: evaluate (the listed checkpoints' signatures), close the ledger row, compare."""
            run = evaluate(dataset, level="seg", metrics=[signatures[n] for n in evaluated],
                           statistics=["pearson", "kendall"], n_resamples=RESAMPLES)
            add_ledger_row(settings, suite_id=suite[0], suite_signature=suite[1], checkpoint_digest=digests[name],
                           dataset=dataset, evaluate_run_id=run["run_id"], finished_at=T0 + timedelta(days=day))
            findings = compare_with_best(settings, checkpoint_digest=digests[name], suite_signature=suite[1],
                                         entries=cells, n_resamples=RESAMPLES)
            return {"run_id": run["run_id"], "findings": findings}

        # the nightly evaluates each new checkpoint alone, except the third night, when it
        # evaluated every scored checkpoint together (the p-values are then read from that run)
        results = {"base": night("base", 0, ["base"]), "fit": night("fit", 1, ["fit"]),
                   "flipped": night("flipped", 2, ["base", "fit", "flipped"]),
                   "base-random": night("base", 0, ["base"], random_suite),
                   "other": night("other", 1, ["other"], random_suite)}
        yield {"home": home, "dataset": dataset, "digests": digests, "signatures": signatures,
               "suite_signature": suite_signature, "cells": cells, "nights": results}


@pytest.fixture
def state(nights: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    use_home(monkeypatch, nights["home"])
    return nights


def _scores(state: dict[str, Any], name: str) -> tuple[np.ndarray, np.ndarray]:
    """(human, metric) over the judged segments, in the stored order, from the stores."""
    settings = load_settings()
    with session_scope(settings) as session:
        path = resolve(session, state["dataset"]).store_path
    seg = store.read_table(settings, path, "segments").to_pydict()
    keys = [segment_key(s, r, c) for s, r, c in zip(seg["source"], seg["references"], seg["candidate"], strict=True)]
    lookup = score_lookup(settings, ScoredMetric("bleurt", state["signatures"][name]), set(keys))
    human = human_array(seg)
    metric = np.array([lookup[k][0] for k in keys], dtype=np.float64)
    ok = ~np.isnan(human)
    return human[ok], metric[ok]


def _by_statistic(findings: list[Finding]) -> dict[str, Finding]:
    assert len({f.statistic for f in findings}) == len(findings)
    return {f.statistic: f for f in findings}


def _oracle_p(state: dict[str, Any], better: str, worse: str, statistic: str) -> float:
    human, a = _scores(state, better)
    _, b = _scores(state, worse)
    return permutation_test(human, a, b, statistic=PERMUTATION_NAME[statistic], n_resamples=RESAMPLES,  # type: ignore[arg-type]
                            seed=DEFAULT_SEED).p_value


def test_the_first_checkpoint_has_no_baseline(state: dict[str, Any]) -> None:
    assert state["nights"]["base"]["findings"] == []


def test_a_better_checkpoint_is_compared_but_not_a_regression(state: dict[str, Any]) -> None:
    found = _by_statistic(state["nights"]["fit"]["findings"])
    assert sorted(found) == ["kendall", "pearson"]
    human, fit = _scores(state, "fit")
    _, base = _scores(state, "base")
    oracle = {"pearson": (scipy.stats.pearsonr(human, fit)[0], scipy.stats.pearsonr(human, base)[0]),
              "kendall": (scipy.stats.kendalltau(human, fit)[0], scipy.stats.kendalltau(human, base)[0])}
    for statistic, f in found.items():
        assert (f.checkpoint_digest, f.baseline_digest) == (state["digests"]["fit"], state["digests"]["base"])
        assert (f.group, f.aspect, f.level, f.dataset) == ("de-en", "da", "seg", state["dataset"])
        assert f.value == pytest.approx(oracle[statistic][0], abs=1e-9)
        assert f.baseline_value == pytest.approx(oracle[statistic][1], abs=1e-9)
        assert f.regression is False and f.test == "perm-both"
        # the nightly evaluated fit alone: the pair was tested from the stored scores, citing fit's own run
        assert f.evaluate_run_id == state["nights"]["fit"]["run_id"]
        # fit correlates better: the p-value is that of its improvement (better metric first)
        assert f.p_value == pytest.approx(_oracle_p(state, "fit", "base", statistic), abs=1e-12)
    # least squares maximises in-sample Pearson r over linear heads: guaranteed by construction
    assert found["pearson"].value > found["pearson"].baseline_value
    with session_scope(load_settings()) as session:
        # each checkpoint was evaluated once, by its night: comparing recorded no further evaluation
        runs = session.scalars(select(Run).where(Run.kind == "evaluate")).all()
        assert len(runs) == len(state["nights"])
        run = session.get(Run, found["pearson"].evaluate_run_id)
        assert run is not None and run.inputs["signatures"] == [state["signatures"]["fit"]]


def test_a_clearly_worse_checkpoint_is_a_regression_against_the_best(state: dict[str, Any]) -> None:
    found = _by_statistic(state["nights"]["flipped"]["findings"])
    assert sorted(found) == ["kendall", "pearson"]
    fit_values = {f.statistic: f.value for f in state["nights"]["fit"]["findings"]}
    for statistic, f in found.items():
        # the best is fit (the highest of base and fit), never the checkpoint itself
        assert f.baseline_digest == state["digests"]["fit"]
        assert f.baseline_value == pytest.approx(fit_values[statistic], abs=1e-12)
        assert f.value == pytest.approx(-fit_values[statistic], abs=1e-9)  # negated scores, by construction
        assert f.regression is True and f.test == "perm-both"
        assert f.p_value == pytest.approx(_oracle_p(state, "fit", "flipped", statistic), abs=1e-12)
        assert f.p_value < 0.05
        # that night's evaluation had both signatures: its stored p-values were used
        assert f.evaluate_run_id == state["nights"]["flipped"]["run_id"]
    # the nightly flow passes a suite's entries (assay.nightly.suites.SuiteEntry): the same cells, the same findings
    settings = load_settings()
    with session_scope(settings) as session:
        version = resolve(session, state["dataset"])
        entry = SuiteEntry(version=version.ref, version_id=version.id, levels=("seg",),
                           statistics=("pearson", "kendall"), groups=None)
    again = compare_with_best(settings, checkpoint_digest=state["digests"]["flipped"],
                              suite_signature=state["suite_signature"], entries=[entry], n_resamples=RESAMPLES)
    assert again == state["nights"]["flipped"]["findings"]


def test_two_random_heads_are_compared_with_the_same_test(state: dict[str, Any]) -> None:
    """Two random heads: a p-value away from 0 and 1, checked against the oracle; each suite
    signature has its own ledger (fit and flipped are not baselines here)."""
    found = _by_statistic(state["nights"]["other"]["findings"])
    assert sorted(found) == ["kendall", "pearson"]
    for statistic, f in found.items():
        assert f.baseline_digest == state["digests"]["base"]
        better, worse = ("base", "other") if f.value < f.baseline_value else ("other", "base")
        assert f.p_value == pytest.approx(_oracle_p(state, better, worse, statistic), abs=1e-12)
        assert f.regression is (f.value < f.baseline_value and f.p_value < 0.05)
    assert any(0.001 < f.p_value < 0.999 for f in found.values())


def _regression_rows() -> int:
    with session_scope(load_settings()) as session:
        return int(session.scalar(select(func.count()).select_from(Regression)) or 0)


def test_record_is_idempotent_and_lists_names(state: dict[str, Any]) -> None:
    settings = load_settings()
    findings = state["nights"]["flipped"]["findings"]
    signature = state["suite_signature"]
    assert record(settings, state["nights"]["fit"]["findings"], suite_signature=signature, run_id=None) == 0
    assert record(settings, findings, suite_signature=signature, run_id="a" * 32) == 2
    assert record(settings, findings, suite_signature=signature, run_id="a" * 32) == 2
    assert _regression_rows() == 2
    listed = list_regressions(settings, checkpoint="flipped")
    assert len(listed) == 2 and list_regressions(settings, checkpoint="fit") == []
    assert list_regressions(settings) == listed
    for row in listed:
        f = next(f for f in findings if f.statistic == row["statistic"])
        assert (row["checkpoint"], row["baseline"]) == ("flipped", "fit")
        assert row["checkpoint_lineage"] == "flipped (finetune of fit)"
        assert (row["group"], row["aspect"], row["dataset"]) == ("de-en", "da", state["dataset"])
        assert (row["value"], row["baseline_value"], row["p_value"]) == (f.value, f.baseline_value, f.p_value)
        assert row["run_id"] == "a" * 32
    # a cell compared again and no longer a regression loses its row; the other cell keeps its own
    cleared = dataclasses.replace(findings[0], regression=False)
    assert record(settings, [cleared], suite_signature=signature, run_id=None) == 0
    assert _regression_rows() == 1
    assert record(settings, findings, suite_signature=signature, run_id=None) == 2
    assert _regression_rows() == 2


def test_bad_input_is_refused_and_nothing_is_written(state: dict[str, Any]) -> None:
    settings = load_settings()
    with session_scope(settings) as session:
        runs = session.scalar(select(func.count()).select_from(Run))
    regressions = _regression_rows()
    digest, signature, cells = state["digests"]["flipped"], state["suite_signature"], state["cells"]
    with pytest.raises(UsageError, match="sha256"):
        compare_with_best(settings, checkpoint_digest="flipped", suite_signature=signature, entries=cells)
    with pytest.raises(UsageError, match="suite signature"):
        compare_with_best(settings, checkpoint_digest=digest, suite_signature="x'; DROP TABLE regressions; --",
                          entries=cells)
    with pytest.raises(UsageError, match="statistic 'bleu'"):
        compare_with_best(settings, checkpoint_digest=digest, suite_signature=signature,
                          entries=[SuiteCell(state["dataset"], "seg", "bleu")])
    with pytest.raises(NotFoundError, match="no dataset named"):
        compare_with_best(settings, checkpoint_digest=digest, suite_signature=signature,
                          entries=[SuiteCell("nosuch@1", "seg", "pearson")])
    with pytest.raises(UsageError, match="no evaluation of"):  # a checkpoint the ledger does not know
        compare_with_best(settings, checkpoint_digest="0" * 64, suite_signature=signature, entries=cells)
    with pytest.raises(UsageError, match="suite signature"):
        record(settings, state["nights"]["flipped"]["findings"], suite_signature="a b", run_id=None)
    with pytest.raises(NotFoundError):
        list_regressions(settings, checkpoint="<script>")
    with session_scope(settings) as session:
        assert session.scalar(select(func.count()).select_from(Run)) == runs
    assert _regression_rows() == regressions


def test_record_on_postgresql(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same replace-per-cell writes on the team's catalog backend (hand-made findings: what is
    checked is the catalog, not the statistics)."""
    from assay.fixtures import fixtures_dir

    monkeypatch.setenv("ASSAY_CATALOG_URL", postgres_url)
    reset_engines()
    upgrade(postgres_url)
    settings = load_settings()
    ingest_path(fixtures_dir() / "demo-wmt")
    with session_scope(settings) as session:
        version_id = resolve(session, "wmt99@1").id
    finding = Finding(
        checkpoint_digest="1" * 64, baseline_digest="2" * 64, dataset="wmt99@1", dataset_version_id=version_id,
        level="seg", group="all", aspect="da", statistic="kendall", value=0.1, baseline_value=0.3, p_value=0.01,
        test="paired-bootstrap", regression=True, signature="bleurt|checkpoint:111111111111",
        baseline_signature="bleurt|checkpoint:222222222222", evaluate_run_id="b" * 32)
    other = dataclasses.replace(finding, statistic="pearson", p_value=0.2, regression=False)
    for _ in range(2):
        assert record(settings, [finding, other], suite_signature="s" * 64, run_id=None) == 1
    listed = list_regressions(settings)
    assert len(listed) == 1
    assert (listed[0]["group"], listed[0]["aspect"], listed[0]["checkpoint"]) == ("all", "da", None)
    assert listed[0]["dataset"] == "wmt99@1"
    reset_engines()
