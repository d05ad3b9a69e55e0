"""The nightly sweep on one machine (no deployments: work items run in the sweep's process), with
the real Prefect engine: exactly once, regressions against the team's best, nothing done when
nothing is new.

Checkpoints are built on a tiny RANDOMLY initialised BERT (tests/robustness_support.py). ``fit``
has its head fitted by least squares to WMT16's human scores, and ``flipped`` is ``fit`` with the
head negated (tests/team_platform/nightly_support.py): its correlations are exactly ``fit``'s
negated, so it is a regression against ``fit`` by construction.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.robustness_support import save_tiny_encoder
from tests.team_platform.nightly_support import least_squares_checkpoint, negated_checkpoint


@pytest.mark.usefixtures("prefect_engine")
def test_sweep_evaluates_once_flags_the_regression_and_then_does_nothing(shared_data: Path, tmp_path: Path) -> None:
    from assay.cli.runner import run_flow
    from assay.config import load_settings
    from assay.jobs.ingest import ingest_path
    from assay.nightly.ledger import history
    from assay.nightly.regressions import list_regressions
    from assay.nightly.suites import define_suite
    from assay.workers.checkpoint import create_from_encoder
    from assay.workers.checkpoint_registration import register_folder

    settings = load_settings()
    dataset = ingest_path(shared_data / "wmt16-da-seg", settings=settings).label
    define_suite(settings, "nightly", [{"dataset": dataset, "levels": ["seg"], "statistics": ["pearson"]}])
    base = create_from_encoder(save_tiny_encoder(tmp_path / "tiny"), tmp_path / "base", seed=0)
    fit = least_squares_checkpoint(base, tmp_path / "fit", settings, dataset)
    flipped = negated_checkpoint(fit, tmp_path / "flipped")
    register_folder(settings, fit, name="fit")

    first = run_flow("nightly", reason="manual", scan=False, report_dir=str(tmp_path / "report"))
    assert first["dispatched"] == 1 and first["regressions"] == [] and first["report"]
    register_folder(settings, flipped, name="flipped")
    second = run_flow("nightly", reason="manual", scan=False, report_dir=str(tmp_path / "report"))
    assert second["dispatched"] == 1
    [regression] = second["regressions"]
    # flipped's Pearson r is exactly -fit's (the scores are negated); fit's mean over the language
    # pairs is positive (about 0.2: a least-squares head on a 32-wide random encoder), so flipped
    # is significantly worse
    assert regression["value"] == pytest.approx(-regression["baseline_value"], abs=1e-9)
    assert regression["baseline_value"] > 0.1 and regression["p_value"] < 0.05
    assert [r["checkpoint"] for r in list_regressions(settings)] == ["flipped"]

    rows = history(settings, "nightly")
    assert sorted(r["checkpoint_name"] for r in rows) == ["fit", "flipped"]
    assert all(r["attempts"] == 1 for r in rows)
    report = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert "flipped" in report and "regression" in report

    # nothing new: the sweep plans, finds nothing, and starts no flow run and writes nothing
    third = run_flow("nightly", reason="manual", scan=False, report_dir=str(tmp_path / "report"))
    assert third["dispatched"] == 0 and third["evaluated"] == [] and third["report"] is None
    assert len(history(settings, "nightly")) == 2
