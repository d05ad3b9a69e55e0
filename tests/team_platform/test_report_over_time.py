"""The report's "Nightly: correlation over time" section, from a real small nightly state.

The bundled WMT-shaped demo (2 language pairs x 3 systems x 6 segments) is scored by three
checkpoints on a tiny RANDOM encoder (tests/team_platform/nightly_support.py): ``fit`` (head fitted
by least squares on the demo: the best by construction), ``flipped`` (``fit`` negated: clearly
worse) and ``other`` (a random head; its own lineage). The nightly evaluations finish on three
different days; the regression check (assay.nightly.regressions) runs after each and is recorded.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from assay.config import load_settings
from assay.fixtures import fixtures_dir
from assay.jobs.evaluation import evaluate
from assay.jobs.ingest import ingest_path
from assay.jobs.scoring import score_dataset
from assay.metrics.registry import MetricSpec
from assay.nightly.regressions import compare_with_best, list_regressions, record, suite_cells
from assay.report import build_report
from tests.report_support import open_page, require_browser
from tests.robustness_support import save_tiny_encoder, use_home
from tests.team_platform.nightly_support import (
    add_ledger_row,
    add_suite,
    least_squares_checkpoint,
    negated_checkpoint,
)

T0 = datetime(2026, 11, 20, 2, 0, tzinfo=UTC)
SUITE_NAME = 'team<script>alert("x")</script>&co'  # a hostile name, inserted as it is


@pytest.fixture(scope="module")
def nightly_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from assay.workers.checkpoint import create_from_encoder
    from assay.workers.checkpoint_registration import register_folder

    home = tmp_path_factory.mktemp("nightly_home")
    folders = tmp_path_factory.mktemp("checkpoints")
    with pytest.MonkeyPatch.context() as mp:
        use_home(mp, home)
        settings = load_settings()
        ingest_path(fixtures_dir() / "demo-wmt")
        dataset = "wmt99@1"
        encoder = save_tiny_encoder(folders / "tiny-random-bert")
        base = create_from_encoder(encoder, folders / "base", seed=1)
        fit = least_squares_checkpoint(base, folders / "fit", settings, dataset)
        flipped = negated_checkpoint(fit, folders / "flipped")
        other = create_from_encoder(encoder, folders / "other", seed=2)
        digests, signatures = {}, {}
        for name, folder in (("base", base), ("fit", fit), ("flipped", flipped), ("other", other)):
            digests[name] = register_folder(settings, folder, name=name).digest
            signatures[name] = score_dataset(dataset, MetricSpec("bleurt", {"checkpoint": str(folder)}))["signature"]
        suite_id, suite_signature = add_suite(settings, SUITE_NAME, {"datasets": [dataset], "levels": ["seg"],
                                                                     "statistics": ["pearson", "kendall"]})
        cells = suite_cells([dataset], ["seg"], ["pearson", "kendall"])
        runs = {}
        for day, name in enumerate(("fit", "flipped", "other")):
            run = evaluate(dataset, level="seg", metrics=[signatures[name]], statistics=["pearson", "kendall"],
                           n_resamples=200)
            runs[name] = run["run_id"]
            add_ledger_row(settings, suite_id=suite_id, suite_signature=suite_signature,
                           checkpoint_digest=digests[name], dataset=dataset, evaluate_run_id=run["run_id"],
                           finished_at=T0 + timedelta(days=day))
            findings = compare_with_best(settings, checkpoint_digest=digests[name], suite_signature=suite_signature,
                                         entries=cells, n_resamples=200)
            record(settings, findings, suite_signature=suite_signature, run_id=None)
        yield {"home": home, "signatures": signatures, "runs": runs, "digests": digests}


@pytest.fixture
def state(nightly_home: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    use_home(monkeypatch, nightly_home["home"])
    return nightly_home


def _section(html: str) -> str:
    start = html.index('<section id="sec-nightly"')
    return html[start:html.index("</section>", start)]


def test_the_section_charts_each_lineage_over_time_with_regressions(state: dict[str, Any], tmp_path: Path) -> None:
    html = build_report(tmp_path).read_text(encoding="utf-8")
    section = _section(html)
    regressions = list_regressions(load_settings())
    # flipped is the negation of the best (fit): a regression on both statistics by construction
    flipped = [r for r in regressions if r["checkpoint"] == "flipped"]
    assert sorted(r["statistic"] for r in flipped) == ["kendall", "pearson"]
    assert all(r["baseline"] == "fit" and r["group"] == "all" for r in flipped)
    # one chart per statistic, on the mean over the two language pairs
    assert section.count('class="chart chart-nightly"') == 2
    charts = re.findall(r'<svg class="chart chart-nightly".*?</svg>', section, flags=re.S)
    for chart in charts:
        # fit and flipped descend from base: one line through two points; other is its own lineage
        lines = re.findall(r'<polyline class="line" points="([^"]*)"', chart)
        assert sorted(len(points.split()) for points in lines) == [1, 2]
        assert chart.count('class="vertex"') == 3
        assert ">base</text>" in chart and ">other</text>" in chart  # the lineages' labels
        statistic = "Pearson r" if "Pearson r" in chart else "Kendall"
        marked = [r for r in regressions if ("Pearson" in statistic) == (r["statistic"] == "pearson")]
        assert chart.count('<g class="reference">') == len(marked) >= 1
        assert chart.count(">regression</text>") == len(marked)
    # the table lists every recorded regression with its p-value
    table = section[section.index('<table class="data regressions"'):]
    assert table.count("<tr><th scope=\"row\">") == len(regressions)
    for r in regressions:
        assert f"<td>{r['p_value']:.3g}</td>" in table
    assert "flipped (finetune of fit)" in table
    # every evaluation run and signature is cited; days since the first evaluation on the x axis
    for name, run_id in state["runs"].items():
        assert f"signature: {state['signatures'][name]}" in section and run_id in html
    assert "days since 2026-11-20 02:00 UTC" in section
    # the hostile suite name is escaped wherever it appears
    assert '<script>alert("x")' not in html
    assert "team&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;co" in section


def test_the_section_renders_in_chromium(state: dict[str, Any], tmp_path: Path) -> None:
    executable = require_browser()
    index = build_report(tmp_path)
    with open_page(index.as_uri(), executable) as (page, log):
        assert page.locator("#sec-nightly svg.chart-nightly").count() == 2
        assert page.locator("#sec-nightly table.regressions tbody tr").count() == len(list_regressions(load_settings()))
        vertex = page.locator("#sec-nightly svg.chart-nightly").first.locator("circle.vertex").first
        vertex.hover()
        tooltip = page.locator("#tooltip")
        tooltip.wait_for(state="visible", timeout=5000)
        assert "signature: bleurt|checkpoint:" in tooltip.inner_text()
        assert log.errors == [] and log.console_errors == [] and log.failed_requests == []


def test_no_ledger_rows_no_section(tmp_path: Path) -> None:
    ingest_path(fixtures_dir() / "demo-wmt")
    html = build_report(tmp_path).read_text(encoding="utf-8")
    assert 'id="sec-nightly"' not in html and "Nightly" not in html


def test_the_served_checkpoint_page(state: dict[str, Any]) -> None:
    """``assay serve``'s checkpoint page and its JSON twin (``assay checkpoints show --json``): the
    lineage with its parent, the nightly history as a chart with the recorded regressions marked,
    the hostile suite name escaped; and the compare page on two checkpoints evaluated in different
    nightly runs, which says that no paired test exists rather than inventing one."""
    import json

    from click.testing import CliRunner
    from starlette.testclient import TestClient

    from assay.cli.main import cli
    from assay.serve.access import Access
    from assay.serve.app import create_app

    client = TestClient(create_app(load_settings(), Access()), raise_server_exceptions=False)
    shown = CliRunner().invoke(cli, ["checkpoints", "show", "flipped", "--json"])
    assert shown.exit_code == 0, shown.output
    record = client.get("/checkpoint.json?ref=flipped").json()
    assert record == json.loads(shown.stdout)
    assert record["parent"] == "fit" and [a["name"] for a in record["ancestors"]] == ["fit", "base"]
    assert {p["statistic"] for p in record["nightly"]} == {"pearson", "kendall"}
    assert all(p["run_id"] == state["runs"]["flipped"] for p in record["nightly"])
    assert sorted(r["statistic"] for r in record["regressions"]) == ["kendall", "pearson"]
    html = client.get(f"/checkpoint?ref={state['digests']['flipped'][:12]}").text
    assert html.count('class="chart chart-nightly"') == 2  # one per statistic, on the mean over groups
    assert html.count(">regression</text>") == 2 and '<a href="/checkpoint?ref=fit">fit</a>' in html
    assert '<script>alert("x")' not in html and "team&lt;script&gt;" in html
    assert client.get("/checkpoint.json?ref=fit").json()["regressions"] == []  # the best by construction

    compared = client.get("/compare.json?dataset=wmt99@1&first=fit&second=flipped&stat=pearson").json()
    group = compared["groups"][0]
    assert group["first"]["checkpoint"].startswith("fit") and group["difference"] > 0
    assert group["p_value"] is None and "different runs" in group["note"]


def test_the_checkpoint_page_in_chromium(state: dict[str, Any], tmp_path: Path) -> None:
    """A real ``assay serve`` over the nightly home, in Debian's chromium: the checkpoint page's two
    charts, a point's signature on hover, the link to its parent; no console errors."""
    from tests.report_support import screenshots_folder, served

    executable = require_browser()
    shots = screenshots_folder(tmp_path)
    with served(state["home"]) as url, open_page(url + "checkpoint?ref=flipped", executable) as (page, log):
        assert page.locator("svg.chart-nightly").count() == 2
        assert page.locator("svg.chart-nightly g.reference").count() == 2  # the regressions
        title = page.locator("svg.chart-nightly circle.vertex title").first.text_content() or ""
        assert "signature: bleurt|checkpoint:" in title
        page.screenshot(path=str(shots / "serve-checkpoint.png"), full_page=True)
        page.click("text=fit >> nth=0")
        page.wait_for_selector("h1:has-text('fit')")
        assert "finetune" not in page.inner_text("h1")
        assert log.errors == [] and log.console_errors == [] and log.failed_requests == []
