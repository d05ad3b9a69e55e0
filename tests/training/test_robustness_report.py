"""The report's learned-metrics section (training curves and lineage, BLEURT §5.2 drift, §5.3 WebNLG)
from real stored results: the embedded all-MiniLM-L6-v2 (the ``encoder`` variant) fine-tuned two
steps on a WMT17 de-en drift sample, then that checkpoint on WebNLG inputs (scored as it is at
share 0, fine-tuned at share 0.5)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from assay.metrics.registry import MetricSpec
from assay.report import build_report
from assay.training import robustness as rb
from assay.workers.training.robustness_runs import prepare_drift, prepare_webnlg, run_experiment
from tests.robustness_support import TINY_CONFIG, subset


def _section(html: str) -> str:
    start = html.index('id="sec-learned"')
    return html[start:html.index("<section", start)]


def _part(section: str, heading: str) -> str:
    start = section.index(heading)
    end = section.find("<h3>", start + 1)
    return section[start:end if end > 0 else None]


def test_learned_section_without_data_says_how_to_make_it(tmp_path: Path) -> None:
    section = _section(build_report(tmp_path).read_text(encoding="utf-8"))
    assert section.count('class="empty"') == 4  # training, sweeps, drift, WebNLG
    for command in ("assay train --stage finetune", "assay sweep run", "assay robustness drift --dataset wmt17",
                    "assay robustness webnlg --dataset webnlg2017"):
        assert command in section


def test_learned_section_renders_stored_experiments(ingested: Callable[..., Path], tmp_path: Path) -> None:
    ingested("wmt17-da", "webnlg2017-human-eval")
    wmt17 = subset("wmt17", "wmt17-de120", groups=["de-en"], n_items=120)
    webnlg = subset("webnlg2017", "webnlg-10", n_items=10)
    drift = run_experiment(prepare_drift(wmt17, alphas=[0], variants=[rb.Variant("no-pretraining", rb.ENCODER)],
                                         baselines=[MetricSpec("sentbleu")], config=TINY_CONFIG, n_resamples=50))
    (made,) = drift["checkpoints"]
    webnlg_result = run_experiment(prepare_webnlg(
        webnlg, shares=[0, 0.5], by=["system"], aspects=["fluency"], variants=[rb.Variant("wmt", made["name"])],
        baselines=[MetricSpec("sentbleu")], config=TINY_CONFIG, n_resamples=50))
    (trained,) = [c for c in webnlg_result["checkpoints"] if c["trained"]]

    html = build_report(tmp_path).read_text(encoding="utf-8")
    section = _section(html)
    assert section.count('class="empty"') == 1 and "No sweeps yet." in section  # no sweep here (tests/sweeps)

    # (a) training: both fine-tunings, the second's parent named; curves with the best step starred
    training = _part(section, "<h3>Training")
    assert training.count('class="chart chart-curves"') == 1
    assert training.count('class="ref-mark"') == 2  # one best step per checkpoint
    rows = re.findall(r"<tr><th scope=\"row\">(.*?)</tr>", training)
    assert len(rows) == 2 and trained["name"] in rows[0] and f"<td>{made['name']}</td>" in rows[0]
    assert "<td>finetune</td>" in rows[1] and "<td>–</td>" in rows[1]  # the first started from the encoder

    # (b) drift: Kendall and Pearson, the variant solid and the baseline dashed, one alpha each
    drift_part = _part(section, "<h3>Quality drift")
    assert drift_part.count('class="chart chart-learned-drift"') == 2
    assert drift_part.count('class="line dashed"') == 2 and drift_part.count('class="line"') == 2
    assert drift_part.count('class="vertex"') == 4
    assert made["name"] in drift_part and "α = 0" in drift_part

    # (c) WebNLG: fluency split by system, per statistic; the checkpoint at share 0 and at 0.5
    webnlg_part = _part(section, "<h3>WebNLG")
    assert webnlg_part.count('class="chart chart-learned-webnlg"') == 2
    assert webnlg_part.count('class="line"') == 2 and webnlg_part.count('class="line dashed"') == 2
    assert webnlg_part.count('class="vertex"') == 2 * (2 + 2)
    assert "scored as it is" in webnlg_part and trained["name"] in webnlg_part
    # the experiments' own evaluations appear with the experiment only: not as single-point series in
    # the older drift section, and their WebNLG split samples not as datasets of their own
    older_drift = html[html.index('id="sec-drift"'):html.index('id="sec-learned"')]
    assert made["name"] not in older_drift and "empty" in older_drift
    correlations = html[html.index('id="sec-correlations"'):html.index('id="sec-scatter"')]
    assert "split-system" not in correlations
    # numbers cite their signatures, test versions and runs in the notes
    notes = html[html.index('id="sec-notes"'):]
    assert webnlg_result["run_id"] in notes and drift["run_id"] in notes
    assert "webnlg-10-split-system-s0.5-test@1" in notes and f"checkpoint:{trained['digest'][:12]}" in notes
