"""The report's MQM section, built from a real state and checked in headless Chromium.

The state is the real WMT23 en-de MQM release (``../shared/data/mqm-wmt23-ende``): chrF and
sentBLEU scored, the WMT24 protocol evaluated, and ``assay errors`` run for both metrics (sentBLEU
also against chrF as its "parent", which exercises the checkpoint diff). The page must show the
category x metric heat map and the worst disagreements with the raters' spans, escaped, and the
WMT24 rows in the correlation section.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from assay.config import load_settings
from assay.jobs.error_analysis import analyse_errors
from assay.jobs.evaluation import evaluate
from assay.jobs.scoring import score_dataset
from assay.metrics.registry import MetricSpec
from assay.report import build_report
from assay.report.spans import highlight
from assay.results import error_analysis
from tests.mqm.conftest import WMT23
from tests.mqm.test_mqm_evaluation import ingest_and_score
from tests.report_support import open_page, require_browser


def test_spans_are_escaped_split_at_overlaps_and_clamped() -> None:
    text = 'a <b> & "c" tail'
    errors: list[dict[str, object]] = [
        {"category": "Accuracy/Mistranslation", "severity": "Major", "rater": "r1", "side": "target",
         "start": 2, "end": 5},  # "<b>"
        {"category": "Fluency/Grammar", "severity": "Minor", "rater": "r2", "side": "target",
         "start": 4, "end": 99},  # ">" to the end: overlaps the first, clamped to the text
        {"category": "Accuracy/Omission", "severity": "Major", "rater": "r1", "side": "target",
         "start": None, "end": None},
        {"category": "Source issue", "severity": "Minor", "rater": "r3", "side": "source", "start": 0, "end": 1},
    ]
    html, unplaced = highlight(text, errors)
    assert "<b>" not in html and "&lt;b" in html and "&amp;" in html and "&quot;c&quot;" in html
    # the overlap "&gt;" is one mark, major (the worst covering error), listing both errors
    assert ('<mark class="sev-major" title="Accuracy/Mistranslation · Major · r1\nFluency/Grammar · Minor · r2">'
            "&gt;</mark>") in html
    assert html.startswith('a <mark class="sev-major"') and html.endswith("tail</mark>")
    assert [e["category"] for e in unplaced] == ["Accuracy/Omission"]  # source errors are not this side's
    source, _ = highlight("Src <x>", errors, side="source")
    assert source == '<mark class="sev-minor" title="Source issue · Minor · r3">S</mark>rc &lt;x&gt;'


@pytest.mark.slow
def test_report_shows_what_metrics_miss_in_chromium(shared_data: Path, tmp_path: Path) -> None:
    executable = require_browser()
    name = ingest_and_score(shared_data, WMT23)
    evaluate(name, protocol="wmt24", n_resamples=50)  # the protocol's permutations: a headline (assay.results.headline)
    # system level in two runs (Pearson, then Kendall): both store the same system points
    score_dataset(name, MetricSpec("bleu"), scope="outputs")
    evaluate(name, level="sys", metrics=["bleu"], statistics=["pearson"], n_resamples=50)
    evaluate(name, level="sys", metrics=["bleu"], statistics=["kendall"], n_resamples=50)
    chrf = analyse_errors(name, "chrf", n_resamples=100, top=5)
    sentbleu = analyse_errors(name, "sentbleu", parent="chrf", n_resamples=100, top=5)
    index = build_report(tmp_path / "report")
    cells = {c["name"] for c in chrf["sensitivity"]["cells"]}
    stored_pairs = error_analysis.DISAGREEMENTS.read_run(load_settings(), name, chrf["run_id"])

    with open_page(index.as_uri(), executable) as (page, log):
        section = page.locator("#sec-errors")
        heat = section.locator("table.heatmap")
        assert heat.count() == 1
        # one row per error category the analysis found, one column per metric (+ 3 fixed columns)
        assert heat.locator("tbody tr").count() == len(cells)
        assert heat.locator("thead th").count() == 3 + 2
        assert set(heat.locator("tbody th").all_inner_texts()) == cells
        # the metric's worst blind spot is marked ▼1 in its column
        spot = chrf["sensitivity"]["blind_spots"][0]
        row = heat.locator("tbody tr", has=page.locator(f'th:text-is("{spot}")'))
        assert "▼1" in row.inner_text()
        # sentBLEU was analysed against chrF: its cells carry the paired verdict on hover
        assert "against parent" in (heat.locator("td.heat").nth(1).get_attribute("data-tip") or "")
        # hover text of a chrF cell: the ratio and the signature
        tip = heat.locator("td.heat").first.get_attribute("data-tip") or ""
        assert "blind-spot ratio" in tip and "signature: " in tip

        # worst disagreements: 5 pairs per metric, spans marked where the raters put them
        pairs = section.locator("table.disagreements tr.pair")
        assert pairs.count() == 10
        first = stored_pairs[0]
        marks = pairs.first.locator("td.other mark").all_inner_texts()
        candidate = first["other_candidate"]
        expected = {candidate[e["start"]:e["end"]] for e in json.loads(first["other_errors"])
                    if e["side"] == "target" and e["start"] is not None}
        assert marks and all(any(m in span for span in expected) for m in marks)
        assert "".join(pairs.first.locator("td.other .cand").all_inner_texts()) == candidate

        # the WMT24 protocol in the correlation section: SPA, item-grouped acc-t and their mean
        headings = page.locator("#sec-correlations h4").all_inner_texts()
        assert any("soft pairwise accuracy" in h for h in headings)
        assert any("acc-t grouped by item" in h for h in headings)
        assert any("WMT24 average" in h for h in headings)

        # issue 30's findings: the system plots name MQM as the human score, and each is drawn once
        # one plot per metric: BLEU (its two system-level runs stored the same points), chrF and
        # sentBLEU (the WMT24 run's system level)
        system_plots = page.locator("#sec-system svg.chart-sys")
        assert system_plots.count() == 3
        assert all("human (MQM (mtme weights))" in system_plots.nth(i).inner_html() for i in range(3))
        assert "human (DA z)" not in page.locator("#sec-system").inner_html()
        ids = page.eval_on_selector_all("[id]", "nodes => nodes.map(n => n.id)")
        assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})

        shot = tmp_path / "report-errors.png"
        section.screenshot(path=str(shot))
        assert log.errors == [] and log.console_errors == [] and log.failed_requests == []
    assert shot.stat().st_size > 50_000
    assert sentbleu["parent_signature"] is not None
    artifacts = os.environ.get("ASSAY_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(artifacts) / "report-errors.png")
