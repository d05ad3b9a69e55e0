"""The HTML report: built from a real small state and checked in headless Chromium.

The state is real: the bundled WMT-shaped demo (2 language pairs x 3 systems x 6 segments) and
the HUSE data are ingested, sentBLEU and chrF are scored on the judged segments and BLEU and chrF
on the full outputs, model selection runs on hybrids of the demo systems, and the demo is evaluated at
segment and system level.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from assay.fixtures import fixtures_dir
from assay.jobs.evaluation import evaluate
from assay.jobs.ingest import derive_version, ingest_path
from assay.jobs.model_selection import select_models
from assay.jobs.scoring import finish_scoring, plan_scoring, score_shard
from assay.metrics.registry import MetricSpec
from assay.report import REPORT_FILE, build_report
from assay.report.reference import BERTSCORE_TABLE1, BLEURT_TABLE2
from assay.report.svg import nice_domain, tick_label
from tests.report_support import open_page, require_browser

DEMO_WMT = fixtures_dir() / "demo-wmt"
RESAMPLES = 300  # enough for intervals and clusters on 36 segments; keeps the test fast


def run_scoring(dataset: str, metric: str, scope: str = "judged") -> None:
    plan = plan_scoring(dataset, MetricSpec(metric), scope=scope)
    finish_scoring(plan, [score_shard(plan, i) for i in range(len(plan.shards))])


def small_state(shared_data: Path) -> dict[str, dict]:
    ingest_path(DEMO_WMT)
    ingest_path(shared_data / "huse")
    for metric in ("sentbleu", "chrf"):
        run_scoring("wmt99", metric)
    for metric in ("bleu", "chrf"):
        run_scoring("wmt99", metric, scope="outputs")
    select_models("wmt99", n_hybrid=200, n_candidates=10, n_trials=500, seed=3)
    return {level: evaluate("wmt99", level=level, n_resamples=RESAMPLES) for level in ("seg", "sys")}


def figures(page: Any, section: str, chart_class: str) -> int:
    return int(page.locator(f"#{section} svg.chart.{chart_class}").count())


@pytest.mark.slow
def test_report_renders_in_chromium(shared_data: Path, tmp_path: Path) -> None:
    executable = require_browser()
    evaluations = small_state(shared_data)
    index = build_report(tmp_path / "report")
    assert index == tmp_path / "report" / REPORT_FILE
    html = index.read_text(encoding="utf-8")

    # self-contained: nothing to fetch when the page is viewed
    assert not re.search(r"<(link|img|iframe)\b|<script[^>]+src=|@import|url\(", html)
    assert re.findall(r"https?://[^\"'\s<]+", html) == ["http://www.w3.org/2000/svg"] * html.count("<svg")
    # every evaluated signature is cited in the static page (SVG <title>s and the notes)
    rows = evaluations["seg"]["rows"] + evaluations["sys"]["rows"]
    signatures = {r["signature"] for r in rows}
    assert {s.split("|")[0] for s in signatures} == {"sentbleu", "chrf", "bleu"}  # what small_state scored
    for signature in signatures:
        assert f"signature: {signature}" in html and f"<code>{signature}</code>" in html
    # system scores recomputed by the report agree with the evaluation's correlations
    assert "differs from the run" not in html

    with open_page(index.as_uri(), executable) as (page, log):
        assert page.title().startswith("Assay report")
        # 1. seg and sys, Pearson and Kendall: four bar charts of (all, de-en, fr-en) panels
        assert figures(page, "sec-correlations", "chart-corr") == 4
        # 2. one scatter per segment-level metric (sentbleu, chrf) on wmt99
        assert figures(page, "sec-scatter", "chart-scatter") == 2
        # 3. bleu, chrf and sentbleu (which covers every output of the demo) x 2 language pairs
        assert figures(page, "sec-system", "chart-sys") == 6
        # 4. BLEU Neighbors on HUSE: one trade-off chart, 5 x 5 grid table
        assert figures(page, "sec-neighbors", "chart-neighbors") == 1
        assert page.locator("#sec-neighbors table.grid-table tbody td").count() == 25
        # the paper's default (a=5, b=0.66) equals the independent number in REFERENCE_NUMBERS.md
        assert page.locator("#sec-neighbors td.default").inner_text() == "0.94 / 0.269"
        # 5. no quality-drift samples: the section says how to make them
        assert figures(page, "sec-drift", "chart-drift") == 0
        assert "assay drift" in page.locator("#sec-drift .empty").inner_text()
        # model selection: (sentbleu, chrf) x (de-en, fr-en) rows of the select run, signatures on hover
        selection = page.locator("#sec-selection table.selection tbody tr")
        assert selection.count() == 4
        assert "signature:" in (selection.first.get_attribute("data-tip") or "")
        # 6. reference rows labelled; Assay rows empty (no WMT17/WMT18 here) with the commands
        assert page.locator("#bleurt-table2 tr.ref").count() == len(BLEURT_TABLE2)
        assert page.locator("#bertscore-table1 tr.ref").count() == len(BERTSCORE_TABLE1)
        assert page.locator("#bleurt-table2 tr.assay").count() == 0
        assert "assay evaluate --dataset wmt17 --level seg" in page.locator("#sec-reproduction").inner_text()
        # 7. notes: signatures, the dataset version with its digest, the runs
        notes = page.locator("ol.footnotes").inner_text()
        assert evaluations["seg"]["rows"][0]["version_digest"] in notes
        assert evaluations["seg"]["run_id"] in notes and evaluations["sys"]["run_id"] in notes

        # hovering a bar shows its number and signature
        bar = page.locator("#sec-correlations svg.chart-corr").first.locator("g.mark").first
        bar.hover()
        tooltip = page.locator("#tooltip")
        tooltip.wait_for(state="visible", timeout=5000)
        text = tooltip.inner_text()
        assert "signature: " in text and any(f"signature: {r['signature']}" in text for r in rows)
        expected = next(r for r in evaluations["seg"]["rows"]
                        if r["group"] == "all" and r["statistic"] == "pearson" and r["rank"] == 1)
        assert f"= {expected['value']:.3f}" in text and expected["signature"] in text

        hover_shot = tmp_path / "report-hover.png"
        page.screenshot(path=str(hover_shot))
        page.mouse.move(0, 0)
        tooltip.wait_for(state="hidden", timeout=5000)
        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=True)
        assert log.errors == [] and log.console_errors == [] and log.failed_requests == []
    assert shot.stat().st_size > 50_000
    artifacts = os.environ.get("ASSAY_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(artifacts) / "report.png")
        shutil.copy(hover_shot, Path(artifacts) / "report-hover.png")
        shutil.copy(index, Path(artifacts) / "report.html")


def test_empty_home_gives_a_page_that_says_what_to_run(tmp_path: Path) -> None:
    html = build_report(tmp_path).read_text(encoding="utf-8")
    for command in ("assay evaluate --dataset NAME --level seg", "assay ingest ../shared/data/huse",
                    "assay drift", "assay evaluate --dataset wmt18 --level sys"):
        assert command in html
    assert 'class="chart' not in html


def test_drift_section_plots_test_samples_against_alpha(tmp_path: Path) -> None:
    """Derived versions with a quality-drift derivation are plotted against α (split test only)."""
    import pyarrow.compute as pc

    from assay.catalog.dataset_versions import resolve
    from assay.catalog.engine import session_scope
    from assay.config import load_settings
    from assay.datasets import store

    ingest_path(DEMO_WMT)
    settings = load_settings()
    with session_scope(settings) as session:
        store_path = resolve(session, "wmt99").store_path
    segments = store.read_table(settings, store_path, "segments")
    # real subsets of the demo's judgments stand in for the benchmark's samples; the report only
    # reads the derivation's α, split and seed
    samples = [(0.0, "test", "alpha.101"), (0.5, "test", "beta.102"), (1.0, "test", "gamma.103"),
               (0.5, "train", None)]
    for alpha, split, drop in samples:
        sample = segments if drop is None else segments.filter(pc.not_equal(segments.column("system"), drop))
        derive_version("wmt99", "wmt99-drift", {"segments": sample},
                       {"kind": "quality-drift", "alpha": alpha, "split": split, "seed": 0})
    run_scoring("wmt99", "sentbleu")
    for number in range(1, len(samples) + 1):
        evaluate(f"wmt99-drift@{number}", level="seg", n_resamples=50)
    html = build_report(tmp_path).read_text(encoding="utf-8")
    drift = html[html.index('id="sec-drift"'):html.index('id="sec-reproduction"')]
    assert drift.count('class="chart chart-drift"') == 2  # Pearson and Kendall
    assert drift.count('class="vertex"') == 2 * 3  # one metric, three values of α (the train sample left out)
    assert "α = 0.5" in drift and "sentbleu" in drift
    # the drift samples are not datasets of their own in the correlation section
    correlations = html[html.index('id="sec-correlations"'):html.index('id="sec-scatter"')]
    assert "wmt99-drift" not in correlations


def test_reference_numbers_match_the_design_file(shared_data: Path) -> None:
    """The report's copy of the paper/independent numbers equals REFERENCE_NUMBERS.md."""
    path = shared_data.parent / "design" / "REFERENCE_NUMBERS.md"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    text = path.read_text(encoding="utf-8")
    for row in BLEURT_TABLE2:
        cells = " | ".join(f"{v[0]:.1f}/{v[1]:.1f}" for v in row.cells.values())
        assert cells in text, row.label
    for year_row, ref in (("2018 independent", BERTSCORE_TABLE1[0]), ("2018 paper", BERTSCORE_TABLE1[1])):
        line = next(line for line in text.splitlines() if line.startswith(f"| {year_row}"))
        printed = [c.strip() for c in line.split("|")[2:-1]]
        columns = ["cs-en", "de-en", "et-en", "fi-en", "lv-en", "ru-en", "tr-en", "zh-en"]
        for column, value in zip(columns, printed, strict=True):
            if column in ref.cells:
                assert float(value) == pytest.approx(ref.cells[column][0]), (year_row, column)


def test_axis_ticks_are_round_and_exact() -> None:
    low, high, ticks = nice_domain([-0.8, 0.45])
    assert (low, high) == (-1.0, 0.5)
    assert [tick_label(t, ticks) for t in ticks] == ["−1.00", "−0.75", "−0.50", "−0.25", "0", "0.25", "0.50"]
    _, _, ticks = nice_domain([0.0, 1.0])
    assert [tick_label(t, ticks) for t in ticks] == ["0", "0.2", "0.4", "0.6", "0.8", "1.0"]


@pytest.mark.prefect
def test_report_command_runs_the_flow(prefect_engine: None, tmp_path: Path) -> None:
    import json

    import click
    from click.testing import CliRunner

    from assay.cli import report_commands

    group = click.Group()
    report_commands.register(group)
    ingest_path(DEMO_WMT)
    result = CliRunner().invoke(group, ["report", "--out", str(tmp_path / "out"), "--json"])
    assert result.exit_code == 0, result.output
    path = Path(json.loads(result.stdout)["path"])
    assert path == (tmp_path / "out" / REPORT_FILE).resolve()
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE")
