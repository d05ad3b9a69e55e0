"""Ingest mt-metrics-eval's WMT23 folder (en-de, with its ~70 official metric variants) into a fresh
ASSAY_HOME, then ingest it again.

Prints one JSON object: seconds for the first ingest (parse, store the version, write the official
segment scores; target <= 15 s on the 2-core development machine) and for the second, which must be a
no-op (the same version, nothing parsed or written; target <= 1.5 s).

    .venv/bin/python benchmarks/mtme_ingest.py [--data ../shared/data/mtme-wmt23/wmt23]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from fresh_home import fresh_home

REPO = Path(__file__).resolve().parent.parent
FIRST_TARGET_S = 15.0
NOOP_TARGET_S = 1.5


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "mtme-wmt23" / "wmt23")
    args = parser.parse_args()

    with fresh_home() as catalog_s:  # the catalog is created first and counted separately
        from assay.config import load_settings
        from assay.jobs.ingest import ingest_versions
        from assay.results.segment_scores import row_count

        start = time.perf_counter()
        first = ingest_versions(args.data)
        first_s = time.perf_counter() - start
        stored_rows = row_count(load_settings())

        start = time.perf_counter()
        second = ingest_versions(args.data)
        second_s = time.perf_counter() - start

    noop = [r.label for r in second] == [r.label for r in first] and not any(r.created or r.parsed for r in second)
    print(json.dumps({
        "benchmark": "mtme_ingest",
        "data": str(args.data),
        "catalog_create_s": round(catalog_s, 3),
        "versions": [r.label for r in first],
        "rows": {r.label: r.row_counts for r in first},
        "external_scores": {r.label: r.external_scores for r in first},
        "segment_score_rows_stored": stored_rows,
        "first_ingest_s": round(first_s, 3),
        "first_target_s": FIRST_TARGET_S,
        "reingest_s": round(second_s, 3),
        "reingest_target_s": NOOP_TARGET_S,
        "reingest_is_noop": noop,
        "meets_targets": first_s <= FIRST_TARGET_S and second_s <= NOOP_TARGET_S,
        "cpu_count": os.cpu_count(),
    }, indent=2))
    return 0 if noop else 1


if __name__ == "__main__":
    sys.exit(main())
