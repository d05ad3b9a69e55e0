"""REFERENCE_NUMBERS.md's WMT tables, every pair, reproduced end to end on the real data.

The suite (tests/test_reference_numbers.py) reproduces sentBLEU on all of WMT17 and BERTScore and
system-level BLEU on two pairs of each year; this script does every pair of every table, with the
same ingest -> score -> evaluate steps in a fresh ``ASSAY_HOME``: sentBLEU and BERTScore (MiniLM
layer 4, no idf) on WMT17's 3,920 judged segments, corpus BLEU over every system's output of WMT17
and WMT18 against DA z. The expected numbers and tolerances are the test module's (one home).
Prints one JSON object: per table, per pair, the value found, the reference and whether it is
within the tolerance; ``all_within`` over everything; CPU seconds per step.

Usage: ``.venv/bin/python benchmarks/reference_numbers.py [--data ../shared/data]`` (about 3 minutes
of CPU on the 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    os.environ["ASSAY_HOME"] = tempfile.mkdtemp(prefix="assay-reference-numbers-")
    sys.path.insert(0, str(ROOT))
    from assay.jobs.evaluation import evaluate
    from assay.jobs.ingest import ingest_path
    from assay.jobs.scoring import finish_scoring, plan_scoring, score_shard
    from assay.metrics.registry import MetricSpec
    from tests.test_reference_numbers import BERTSCORE_MINILM_L4_WMT17, BLEU_SYS, SENTBLEU_WMT17

    cpu: dict[str, float] = {}

    def step(name: str, run: Any) -> Any:
        start = time.process_time()
        out = run()
        cpu[name] = round(time.process_time() - start, 1)
        return out

    def score(dataset: str, metric: str, scope: str, **params: object) -> None:
        plan = plan_scoring(dataset, MetricSpec(metric, dict(params)), scope=scope, shard_size=50_000)
        finish_scoring(plan, [score_shard(plan, i) for i in range(len(plan.shards))])

    for year in ("wmt17", "wmt18"):
        step(f"ingest {year}", lambda year=year: ingest_path(args.data / f"{year}-da"))
    step("sentbleu wmt17", lambda: score("wmt17", "sentbleu", "judged"))
    step("bertscore wmt17", lambda: score("wmt17", "bertscore", "judged", layer=4))
    for year in ("wmt17", "wmt18"):
        step(f"bleu {year}", lambda year=year: score(year, "bleu", "outputs"))

    tables: dict[str, dict[str, Any]] = {}
    for metric, expected in (("sentbleu", SENTBLEU_WMT17), ("bertscore", BERTSCORE_MINILM_L4_WMT17)):
        rows = evaluate("wmt17", level="seg", metrics=[metric], statistics=["kendall", "pearson"], n_resamples=100)
        got = {(r["group"], r["statistic"]): 100 * r["value"] for r in rows["rows"]}
        tables[f"wmt17 seg {metric} tau/r x100 (tolerance 0.3)"] = {
            lp: {"found": [round(got[(lp, "kendall")], 2), round(got[(lp, "pearson")], 2)], "reference": [tau, r],
                 "within": abs(got[(lp, "kendall")] - tau) <= 0.3 and abs(got[(lp, "pearson")] - r) <= 0.3}
            for lp, (tau, r) in expected.items()}
    for year, expected_sys in BLEU_SYS.items():
        rows = evaluate(year, level="sys", metrics=["bleu"], statistics=["pearson"], n_resamples=100)
        found = {r["group"]: r["value"] for r in rows["rows"]}
        tables[f"{year} sys corpus BLEU Pearson r (tolerance 0.01)"] = {
            lp: {"found": round(found[lp], 4), "reference": value, "within": abs(found[lp] - value) <= 0.01}
            for lp, value in expected_sys.items()}
    within = all(cell["within"] for table in tables.values() for cell in table.values())
    print(json.dumps({"all_within": within, "tables": tables, "cpu_s": cpu}, indent=2))


if __name__ == "__main__":
    main()
