"""Atomic writes: a file or folder appears complete under its final name, or not at all.

Every writer of the stores goes through here: the content is written under a temporary name in
the destination's own folder (so the rename never crosses a filesystem) and renamed into place
with ``os.replace``, which POSIX makes atomic. A reader, or a second worker writing the same store,
never sees a partial file; a crash leaves only a ``.tmp-`` name, which no reader globs.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa


@contextmanager
def atomic_path(target: Path, *, replace: bool = True) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success it is renamed to ``target``.

    Works for a file or a folder written at the yielded path. With ``replace=False`` an existing
    ``target`` is kept, the temporary one discarded and ``FileExistsError`` raised (first writer
    wins: content-addressed folders, where both copies are identical by construction).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".tmp-{uuid.uuid4().hex[:12]}-{target.name}"
    try:
        yield tmp
        if not replace and target.exists():
            raise FileExistsError(target)
        if tmp.is_dir() and target.is_dir():
            # os.replace cannot replace a non-empty folder: move the old one aside first
            old = target.parent / f".old-{uuid.uuid4().hex[:12]}-{target.name}"
            os.replace(target, old)
            os.replace(tmp, target)
            _remove(old)
        else:
            os.replace(tmp, target)
    except BaseException:
        _remove(tmp)
        raise


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def write_parquet(table: pa.Table, target: Path, *, schema: pa.Schema | None = None,
                  compression: str = "zstd") -> Path:
    """Write ``table`` (cast to ``schema`` when given) to ``target`` atomically; returns ``target``."""
    import pyarrow.parquet as pq

    with atomic_path(target) as tmp:
        pq.write_table(table.cast(schema) if schema is not None else table, tmp, compression=compression)
    return target


def write_text(text: str, target: Path) -> Path:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return target


def write_bytes(data: bytes, target: Path) -> Path:
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)
    return target


def unique_part_name(run_id: str, part: int | None = None) -> str:
    """``part-<run>[-<n>]-<uuid8>.parquet``: unique, so concurrent writers never collide."""
    middle = "" if part is None else f"-{part:05d}"
    return f"part-{run_id}{middle}-{uuid.uuid4().hex[:8]}.parquet"
