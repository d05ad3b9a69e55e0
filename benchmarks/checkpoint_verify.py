"""Verifying a checkpoint folder against its registered digest, with and without this host's stamp.

Every process that scores a registered checkpoint checks that its folder still has the registered
digest (:func:`assay.workers.checkpoint.verified_digest`, called by ``BleurtScorer``): on a GPU
pool that is once per suite dataset. The folder is the embedded all-MiniLM-L6-v2 with a linear head
(:func:`assay.workers.checkpoint.create_from_encoder`, about 91 MB), written into a temporary
``ASSAY_HOME`` with its files dated an hour back (a settled folder). Timed, the fastest of
``--repeats``:

* ``full_hash_s``: :func:`assay.workers.checkpoint.checkpoint_digest`, every byte read and hashed
  (from the page cache: the files were just written; from a network file system it is slower);
* ``verify_first_s``: the first verification on this host: a full hash, then the stamp written;
* ``verify_stamped_s``: every later one, in this process or the next: the files' stat compared with
  the stamp (:mod:`assay.checkpoints.stamps`), nothing hashed;
* ``verify_stamped_next_process_s``: the same, timed in a fresh Python process (its imports excluded).

    .venv/bin/python benchmarks/checkpoint_verify.py
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _fastest(repeats: int, call: Callable[[], Any]) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


_NEXT_PROCESS = """
import sys, time
from assay.workers.checkpoint import verified_digest
start = time.perf_counter()
verified_digest(sys.argv[1], sys.argv[2])
print(time.perf_counter() - start)
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="assay-checkpoint-verify-") as tmp:
        os.environ["ASSAY_HOME"] = str(Path(tmp) / "home")
        from assay.checkpoints.stamps import stamp_file
        from assay.config import load_settings
        from assay.workers.checkpoint import checkpoint_digest, create_from_encoder, verified_digest

        folder = create_from_encoder(None, Path(tmp) / "minilm", seed=0)
        hour_ago = time.time() - 3600
        for path in [*folder.iterdir(), folder]:
            os.utime(path, (hour_ago, hour_ago))
        size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
        digest = checkpoint_digest(folder)
        full = _fastest(args.repeats, lambda: checkpoint_digest(folder))

        stamp = stamp_file(load_settings(), folder)

        def first() -> None:
            stamp.unlink(missing_ok=True)
            verified_digest(folder, digest)

        verify_first = _fastest(args.repeats, first)
        stamped = _fastest(args.repeats, lambda: verified_digest(folder, digest))
        out = subprocess.run([sys.executable, "-c", _NEXT_PROCESS, str(folder), digest], check=True,
                             capture_output=True, text=True, env=os.environ.copy())
        print(json.dumps({
            "folder_mb": round(size / 1e6, 1),
            "full_hash_s": round(full, 4),
            "verify_first_s": round(verify_first, 4),
            "verify_stamped_s": round(stamped, 6),
            "verify_stamped_next_process_s": round(float(out.stdout.strip()), 6),
            "stamp": str(stamp.relative_to(load_settings().home)),
        }, indent=1))


if __name__ == "__main__":
    main()
