"""Making BLEURT's synthetic pre-training pairs (Sellam et al., 2020, §4): a spec in, a table out.

1. **Corpus.** The English sentences of the spec's sources (:mod:`assay.synthetic.corpus`).
2. **References.** The base perturbations' shares of ``n_pairs`` are rounded by largest
   remainder. Each base perturbation draws its references ``z`` from the sentences of the spec's
   ``kinds`` it can start from (system outputs: references with outputs), in a seeded random
   order, every sentence once before any is drawn again (BLEURT makes several perturbations of
   each of its 1.8M sentences: 6.5M pairs, §4.1).
3. **Candidates.** Each base perturbation makes ``z̃`` from its references, in chunks of
   :data:`CHUNK` pairs, each chunk with its own random stream; then each modifier (word dropping)
   is applied to a seeded random ``share`` of all pairs, on top of their candidate. The
   ``perturbation`` column names the chain (``mask_filling+word_dropping``).
4. **Signals.** Every signal labels every pair (§4.2), in chunks of pairs grouped by reference,
   so a model embeds each reference about once. A signal that cannot be computed for a pair
   leaves NaN.

Every random draw comes from ``numpy.random.SeedSequence(seed, spawn_key=...)`` with a fixed key
per step (draw of references, each perturbation's chunk, each modifier's selection and chunk, the
final order), so the same spec on the same data gives the same table, whatever else changes.

The table: ``pair_id`` (row number, zero-padded), ``item_id`` (the reference sentence's id,
:func:`assay.synthetic.corpus.sentence_id`: every pair made from one sentence shares it, so
training can split by item), ``reference``, ``candidate``, ``perturbation`` and one float64
column per signal component, ``signal_<key>[_<component>]``. Its schema metadata (key
``assay.synthetic``) holds the description of the pairs: spec, sources with digests, perturbation
and signal signatures, the signals' columns, kinds and weights γ, and the corpus counts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from assay.config import Settings, load_settings
from assay.errors import PluginError, UsageError
from assay.synthetic.base import PairBatch, Perturbation, Signal
from assay.synthetic.corpus import Corpus, build_corpus, sentence_id
from assay.synthetic.registry import create_perturbation, create_signal
from assay.synthetic.spec import PerturbationSpec, SignalSpec, SynthesisSpec

#: pairs per perturbation call (each chunk draws from its own random stream)
CHUNK = 1000
#: pairs per signal call
SIGNAL_CHUNK = 4096
#: the schema-metadata key that describes a pairs table
METADATA_KEY = b"assay.synthetic"
TEXT_COLUMNS = ("pair_id", "item_id", "reference", "candidate", "perturbation")


@dataclass(frozen=True)
class Progress:
    """What a progress callback is told: the stage (``perturb`` or ``signals``) and how many of
    the ``total`` pairs it has done."""

    stage: str
    done: int
    total: int


ProgressCallback = Callable[[Progress], None]


@dataclass(frozen=True)
class SignalTask:
    """One pre-training task of a pairs table, as training reads it (§4.3, eq. 1).

    ``key``: the task (the signal's name or alias); ``columns``: its target columns; ``kind``:
    ``regression`` (ℓ2 loss, ``ℓ_k = ||τ_k - τ̂_k||² / |τ_k|``) or ``classification`` (cross-entropy
    over ``classes``; the one column holds the class index, NaN when missing); ``weight``: γ_k.
    """

    key: str
    signal: str
    columns: tuple[str, ...]
    kind: str
    classes: tuple[str, ...]
    weight: float
    signature: str

    @property
    def n_classes(self) -> int:
        return len(self.classes) if self.kind == "classification" else 1

    def objectives(self) -> list[dict[str, Any]]:
        """The training objectives of this task, as keyword arguments of the training layer's
        ``Objective`` (``name``, ``column``, ``kind``, ``n_classes``, ``weight``), summing to eq. 1's
        ``γ_k ℓ_k``: a regression task's squared error is averaged over its ``|τ_k|`` columns, so
        each column is an objective of weight ``γ_k / |τ_k|``; a classification task is one
        objective over its class-index column (or its class-probability columns)."""
        if self.kind == "classification":
            column: str | tuple[str, ...] = self.columns[0] if len(self.columns) == 1 else self.columns
            return [{"name": self.key, "column": column, "kind": self.kind, "n_classes": self.n_classes,
                     "weight": self.weight}]
        share = self.weight / len(self.columns)
        return [{"name": c.removeprefix("signal_"), "column": c, "kind": self.kind, "n_classes": 1, "weight": share}
                for c in self.columns]

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "columns": list(self.columns), "classes": list(self.classes)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SignalTask:
        return cls(str(data["key"]), str(data["signal"]), tuple(data["columns"]), str(data["kind"]),
                   tuple(data.get("classes") or ()), float(data["weight"]), str(data["signature"]))


@dataclass
class Plugins:
    """The spec's perturbations and signals, instantiated (parameters checked)."""

    base: list[tuple[PerturbationSpec, Perturbation]]
    modifiers: list[tuple[PerturbationSpec, Perturbation]]
    signals: list[tuple[SignalSpec, Signal]]

    def tasks(self) -> list[SignalTask]:
        return [SignalTask(s.key, s.name, signal.columns(s.key), signal.kind, tuple(signal.classes),
                           float(s.weight), signal.signature()) for s, signal in self.signals]

    def description(self) -> dict[str, Any]:
        return {
            "perturbations": [{"name": s.name, "share": s.share, "role": p.role, "family": p.family,
                               "signature": p.signature()} for s, p in (*self.base, *self.modifiers)],
            "signals": [t.as_dict() for t in self.tasks()],
        }


def load_plugins(spec: SynthesisSpec) -> Plugins:
    """Instantiate the spec's plugins and check the shares against their roles."""
    spec.validate()
    base: list[tuple[PerturbationSpec, Perturbation]] = []
    modifiers: list[tuple[PerturbationSpec, Perturbation]] = []
    for p in spec.perturbations:
        plugin = create_perturbation(p.name, **dict(p.params))
        (base if plugin.role == "base" else modifiers).append((p, plugin))
    if not base:
        raise UsageError("spec: no base perturbation (e.g. mask_filling, system_outputs, backtranslation); "
                         f"{', '.join(p.name for p, _ in modifiers)} only modify another's candidates")
    total = sum(p.share for p, _ in base)
    if abs(total - 1.0) > 1e-6:
        listed = ", ".join(f"{p.name}={p.share:g}" for p, _ in base)
        raise UsageError(f"spec: the shares of the base perturbations ({listed}) sum to {total:g}; they must sum to 1")
    signals = [(s, create_signal(s.name, **dict(s.params))) for s in spec.signals]
    return Plugins(base, modifiers, signals)


def split_counts(n: int, shares: Sequence[float]) -> list[int]:
    """``n`` split by ``shares`` (summing to 1) with largest-remainder rounding (ties: first)."""
    exact = np.asarray(shares, dtype=np.float64) * n
    counts = np.floor(exact).astype(np.int64)
    order = np.argsort(-(exact - counts), kind="stable")
    counts[order[: n - int(counts.sum())]] += 1
    return [int(c) for c in counts]


def _draw(pool: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` indices from ``pool``: seeded permutations of it, one after another."""
    rounds = -(-n // pool.size)
    return np.concatenate([rng.permutation(pool) for _ in range(rounds)])[:n]


def _rng(seed: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def _call(plugin: Perturbation, sentences: list[str], rng: np.random.Generator) -> list[str]:
    out = plugin.perturb(sentences, rng)
    if len(out) != len(sentences) or not all(isinstance(c, str) for c in out):
        raise PluginError(f"perturbation {plugin.name!r} returned {len(out)} candidates for {len(sentences)} "
                          "sentences (expected one string each)")
    return list(out)


def make_pairs(spec: SynthesisSpec, corpus: Corpus, plugins: Plugins,
               progress: ProgressCallback | None = None) -> tuple[np.ndarray, list[str], list[str], list[str]]:
    """(reference indices, candidates, perturbation chains, base families), in the table's order."""
    n = spec.n_pairs
    pool = corpus.indices(spec.kinds)
    for _, plugin in (*plugins.base, *plugins.modifiers):
        plugin.prepare(corpus)
    counts = split_counts(n, [p.share for p, _ in plugins.base])
    draw = _rng(spec.seed, 0)
    refs: list[np.ndarray] = []
    cands: list[str] = []
    chains: list[str] = []
    families: list[str] = []
    for k, ((p, plugin), n_k) in enumerate(zip(plugins.base, counts, strict=True)):
        if n_k == 0:
            continue
        eligible = plugin.eligible(corpus, pool)
        if eligible.size == 0:
            raise UsageError(f"perturbation {p.name!r}: no sentence of the corpus (kinds {', '.join(spec.kinds)}) "
                             "can be perturbed by it; check the sources (system_outputs needs to-English outputs)")
        chosen = _draw(eligible, n_k, draw)
        refs.append(chosen)
        for c, start in enumerate(range(0, n_k, CHUNK)):
            part = chosen[start:start + CHUNK]
            cands += _call(plugin, [corpus.sentences[int(i)] for i in part], _rng(spec.seed, 1, k, c))
            if progress is not None:
                progress(Progress("perturb", len(cands), n))
        chains += [p.name] * n_k
        families += [plugin.family] * n_k
    for m, (p, plugin) in enumerate(plugins.modifiers):
        chosen = np.sort(_rng(spec.seed, 2, m).choice(n, round(p.share * n), replace=False))
        for c, start in enumerate(range(0, chosen.size, CHUNK)):
            part = chosen[start:start + CHUNK]
            out = _call(plugin, [cands[int(i)] for i in part], _rng(spec.seed, 3, m, c))
            for i, cand in zip(part.tolist(), out, strict=True):
                cands[i] = cand
                chains[i] += "+" + p.name
    order = _rng(spec.seed, 4).permutation(n)
    ref_index = np.concatenate(refs)[order]
    return (ref_index, [cands[int(i)] for i in order], [chains[int(i)] for i in order],
            [families[int(i)] for i in order])


def label_pairs(references: Sequence[str], candidates: Sequence[str], families: Sequence[str],
                plugins: Plugins, progress: ProgressCallback | None = None,
                group: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Every signal column for the pairs, computed in chunks of pairs sorted by ``group`` (the
    reference's index: pairs of one reference land in one chunk)."""
    n = len(references)
    columns = {c: np.full(n, np.nan) for s, signal in plugins.signals for c in signal.columns(s.key)}
    order = np.argsort(group, kind="stable") if group is not None else np.arange(n)
    for start in range(0, n, SIGNAL_CHUNK):
        rows = order[start:start + SIGNAL_CHUNK]
        batch = PairBatch([references[i] for i in rows], [candidates[i] for i in rows], [families[i] for i in rows])
        for s, signal in plugins.signals:
            out = signal.checked(batch)
            for column, part in zip(signal.columns(s.key), signal.components or ("",), strict=True):
                columns[column][rows] = out[part]
        if progress is not None:
            progress(Progress("signals", min(start + SIGNAL_CHUNK, n), n))
    return columns


def synthesize(spec: SynthesisSpec, *, settings: Settings | None = None,
               progress: ProgressCallback | None = None, plugins: Plugins | None = None) -> pa.Table:
    """The pairs table of ``spec`` (see the module docstring); nothing is stored. ``plugins``:
    the spec's plugins already made by :func:`load_plugins` (e.g. to time them)."""
    settings = settings or load_settings()
    plugins = plugins or load_plugins(spec)
    corpus = build_corpus(spec.sources, exclude=spec.exclude, min_tokens=spec.min_tokens,
                          max_tokens=spec.max_tokens, settings=settings)
    ref_index, candidates, chains, families = make_pairs(spec, corpus, plugins, progress)
    references = [corpus.sentences[int(i)] for i in ref_index]
    signals = label_pairs(references, candidates, families, plugins, progress, group=ref_index)
    width = len(str(max(spec.n_pairs - 1, 0)))
    ids = {int(i): sentence_id(corpus.sentences[int(i)]) for i in np.unique(ref_index)}
    columns: dict[str, pa.Array] = {
        "pair_id": pa.array([f"{i:0{width}d}" for i in range(spec.n_pairs)], pa.string()),
        "item_id": pa.array([ids[int(i)] for i in ref_index], pa.string()),
        "reference": pa.array(references, pa.string()),
        "candidate": pa.array(candidates, pa.string()),
        "perturbation": pa.array(chains, pa.string()),
        **{name: pa.array(values, pa.float64()) for name, values in signals.items()},
    }
    description = {"kind": "synthetic", "spec": spec.as_dict(), "seed": spec.seed, **corpus.provenance(),
                   **plugins.description(),
                   "counts": _counts(spec, corpus, chains, ref_index), "chunk": CHUNK}
    table = pa.table(columns)
    return table.replace_schema_metadata({METADATA_KEY: json.dumps(description, sort_keys=True).encode()})


def _counts(spec: SynthesisSpec, corpus: Corpus, chains: Sequence[str], ref_index: np.ndarray) -> dict[str, Any]:
    by_chain: dict[str, int] = {}
    for chain in chains:
        by_chain[chain] = by_chain.get(chain, 0) + 1
    return {"pairs": spec.n_pairs, "items": int(np.unique(ref_index).size), "by_perturbation": dict(sorted(
        by_chain.items())), "corpus": corpus.counts}


def description_of(table: pa.Table) -> dict[str, Any]:
    """The description a pairs table carries in its schema metadata."""
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        raise UsageError("this table is not a synthetic pairs table (no assay.synthetic schema metadata)")
    return dict(json.loads(raw))
