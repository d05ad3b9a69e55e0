"""BLEU Neighbors at scale: 100,000 training and 10,000 candidate sentences, train -> test.

Builds the BLEU* n-gram index (:mod:`assay.metrics.neighbors_index`) over 100,000 training
sentences, finds the neighbours (BLEU* >= tau = 0.08) of 10,000 candidates and makes the
predictions (a = 5, b = 0.66), for each smoothing. A seeded sample of 200 candidates is checked
against the plain all-pairs kernel: neighbour sets, scores and predictions must be identical.
Target: build + query within 60 s on the 2-core development machine. Prints one JSON object.

Data: the English references and system outputs of WMT17 and WMT18 to-English in
``../shared/data`` (``wmt17-da/references``, ``wmt17-da/system-outputs/newstest2017``,
``wmt18-da/references``, ``wmt18-da/system-outputs``; read as utf-8-sig, since some start with a
byte-order mark). Each line is lowercased and split into ``\\w+`` runs and single punctuation
characters; empty lines are dropped and **duplicates are removed** (systems often agree), keeping
the first occurrence in sorted file order. The unique sentences are shuffled (seed 0): the first
100,000 train, the next 10,000 are candidates, so no candidate text is in training. These
sentences have no human quality scores: training qualities are seeded uniform draws in [0, 1],
which do not affect the timings, the neighbour sets or the coverage.

    .venv/bin/python benchmarks/bleu_neighbors_scale.py [--data ../shared/data] [--smoothing add-one]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

REPO = Path(__file__).resolve().parent.parent
TOKEN = re.compile(r"\w+|[^\w\s]")
TAU, A, B = 0.08, 5, 0.66


def source_files(data: Path) -> list[Path]:
    patterns = [
        "wmt17-da/references/*.en",
        "wmt17-da/system-outputs/newstest2017/*/*",
        "wmt18-da/references/*.en",
        "wmt18-da/system-outputs/*/*",
    ]
    return sorted(path for pattern in patterns for path in data.glob(pattern) if path.is_file())


def load_sentences(data: Path) -> tuple[list[str], int]:
    """Unique lowercased, tokenized sentences (space-joined) and the number of files read."""
    files = source_files(data)
    seen: set[str] = set()
    sentences: list[str] = []
    for path in files:
        with path.open(encoding="utf-8-sig") as handle:
            for line in handle:
                text = " ".join(TOKEN.findall(line.lower()))
                if text and text not in seen:
                    seen.add(text)
                    sentences.append(text)
    return sentences, len(files)


def same_neighbors(left: sp.csr_matrix, right: sp.csr_matrix) -> tuple[bool, float]:
    """Whether two neighbour matrices have identical sets, and the largest score difference."""
    sets = np.array_equal(left.indptr, right.indptr) and np.array_equal(left.indices, right.indices)
    diff = float(np.max(np.abs(left.data - right.data), initial=0.0)) if sets else float("inf")
    return sets, diff


def prediction_diff(left: tuple[float | None, ...], right: tuple[float | None, ...]) -> tuple[bool, float]:
    """Whether two prediction lists are identical (None where None), and the largest difference."""
    if [p is None for p in left] != [p is None for p in right]:
        return False, float("inf")
    diffs = [abs(x - y) for x, y in zip(left, right, strict=True) if x is not None and y is not None]
    worst = max(diffs, default=0.0)
    return worst == 0.0, worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--train", type=int, default=100_000)
    parser.add_argument("--candidates", type=int, default=10_000)
    parser.add_argument("--check", type=int, default=200, help="candidates checked against all pairs")
    parser.add_argument("--smoothing", action="append", choices=["none", "add-one"])
    args = parser.parse_args()
    smoothings = args.smoothing or ["none", "add-one"]

    from assay.metrics.bleu_neighbors import estimate
    from assay.metrics.neighbors_index import AllPairsBleuStar, BleuStarIndex

    start = time.perf_counter()
    sentences, n_files = load_sentences(args.data)
    random.Random(0).shuffle(sentences)
    if len(sentences) < args.train + args.candidates:
        raise SystemExit(f"only {len(sentences)} unique sentences in {args.data}")
    train = [s.split() for s in sentences[: args.train]]
    candidates = [s.split() for s in sentences[args.train : args.train + args.candidates]]
    quality = np.random.default_rng(0).random(len(train))
    sample = np.sort(np.random.default_rng(1).choice(len(candidates), size=args.check, replace=False))
    out: dict[str, Any] = {
        "files": n_files,
        "unique_sentences": len(sentences),
        "train": len(train),
        "candidates": len(candidates),
        "tokens": {"train": int(sum(map(len, train))), "candidates": int(sum(map(len, candidates)))},
        "tau": TAU,
        "a": A,
        "b": B,
        "load_seconds": round(time.perf_counter() - start, 2),
    }

    start = time.perf_counter()
    index = BleuStarIndex(train)
    out["build_index_seconds"] = round(time.perf_counter() - start, 2)
    start = time.perf_counter()
    reference = AllPairsBleuStar(train)
    out["check_build_all_pairs_seconds"] = round(time.perf_counter() - start, 2)
    check_candidates = [candidates[i] for i in sample]

    for smoothing in smoothings:
        start = time.perf_counter()
        neighbors = index.neighbors(candidates, TAU, smoothing=smoothing)
        query_s = time.perf_counter() - start
        start = time.perf_counter()
        predictions, counts = estimate(neighbors, quality, len(train), A, B)
        predict_s = time.perf_counter() - start

        start = time.perf_counter()
        exact = reference.neighbors(check_candidates, TAU, smoothing=smoothing)
        exact_predictions, _ = estimate(exact, quality, len(train), A, B)
        sets_ok, score_diff = same_neighbors(neighbors[sample], exact)
        preds_ok, pred_diff = prediction_diff(tuple(predictions[i] for i in sample), exact_predictions)
        defined = sum(p is not None for p in predictions)
        out[smoothing] = {
            "query_seconds": round(query_s, 2),
            "predict_seconds": round(predict_s, 2),
            "build_plus_query_seconds": round(out["build_index_seconds"] + query_s + predict_s, 2),
            "pairs_above_tau": int(neighbors.nnz),
            "neighbors_per_candidate": {
                "mean": round(float(counts.mean()), 1),
                "median": float(np.median(counts)),
                "max": int(counts.max()),
            },
            "coverage": round(defined / len(candidates), 4),
            "undefined": len(candidates) - defined,
            "check": {
                "candidates": len(sample),
                "identical": bool(sets_ok and score_diff == 0.0 and preds_ok),
                "neighbor_sets_identical": bool(sets_ok),
                "max_abs_diff_scores": score_diff,
                "max_abs_diff_predictions": pred_diff,
                "pairs_checked": len(sample) * len(train),
                "all_pairs_seconds": round(time.perf_counter() - start, 2),
            },
        }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
