"""Synthesis end to end on the real WMT16 + WMT18 data (WMT17 excluded): the pairs table, its
determinism, storing it as a dataset version (lineage, no-op, nothing written on failure), and what
training reads back (γ weights and signal columns)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sacrebleu
from sqlalchemy import select

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.catalog.models import Run
from assay.config import load_settings
from assay.errors import NotFoundError, UsageError
from assay.jobs.runs import inputs_version
from assay.synthetic import (
    PerturbationSpec,
    Progress,
    SignalSpec,
    SynthesisSpec,
    description_of,
    load_pairs,
    sentence_id,
    signal_tasks,
    signal_weights,
    store_pairs,
    store_synthetic,
)
from assay.synthetic.corpus import build_corpus, excluded_texts
from assay.synthetic.synthesize import load_plugins, make_pairs

N = 240


def _spec(**change: object) -> SynthesisSpec:
    spec = SynthesisSpec(
        sources=("wmt16", "wmt18"), exclude=("wmt17",), n_pairs=N, seed=7,
        perturbations=(PerturbationSpec("mask_filling", 0.5), PerturbationSpec("system_outputs", 0.5),
                       PerturbationSpec("word_dropping", 0.3)),
        signals=(SignalSpec("bleu", weight=2.0), SignalSpec("rouge", weight=0.5), SignalSpec("chrf", weight=0.0),
                 SignalSpec("backtrans_flag", weight=1.0)),
    )
    return dataclasses.replace(spec, **change)


def test_store_load_and_lineage(wmt_home: Path) -> None:
    settings = load_settings()
    seen: list[Progress] = []
    spec = _spec()
    version = store_synthetic(spec, progress=seen.append)
    assert version.created and version.label == "synth-wmt16-wmt18@1" and version.rows == N
    pairs = load_pairs(settings, version.label)
    assert pairs.column_names == ["pair_id", "item_id", "reference", "candidate", "perturbation", "signal_bleu",
                                  "signal_rouge_p", "signal_rouge_r", "signal_rouge_f", "signal_chrf",
                                  "signal_backtrans_flag"]
    rows = pairs.to_pylist()
    # the table: ids, shares, chains, flags
    assert [r["pair_id"] for r in rows] == [f"{i:03d}" for i in range(N)]
    assert all(r["item_id"] == sentence_id(r["reference"]) for r in rows)
    chains = [r["perturbation"] for r in rows]
    assert sum(c.startswith("mask_filling") for c in chains) == N // 2
    assert sum(c.endswith("+word_dropping") for c in chains) == round(0.3 * N)
    assert set(chains) == {"mask_filling", "system_outputs", "mask_filling+word_dropping",
                           "system_outputs+word_dropping"}
    assert all(r["signal_backtrans_flag"] == float(r["perturbation"].startswith("system_outputs")) for r in rows)
    for r in rows[:20]:
        assert r["signal_bleu"] == sacrebleu.sentence_bleu(r["candidate"], [r["reference"]]).score
    for r in rows:
        if r["perturbation"] == "mask_filling":
            assert len(r["candidate"].split()) == len(r["reference"].split()) != 0
            assert r["candidate"] != r["reference"]
    # no sentence of the excluded WMT17 is a reference
    assert not {r["reference"] for r in rows} & excluded_texts(settings, ["wmt17"])
    # progress: pairs done per stage, ending at the total
    assert seen[-1] == Progress("signals", N, N)
    assert [p.done for p in seen if p.stage == "perturb"][-1] == N

    # what training reads: γ and columns
    assert signal_weights(settings, version.label) == {"bleu": 2.0, "rouge": 0.5, "chrf": 0.0, "backtrans_flag": 1.0}
    tasks = {t.key: t for t in signal_tasks(settings, "synth-wmt16-wmt18")}
    assert tasks["rouge"].columns == ("signal_rouge_p", "signal_rouge_r", "signal_rouge_f")
    assert tasks["backtrans_flag"].kind == "classification" and tasks["backtrans_flag"].n_classes == 2
    assert [o["weight"] for o in tasks["rouge"].objectives()] == pytest.approx([0.5 / 3] * 3)
    assert tasks["bleu"].signature.startswith("bleu|metric:sentbleu|")

    # the catalog row and the manifest carry the lineage
    with session_scope(settings) as session:
        row = resolve(session, version.label)
        assert row.format == "synthetic"
        lineage = row.derivation
        runs = list(session.scalars(select(Run).where(Run.kind == "synthesize")))
        store_path = row.store_path
    labels = {s["label"]: s["digest"] for s in lineage["sources"]}
    with session_scope(settings) as session:
        assert labels == {v: resolve(session, v).digest for v in ("wmt16@1", "wmt18@1")}
    assert lineage["exclude"] == ["wmt17"] and lineage["spec"]["seed"] == 7
    assert [p["signature"].split("|")[0] for p in lineage["perturbations"]] == ["mask_filling", "system_outputs",
                                                                                 "word_dropping"]
    assert lineage["counts"]["pairs"] == N and lineage["counts"]["corpus"]["references"]["unique"] == 14_971
    assert len(runs) == 1 and inputs_version(runs[0].inputs) == version.version
    manifest = json.loads((settings.home / store_path / "manifest.json").read_text())
    assert manifest["format"] == "synthetic" and manifest["derivation"] == lineage
    assert pq.read_table(settings.home / store_path / "segments.parquet").num_rows == 0  # readers see no judgments

    # the same spec again: answered from the catalog; synthesized anew: identical content, a no-op
    assert store_synthetic(spec) == dataclasses.replace(version, created=False, run_id=None)
    again = store_synthetic(spec, reuse=False)
    assert (again.version.number, again.version.digest, again.created) == (1, version.version.digest, False)

    # γ is content: the same pairs under other weights are another version
    description = description_of(pairs)
    description["signals"][0]["weight"] = 1.0
    reweighted = pairs.replace_schema_metadata({b"assay.synthetic": json.dumps(description).encode()})
    other = store_pairs(reweighted, "synth-wmt16-wmt18")
    assert other.created and other.version.number == 2 and signal_weights(settings, other.label)["bleu"] == 1.0


def test_same_seed_same_pairs_other_seed_other_pairs(wmt_home: Path) -> None:
    """(The whole table's determinism is checked above: synthesized twice, one digest.)"""
    spec = _spec(n_pairs=60)
    corpus = build_corpus(spec.sources, exclude=spec.exclude, min_tokens=spec.min_tokens, max_tokens=spec.max_tokens)
    first = make_pairs(spec, corpus, load_plugins(spec))
    again = make_pairs(spec, corpus, load_plugins(spec))
    assert first[0].tolist() == again[0].tolist() and first[1:] == again[1:]
    other = make_pairs(_spec(n_pairs=60, seed=8), corpus, load_plugins(spec))
    assert other[1] != first[1]


def test_nothing_is_written_on_failure(wmt_home: Path) -> None:
    settings = load_settings()
    bad = _spec(signals=(SignalSpec("bleu"), SignalSpec("rouge", params={"rouge_type": "rouge9"})))
    with pytest.raises(UsageError, match="rouge_type is 'rouge9'"):
        store_synthetic(bad, name="synth-bad")
    with pytest.raises(UsageError, match="'wmt17' is excluded"):
        store_synthetic(_spec(sources=("wmt16", "wmt17")), name="synth-bad")
    with pytest.raises(NotFoundError, match="no dataset named 'wmt19'"):
        store_synthetic(_spec(sources=("wmt19",)), name="synth-bad")
    assert not (settings.home / "datasets" / "synth-bad").exists()
    with session_scope(settings) as session, pytest.raises(NotFoundError):
        resolve(session, "synth-bad")
    with pytest.raises(UsageError, match="not synthetic pairs"):
        load_pairs(settings, "wmt16")
    with pytest.raises(UsageError, match="not a synthetic pairs table"):
        store_pairs(pa.table({"x": [1]}), "synth-bad")
