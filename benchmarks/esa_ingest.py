"""Ingest WMT24's ESA judgments (wave 2: en-cs, en-hi, en-ja, en-zh) into a fresh ASSAY_HOME, then again.

Prints one JSON object: seconds for the first ingest (target: <= 10 s on the 2-core development
machine; parsing 20,434 Appraise rows and the texts they point into, and writing the version), the
parse alone, and the second ingest, which must be a no-op (the same version, nothing created).

    .venv/bin/python benchmarks/esa_ingest.py [--data ../shared/data/esa-wmt24]
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
TARGET_S = 10.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "esa-wmt24")
    args = parser.parse_args()

    with fresh_home() as catalog_s:  # the catalog is created first and counted separately
        from assay.datasets import formats
        from assay.jobs.ingest import ingest_path

        t0 = time.perf_counter()
        parsed = formats.parse(args.data, "esa")
        parse_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        first = ingest_path(args.data)
        first_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        second = ingest_path(args.data)
        second_s = time.perf_counter() - t0

    noop = not second.created and second.version == first.version
    print(json.dumps({
        "benchmark": "esa_ingest",
        "data": str(args.data),
        "dataset": first.label,
        "format": first.format,
        "rows_read": parsed.metadata["rows_read"],
        "row_counts": first.row_counts,
        "warnings": len(first.warnings),
        "catalog_create_s": round(catalog_s, 3),
        "parse_s": round(parse_s, 3),
        "first_ingest_s": round(first_s, 3),
        "target_s": TARGET_S,
        "meets_target": first_s <= TARGET_S,
        "reingest_s": round(second_s, 3),
        "reingest_is_noop": noop,
        "cpu_count": os.cpu_count(),
    }, indent=2))
    return 0 if noop and first.created else 1


if __name__ == "__main__":
    sys.exit(main())
