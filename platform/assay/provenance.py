"""Code version and content digests: what every stored number is traced back to."""

from __future__ import annotations

import hashlib
import subprocess
from functools import cache
from pathlib import Path

import pyarrow as pa

import assay


@cache
def code_version() -> str:
    """``assay <version>`` plus the git commit when running from a checkout (``+dirty`` if edited)."""
    version = f"assay-{assay.__version__}"
    root = Path(assay.__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return version
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return version
    return f"{version}+g{commit}" + (".dirty" if dirty else "")


def table_digest(tables: dict[str, pa.Table]) -> str:
    """sha256 over the canonical content of ``tables``: table names, schemas and every value.

    Each table is hashed as one Arrow IPC stream of a single record batch. The IPC format is
    Arrow's stable, versioned wire format, and combining chunks first makes the bytes independent
    of how the table was chunked while it was built: identical content, identical digest.
    """
    digest = hashlib.sha256()
    for name in sorted(tables):
        table = tables[name].combine_chunks()
        digest.update(f"table:{name}:{table.num_rows}\n".encode())
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            for batch in table.to_batches(max_chunksize=max(table.num_rows, 1)):
                writer.write_batch(batch)
        digest.update(memoryview(sink.getvalue()))
    return digest.hexdigest()


def short(digest: str) -> str:
    return digest[:12]
