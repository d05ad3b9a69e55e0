"""MQM path: ingest, the WMT24 protocol and the error analysis, timed on the real releases.

Prints one JSON object with three parts (targets from the MQM issue, on the 2-core machine):

* ``ingest``: ``mqm-wmt23-ende`` (30 MB, long JSON metadata cells) ingested in-process (target
  <= 10 s) and re-ingested through the CLI, a no-op answered without parsing (target <= 1.5 s of
  wall time, process start included); beside it the floor, a bare ``csv.reader`` pass over the file;
* ``wmt24``: ``assay evaluate --protocol wmt24`` on both MQM sets with sentBLEU, chrF and BERTScore
  (MiniLM layer 4, ``--any-language``: both sets are into German), 1,000 permutations and 1,000
  bootstrap resamples (target <= 10 s of evaluation for both, scoring excluded); beside it the
  reference arithmetic, mt-metrics-eval ``pce.py``'s per-pair loop restated in numpy, timed for the
  point values only (no intervals) on the same matrices;
* ``errors``: the error analysis of chrF on ``mqm-ted-ende`` with 1,000 bootstrap resamples
  (target <= 5 s); beside it the naive reference, ``numpy.linalg.lstsq`` on each resample's rows.

    .venv/bin/python benchmarks/mqm.py [--data ../shared/data] [--skip-bertscore]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
WMT23 = "mqm-wmt23-ende"
TED = "mqm-ted-ende"


def _bare_read(path: Path) -> float:
    start = time.perf_counter()
    with path.open(newline="", encoding="utf-8") as handle:
        for _ in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
            pass
    return time.perf_counter() - start


def _pce_reference(human: np.ndarray, metrics: list[np.ndarray], n_permutations: int, seed: int) -> float:
    """pce.py's arithmetic as published: one sign matrix, then a Python loop over system pairs."""
    start = time.perf_counter()

    def p_values(scores: np.ndarray) -> np.ndarray:
        rng = np.random.default_rng(seed)
        signs = rng.random(size=(n_permutations, scores.shape[1]), dtype=np.float32)
        np.rint(signs, out=signs)
        signs = signs * 2.0 - 1.0
        scores = scores.astype(np.float32)
        totals, partial = scores.sum(axis=1), signs @ scores.T
        p = np.full((len(scores), len(scores)), np.nan)
        for i in range(len(scores)):
            for j in range(i + 1, len(scores)):
                p[i, j] = np.sum(partial[:, i] - partial[:, j] >= totals[i] - totals[j]) / n_permutations
        return p

    human_p = p_values(human)
    upper = np.triu_indices(len(human), 1)
    for metric in metrics:
        1.0 - np.mean(np.abs(human_p - p_values(metric))[upper])
    return time.perf_counter() - start


