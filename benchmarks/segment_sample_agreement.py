"""How many segments per system rank a year's systems as its full test set does (``-o sample_segments``).

Choosing a learned metric's defaults on another year's system-level ranking (issue 31: WMT18
to-English) means scoring each candidate checkpoint on that year's outputs. All of WMT18's
to-English outputs are about 200,000 lines, an hour per checkpoint on this CPU; a seeded sample of
``N`` segments per language pair, the same for every system (:mod:`assay.datasets.formats.segment_sample`),
costs ``N x systems`` lines. This benchmark measures what the sample keeps, with two metrics that
are cheap to compute on every output (sentence chrF and sentence BLEU, sacrebleu's):

* **rank agreement**: Kendall tau between the systems' mean scores on the sample and on all outputs,
  per pair, averaged over the pairs; mean and worst over ``--seeds`` sample seeds;
* **correlation with humans**: the systems' Pearson r with WMT18's official system-level DA z
  (``DA-syslevel.csv``) from the sample and from all outputs, averaged over the pairs.

    python benchmarks/segment_sample_agreement.py --sizes 100,200,300,400,600 --out sample.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "wmt18-da")
    p.add_argument("--sizes", default="100,200,300,400,600", help="segments per pair to try")
    p.add_argument("--seeds", type=int, default=20, help="sample seeds per size")
    p.add_argument("--out", type=Path)
    return p.parse_args()


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _pearson(means: dict[str, dict[str, float]], human: dict[tuple[str, str], float]) -> float:
    """The average over pairs of the systems' Pearson r between their mean scores and the human z."""
    from scipy.stats import pearsonr

    values = []
    for group in sorted(means):
        named = [(means[group][s], human[(group, s)]) for s in means[group] if (group, s) in human]
        values.append(pearsonr([m for m, _ in named], [h for _, h in named]).statistic)
    return statistics.fmean(values)


def main() -> int:
    args = _args()
    os.environ["ASSAY_HOME"] = tempfile.mkdtemp(prefix="assay-sample-agreement-")
    os.environ.pop("ASSAY_CATALOG_URL", None)
    from scipy.stats import kendalltau

    from assay.catalog.dataset_versions import resolve
    from assay.catalog.engine import session_scope
    from assay.config import load_settings
    from assay.datasets.formats.segment_sample import sample_rank
    from assay.datasets.store import read_table
    from assay.jobs.ingest import ingest_path
    from assay.jobs.scoring import score_dataset
    from assay.metrics.registry import MetricSpec
    from assay.results.segment_scores import read_scores, segment_keys

    settings = load_settings()
    started = time.monotonic()
    ingested = ingest_path(args.data, name="wmt18", settings=settings)
    with session_scope(settings) as session:
        store_path = resolve(session, ingested.version).store_path
    outputs = read_table(settings, store_path, "outputs")
    systems = read_table(settings, store_path, "systems").to_pylist()
    human = {(r["group"], r["output_system"]): r["human_z"] for r in systems if r.get("output_system")}
    keys = segment_keys(outputs)
    report: dict[str, Any] = {"dataset": ingested.version.label, "outputs": outputs.num_rows, "metrics": {}}
    _log(f"ingested {ingested.version.label}: {outputs.num_rows:,} output lines ({time.monotonic() - started:.0f} s)")
    for metric in ("chrf", "sentbleu"):
        summary = score_dataset(ingested.version.label, MetricSpec.from_dict({"name": metric, "params": {}}),
                                scope="outputs", settings=settings)
        stored = read_scores(settings, metric, summary["signature"])
        score = dict(zip(stored.column("key").to_pylist(), stored.column("score").to_pylist(), strict=True))
        by_pair: dict[str, dict[str, dict[str, float]]] = {}
        columns = (outputs.column(name).to_pylist() for name in ("group", "segment_id", "system"))
        for group, sid, system, key in zip(*columns, keys, strict=True):
            by_pair.setdefault(group, {}).setdefault(system, {})[sid] = score[key]
        pairs = sorted(by_pair)
        full = {g: {s: statistics.fmean(v.values()) for s, v in by_pair[g].items()} for g in pairs}
        rows: dict[str, Any] = {"all outputs": {"pearson_with_humans": round(_pearson(full, human), 4)}}
        for size in (int(n) for n in args.sizes.split(",")):
            agreement, correlation = [], []
            for seed in range(args.seeds):
                sampled = {}
                for g in pairs:
                    ids = sorted(next(iter(by_pair[g].values())), key=partial(sample_rank, seed, g))[:size]
                    sampled[g] = {s: statistics.fmean(v[i] for i in ids) for s, v in by_pair[g].items()}
                agreement.append(statistics.fmean(
                    kendalltau(list(full[g].values()), list(sampled[g].values())).statistic for g in pairs))
                correlation.append(_pearson(sampled, human))
            rows[f"{size} per pair"] = {
                "lines_scored": size * sum(len(by_pair[g]) for g in pairs),
                "rank_agreement_mean": round(statistics.fmean(agreement), 4),
                "rank_agreement_worst": round(min(agreement), 4),
                "pearson_with_humans_mean": round(statistics.fmean(correlation), 4),
                "pearson_with_humans_sd": round(statistics.stdev(correlation), 4)}
            _log(f"{metric} {size}: {rows[f'{size} per pair']}")
        report["metrics"][metric] = {"signature": summary["signature"], "pairs": pairs,
                                     "systems": {g: len(by_pair[g]) for g in pairs}, "rows": rows}
    report["seeds"] = args.seeds
    report["seconds"] = round(time.monotonic() - started, 1)
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
