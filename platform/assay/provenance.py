"""Code version and content digests: what every stored number is traced back to."""

from __future__ import annotations

import hashlib
import json
import subprocess
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import assay

if TYPE_CHECKING:
    import pyarrow as pa

SHORT_DIGEST_CHARS = 12
"""Hex digits of a sha256 shown wherever a digest is shortened (48 bits: collisions are not a
practical concern among one team's checkpoints, versions and models)."""


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
    import pyarrow as pa  # here: code_version and short are imported where pyarrow is not needed

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


CANONICAL_SEPARATORS = (",", ":")
"""Canonical JSON has no spaces."""


def canonical_json(value: Any, *, separators: tuple[str, str] = CANONICAL_SEPARATORS) -> str:
    """``value`` as canonical JSON: keys sorted, no spaces, ASCII only (every other character
    escaped), so equal values always give the same text on any machine. ``separators`` exists for
    one identity written before this function: a sweep's search-space digest, computed with
    ``json``'s default separators (``", "``, ``": "``), kept so that stored studies keep theirs
    (:attr:`assay.sweeps.space.SearchSpace.digest`)."""
    return json.dumps(value, sort_keys=True, separators=separators, ensure_ascii=True)


def json_digest(value: Any, *, separators: tuple[str, str] = CANONICAL_SEPARATORS) -> str:
    """sha256 hex (64 digits) of ``value`` as :func:`canonical_json`: the identity of a definition
    (a suite, a robustness experiment or training, a sweep's search space)."""
    return hashlib.sha256(canonical_json(value, separators=separators).encode("ascii")).hexdigest()


def short(digest: str) -> str:
    """The first :data:`SHORT_DIGEST_CHARS` hex digits of ``digest``: how a digest is shown to people
    and in metric signatures (a checkpoint's ``checkpoint:`` field, a model's ``name@digest``). The
    one place a digest is shortened."""
    return digest[:SHORT_DIGEST_CHARS]
