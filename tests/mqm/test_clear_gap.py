"""The gap of the human score that makes a clear human preference in ``assay errors``: one minor error on
the score's scale (1 MQM point, 10 ESA points), chosen by the version's kind of human score, recorded in the
output and in the run's parameters.

Clear pairs are counted here independently from the stored segment scores (every pair of outputs of an
item whose human scores differ by at least the gap). The data: WMT24's ESA wave 2 en-hi
(``../shared/data/esa-wmt24``), WMT23's MQM en-de (``mqm-wmt23-ende``) and MTME's WMT23 en-de folder.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.catalog.models import Run
from assay.config import load_settings
from assay.errors import UsageError
from assay.jobs.error_analysis import analyse_errors, rated_outputs, show_item
from assay.jobs.ingest import ingest_path
from assay.jobs.judgments import JudgmentFilter
from assay.jobs.scoring import score_dataset
from assay.metrics.registry import MetricSpec
from assay.mqm import RatedOutputs, worst_disagreements
from assay.mqm.disagreements import CLEAR_GAPS, ClearGap, default_clear_gap, given_gap


def _clear_pairs(label: str, gap: float) -> int:
    """Within-item pairs of candidates whose human scores differ by at least ``gap``, from ``segments``."""
    settings = load_settings()
    with session_scope(settings) as session:
        version = resolve(session, label)
        info, store_path = dict(version.info), version.store_path
    rows = JudgmentFilter.of(info).table(settings, store_path, "segments").to_pylist()
    by_item: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row in rows:
        by_item[(row["group"], row["item_id"])].append(row["human_raw"])
    return sum(a - b >= gap for scores in by_item.values() for a in scores for b in scores)


def _parameters(run_id: str) -> dict:
    with session_scope(load_settings()) as session:
        run = session.get(Run, run_id)
        assert run is not None
        return dict(run.parameters)


def test_the_default_follows_the_kind_of_human_score() -> None:
    assert default_clear_gap(["mqm"]).points == 1.0 and default_clear_gap(["esa"]).points == 10.0
    assert default_clear_gap(["mqm", "mqm"]) == CLEAR_GAPS["mqm"]
    with pytest.raises(UsageError, match=r"no default gap .* kind da-sqm"):
        default_clear_gap(["da-sqm"])
    with pytest.raises(UsageError, match="mix kinds on different scales"):
        default_clear_gap(["esa", "mqm"])
    with pytest.raises(UsageError, match="positive number"):
        given_gap(0)
    # the pure function's default is MQM's; a ClearGap's basis travels into the JSON
    # one item, human scores 0, -1, -12: gaps 1, 11 and 12 (three clear at 1 point, two at 10)
    outputs = RatedOutputs(["a", "a", "a"], ["s1", "s2", "s3"], [0.0, -1.0, -12.0], [3.0, 2.0, 1.0], [[], [], []],
                           [1, 1, 1], ["x", "y", "z"], ["source"] * 3)
    assert worst_disagreements(outputs).clear_pairs == 3
    ten = worst_disagreements(outputs, min_human_gap=CLEAR_GAPS["esa"]).as_dict()
    assert (ten["clear_pairs"], ten["min_human_gap"]) == (2, 10.0)
    assert ten["min_human_gap_basis"].startswith("ESA default")
    assert ClearGap(2.5, "x").as_dict() == {"min_human_gap": 2.5, "min_human_gap_basis": "x"}


def test_esa_counts_a_preference_clear_at_ten_points(shared_data: Path) -> None:
    label = ingest_path(shared_data / "esa-wmt24", name="esa-hi", options={"language_pair": "en-hi"}).label
    score_dataset(label, MetricSpec("chrf"))
    result = analyse_errors(label, "chrf", n_resamples=20, top=3)
    worst = result["disagreements"]
    assert (worst["min_human_gap"], result["aspect"]) == (10.0, "esa")
    assert worst["min_human_gap_basis"].startswith("ESA default")
    assert worst["clear_pairs"] == _clear_pairs(label, 10.0) > 0
    parameters = _parameters(result["run_id"])
    assert parameters["min_human_gap"] == 10.0 and parameters["min_human_gap_basis"].startswith("ESA default")
    # a gap given is used and recorded as given; one point counts far more pairs as clear
    one = analyse_errors(label, "chrf", n_resamples=20, top=3, min_human_gap=1.0)
    assert one["disagreements"]["clear_pairs"] == _clear_pairs(label, 1.0) > worst["clear_pairs"]
    assert _parameters(one["run_id"])["min_human_gap_basis"].startswith("given")
    item = worst["pairs"][0]["item"]
    shown = show_item(label, "chrf", item)
    assert shown["min_human_gap"] == 10.0 and shown["min_human_gap_basis"].startswith("ESA default")


def test_mqm_keeps_its_one_point(shared_data: Path) -> None:
    label = ingest_path(shared_data / "mqm-wmt23-ende").label
    score_dataset(label, MetricSpec("chrf"))
    result = analyse_errors(label, "chrf", n_resamples=20, top=3)
    worst = result["disagreements"]
    assert worst["min_human_gap"] == 1.0 and worst["min_human_gap_basis"].startswith("MQM default")
    assert worst["clear_pairs"] == _clear_pairs(label, 1.0) > 0
    assert _parameters(result["run_id"])["min_human_gap"] == 1.0


def test_an_mtme_version_is_analysed_on_its_primary_kind(tmp_path: Path, shared_data: Path) -> None:
    """MTME's WMT23 en-de has MQM (primary, with the error ratings) and DA+SQM segment scores."""
    wmt23 = shared_data / "mtme-wmt23" / "wmt23"
    root = tmp_path / "wmt23"
    root.mkdir()
    for sub in ("sources", "references", "documents", "human-scores", "system-outputs"):
        (root / sub).symlink_to(wmt23 / sub, target_is_directory=True)
    label = ingest_path(root).label
    facts, outputs, _ = rated_outputs(load_settings(), label)
    # REFERENCE_NUMBERS.md (WMT23 MTME): 12 MT systems x 460 segments with MQM; human systems left out
    assert (facts["kinds"], facts["aspect"], outputs.size) == (["mqm"], "mqm", 12 * 460)
    assert not np.isnan(outputs.human).any()
