"""Metrics register through the entry-point group ``assay.metrics``, Assay's own included.

A user's metric is added by installing a distribution that declares an entry point; nothing in
Assay changes. The test builds such a distribution for real (a package and its ``.dist-info``
folder with ``METADATA`` and ``entry_points.txt``, which is what pip writes), puts its folder on
``sys.path`` and scores a dataset with it through :mod:`assay.jobs.scoring`.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from assay.catalog.engine import session_scope
from assay.catalog.models import ResultFile, Run
from assay.config import load_settings
from assay.errors import NotFoundError, UsageError
from assay.fixtures import fixtures_dir
from assay.jobs import scoring
from assay.jobs.ingest import ingest_path
from assay.metrics.registry import ENTRY_POINT_GROUP, MetricSpec, create_metric, metric_class, metric_names

BUILT_IN = {
    "sentbleu": "assay.metrics.lexical:SentenceBLEU",
    "bleu": "assay.metrics.lexical:CorpusBLEU",
    "chrf": "assay.metrics.lexical:ChrF",
    "corpus-chrf": "assay.metrics.lexical:CorpusChrF",
    "ter": "assay.metrics.lexical:TER",
    "rouge1": "assay.metrics.lexical:Rouge1",
    "rouge2": "assay.metrics.lexical:Rouge2",
    "rougeL": "assay.metrics.lexical:RougeL",
    "bleu-neighbors": "assay.metrics.bleu_neighbors_metric:BleuNeighborsMetric",
    "bertscore": "assay.workers.metrics:BERTScore",
    "bleurt": "assay.workers.metrics:BLEURT",
}

DEMO_PACKAGE = '''
"""A metric from outside Assay: the candidate's length relative to its closest reference."""

from typing import ClassVar

import numpy as np

from assay.metrics.base import Metric, SegmentScores


class LengthRatio(Metric):
    name: ClassVar[str] = "demo-length"

    def __init__(self, cap: float = 2.0) -> None:
        self.cap = float(cap)

    def params(self) -> dict[str, object]:
        return {"cap": self.cap}

    def score(self, candidates, references, sources=None, *, context=None) -> SegmentScores:
        self.check_inputs(candidates, references)
        ratios = [min(self.cap, min(abs(len(c.split()) / max(len(r.split()), 1) - 1) for r in refs))
                  for c, refs in zip(candidates, references, strict=True)]
        return SegmentScores(-np.asarray(ratios, dtype=float))
'''


@pytest.fixture
def demo_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``assay-demo-metric 0.1``, installed the way pip lays it out, on ``sys.path``."""
    root = tmp_path / "site"
    (root / "assay_demo_metric").mkdir(parents=True)
    (root / "assay_demo_metric" / "__init__.py").write_text(textwrap.dedent(DEMO_PACKAGE))
    info = root / "assay_demo_metric-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: assay-demo-metric\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[assay.metrics]\ndemo-length = assay_demo_metric:LengthRatio\n")
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()
    yield root
    sys.modules.pop("assay_demo_metric", None)
    scoring._metric.cache_clear()
    importlib.invalidate_caches()


def test_a_metric_from_another_distribution_scores_a_dataset(demo_distribution: Path) -> None:
    assert "demo-length" in metric_names()
    metric = create_metric("demo-length", cap=3)
    assert type(metric).__module__ == "assay_demo_metric"
    assert metric.signature().startswith("demo-length|cap:3.0|v:1|assay:")
    with pytest.raises(UsageError, match=r"has no parameter 'limit' \(it accepts: cap\)"):
        create_metric("demo-length", limit=1)

    ingest_path(fixtures_dir() / "demo-wmt")
    summary = scoring.score_dataset("wmt99", MetricSpec("demo-length"), shard_size=10)
    assert summary["computed"] == 36 and len(summary["files"]) == 4
    assert summary["signature"] == create_metric("demo-length").signature()
    settings = load_settings()
    scores = [s for f in summary["files"] for s in pq.read_table(settings.home / f).column("score").to_pylist()]
    assert len(scores) == 36 and all(s <= 0 for s in scores)
    with session_scope(settings) as session:
        run = session.get(Run, summary["run_id"])
        assert run is not None and run.status == "completed" and run.parameters["metric"]["name"] == "demo-length"
        assert session.query(ResultFile).filter_by(run_id=run.id).count() == 4
    # cached like any other metric
    assert scoring.score_dataset("wmt99", MetricSpec("demo-length"))["computed"] == 0


def test_every_built_in_metric_is_registered_through_entry_points() -> None:
    declared = {ep.name: ep.value for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
                if ep.value.startswith("assay.")}
    assert declared == BUILT_IN
    for name, target in BUILT_IN.items():
        module, _, attr = target.partition(":")
        if module.startswith("assay.workers"):
            continue  # imports torch; see test_listing_metrics_imports_no_model_code
        assert metric_class(name) is getattr(importlib.import_module(module), attr)
    import assay.metrics
    import assay.metrics.registry

    assert not hasattr(assay.metrics.registry, "METRICS")  # no table beside the entry points
    with pytest.raises(AttributeError):
        assay.metrics.BERTScore  # noqa: B018  (no lazy import of the worker layer)


def test_unknown_metric_names_the_registered_ones() -> None:
    with pytest.raises(NotFoundError, match=r"unknown metric 'nope'.*sentbleu"):
        create_metric("nope")


def test_listing_metrics_imports_no_model_code() -> None:
    """Listing names (and creating a lexical metric) reads metadata only: no torch, no worker layer."""
    code = ("import sys\nfrom assay.metrics.registry import metric_names, create_metric\n"
            "names = metric_names()\ncreate_metric('chrf')\n"
            "assert 'bertscore' in names and 'bleurt' in names, names\n"
            "assert 'torch' not in sys.modules and 'assay.workers' not in sys.modules, 'heavy import'\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
