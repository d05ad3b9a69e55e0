"""Soft pairwise accuracy's bootstrap: Assay's exact count against pce.py's float32 product.

A WMT24-sized case (13 systems x 529 segments, the human matrix and 3 metrics, 1,000 permutations
x 1,000 resamples, as ``--protocol wmt24`` runs it) through ``assay.stats.resampled_spa``, and the
same replicates computed the way mt-metrics-eval's ``pce.py`` computes one SPA (a float32 product of
the signs with the count-weighted scores, ``>=`` against the float32 observed sums), in one process.
Prints one JSON object:

  assay_s, pce_float32_s      the fastest of ``--repeats`` runs of each
  ratio                       assay_s / pce_float32_s
  max_abs_diff                largest |Assay - float32| over the replicates: pce.py's rounding of
                              near-tied permutations (Assay decides those exactly)
  threads                     the BLAS threads (threadpoolctl)

Usage: ``.venv/bin/python benchmarks/spa_resamples.py [--repeats 3]``
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from threadpoolctl import threadpool_info

from assay.stats import resampled_spa
from assay.stats.resampled import resample_counts
from assay.stats.spa import permutation_signs


def pce_float32(human: np.ndarray, metrics: list[np.ndarray], counts: np.ndarray) -> np.ndarray:
    """The replicates as pce.py's arithmetic gives them (its float32 product and comparison)."""
    signs = permutation_signs(human.shape[1])
    upper = np.triu_indices(human.shape[0], 1)

    def p_values(scores: np.ndarray) -> np.ndarray:
        totals = scores.sum(axis=1)
        null = signs @ scores.T  # (P, S) float32
        observed = totals[:, None] - totals[None, :]
        diffs = null[:, :, None] - null[:, None, :]
        return (diffs >= observed[None]).mean(axis=0)[upper]

    out = np.empty((len(metrics), len(counts)))
    for r, row in enumerate(counts.astype(np.float32)):
        human_p = p_values(human.astype(np.float32) * row)
        for m, metric in enumerate(metrics):
            out[m, r] = 1.0 - np.mean(np.abs(human_p - p_values(metric.astype(np.float32) * row)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    human = rng.normal(size=(13, 1)) * 0.3 + rng.normal(size=(13, 529))
    metrics = [human + rng.normal(scale=s, size=human.shape) for s in (0.5, 1.0, 2.0)]
    counts = resample_counts(rng.integers(0, 529, size=(args.resamples, 529)), 529)
    timings: dict[str, list[float]] = {"assay": [], "pce_float32": []}
    for _ in range(args.repeats):
        start = time.perf_counter()
        ours = resampled_spa(human, metrics, counts)
        timings["assay"].append(time.perf_counter() - start)
        start = time.perf_counter()
        theirs = pce_float32(human, metrics, counts)
        timings["pce_float32"].append(time.perf_counter() - start)
    assay_s, pce_s = min(timings["assay"]), min(timings["pce_float32"])
    print(json.dumps({
        "case": "13 systems x 529 segments, human + 3 metrics, 1000 permutations",
        "resamples": args.resamples,
        "assay_s": round(assay_s, 3),
        "pce_float32_s": round(pce_s, 3),
        "ratio": round(assay_s / pce_s, 3),
        "max_abs_diff": float(np.abs(ours - theirs).max()),
        "threads": [info.get("num_threads") for info in threadpool_info() if info.get("user_api") == "blas"],
    }, indent=2))


if __name__ == "__main__":
    main()
