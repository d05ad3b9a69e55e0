"""The nightly evaluation on MQM data: a suite entry with the WMT24 protocol and the error analysis,
evaluated by the real ``evaluate-checkpoint`` flow, and a checkpoint flagged when it is
significantly blinder than the team's best to an error category the raters penalise.

Data: the real WMT21 TED en-de MQM release (``../shared/data/mqm-ted-ende``: 13 candidate systems x
529 items, so many within-item contrasts per error category; its sentences are short to score).
Checkpoints: a tiny RANDOMLY initialised BERT (no masked LM or metric checkpoint is available
offline, tests/team_platform/nightly_support.py) with a least-squares head fitted to the release's
MQM scores (``fit``), and the same head negated (``flipped``): ``flipped``'s drop per error is
exactly minus ``fit``'s, so wherever ``fit`` notices an error the raters penalise, ``flipped`` is
blinder by construction. Oracles: :func:`assay.jobs.error_analysis.compare_on_errors` (the paired
bootstrap of tests/mqm) for the drops, and a by-hand Holm adjustment.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assay.config import load_settings
from assay.errors import UsageError
from assay.jobs.error_analysis import compare_on_errors
from assay.jobs.ingest import ingest_path
from assay.nightly import ledger
from assay.nightly.blindness import LEVEL, blindness_findings, holm_adjusted
from assay.nightly.regressions import compare_with_best, list_regressions, record
from assay.nightly.suites import default_entries, define_suite, get_suite
from assay.results import error_analysis
from tests.mqm.conftest import TED
from tests.robustness_support import save_tiny_encoder, use_home
from tests.team_platform.nightly_support import least_squares_checkpoint, negated_checkpoint

RESAMPLES = 200


@pytest.fixture(scope="module")
def night(tmp_path_factory: pytest.TempPathFactory, shared_data: Path, prefect_engine: None
          ) -> Iterator[dict[str, Any]]:
    from assay.flows.checkpoint_eval import evaluate_checkpoint_flow
    from assay.workers.checkpoint import create_from_encoder
    from assay.workers.checkpoint_registration import register_folder

    home = tmp_path_factory.mktemp("mqm_nightly_home")
    folders = tmp_path_factory.mktemp("mqm_checkpoints")
    with pytest.MonkeyPatch.context() as mp:
        use_home(mp, home)
        settings = load_settings()
        name = ingest_path(shared_data / TED.parent).version.name
        encoder = save_tiny_encoder(folders / "tiny-random-bert")
        base = create_from_encoder(encoder, folders / "base", seed=1)
        fit = least_squares_checkpoint(base, folders / "fit", settings, name)
        flipped = negated_checkpoint(fit, folders / "flipped")
        digests = {n: register_folder(settings, f, name=n).digest for n, f in (("fit", fit), ("flipped", flipped))}
        suite, _ = define_suite(settings, "mqm", default_entries(settings))  # the MQM release's default entry
        items = ledger.pending_items(settings, suite)
        results = [evaluate_checkpoint_flow(item.as_dict()) for item in items]  # fit first (registered first)
        yield {"home": home, "dataset": name, "digests": digests, "suite": suite, "results": results}


@pytest.fixture
def state(night: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    use_home(monkeypatch, night["home"])
    return night


def test_the_default_suite_of_an_mqm_release_is_wmt24_with_the_error_analysis(state: dict[str, Any]) -> None:
    (entry,) = state["suite"].entries
    assert (entry.protocol, entry.errors) == ("wmt24", True)
    assert entry.levels == ("seg", "sys", "avg")
    assert {lv: entry.statistics_for(lv) for lv in entry.levels} == {
        "seg": ("acc_t_item",), "sys": ("spa",), "avg": ("wmt24",)}
    definition = state["suite"].definition()["entries"][0]
    assert definition["protocol"] == "wmt24" and definition["errors"] is True
    # the flow evaluated both checkpoints under the protocol and ran the error analysis for each
    assert [r["status"] for r in state["results"]] == ["completed", "completed"]
    stored = error_analysis.SENSITIVITY.read(load_settings(), state["dataset"]).to_pylist()
    assert len({r["signature"] for r in stored}) == 2
    # flipped's registered parent is fit (its lineage), scored first: its analysis is diffed against fit
    fit_rows = [r for r in stored if r["parent_signature"] is None]
    flipped_rows = [r for r in stored if r["parent_signature"] is not None]
    assert len(fit_rows) == len(flipped_rows) > 0
    assert {r["parent_signature"] for r in flipped_rows} == {fit_rows[0]["signature"]}
    for row in flipped_rows:  # minus fit's drop: worse wherever fit noticed the error significantly
        assert row["change_std"] == pytest.approx(-2 * next(
            r["metric_drop_std"] for r in fit_rows if r["cell"] == row["cell"]))
    assert "worse" in {r["verdict"] for r in flipped_rows}


def test_a_blinder_checkpoint_is_a_regression_per_error_category(state: dict[str, Any]) -> None:
    settings = load_settings()
    suite = state["suite"]
    digests = state["digests"]
    findings = blindness_findings(settings, checkpoint_digest=digests["flipped"], suite_signature=suite.signature,
                                  entries=suite.entries, n_resamples=RESAMPLES)
    assert findings and all(f.level == LEVEL and f.baseline_digest == digests["fit"] for f in findings)
    # oracle: the same paired comparison, computed directly, and Holm by hand
    _facts, comparison = compare_on_errors(state["dataset"], findings[0].signature, findings[0].baseline_signature,
                                          n_resamples=RESAMPLES)
    penalised = [c for c in comparison.cells if c.human_penalises]
    assert [f.group for f in findings] == [c.name for c in penalised]
    raw = [c.p_value for c in penalised]
    m = len(raw)
    ranked = sorted(raw)
    by_hand = {p: min(1.0, max((m - k) * q for k, q in enumerate(ranked[:ranked.index(p) + 1]))) for p in raw}
    assert [f.p_value for f in findings] == pytest.approx([by_hand[p] for p in raw])
    for f, cell in zip(findings, penalised, strict=True):
        assert f.value == pytest.approx(cell.child_drop_std.value)
        assert f.baseline_value == pytest.approx(-f.value)  # flipped's drop is minus fit's
        assert f.regression == (f.value < f.baseline_value and f.p_value < 0.05)
    flagged = [f for f in findings if f.regression]
    assert flagged, "flipped ignores (reverses) every error fit notices: some category must be flagged"
    # recorded beside the correlation regressions, and listed
    correlations = compare_with_best(settings, checkpoint_digest=digests["flipped"], suite_signature=suite.signature,
                                     entries=suite.entries, n_resamples=RESAMPLES)
    assert {(f.level, f.statistic) for f in correlations} == {("seg", "acc_t_item"), ("sys", "spa"),
                                                               ("avg", "wmt24")}
    by_statistic = {f.statistic: f for f in correlations}
    # the protocol's identity: the average is the mean of SPA and acc-t, for both checkpoints
    assert by_statistic["wmt24"].value == pytest.approx((by_statistic["spa"].value
                                                          + by_statistic["acc_t_item"].value) / 2)
    assert by_statistic["wmt24"].baseline_value == pytest.approx((by_statistic["spa"].baseline_value
                                                                   + by_statistic["acc_t_item"].baseline_value) / 2)
    record(settings, [*correlations, *findings], suite_signature=suite.signature, run_id=None)
    listed = list_regressions(settings, checkpoint="flipped")
    assert {r["group"] for r in listed if r["level"] == LEVEL} == {f.group for f in flagged}


def test_blindness_is_symmetric_between_a_checkpoint_and_its_negation(state: dict[str, Any]) -> None:
    """fit against flipped is the mirror image: fit is flagged exactly where flipped notices an error
    significantly more (e.g. where the random fit rewards an error), with the same adjusted p-values."""
    settings, suite, digests = load_settings(), state["suite"], state["digests"]
    mine = blindness_findings(settings, checkpoint_digest=digests["fit"], suite_signature=suite.signature,
                              entries=suite.entries, n_resamples=RESAMPLES)
    mirror = blindness_findings(settings, checkpoint_digest=digests["flipped"], suite_signature=suite.signature,
                                entries=suite.entries, n_resamples=RESAMPLES)
    assert [f.group for f in mine] == [f.group for f in mirror]
    assert [f.p_value for f in mine] == pytest.approx([f.p_value for f in mirror])
    assert {f.group for f in mine if f.regression} == {
        f.group for f in mirror if f.value > f.baseline_value and f.p_value < 0.05}


def test_holm_adjustment() -> None:
    # Holm (1979): sorted p 0.01, 0.02, 0.04 of m=3 -> 0.03, 0.04, 0.04 (monotone), in input order
    assert holm_adjusted([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm_adjusted([0.5, 0.9]) == [1.0, 1.0] and holm_adjusted([]) == []


def test_suite_entries_on_mqm_data_are_validated(state: dict[str, Any]) -> None:
    from assay.cli.main import cli

    settings = load_settings()
    name = state["dataset"]
    with pytest.raises(UsageError, match="fixes its levels"):
        define_suite(settings, "bad", [{"dataset": name, "protocol": "wmt24", "levels": ["seg"]}])
    with pytest.raises(UsageError, match="unknown protocol 'wmt99'"):
        define_suite(settings, "bad", [{"dataset": name, "protocol": "wmt99"}])
    with pytest.raises(UsageError, match="not the wmt24 protocol's"):
        define_suite(settings, "bad", [{"dataset": name, "protocol": "wmt24", "statistics": ["kendall"]}])
    with pytest.raises(UsageError, match="'errors' must be true or false"):
        define_suite(settings, "bad", [{"dataset": name, "protocol": "wmt24", "errors": "yes"}])
    # the CLI: LEVELS may name the protocol and the error analysis
    result = CliRunner().invoke(cli, ["suite", "define", "mqm-spa", "--entry", f"{name}:wmt24,errors:spa"])
    assert result.exit_code == 0, result.output
    assert "sys: spa  protocol wmt24" in result.output and "+ error analysis" in result.output
    defined = get_suite(settings, "mqm-spa").entries[0]
    assert (defined.levels, defined.statistics, defined.errors) == (("sys",), ("spa",), True)
    bad = CliRunner().invoke(cli, ["suite", "define", "bad", "--entry", f"{name}:wmt24,seg"])
    assert bad.exit_code == 2 and "name it alone" in bad.output
