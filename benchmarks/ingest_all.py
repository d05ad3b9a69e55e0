"""Ingest every shared dataset into a fresh ASSAY_HOME, then ingest them again.

Prints one JSON object: seconds per dataset and in total for the first ingest (target: < 60 s
in total on the 2-core development machine), and for the second ingest, which must be a no-op
(same versions, nothing created).

    .venv/bin/python benchmarks/ingest_all.py [--data ../shared/data]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    args = parser.parse_args()

    with fresh_home() as catalog_s:  # the catalog is created first and counted separately
        from assay.jobs.ingest import discover, ingest_versions

        paths = discover(args.data)
        first: dict[str, dict[str, object]] = {}
        start = time.perf_counter()
        for path in paths:
            t = time.perf_counter()
            results = ingest_versions(path)  # a source may hold several versions (MTME: one per pair)
            first[path.name] = {
                "datasets": [r.label for r in results],
                "seconds": round(time.perf_counter() - t, 3),
                "created": all(r.created for r in results),
                "rows": {r.label: r.row_counts for r in results},
                "warnings": sum(len(r.warnings) for r in results),
            }
        first_total = time.perf_counter() - start

        second: dict[str, dict[str, object]] = {}
        start = time.perf_counter()
        for path in paths:
            t = time.perf_counter()
            results = ingest_versions(path)
            second[path.name] = {"datasets": [r.label for r in results], "seconds": round(time.perf_counter() - t, 3),
                                 "created": any(r.created for r in results)}
        second_total = time.perf_counter() - start

    noop = all(not entry["created"] for entry in second.values()) and all(
        second[k]["datasets"] == first[k]["datasets"] for k in first
    )
    print(json.dumps({
        "benchmark": "ingest_all",
        "data": str(args.data),
        "datasets": len(paths),
        "catalog_create_s": round(catalog_s, 3),
        "first_ingest_total_s": round(first_total, 3),
        "first_ingest": first,
        "target_total_s": 60,
        "meets_target": first_total < 60,
        "reingest_total_s": round(second_total, 3),
        "reingest": second,
        "reingest_is_noop": noop,
        "cpu_count": os.cpu_count(),
    }, indent=2))
    return 0 if noop else 1


if __name__ == "__main__":
    sys.exit(main())
