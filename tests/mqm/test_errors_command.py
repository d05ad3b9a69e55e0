"""``assay errors`` in the terminal and as JSON, on the real WMT23 en-de MQM release: the issue's item 13.

The release is ingested (format ``mqm-tsv``) and scored with chrF, as a user would; the command's
text is checked against the spans the raters marked (``sxs_mqm_generalMT2023_ende...tsv``, rows of
globalSegId 13) and its JSON against :mod:`tests.mqm.test_error_analysis_wmt23`'s figures.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.catalog.engine import reset_engines
from assay.cli.main import cli
from assay.config import load_settings
from assay.results import error_analysis
from tests.conftest import assay_home_at
from tests.mqm.conftest import WMT23
from tests.mqm.test_mqm_evaluation import ingest_and_score
from tests.report_support import open_page, require_browser, screenshots_folder, served

REFERENCE_13 = "Vier Teenager aus New Jersey wurden im Zusammenhang mit einem Angriff auf ein 14-jähriges Mädchen"


@pytest.fixture(scope="module")
def scored_home(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """One ASSAY_HOME for the module: the release ingested and scored with chrF once."""
    with assay_home_at(tmp_path_factory.mktemp("errors_home")) as home:
        name = ingest_and_score(shared_data, WMT23, ("chrf",))
    yield home, name


@pytest.fixture
def dataset(scored_home: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("ASSAY_HOME", str(scored_home[0]))
    reset_engines()
    return scored_home[1]


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, ["errors", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_errors_in_the_terminal(dataset: str) -> None:
    text = _run("--dataset", dataset, "--metric", "chrf", "--resamples", "200", "--top", "5")
    lines = text.splitlines()
    # the legend names each severity shown, with a distinct tag
    assert any(line.startswith("marks: ") and "MAJ Major, MIN Minor" in line for line in lines)
    # distinct items, item 13 first
    heads = [re.match(r"\s*\d+\. item (\S+):", line) for line in lines]
    items = [m.group(1) for m in heads if m]
    assert items[0] == "13" and len(items) == 5 == len(set(items))
    first = text[text.index(" 1. item 13:"):text.index(" 2. item ")]
    assert "humans prefer NLLB_MBR_BLEU (-6.67 vs -15.67), chrf prefers ONLINE-G" in first
    assert "more reversed pairs in this item" in first
    # the reference and the source, the omission marked on the source
    assert f"refA       {REFERENCE_13}" in first
    assert "    source     Four New Jersey teenagers" in first
    assert "source   Four New Jersey teenagers" in first and "social media. [[[[One juvenile is charged" in first
    assert "MAJ Accuracy/Omission (Translation 2) ×2 (on the source)" in first
    # overlapping spans nested at their own offsets, severities told apart
    assert "[[Angriff [[eines]]MAJ 14-jährigen Mädchens]]MIN angeklagt" in first
    assert "Mäd]]" not in first
    # the blind spots: Minor punctuation is undetermined, with the reason
    row = next(line for line in lines if "Fluency/Punctuation" in line and "│" in line)
    assert "undetermined" in row and "30.07" not in row
    reason = next(line for line in lines if line.startswith("  Fluency/Punctuation: "))
    assert "the humans' drop" in reason and "includes 0" in reason


def test_errors_as_json(dataset: str) -> None:
    data = json.loads(_run("--dataset", dataset, "--metric", "chrf", "--resamples", "200", "--top", "5", "--json"))
    pairs = data["disagreements"]["pairs"]
    assert len({p["item"] for p in pairs}) == len(pairs) == 5
    first = pairs[0]
    assert first["item"] == "13" and first["references"][0].startswith(REFERENCE_13)
    assert first["reference_names"] == ["refA"]
    marks = first["other"]["marks"]["target"]
    assert {"text": "eines", "severity": "Major"}.items() <= next(m for m in marks if m["text"] == "eines").items()
    assert any(m["text"].startswith("One juvenile") for m in first["preferred"]["marks"]["source"])
    cells = {c["name"]: c for c in data["sensitivity"]["cells"]}
    assert cells["Fluency/Punctuation"]["blind_spot_rank"] is None
    assert "includes 0" in cells["Fluency/Punctuation"]["undetermined"]
    assert "Fluency/Punctuation" in {u["name"] for u in data["sensitivity"]["undetermined"]}
    # what the report reads: the stored rows carry the references and the reasons
    settings = load_settings()
    stored = error_analysis.DISAGREEMENTS.read_run(settings, dataset, data["run_id"])
    assert stored[0]["references"][0].startswith(REFERENCE_13) and stored[0]["reversed_in_item"] > 1
    stored_cells = {r["cell"]: r for r in error_analysis.SENSITIVITY.read_run(settings, dataset, data["run_id"])}
    assert stored_cells["Fluency/Punctuation"]["undetermined"] == cells["Fluency/Punctuation"]["undetermined"]


def test_one_item(dataset: str) -> None:
    text = _run("--dataset", dataset, "--metric", "chrf", "--item", "13")
    assert f"refA       {REFERENCE_13}" in text
    assert "NLLB_MBR_BLEU (human #1, chrf #9): human -6.67 (3 raters)" in text
    assert "[[Angriff [[eines]]MAJ 14-jährigen Mädchens]]MIN" in text
    data = json.loads(_run("--dataset", dataset, "--metric", "chrf", "--item", "13", "--json"))
    assert len(data["outputs"]) == 9 and data["reversed_pairs"] == len(data["reversed"])
    result = CliRunner().invoke(cli, ["errors", "--dataset", dataset, "--metric", "chrf", "--item", "nope"])
    assert result.exit_code == 2 and "no rated outputs of item 'nope'" in result.output


def test_the_report_shows_the_reference_and_why_a_ratio_is_undetermined(dataset: str, tmp_path: Path) -> None:
    from html import unescape

    from assay.report import build_report

    data = json.loads(_run("--dataset", dataset, "--metric", "chrf", "--resamples", "200", "--top", "3", "--json"))
    page = unescape(build_report(tmp_path / "report").read_text(encoding="utf-8"))
    section = page[page.index('id="sec-errors"'):]
    assert REFERENCE_13 in section
    more = data["disagreements"]["pairs"][0]["reversed_in_item"] - 1
    assert f"item 13 · {more} more reversed pairs" in section
    assert "ratio undetermined: the humans' drop" in section  # Fluency/Punctuation's hover text
    # the omission: the source words left out are marked in the source cell
    assert '">One juvenile is charged with aggravated assault' in section


def test_the_matrix_has_one_level_and_no_stale_verdicts(dataset: str) -> None:
    """``assay errors --matrix`` (and the served /errors page, its JSON twin): sentBLEU analysed
    against chrF by category, then by category and severity without a parent. The default matrix
    is by category (two metrics there, one at the other level), one column per metric, and
    sentBLEU's older verdicts against chrF are dropped as superseded; by category+severity, chrF is
    listed as analysed elsewhere. Issue 30's findings: no split into one-column tables, no stale arrows."""
    from starlette.testclient import TestClient

    from assay.cli.main import cli as assay_cli
    from assay.jobs.scoring import score_dataset
    from assay.metrics.registry import MetricSpec
    from assay.serve.access import Access
    from assay.serve.app import create_app

    score_dataset(dataset, MetricSpec("sentbleu"))
    _run("--dataset", dataset, "--metric", "chrf", "--resamples", "50", "--top", "2")
    against = json.loads(_run("--dataset", dataset, "--metric", "sentbleu", "--against", "chrf", "--resamples", "50",
                              "--top", "2", "--json"))
    assert against["comparison"] is not None  # this run stored verdicts against chrF
    matrix = json.loads(_run("--dataset", dataset, "--matrix", "--json"))
    sentbleu = next(m for m in matrix["metrics"] if m["metric"] == "sentbleu")
    assert matrix["by"] == "category" and sentbleu["parent_signature"] == against["parent_signature"]
    assert any(row["verdict"] for cell in matrix["cells"] for row in cell["metrics"].values())
    _run("--dataset", dataset, "--metric", "sentbleu", "--by", "category+severity", "--resamples", "50", "--top", "2")
    matrix = json.loads(_run("--dataset", dataset, "--matrix", "--json"))
    assert matrix["by"] == "category" and matrix["levels"] == ["category", "category+severity"]
    assert sorted(m["metric"] for m in matrix["metrics"]) == ["chrf", "sentbleu"] and matrix["elsewhere"] == []
    sentbleu = next(m for m in matrix["metrics"] if m["metric"] == "sentbleu")
    assert sentbleu["superseded"] and sentbleu["parent_signature"] is None
    assert not any(row["verdict"] for cell in matrix["cells"] for row in cell["metrics"].values())
    assert all(len({r["level"] for r in cell["metrics"].values()}) == 1 for cell in matrix["cells"])
    severity = json.loads(_run("--dataset", dataset, "--matrix", "--by", "category+severity", "--json"))
    assert [m["metric"] for m in severity["metrics"]] == ["sentbleu"] and len(severity["elsewhere"]) == 1
    text = _run("--dataset", dataset, "--matrix")
    assert "blind-spot ratio per error category" in text and "superseded by a newer analysis" in text

    client = TestClient(create_app(load_settings(), Access()), raise_server_exceptions=False)
    for query, args in (("", ()), ("&by=category%2Bseverity", ("--by", "category+severity"))):
        twin = client.get(f"/errors.json?dataset={dataset}{query}")
        assert twin.status_code == 200 and twin.json() == json.loads(
            _run("--dataset", dataset, "--matrix", *args, "--json"))
    html = client.get(f"/errors?dataset={dataset}").text
    assert html.count('<table class="data heatmap"') == 1 and '<span class="verdict' not in html
    assert '<mark class="sev-major"' in html and REFERENCE_13[:40] in html
    # in Debian's chromium, from a real `assay serve`: one heat map, the spans marked, no console errors
    executable = require_browser()
    home = Path(os.environ["ASSAY_HOME"])
    with served(home) as url, open_page(f"{url}errors?dataset={dataset}", executable) as (page, log):
        assert page.locator("table.heatmap").count() == 1
        assert page.locator("table.heatmap thead th").count() == 3 + 2
        assert page.locator("table.disagreements mark.sev-major").count() > 0
        page.screenshot(path=str(screenshots_folder(home.parent) / "serve-errors.png"), full_page=True)
        page.select_option("select[name=by]", "category+severity")
        page.click("form.filters button")
        page.wait_for_selector("table.heatmap[data-by='category+severity']")
        assert page.locator("table.heatmap thead th").count() == 3 + 1
        assert log.errors == [] and log.console_errors == [] and log.failed_requests == []
    missing = CliRunner().invoke(assay_cli, ["errors", "--dataset", dataset])
    assert missing.exit_code == 2 and "--metric is required" in missing.output
