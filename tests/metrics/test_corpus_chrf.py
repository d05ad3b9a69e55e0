"""Corpus chrF (``corpus-chrf``) is WMT's system-level chrF, aggregated from summed statistics.

Oracles and tolerances:
* mt-metrics-eval's WMT23 en-de ``metric-scores/en-de/chrF-refA.sys.score`` (the organisers'
  sacrebleu corpus chrF, ``nc:6|nw:0|beta:2``; 13 systems: 12 MT systems and ``synthetic_ref``),
  with the texts read as mt-metrics-eval reads them (``data._ReadTextFile``: UTF-8, each line
  right-stripped, a byte-order mark kept). Measured: bit-identical (max abs difference 0.0,
  sacrebleu 2.6.0). Tolerance: absolute 1e-9 on the 0-100 scale, as
  ``test_official_baselines.py``.
* sacrebleu's own ``CHRF(...).corpus_score`` on the same texts (and on each bootstrap resample,
  drawn items repeated): absolute 1e-9.
* The mean of segment chrF, what Assay's system level used for ``chrf``, is *not* the official
  number: measured on these files it is off by up to 5.07 points (AIRC: mean 57.26, official
  52.19), so a test that confused the two would fail.
* End to end (ingest, ``assay score --scope outputs``, evaluate): the system-level Pearson of
  corpus chrF with MQM is REFERENCE_NUMBERS.md's chrF sys Pearson 0.865726 (WMT23 en-de, from
  mt-metrics-eval's own code, printed to 6 decimals). Measured 0.8657258048 against
  0.8657261543 from the official system scores: ingest drops the byte-order mark that opens
  ``AIRC.txt`` (a warned quirk), which the organisers' chrF counted, moving AIRC's corpus chrF by
  5.6e-5 points; every other system is bit-identical. Tolerance: 5e-7 (the printed precision).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from sacrebleu.metrics import BLEU, CHRF

from assay.errors import UsageError
from assay.jobs.evaluation import evaluate
from assay.jobs.ingest import ingest_versions
from assay.jobs.scoring import finish_scoring, plan_scoring, score_shard
from assay.metrics.lexical import ChrF, CorpusBLEU, CorpusChrF
from assay.metrics.registry import MetricSpec, create_metric, metric_class
from assay.stats.bootstrap import resample_indices
from assay.stats.resampled import resample_counts
from assay.stats.system_level import resampled_corpus_scores
from tests.conftest import SHARED_DATA

WMT23 = SHARED_DATA / "mtme-wmt23" / "wmt23"
PAIR = "en-de"
TOLERANCE = 1e-9
# REFERENCE_NUMBERS.md, "WMT23 metrics task, en-de, from mt-metrics-eval's own code": chrF sys Pearson
CHRF_SYS_PEARSON = 0.865726


def read_text(path: Path) -> list[str]:
    """A line-aligned text file as mt-metrics-eval reads it (``data._ReadTextFile``)."""
    with path.open(encoding="utf-8") as f:
        return [line.rstrip() for line in f]


def read_system_scores(path: Path) -> dict[str, float]:
    """An MTME ``.sys.score`` file: ``SYSTEM<TAB>SCORE`` per line."""
    with path.open(encoding="utf-8") as f:
        return {system: float(score) for system, score in (line.split() for line in f if line.strip())}


@pytest.fixture(scope="module")
def wmt23() -> tuple[list[str], dict[str, list[str]], dict[str, float]]:
    """refA, the outputs of the systems with an official corpus chrF, and those scores."""
    official = read_system_scores(WMT23 / "metric-scores" / PAIR / "chrF-refA.sys.score")
    references = read_text(WMT23 / "references" / f"{PAIR}.refA.txt")
    outputs = {system: read_text(WMT23 / "system-outputs" / PAIR / f"{system}.txt") for system in official}
    return references, outputs, official


@pytest.fixture(scope="module")
def scored(wmt23: tuple[list[str], dict[str, list[str]], dict[str, float]]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """system -> (segment scores, sufficient statistics) of the default corpus chrF."""
    references, outputs, _ = wmt23
    metric = CorpusChrF()
    found = {}
    for system, hyps in outputs.items():
        result = metric.score(hyps, [[ref] for ref in references])
        assert result.stats is not None
        found[system] = (result.score, result.stats)
    return found


def test_system_scores_equal_the_official_wmt23_chrf(
        wmt23: tuple[list[str], dict[str, list[str]], dict[str, float]],
        scored: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
    references, outputs, official = wmt23
    assert len(official) == 13 and all(len(hyps) == len(references) == 557 for hyps in outputs.values())
    systems = sorted(official)
    metric = CorpusChrF()
    stats = np.stack([scored[s][1] for s in systems])  # systems x segments x 18
    assert stats.shape == (13, 557, len(CorpusChrF.stats_columns))
    # Assay's aggregation path: statistics summed per system, the metric's aggregate read from its signature
    aggregate = metric_class("corpus-chrf").corpus_scorer(metric.signature())
    got = resampled_corpus_scores(stats, np.ones((1, 557)), aggregate)[0]
    differences = {}
    for system, value in zip(systems, got, strict=True):
        assert value == pytest.approx(official[system], abs=TOLERANCE), system
        differences[system] = float(np.mean(scored[system][0])) - official[system]
    for system in ("AIRC", "ONLINE-W", "synthetic_ref"):  # sacrebleu itself (0.7 s a system: three of them)
        sacre = CHRF().corpus_score(outputs[system], [references]).score
        assert got[systems.index(system)] == pytest.approx(sacre, abs=TOLERANCE), system
    # the mean of segment chrF is another number (measured: up to 5.07 points, AIRC)
    assert max(abs(d) for d in differences.values()) > 5.0


def test_segment_scores_are_sentence_chrf(
        wmt23: tuple[list[str], dict[str, list[str]], dict[str, float]],
        scored: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
    """A corpus metric's segment scores are another metric's (``chrf``'s), as ``bleu``'s are
    ``sentbleu``'s; evaluation never ranks them at segment level."""
    references, outputs, _ = wmt23
    hyps = outputs["AIRC"][:60]
    refs = [[ref] for ref in references[:60]]
    expected = [CHRF().sentence_score(h, r).score for h, r in zip(hyps, refs, strict=True)]
    np.testing.assert_allclose(scored["AIRC"][0][:60], expected, rtol=0, atol=TOLERANCE)
    np.testing.assert_array_equal(scored["AIRC"][0][:200],
                                  ChrF().score(outputs["AIRC"][:200], [[r] for r in references[:200]]).score)


def test_bootstrap_replicates_are_sacrebleus_corpus_chrf_of_the_resampled_items(
        wmt23: tuple[list[str], dict[str, list[str]], dict[str, float]],
        scored: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
    references, outputs, _ = wmt23
    systems, items = ["AIRC", "ONLINE-W"], 200  # the first 200 segments: sacrebleu is the slow side
    index = resample_indices(7, "sys/en-de/mqm", 3, items)  # evaluation's resampling, three replicates
    stats = np.stack([scored[s][1][:items] for s in systems])
    replicates = resampled_corpus_scores(stats, resample_counts(index, items), CorpusChrF().corpus_score)
    for r, rows in enumerate(index):
        for s, system in enumerate(systems):
            expected = CHRF().corpus_score([outputs[system][i] for i in rows], [[references[i] for i in rows]]).score
            assert replicates[r, s] == pytest.approx(expected, abs=TOLERANCE), (r, system)


def test_the_aggregate_reads_its_parameters_from_the_signature(
        wmt23: tuple[list[str], dict[str, list[str]], dict[str, float]]) -> None:
    """Evaluation knows a stored signature, not the metric object: the aggregate must be the one
    the scores were made with (β = 1 and word bigrams: chrF++-like, Popović 2017)."""
    references, outputs, _ = wmt23
    hyps, refs = outputs["ONLINE-M"][:120], references[:120]
    metric = create_metric("corpus-chrf", word_order=2, beta=1)
    stats = metric.score(hyps, [[r] for r in refs]).stats
    assert stats is not None and stats.shape == (120, 3 * 8)
    expected = CHRF(word_order=2, beta=1).corpus_score(hyps, [refs]).score
    aggregate = CorpusChrF.corpus_scorer(metric.signature())
    assert aggregate(stats) == pytest.approx(expected, abs=TOLERANCE)
    assert abs(CHRF(word_order=2).corpus_score(hyps, [refs]).score - expected) > 0.1  # β matters
    with pytest.raises(UsageError, match="expected 18"):
        CorpusChrF().corpus_score(stats)  # statistics of other orders are refused, not misread
    with pytest.raises(UsageError, match="not a corpus-chrf signature"):
        CorpusChrF.corpus_scorer(ChrF().signature())

    # corpus BLEU's smoothing likewise (it matters where an n-gram order has no match)
    hyps, refs = ["the cat sat", "a dog ran far away"], ["the cat sat down", "a dog walked far away"]
    floor = CorpusBLEU(smooth_method="floor")
    bleu_stats = floor.score(hyps, [[r] for r in refs]).stats
    assert bleu_stats is not None
    expected = BLEU(smooth_method="floor").corpus_score(hyps, [refs]).score
    assert CorpusBLEU.corpus_scorer(floor.signature())(bleu_stats) == pytest.approx(expected, abs=TOLERANCE)
    assert CorpusBLEU().corpus_score(bleu_stats) != pytest.approx(expected, abs=0.1)


def test_degenerate_inputs_score_as_sacrebleu() -> None:
    hyps, refs = ["", "x"], ["Ein Haus.", ""]
    metric = CorpusChrF()
    stats = metric.score(hyps, [[r] for r in refs]).stats
    assert stats is not None
    assert metric.corpus_score(stats) == CHRF().corpus_score(hyps, [refs]).score == 0.0
    assert metric.corpus_score(np.zeros((0, 18))) == 0.0  # no segments: sacrebleu's 0 of zero statistics


def _mtme_copy(root: Path) -> Path:
    """The en-de folder with chrF-refA as its only official metric."""
    folder = root / "wmt23"
    for sub in ("sources", "references", "documents", "human-scores"):
        for file in (WMT23 / sub).glob(f"{PAIR}.*"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
            shutil.copy(file, folder / sub / file.name)
    shutil.copytree(WMT23 / "system-outputs" / PAIR, folder / "system-outputs" / PAIR)
    (folder / "metric-scores" / PAIR).mkdir(parents=True)
    for file in (WMT23 / "metric-scores" / PAIR).glob("chrF-refA.*.score"):
        shutil.copy(file, folder / "metric-scores" / PAIR / file.name)
    return folder


@pytest.mark.slow  # about 11 s: ingest, then 13 x 557 outputs scored
def test_evaluation_aggregates_corpus_chrf_at_system_level_only(tmp_path: Path) -> None:
    (version,) = ingest_versions(_mtme_copy(tmp_path))
    plan = plan_scoring(version.label, MetricSpec("corpus-chrf"), scope="outputs", shard_size=50_000)
    finish_scoring(plan, [score_shard(plan, i) for i in range(len(plan.shards))])

    rows = evaluate(version.label, level="sys", metrics=["corpus-chrf"], statistics=["pearson"],
                    n_resamples=50)["rows"]
    mqm = [r for r in rows if r["aspect"] == "mqm"]
    assert len(mqm) == 1 and mqm[0]["unit"] == "systems" and mqm[0]["n"] == 12
    assert mqm[0]["value"] == pytest.approx(CHRF_SYS_PEARSON, abs=5e-7)
    assert mqm[0]["ci_low"] < mqm[0]["value"] < mqm[0]["ci_high"]

    # WMT23's protocol places it beside the official chrF at system level, and not at segment level
    protocol = evaluate(version.label, protocol="wmt23", n_resamples=50)["rows"]
    ours = [r for r in protocol if r["metric"] == "corpus-chrf"]
    assert {(r["level"], r["statistic"]) for r in ours} == {("sys", "pearson"), ("sys", "pairwise_accuracy")}
    sys_pearson = {r["metric"]: r["value"] for r in protocol if (r["level"], r["statistic"]) == ("sys", "pearson")}
    assert sys_pearson["corpus-chrf"] == pytest.approx(mqm[0]["value"], abs=1e-12)
    assert sys_pearson["chrF"] == pytest.approx(CHRF_SYS_PEARSON, abs=5e-7)
    with pytest.raises(UsageError, match="no metric scores cover"):
        evaluate(version.label, level="seg", metrics=["corpus-chrf"], n_resamples=10)
