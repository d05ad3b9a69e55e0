"""BERTScore rescaling baselines computed from a stored dataset and kept as data with a signature.

Zhang et al. (2020, §3 "Baseline Rescaling") rescale a score s to ``(s - b) / (1 - b)``, where b is
the mean score of random sentence pairs for that model and layer. bert_score ships b for the models
it tuned (``../shared/data/bertscore-rescale-baseline``); for any other model and layer (the
embedded MiniLM included), :func:`compute_dataset_baseline` computes b from random pairs of the
distinct sentences (references and system outputs) of a stored dataset version
(:func:`assay.workers.bertscore.compute_baseline`), writes it in bert_score's file layout under
``ASSAY_HOME/baselines/<lang>/<model>.tsv`` with a JSON sidecar holding each layer's signature,
keeps an immutable copy per run (``baselines/runs/<run id>.tsv``) and records the run and that
copy in the catalog. :class:`assay.workers.metrics.BERTScore` with
``rescale`` looks there first.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from assay.atomic import write_text
from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.config import Settings, load_settings
from assay.datasets import store
from assay.datasets.names import VersionRef
from assay.errors import UsageError
from assay.jobs.runs import RecordedFile, RunRecorder, version_inputs
from assay.metrics.signature import model_field, package_version, render_signature
from assay.provenance import short
from assay.workers.embedded_model import DEFAULT_LAYER, DEFAULT_MODEL_NAME

HEADER = "LAYER,P,R,F"
BASELINE_VERSION = "1"
"""Version of the baseline computation (the ``v:`` field of baseline signatures)."""


def baseline_model_name(model: str | None) -> str:
    """The file name stem of a model's baselines: the hub id, or a local folder's own name."""
    if model is None:
        return DEFAULT_MODEL_NAME
    local = Path(model).expanduser()
    return local.resolve().name if local.is_dir() else str(model)


def baseline_file(root: str | Path, lang: str, model_name: str) -> Path:
    """The baseline file of bert_score's layout: ``root/<lang>/<model name>.tsv``.

    ``model_name`` is the hub id, e.g. ``roberta-large`` or ``microsoft/deberta-large``.
    """
    return Path(root) / lang / f"{model_name}.tsv"


def stored_baseline_file(settings: Settings, lang: str, model: str | None) -> Path:
    """Where computed baselines of ``model`` live: ``ASSAY_HOME/baselines/<lang>/<model>.tsv``."""
    return baseline_file(settings.baselines_dir, lang, baseline_model_name(model))


def dataset_sentences(settings: Settings, store_path: str) -> list[str]:
    """Every reference and candidate of a stored version (judged segments and all outputs)."""
    sentences: list[str] = []
    for table_name in ("segments", "outputs"):
        table = store.read_table(settings, store_path, table_name)
        sentences += [s for s in table.column("candidate").to_pylist() if s]
        sentences += [r for refs in table.column("references").to_pylist() for r in (refs or []) if r]
    return sentences


def _read_rows(path: Path) -> dict[int, tuple[float, float, float]]:
    from assay.workers.bertscore import load_baseline

    rows: dict[int, tuple[float, float, float]] = {}
    if not path.exists():
        return rows
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        layer = int(line.split(",")[0])
        b = load_baseline(path, layer)
        rows[layer] = (b.precision, b.recall, b.f1)
    return rows


def baseline_signature(model: str | None, model_digest: str, layer: int, version: VersionRef,
                       n_pairs: int, seed: int) -> str:
    """The signature of one computed baseline (:func:`assay.metrics.signature.render_signature`), e.g.
    ``bertscore-baseline|model:all-MiniLM-L6-v2@3f2a9c1d0e4b|layer:4|data:wmt17@1#9a0b1c2d3e4f|pairs:10000|
    seed:0|torch:2.13.0|v:1|assay:0.1.0``."""
    return render_signature("bertscore-baseline", {
        "model": model_field(baseline_model_name(model), model_digest), "layer": layer,
        "data": f"{version.label}#{short(version.digest)}", "pairs": n_pairs, "seed": seed,
        "torch": package_version("torch"),
    }, BASELINE_VERSION)


def compute_dataset_baseline(
    dataset: str,
    *,
    model: str | None = None,
    layers: Sequence[int] | None = None,
    n_pairs: int = 10_000,
    seed: int = 0,
    lang: str = "en",
    device: str | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Compute b for each of ``layers`` of ``model`` from random pairs of ``dataset``'s sentences.

    Rows for other layers already in the model's file are kept; rows for these layers are replaced.
    Nothing is written until every layer is computed. Returns the file, the values and the run id.
    """
    from assay.workers.bertscore import BERTScorer, compute_baseline
    from assay.workers.encoder import load_encoder

    settings = settings or load_settings()
    started = time.time()
    if model is None and not layers:
        layers = [DEFAULT_LAYER]
    if not layers:
        raise UsageError("name the layer(s) to compute a baseline for with --layer")
    with session_scope(settings) as session:
        version = resolve(session, dataset)
        ref, store_path = version.ref, version.store_path
    sentences = dataset_sentences(settings, store_path)
    computed: dict[int, dict[str, Any]] = {}
    model_digest = None
    for layer in sorted(set(layers)):
        scorer = BERTScorer(encoder=load_encoder(model, layer, device=device))
        model_digest = scorer.encoder.digest  # a baseline belongs to weights: never undigested
        b = compute_baseline(scorer, sentences, n_pairs=n_pairs, seed=seed, corpus_name=ref.label)
        signature = baseline_signature(model, model_digest, layer, ref, n_pairs, seed)
        computed[layer] = {"P": b.precision, "R": b.recall, "F": b.f1, "description": b.description,
                           "signature": signature}
    path = stored_baseline_file(settings, lang, model)
    sidecar = path.with_suffix(".json")
    rows = _read_rows(path)
    meta = json.loads(sidecar.read_text()) if sidecar.exists() else {}
    if meta.get("model_digest") not in (None, model_digest):
        rows, meta = {}, {}  # the weights changed: baselines of the old weights no longer apply
    rows.update({layer: (v["P"], v["R"], v["F"]) for layer, v in computed.items()})
    text = HEADER + "\n" + "".join(f"{layer},{p!r},{r!r},{f!r}\n" for layer, (p, r, f) in sorted(rows.items()))
    meta = {"model": baseline_model_name(model), "model_digest": model_digest, "lang": lang,
            "layers": {**meta.get("layers", {}), **{str(k): v for k, v in computed.items()}}}
    recorder = RunRecorder(
        settings, "baseline",
        inputs=version_inputs(ref, model_digest=model_digest),
        parameters={"model": model, "layers": sorted(computed), "n_pairs": n_pairs, "seed": seed, "lang": lang},
        started=started,
    )
    # an immutable copy per run (the catalog's record), then the model's current file that --rescale reads
    archived = settings.baselines_dir / "runs" / f"{recorder.run_id}.tsv"
    write_text(text, archived)
    write_text(text, path)
    write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n", sidecar)
    relative = archived.relative_to(settings.home)
    seconds = recorder.record(
        {"file": str(path.relative_to(settings.home)), "archived": str(relative),
         "baselines": {str(k): v for k, v in computed.items()}},
        [RecordedFile.of(settings, relative, "bertscore_baseline", len(rows))],
    )
    run_id = recorder.run_id
    return {"run_id": run_id, "file": str(path), "dataset": ref.label, "model_digest": model_digest,
            "layers": {str(k): v for k, v in computed.items()}, "seconds": seconds}
