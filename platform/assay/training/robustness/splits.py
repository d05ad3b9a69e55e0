"""WebNLG's train/test splits (BLEURT, Sellam et al. 2020, §5.3).

"The data has no natural split between train and test ... We allocate 0% to about 50% of the data
to training, and we split on both the evaluated systems or the RDF inputs". :func:`draw_splits`
splits a dataset version's units (systems, or inputs: the items) by a seeded permutation; the
first ``round(share · n)`` units are the *train* side, the rest the *test* side. One permutation
serves every share, so the train sides are nested (a larger share adds units, never swaps them)
and differences between shares are not blurred by resampling. Each side is stored as a derived
dataset version.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from assay.config import Settings
from assay.datasets.human import human_array
from assay.datasets.names import VersionedRecord, VersionRef
from assay.errors import UsageError
from assay.jobs.ingest import derive_version
from assay.provenance import json_digest
from assay.training.robustness.experiment import dataset_of
from assay.training.robustness.options import check_points

SPLIT_BY = ("system", "input")
SIDES = ("train", "test")
SPLIT_KIND = "webnlg-split"


@dataclass(frozen=True)
class SplitSample(VersionedRecord):
    """One stored side of a split: a derived dataset version."""

    by: str
    share: float
    side: str
    version: VersionRef
    created: bool
    rows: int
    units: int
    """units (systems or inputs) on this side"""
    n_units: int
    share_actual: float
    """train units / all units (``round(share · n)`` of ``n``)"""


def split_name(dataset: str, by: str, share: float, side: str) -> str:
    """``webnlg2017`` + system + 0.2 + train -> ``webnlg2017-split-system-s0.2-train``."""
    return f"{dataset}-split-{by}-s{float(share):g}-{side}"


def unit_column(by: str) -> str:
    if by not in SPLIT_BY:
        raise UsageError(f"--by {by!r}: expected one of {', '.join(SPLIT_BY)}")
    return "system" if by == "system" else "item_id"


def n_train_units(n_units: int, share: float) -> int:
    """``round(share · n)``, halves rounded up (0.5 of 9 systems is 5; the tolerance keeps a
    product such as 0.3 · 5 = 1.4999999999999998 from rounding otherwise than 1.5)."""
    return math.floor(share * n_units + 0.5 + 1e-9)


def unit_order(units: Iterable[str], seed: int) -> list[str]:
    """The distinct units in a seeded random order; the train side of every share is a prefix."""
    ordered = sorted(set(units))
    permutation = np.random.default_rng(np.random.SeedSequence(seed)).permutation(len(ordered))
    return [ordered[i] for i in permutation]


def split_pool(segments: pa.Table, include_human: bool) -> pa.Table:
    """The segments a split draws from: rated, and (unless ``include_human``) written by a system.
    The paper evaluates "9 systems over 223 inputs" (§5.3): WebNLG's human-written texts (the
    ``webnlg`` team) are references, not outputs to be rated against them."""
    keep = np.isfinite(human_array(segments))
    if not include_human:
        keep &= ~np.asarray(segments.column("is_human").to_pylist(), dtype=bool)
    return segments.filter(pa.array(keep))


def check_splits(label: str, pool: pa.Table, by: Sequence[str], shares: Sequence[float]) -> None:
    """Every share leaves units on the test side, and a share > 0 puts at least one on the train side."""
    if pool.num_rows == 0:
        raise UsageError(f"{label} has no rated system outputs to split")
    for b in by:
        n = len(set(pool.column(unit_column(b)).to_pylist()))
        for share in shares:
            k = n_train_units(n, share)
            if share > 0 and k == 0:
                raise UsageError(f"--shares {share:g} gives no {b} of {label}'s {n} to training; use a larger share")
            if k >= n:
                raise UsageError(f"--shares {share:g} gives every {b} of {label} ({n}) to training and none to test")


def draw_splits(dataset: str, *, by: str, shares: Sequence[float], seed: int, include_human: bool = False,
                settings: Settings) -> list[SplitSample]:
    """Derive and store the train and test sides of every share (split by ``by``), §5.3.

    Derivation: ``{"kind": "webnlg-split", "by", "share", "seed", "side", "include_human",
    "n_units", "train_units", "share_actual", "units_digest"}`` (``units_digest``: sha256 of the
    sorted train units; ``train_systems`` lists them when splitting by system). The same
    ``(version, by, seed, include_human)`` always gives the same sides; at share 0 only the test
    side (everything) is stored. Every aspect is kept: each is trained and evaluated separately.
    """
    column = unit_column(by)
    version, segments = dataset_of(settings, dataset)
    pool = split_pool(segments, include_human)
    shares = check_points(shares, "--shares", low=0.0, high=1.0)
    check_splits(version.label, pool, [by], shares)
    order = unit_order(pool.column(column).to_pylist(), seed)
    out = []
    for share in shares:
        k = n_train_units(len(order), share)
        train_units = sorted(order[:k])
        is_train = pc.is_in(pool.column(column), pa.array(train_units, pa.string()))
        derivation = {"kind": SPLIT_KIND, "by": by, "share": share, "seed": seed, "include_human": include_human,
                      "n_units": len(order), "train_units": k, "share_actual": k / len(order),
                      "units_digest": json_digest(train_units)}
        if by == "system":
            derivation["train_systems"] = train_units
        for side in SIDES:
            if side == "train" and k == 0:
                continue
            mask = is_train if side == "train" else pc.invert(is_train)
            table = pool.filter(mask)
            result = derive_version(version.label, split_name(version.name, by, share, side), {"segments": table},
                                    {**derivation, "side": side}, settings=settings)
            out.append(SplitSample(by=by, share=share, side=side, version=result.version, created=result.created,
                                   rows=table.num_rows,
                                   units=k if side == "train" else len(order) - k, n_units=len(order),
                                   share_actual=k / len(order)))
    return out

