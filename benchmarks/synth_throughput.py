"""Throughput of synthetic pre-training pairs (BLEURT §4) on the CPU, with every offline plugin.

Ingests WMT16 and WMT18 into a temporary ASSAY_HOME, then makes and stores ``--pairs`` pairs
(default 50,000) from them, WMT17 excluded: n-gram mask filling on half, WMT system outputs on the
other half, word dropping on 30%; signals BLEU, ROUGE-1 P/R/F, chrF and BERTScore P/R/F with the
embedded MiniLM (layer 4). Target: at most 10 minutes for 50,000 pairs on the 2-core machine.

Prints one JSON object: seconds per stage (ingest, corpus, the n-gram model, each perturbation,
each signal, storing), pairs per second of the synthesis (ingest excluded) and the projected time
for 50,000 pairs.

    .venv/bin/python benchmarks/synth_throughput.py [--pairs 50000] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def _timed(timings: dict[str, float], key: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            timings[key] = timings.get(key, 0.0) + time.perf_counter() - start

    return wrapper


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=50_000)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="assay-bench-") as home:
        os.environ["ASSAY_HOME"] = home
        os.environ.pop("ASSAY_CATALOG_URL", None)
        import torch

        from assay.jobs.ingest import ingest_path
        from assay.synthetic import SignalSpec, default_spec, store_pairs, synthesize
        from assay.synthetic.synthesize import load_plugins

        start = time.perf_counter()
        for folder in ("wmt16-da-seg", "wmt18-da"):
            ingest_path(args.data / folder)
        ingest_s = time.perf_counter() - start

        base = default_spec(n_pairs=args.pairs)
        spec = base.__class__(**{**base.__dict__, "signals": (
            SignalSpec("bleu"), SignalSpec("rouge"), SignalSpec("chrf"), SignalSpec("bertscore"))})
        timings: dict[str, float] = {}
        started = time.perf_counter()
        plugins = load_plugins(spec)
        for _, perturbation in (*plugins.base, *plugins.modifiers):
            name = perturbation.name
            perturbation.prepare = _timed(timings, f"prepare:{name}", perturbation.prepare)  # type: ignore[method-assign]
            perturbation.perturb = _timed(timings, f"perturb:{name}", perturbation.perturb)  # type: ignore[method-assign]
        for signal_spec, signal in plugins.signals:
            signal.compute = _timed(timings, f"signal:{signal_spec.key}", signal.compute)  # type: ignore[method-assign]
        marks: dict[str, float] = {}

        def progress(p: Any) -> None:
            marks.setdefault(f"{p.stage}_first", time.perf_counter() - started)
            marks[f"{p.stage}_done"] = time.perf_counter() - started

        table = synthesize(spec, plugins=plugins, progress=progress)
        synth_s = time.perf_counter() - started
        t = time.perf_counter()
        version = store_pairs(table, "synth-bench")
        store_s = time.perf_counter() - t
        total = synth_s + store_s
        accounted = sum(timings.values())
        result = {
            "pairs": args.pairs,
            "spec": {"sources": list(spec.sources), "exclude": list(spec.exclude),
                     "perturbations": [p.as_dict() for p in spec.perturbations],
                     "signals": [s.name for s in spec.signals]},
            "ingest_s": round(ingest_s, 1),
            "synthesis_s": round(synth_s, 1),
            "store_s": round(store_s, 2),
            "total_s": round(total, 1),
            "pairs_per_s": round(args.pairs / total, 1),
            "projected_50000_pairs_s": round(total * 50_000 / args.pairs, 1),
            "target_50000_pairs_s": 600,
            "stages_s": {k: round(v, 1) for k, v in sorted(timings.items())},
            "corpus_and_other_s": round(synth_s - accounted, 1),
            "version": version.label,
            "torch_threads": torch.get_num_threads(),
            "cpus": os.cpu_count(),
        }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
