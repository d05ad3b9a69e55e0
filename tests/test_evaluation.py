"""Evaluation, leaderboards and data-versioned reruns on the bundled demo package."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assay.catalog.engine import session_scope
from assay.catalog.models import Run
from assay.errors import NotFoundError, UsageError
from assay.fixtures import fixtures_dir
from assay.jobs.evaluation import evaluate
from assay.jobs.ingest import ingest_path
from assay.jobs.reruns import rerun
from assay.jobs.scoring import finish_scoring, plan_scoring, score_shard
from assay.metrics.registry import MetricSpec
from assay.query.leaderboard import LeaderboardQuery, leaderboard

DEMO_WMT = fixtures_dir() / "demo-wmt"
ROW_KEYS = {"metric", "signature", "group", "aspect", "level", "statistic", "value", "ci_low", "ci_high", "n",
            "version_number"}


def score(dataset: str, metric: str, scope: str = "judged") -> dict:
    plan = plan_scoring(dataset, MetricSpec(metric), scope=scope)
    return finish_scoring(plan, [score_shard(plan, i) for i in range(len(plan.shards))])


def test_evaluate_rows_have_the_documented_fields() -> None:
    ingest_path(DEMO_WMT)
    score("wmt99", "sentbleu")
    score("wmt99", "chrf")
    result = evaluate("wmt99", level="seg", n_resamples=200)
    rows = result["rows"]
    assert all(set(row) >= ROW_KEYS for row in rows)
    assert {r["group"] for r in rows} == {"de-en", "fr-en", "all"}
    assert {r["statistic"] for r in rows} == {"pearson", "kendall"}
    for row in rows:
        assert -1 <= row["value"] <= 1 and row["ci_low"] <= row["value"] <= row["ci_high"]
    # the same seed gives the same intervals
    again = evaluate("wmt99", level="seg", n_resamples=200)
    strip = [(r["group"], r["statistic"], r["metric"], r["ci_low"], r["ci_high"]) for r in rows]
    assert strip == [(r["group"], r["statistic"], r["metric"], r["ci_low"], r["ci_high"]) for r in again["rows"]]


def test_system_level_needs_full_outputs_and_uses_corpus_bleu() -> None:
    ingest_path(DEMO_WMT)
    with pytest.raises(UsageError, match="scope outputs"):
        evaluate("wmt99", level="sys")
    score("wmt99", "bleu", scope="outputs")
    result = evaluate("wmt99", level="sys", statistics=["pearson"], n_resamples=100)
    assert {r["metric"] for r in result["rows"]} == {"bleu"}
    assert {r["n"] for r in result["rows"] if r["group"] != "all"} == {3}


def test_leaderboard_ranks_with_clusters_and_parameterized_filters() -> None:
    ingest_path(DEMO_WMT)
    for metric in ("sentbleu", "chrf", "ter"):
        score("wmt99", metric)
    evaluate("wmt99", level="seg", n_resamples=200)
    rows = leaderboard(LeaderboardQuery("wmt99", "seg", "kendall", "de-en"))
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert rows[0]["value"] >= rows[1]["value"] >= rows[2]["value"]
    assert all(r["cluster"] >= 1 and r["signature"].startswith(r["metric"]) for r in rows)
    subset = leaderboard(LeaderboardQuery("wmt99", "seg", "kendall", "de-en", metrics=("ter", "chrf")))
    assert {r["metric"] for r in subset} == {"ter", "chrf"}
    # user input is bound, never interpolated: an injection attempt is just a group that doesn't exist
    with pytest.raises(NotFoundError):
        leaderboard(LeaderboardQuery("wmt99", "seg", "kendall", "de-en' OR '1'='1"))


def test_leaderboard_refuses_different_item_sets(tmp_path: Path) -> None:
    root = tmp_path / "demo-wmt"
    shutil.copytree(DEMO_WMT, root)
    ingest_path(root)
    score("wmt99", "sentbleu")
    evaluate("wmt99", level="seg", n_resamples=50)
    # a second version with one more system; only chrf is evaluated on it
    out_dir = root / "system-outputs/newstest2099/de-en"
    shutil.copy(out_dir / "newstest2099.beta.102.de-en", out_dir / "newstest2099.epsilon.105.de-en")
    (out_dir / "newstest2099.epsilon.105.de-en").write_text(
        (out_dir / "newstest2099.beta.102.de-en").read_text().replace("The", "A"))
    with (root / "DA-seglevel.csv").open("a") as handle:
        handle.writelines(f"de-en newstest2099 epsilon.105 {sid} -0.1\n" for sid in range(1, 7))
    ingest_path(root)
    score("wmt99@2", "chrf")
    evaluate("wmt99@2", level="seg", metrics=["chrf"], n_resamples=50)
    # unpinned, the leaderboard ranks only the newest version's rows: sentbleu (v1 only) is not mixed in
    newest = leaderboard(LeaderboardQuery("wmt99", "seg", "kendall", "de-en"))
    assert {(r["metric"], r["version_number"]) for r in newest} == {("chrf", 2)}
    mixed = leaderboard(LeaderboardQuery("wmt99", "seg", "kendall", "de-en", allow_mixed=True))
    assert {(r["metric"], r["version_number"]) for r in mixed} == {("sentbleu", 1), ("chrf", 2)}
    # each version on its own ranks fine
    assert leaderboard(LeaderboardQuery("wmt99@1", "seg", "kendall", "de-en"))[0]["metric"] == "sentbleu"
    assert leaderboard(LeaderboardQuery("wmt99@2", "seg", "kendall", "de-en"))[0]["metric"] == "chrf"


def test_rows_from_different_item_sets_or_versions_are_refused() -> None:
    from assay.query.leaderboard import _refuse_mixed

    _refuse_mixed([{"version_number": 1, "aspect": "da", "item_set": "a"},
                   {"version_number": 1, "aspect": "da", "item_set": "a"}])
    with pytest.raises(UsageError, match="different item sets"):
        _refuse_mixed([{"version_number": 1, "aspect": "da", "item_set": "a"},
                       {"version_number": 1, "aspect": "da", "item_set": "b"}])
    with pytest.raises(UsageError, match="dataset versions"):
        _refuse_mixed([{"version_number": 1, "aspect": "da", "item_set": "a"},
                       {"version_number": 2, "aspect": "da", "item_set": "a"}])


def test_data_versioned_rerun(tmp_path: Path) -> None:
    """A corrected dataset never silently changes an old result; a rerun recomputes exactly."""
    root = tmp_path / "demo-wmt"
    shutil.copytree(DEMO_WMT, root)
    v1 = ingest_path(root)
    first_score = score("wmt99", "sentbleu")
    first_eval = evaluate("wmt99@1", level="seg", n_resamples=100)

    # version 2: one judgment corrected, one system added
    seg = root / "DA-seglevel.csv"
    corrected = seg.read_text().replace("de-en newstest2099 beta.102 4 -0.310", "de-en newstest2099 beta.102 4 0.500")
    assert corrected != seg.read_text()
    seg.write_text(corrected)
    out_dir = root / "system-outputs/newstest2099/fr-en"
    (out_dir / "newstest2099.zeta.106.fr-en").write_text(
        (out_dir / "newstest2099.gamma.103.fr-en").read_text().lower())
    with seg.open("a") as handle:
        handle.writelines(f"fr-en newstest2099 zeta.106 {sid} -1.2\n" for sid in range(1, 7))
    v2 = ingest_path(root)
    assert (v1.version.number, v2.version.number) == (1, 2) and v1.version.digest != v2.version.digest

    second_score = score("wmt99@2", "sentbleu")
    assert second_score["computed"] == 6 and second_score["cached"] == 36  # only the new system's segments
    second_eval = evaluate("wmt99@2", level="seg", n_resamples=100)
    v1_rows = {(r["group"], r["statistic"]): r["value"] for r in first_eval["rows"]}
    v2_rows = {(r["group"], r["statistic"]): r["value"] for r in second_eval["rows"]}
    assert v1_rows != v2_rows

    # rerunning the old runs reproduces the old numbers against version 1, writes new runs, keeps old
    rerun_score = rerun(first_score["run_id"])
    assert rerun_score["computed"] == 0 and rerun_score["dataset"] == "wmt99@1"
    with session_scope() as session:  # nothing to recompute, and still a record that it was checked
        record = session.get(Run, rerun_score["rerun_id"])
        assert record is not None and record.kind == "rerun" and record.parent_run_id == first_score["run_id"]
    rerun_eval = rerun(first_eval["run_id"])
    assert {(r["group"], r["statistic"]): r["value"] for r in rerun_eval["rows"]} == v1_rows
    with session_scope() as session:
        new_run = session.get(Run, rerun_eval["run_id"])
        assert new_run is not None and new_run.parent_run_id == first_eval["run_id"]
        assert session.get(Run, first_eval["run_id"]) is not None
    # both versions stay queryable
    assert leaderboard(LeaderboardQuery("wmt99@1", "seg", "pearson", "all"))[0]["value"] == pytest.approx(
        v1_rows[("all", "pearson")])
    assert leaderboard(LeaderboardQuery("wmt99@2", "seg", "pearson", "all"))[0]["value"] == pytest.approx(
        v2_rows[("all", "pearson")])


def test_pairwise_statistics_equal_the_stats_module_on_the_exported_scores() -> None:
    """tau_23, acc_23 and tie-calibrated acc_23 (Deutsch et al. 2023; mt-metrics-eval), per language
    pair: the evaluation's values equal ``assay.stats`` on the exported (human, score) vectors, whose
    own values are checked against the mt-metrics-eval fixtures in tests/stats."""
    import numpy as np

    from assay.jobs.score_export import scored_segments
    from assay.metrics.registry import create_metric
    from assay.stats import acc_23, tau_23, tie_calibration

    ingest_path(DEMO_WMT)
    score("wmt99", "sentbleu")
    result = evaluate("wmt99", level="seg", statistics=["tau23", "acc23", "acc_t"], n_resamples=100)
    got = {(r["group"], r["statistic"]): r for r in result["rows"]}
    table = scored_segments("wmt99", create_metric("sentbleu")).to_pylist()
    for group in ("de-en", "fr-en"):
        human = np.array([r["human"] for r in table if r["group"] == group])
        metric = np.array([r["score"] for r in table if r["group"] == group])
        assert got[(group, "tau23")]["value"] == pytest.approx(tau_23(human, metric).value, abs=1e-12)
        assert got[(group, "acc23")]["value"] == pytest.approx(acc_23(human, metric).value, abs=1e-12)
        calibrated = tie_calibration(human, metric, statistic="acc_23")
        assert got[(group, "acc_t")]["value"] == pytest.approx(calibrated.value, abs=1e-12)
        assert calibrated.value >= got[(group, "acc23")]["value"]  # epsilon 0 is among the candidates
        for statistic in ("tau23", "acc23", "acc_t"):
            row = got[(group, statistic)]
            assert row["ci_low"] <= row["value"] <= row["ci_high"]


def test_left_out_groups_are_left_out_for_every_metric(shared_data: Path) -> None:
    """WMT16's en-ru is not covered by the English-only embedded encoder; the main job leaves it out
    of the evaluation for every metric, so the mean over groups compares the same items (real data)."""
    ingest_path(shared_data / "wmt16-da-seg")
    for metric in ("sentbleu", "chrf"):
        score("wmt16", metric)
    full = evaluate("wmt16", level="seg", statistics=["pearson"], n_resamples=20)
    assert "en-ru" in {r["group"] for r in full["rows"]}
    left_out = evaluate("wmt16", level="seg", statistics=["pearson"], n_resamples=20, exclude_groups=["en-ru"])
    assert "en-ru" not in {r["group"] for r in left_out["rows"]}
    means = {r["metric"]: r for r in left_out["rows"] if r["group"] == "all"}
    assert means["sentbleu"]["item_set"] == means["chrf"]["item_set"]
    with session_scope() as session:
        run = session.get(Run, left_out["run_id"])
        assert run is not None and run.parameters["exclude_groups"] == ["en-ru"]


# --- the same numbers as the first evaluation (commit 789ed3b, Python loops over replicates) -----
#
# Expected values below were computed with `git show 789ed3b:platform/assay/jobs/evaluation.py` (run with
# that commit's checkout on PYTHONPATH) on the demo package scored as in the test: sentbleu, chrf
# and ter on the judged segments, bleu, chrf and sentbleu on the full outputs; evaluate(seed=12345,
# n_resamples=200), segment level with every SEG_STATS statistic, system level with every
# SYS_STATS statistic. Tolerances: point estimates 1e-12 (they are computed by the same functions
# and agree bit for bit); interval ends 1e-12 (same resample indices, replicates now from resample
# counts, so they agree up to float summation order: 3.4e-16 here); p-values, ranks and clusters
# exactly (counts over the same resamples and permutations).

OLD_SEGMENT_ROWS = {  # (group, statistic) of sentbleu: (value, ci_low, ci_high)
    ('all', 'acc23'): (0.7745098039215685, 0.6992647058823529, 0.8824346405228758),
    ('all', 'acc_t'): (0.7745098039215685, 0.6992647058823529, 0.8824346405228758),
    ('all', 'kendall'): (0.5696793598065599, 0.36184111453708073, 0.7688539481233739),
    ('all', 'kendall_c'): (0.5693893298059964, 0.3554424452861953, 0.7475143019703204),
    ('all', 'pearson'): (0.7332524880894268, 0.5271954703015036, 0.8663839816704757),
    ('all', 'spearman'): (0.7368727265983572, 0.47284135585417636, 0.8864367606883132),
    ('all', 'tau23'): (0.5490196078431373, 0.3985294117647059, 0.7648692810457516),
    ('de-en', 'acc23'): (0.7320261437908496, 0.6078431372549019, 0.869607843137255),
    ('de-en', 'acc_t'): (0.7320261437908496, 0.6078431372549019, 0.869607843137255),
    ('de-en', 'kendall'): (0.49673231473200236, 0.18410210062499843, 0.7786898364661332),
    ('de-en', 'kendall_c'): (0.49603174603174605, 0.18025042087542087, 0.7407407407407407),
    ('de-en', 'pearson'): (0.685766891046079, 0.36501345265003593, 0.8471634956541644),
    ('de-en', 'spearman'): (0.6601160210732765, 0.24698341378048225, 0.8996742424392705),
    ('de-en', 'tau23'): (0.46405228758169936, 0.21568627450980393, 0.73921568627451),
}
OLD_SEGMENT_P_VALUES = {  # (group, statistic, better, worse): (p-value, test)
    ('all', 'pearson', 'chrf', 'sentbleu'): (0.21, 'paired-bootstrap'),
    ('all', 'pearson', 'chrf', 'ter'): (0.25, 'paired-bootstrap'),
    ('all', 'pearson', 'sentbleu', 'ter'): (0.555, 'paired-bootstrap'),
    ('de-en', 'kendall', 'chrf', 'sentbleu'): (0.19, 'perm-both'),
    ('de-en', 'kendall', 'chrf', 'ter'): (0.41, 'perm-both'),
    ('de-en', 'kendall', 'ter', 'sentbleu'): (0.395, 'perm-both'),
    ('de-en', 'tau23', 'chrf', 'sentbleu'): (0.31, 'paired-bootstrap'),
    ('de-en', 'tau23', 'chrf', 'ter'): (0.33, 'paired-bootstrap'),
    ('de-en', 'tau23', 'sentbleu', 'ter'): (0.455, 'paired-bootstrap'),
    ('fr-en', 'kendall_c', 'chrf', 'sentbleu'): (0.46, 'perm-both'),
    ('fr-en', 'kendall_c', 'chrf', 'ter'): (0.28, 'perm-both'),
    ('fr-en', 'kendall_c', 'sentbleu', 'ter'): (0.275, 'perm-both'),
    ('fr-en', 'spearman', 'chrf', 'ter'): (0.285, 'perm-both'),
    ('fr-en', 'spearman', 'sentbleu', 'chrf'): (0.44, 'perm-both'),
    ('fr-en', 'spearman', 'sentbleu', 'ter'): (0.27, 'perm-both'),
}
OLD_SYSTEM_ROWS = {  # (group, statistic, metric): (value, ci_low, ci_high, rank, cluster)
    ('all', 'pearson', 'bleu'): (0.9775257089788504, 0.873609521752041, 0.9935698836928957, 1, 1),
    ('all', 'pearson', 'chrf'): (0.9709782837928407, 0.8730454532926581, 0.9955195413435315, 2, 1),
    ('all', 'pearson', 'sentbleu'): (0.9638943120015764, 0.8391071154182332, 0.9870464283472246, 3, 1),
    ('all', 'pearson', 'ter'): (0.9609807789861664, 0.7409597657787496, 0.9941589838036545, 4, 1),
    # equal values share a rank (issue 28; before, the four 1.0s were ranked 1-4 in signature order)
    ('de-en', 'kendall', 'bleu'): (1.0, 0.33333333333333337, 1.0, 1, 1),
    ('de-en', 'kendall', 'chrf'): (1.0, 0.9833333333333337, 1.0, 1, 1),
    ('de-en', 'kendall', 'sentbleu'): (1.0, 0.33333333333333337, 1.0, 1, 1),
    ('de-en', 'kendall', 'ter'): (1.0, 0.33333333333333337, 1.0, 1, 1),
    ('de-en', 'pearson', 'bleu'): (0.9550520923237384, 0.8325588834592039, 0.996944321972991, 2, 1),
    ('de-en', 'pearson', 'chrf'): (0.9875945342703402, 0.8694745418869743, 0.9999993395845208, 1, 1),
    ('de-en', 'pearson', 'sentbleu'): (0.9283211481264897, 0.8181900036667691, 0.9862186800717403, 4, 2),
    ('de-en', 'pearson', 'ter'): (0.929663213120717, 0.5387124786498106, 0.9972841583611821, 3, 1),
    ('fr-en', 'pearson', 'bleu'): (0.9999993256339623, 0.8161987299638426, 0.9999977786227713, 1, 1),
    ('fr-en', 'pearson', 'chrf'): (0.9543620333153413, 0.7890338316469573, 0.9992611538259828, 4, 1),
    ('fr-en', 'pearson', 'sentbleu'): (0.999467475876663, 0.8116373217211518, 0.9999649541906822, 2, 1),
    ('fr-en', 'pearson', 'ter'): (0.9922983448516157, 0.8098694256403601, 0.9999940940192955, 3, 1),
}
OLD_SYSTEM_P_VALUES = {  # (group, statistic, better, worse): (p-value, test)
    ('de-en', 'pearson', 'bleu', 'sentbleu'): (0.235, 'paired-bootstrap'),
    ('de-en', 'pearson', 'bleu', 'ter'): (0.425, 'paired-bootstrap'),
    ('de-en', 'pearson', 'chrf', 'bleu'): (0.105, 'paired-bootstrap'),
    ('de-en', 'pearson', 'chrf', 'sentbleu'): (0.03, 'paired-bootstrap'),
    ('de-en', 'pearson', 'chrf', 'ter'): (0.165, 'paired-bootstrap'),
    ('de-en', 'pearson', 'ter', 'sentbleu'): (0.44, 'paired-bootstrap'),
}


def _short(signature: str) -> str:
    return signature.split("|")[0]


def _p_values(settings_home: Path, run_id: str) -> dict[tuple[str, str, str, str], tuple[float, str]]:
    import pyarrow.parquet as pq

    rows = [r for part in (settings_home / "results" / "significance").glob("*/part-*.parquet")
            for r in pq.read_table(part).to_pylist() if r["run_id"] == run_id]
    return {(r["group"], r["statistic"], _short(r["better"]), _short(r["worse"])): (r["p_value"], r["test"])
            for r in rows}


def test_numbers_equal_the_first_evaluation(isolated_assay_home: Path) -> None:
    from assay.jobs.evaluation import SEG_STATS, SYS_STATS

    ingest_path(DEMO_WMT)
    for metric in ("sentbleu", "chrf", "ter"):
        score("wmt99", metric)
    for metric in ("bleu", "chrf", "sentbleu"):
        score("wmt99", metric, scope="outputs")
    seg = evaluate("wmt99", level="seg", statistics=list(SEG_STATS), seed=12345, n_resamples=200)
    got = {(r["group"], r["statistic"]): r for r in seg["rows"] if r["metric"] == "sentbleu"}
    for key, (value, low, high) in OLD_SEGMENT_ROWS.items():
        row = got[key]
        assert row["value"] == pytest.approx(value, abs=1e-12), key
        assert (row["ci_low"], row["ci_high"]) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12)), key
    p_values = _p_values(isolated_assay_home, seg["run_id"])
    for key, expected in OLD_SEGMENT_P_VALUES.items():
        assert p_values[key] == expected, key

    sys_level = evaluate("wmt99", level="sys", statistics=list(SYS_STATS), seed=12345, n_resamples=200)
    by_metric = {(r["group"], r["statistic"], r["metric"]): r for r in sys_level["rows"]}
    for key, (value, low, high, rank, cluster) in OLD_SYSTEM_ROWS.items():
        row = by_metric[key]
        assert row["value"] == pytest.approx(value, abs=1e-12), key
        assert (row["ci_low"], row["ci_high"]) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12)), key
        assert (row["rank"], row["cluster"]) == (rank, cluster), key
    p_values = _p_values(isolated_assay_home, sys_level["run_id"])
    for key, expected in OLD_SYSTEM_P_VALUES.items():
        assert p_values[key] == expected, key
