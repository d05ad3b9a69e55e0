"""A WMT year the code has never seen, in the layout of wmt18-da, goes through ingest -> score ->
evaluate -> report with no code change.

The package is built from the real WMT18 cs-en and tr-en files renamed to a fictional
newstest2031 (first 400 lines of every text file, the DA-syslevel rows of those pairs), plus a
DARR relative-ranking file written here, since no real RR-seglevel.csv is available.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.jobs.evaluation import evaluate
from assay.jobs.ingest import ingest_path
from assay.jobs.scoring import finish_scoring, plan_scoring, score_shard
from assay.metrics.registry import MetricSpec
from assay.report import build_report

LINES = 400


def _copy_lines(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    text = src.read_text(encoding="utf-8-sig").split("\n")[:LINES]
    dst.write_text("\n".join(text) + "\n", encoding="utf-8")


def build_package(wmt18: Path, root: Path) -> Path:
    pkg = root / "wmt31-da"
    for lp in ("cs-en", "tr-en"):
        xx = lp[:2]
        _copy_lines(wmt18 / f"source/newstest2018-{xx}en-src.{xx}", pkg / f"source/newstest2031-{xx}en-src.{xx}")
        _copy_lines(wmt18 / f"references/newstest2018-{xx}en-ref.en", pkg / f"references/newstest2031-{xx}en-ref.en")
        for out in sorted((wmt18 / "system-outputs" / lp).iterdir()):
            name = out.name.replace("newstest2018", "newstest2031")
            _copy_lines(out, pkg / "system-outputs" / lp / name)
    rows = [line for line in (wmt18 / "DA-syslevel.csv").read_text().splitlines()[1:]
            if line.split(" ")[0] in ("cs-en", "tr-en")]
    (pkg / "DA-syslevel.csv").write_text("LP HUMAN SYSTEM\n" + "\n".join(rows) + "\n")
    # DARR pairs in the WMT18 format (header with one name missing), written for this test
    pairs = ["DATA SID BETTER WORSE"]
    for sid in range(1, 41):
        pairs.append(f"cs-en newstest2031 {sid} CUNI-Transformer.5560 online-G.0")
        pairs.append(f"tr-en newstest2031 {sid} online-B.0 online-G.0")
    (pkg / "RR-seglevel.csv").write_text("\n".join(pairs) + "\n")
    return pkg


@pytest.mark.slow
def test_unseen_year_ingests_scores_evaluates_and_reports(shared_data: Path, tmp_path: Path) -> None:
    pkg = build_package(shared_data / "wmt18-da", tmp_path)
    result = ingest_path(pkg)
    assert result.version.name == "wmt31"
    assert result.row_counts["outputs"] == 10 * LINES and result.row_counts["rankings"] == 80
    assert result.row_counts["systems"] == 10

    plan = plan_scoring("wmt31", MetricSpec("bleu"), scope="outputs")
    summary = finish_scoring(plan, [score_shard(plan, i) for i in range(len(plan.shards))])
    assert summary["computed"] > 0
    plan = plan_scoring("wmt31", MetricSpec("chrf"), scope="outputs")
    finish_scoring(plan, [score_shard(plan, i) for i in range(len(plan.shards))])

    sys_rows = evaluate("wmt31", level="sys", statistics=["pearson"], n_resamples=100)["rows"]
    assert {r["group"] for r in sys_rows} == {"cs-en", "tr-en", "all"}
    assert {r["n"] for r in sys_rows if r["group"] != "all"} == {5}
    # 2031 is a DARR year: Kendall-like with metric ties counted as discordant (WMT18 on)
    seg = evaluate("wmt31", level="seg", statistics=["kendall_like"], n_resamples=100)
    assert seg["protocol"] == "wmt31"
    assert {r["statistic"] for r in seg["rows"]} == {"kendall_like"}
    assert all(-1 <= r["value"] <= 1 for r in seg["rows"])

    page = build_report(tmp_path / "report")
    html = page.read_text()
    assert "wmt31@1" in html and page.stat().st_size > 10_000