def _lstsq_reference(outputs, n_resamples: int, seed: int) -> float:  # type: ignore[no-untyped-def]
    """Naive bootstrap: build each resample's rows, demean within items, solve with lstsq."""
    from assay.mqm.error_cells import error_features
    from assay.mqm.within_item_regression import demean_within_items
    from assay.stats.bootstrap import resample_indices

    start = time.perf_counter()
    features = error_features(outputs, "category")
    codes, n_items = outputs.item_codes, len(outputs.item_ids)
    members = [np.flatnonzero(codes == i) for i in range(n_items)]
    scores = np.column_stack([outputs.human, outputs.metric])
    for draw in resample_indices(seed, "bench", n_resamples, n_items):
        rows = np.concatenate([members[i] for i in draw])
        items = np.concatenate([np.full(len(members[i]), k) for k, i in enumerate(draw)])
        x = demean_within_items(features.counts[rows], items, n_items)
        y = demean_within_items(scores[rows], items, n_items)
        np.linalg.lstsq(x, y, rcond=None)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--skip-bertscore", action="store_true", help="sentBLEU and chrF only (faster)")
    args = parser.parse_args()
    result: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="assay-bench-mqm-") as home:
        os.environ["ASSAY_HOME"] = home
        os.environ.pop("ASSAY_CATALOG_URL", None)
        from assay.catalog.engine import get_engine
        from assay.config import load_settings
        from assay.jobs.error_analysis import analyse_errors, rated_outputs
        from assay.jobs.evaluation import evaluate
        from assay.jobs.ingest import ingest_path
        from assay.jobs.scoring import score_dataset
        from assay.metrics.registry import MetricSpec

        get_engine()
        wmt23_file = next((args.data / WMT23).glob("*.tsv"))
        start = time.perf_counter()
        first = ingest_path(args.data / WMT23)
        ingest_s = time.perf_counter() - start
        start = time.perf_counter()
        again = subprocess.run([str(REPO / ".venv" / "bin" / "assay"), "ingest", str(args.data / WMT23), "--json"],
                               capture_output=True, text=True, check=True, env={**os.environ})
        reingest_s = time.perf_counter() - start
        bare_s = _bare_read(wmt23_file)
        result["ingest"] = {
            "dataset": WMT23, "rows": first.row_counts, "ingest_s": round(ingest_s, 3), "target_ingest_s": 10,
            "reingest_cli_s": round(reingest_s, 3), "target_reingest_s": 1.5,
            "reingest_noop": json.loads(again.stdout)["created"] is False,
            "bare_csv_read_s": round(bare_s, 3), "ratio_to_bare_read": round(ingest_s / bare_s, 1),
        }

        ingest_path(args.data / TED)
        metrics = [MetricSpec("sentbleu"), MetricSpec("chrf")]
        if not args.skip_bertscore:
            metrics.append(MetricSpec("bertscore", {"layer": 4}))
        scoring: dict[str, float] = {}
        for name in (WMT23, TED):
            for spec in metrics:
                start = time.perf_counter()
                score_dataset(name, spec, allow_languages=True)
                scoring[f"{name}/{spec.name}"] = round(time.perf_counter() - start, 2)
        wmt24: dict[str, object] = {"scoring_s (not counted)": scoring}
        total = 0.0
        for name in (WMT23, TED):
            start = time.perf_counter()
            rows = evaluate(name, protocol="wmt24", n_permutations=1000, n_resamples=1000)["rows"]
            seconds = time.perf_counter() - start
            total += seconds
            table = {r["metric"]: {} for r in rows}
            for r in rows:
                if r["group"] == "all":
                    table[r["metric"]][r["statistic"]] = [round(r["value"], 4), round(r["ci_low"], 4),
                                                          round(r["ci_high"], 4), r["rank"], r["cluster"]]
            wmt24[name] = {"evaluate_s": round(seconds, 2), "table (value, ci_low, ci_high, rank, cluster)": table}
            _, outputs, _ = rated_outputs(load_settings(), name)
            shape = (len(set(outputs.system)), len(set(outputs.item)))  # the protocol's (systems x items) grid
            rng = np.random.default_rng(0)
            reference_s = _pce_reference(rng.random(shape), [rng.random(shape) for _ in metrics], 1000, 4)
            wmt24[name]["reference_pce_points_s"] = round(reference_s, 3)
        wmt24["evaluate_s_total"] = round(total, 2)
        wmt24["target_s"] = 10
        result["wmt24"] = wmt24

        start = time.perf_counter()
        analysis = analyse_errors(TED, "chrf", n_resamples=1000)
        errors_s = time.perf_counter() - start
        from assay.jobs.error_analysis import metric_vector, one_signature

        settings = load_settings()
        _, outputs, keys = rated_outputs(settings, TED)
        with_metric = outputs.with_metric(metric_vector(settings, one_signature(settings, "chrf", set(keys)), keys))
        result["errors"] = {
            "dataset": TED, "metric": "chrf", "n_resamples": 1000, "seconds": round(errors_s, 3), "target_s": 5,
            "blind_spots": analysis["sensitivity"]["blind_spots"],
            "reference_lstsq_per_resample_s": round(_lstsq_reference(with_metric, 1000, 0), 3),
        }
        result["errors"]["ratio_to_reference"] = round(errors_s / result["errors"]["reference_lstsq_per_resample_s"], 3)
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
