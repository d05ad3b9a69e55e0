"""A leaderboard ranks within one human target: WebNLG 2017's semantics, fluency and grammar ratings
measure different things, so correlations with them are never ranked in one list (real data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.errors import NotFoundError, UsageError
from assay.jobs.evaluation import evaluate
from assay.jobs.ingest import ingest_path
from assay.jobs.scoring import score_dataset
from assay.metrics.registry import MetricSpec
from assay.query.leaderboard import LeaderboardQuery, available_aspects, leaderboard


@pytest.fixture
def webnlg_evaluated(shared_data: Path) -> str:
    ingest_path(shared_data / "webnlg2017-human-eval")
    for metric in ("sentbleu", "chrf"):
        score_dataset("webnlg2017", MetricSpec(metric))
    evaluate("webnlg2017", level="seg", statistics=["kendall"], n_resamples=50)
    return "webnlg2017"


def test_leaderboard_refuses_to_rank_across_aspects(webnlg_evaluated: str) -> None:
    with pytest.raises(UsageError, match="fluency, grammar, semantics") as error:
        leaderboard(LeaderboardQuery(webnlg_evaluated, "seg", "kendall", "webnlg2017"))
    assert "--aspect" in str(error.value)
    # not even when mixed item sets or versions are allowed: different targets are never comparable
    with pytest.raises(UsageError, match="human targets"):
        leaderboard(LeaderboardQuery(webnlg_evaluated, "seg", "kendall", "webnlg2017", allow_mixed=True))


def test_one_leaderboard_per_aspect_with_its_own_clusters(webnlg_evaluated: str) -> None:
    aspects = available_aspects(webnlg_evaluated, "seg", "webnlg2017")
    assert aspects == ["fluency", "grammar", "semantics"]
    for aspect in aspects:
        rows = leaderboard(LeaderboardQuery(webnlg_evaluated, "seg", "kendall", "webnlg2017", aspect=aspect))
        assert {r["aspect"] for r in rows} == {aspect}
        assert sorted(r["metric"] for r in rows) == ["chrf", "sentbleu"]
        assert [r["rank"] for r in rows] == [1, 2]
        assert rows[0]["cluster"] == 1


def test_an_empty_leaderboard_names_the_groups_aspects_and_statistics_that_exist(webnlg_evaluated: str) -> None:
    """Issue 17, finding 8: TEAM.md's `assay leaderboard --dataset D --level seg` on WebNLG (one
    group, three aspects, no `all` mean) used to fail with an error naming neither --group nor --aspect."""
    from click.testing import CliRunner

    from assay.cli.main import cli

    result = CliRunner().invoke(cli, ["leaderboard", "--dataset", webnlg_evaluated, "--level", "seg"])
    assert result.exit_code == 2
    message = result.output
    assert "group(s) webnlg2017 (--group)" in message
    assert "aspect(s) fluency, grammar, semantics (--aspect)" in message and "(--stat)" in message
    example = message.split("e.g. `")[1].split("`")[0].split()[1:]  # the suggested command works as printed
    shown = CliRunner().invoke(cli, example)
    assert shown.exit_code == 0, shown.output
    with pytest.raises(NotFoundError, match=r"evaluated at level\(s\) seg \(use --level\)"):
        leaderboard(LeaderboardQuery(webnlg_evaluated, "sys", "pearson"))
