"""The model-based metrics as pipeline metrics: BERTScore and the BLEURT-style learned metric.

Both load their model on the first ``score`` call only. Their signature needs facts about the
model (weight digest, tokenizer, maximum length) that are known only once it is loaded, so the
rendered signature is cached on disk (``ASSAY_HOME/cache/signatures.json``), keyed by the model
or checkpoint folder's file names, sizes and modification times, the parameters and the installed
torch/transformers versions. A repeated request therefore renders its signature, finds every
segment cached and finishes without importing torch or loading a model.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from assay.config import load_settings
from assay.errors import NotFoundError
from assay.metrics.base import Metric, SegmentScores
from assay.workers.embedded_model import default_model_path


def _folder_state(folder: Path) -> list[tuple[str, int, int]]:
    return sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in os.scandir(folder) if e.is_file())


def _versions() -> dict[str, str]:
    return {name: importlib.metadata.version(name) for name in ("torch", "transformers")}


def cached_signature(kind: str, folder: Path | None, params: dict[str, Any], compute: Callable[[], str]) -> str:
    """The signature for (kind, model files, params, library versions), computed once per state."""
    state = {"kind": kind, "params": params, "versions": _versions(),
             "files": _folder_state(folder) if folder is not None and folder.is_dir() else None,
             "folder": str(folder) if folder is not None else None}
    key = hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()
    path = load_settings().home / "cache" / "signatures.json"
    try:
        cache = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, ValueError):
        cache = {}
    if key in cache:
        return str(cache[key])
    signature = compute()
    cache[key] = signature
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(cache, indent=1, sort_keys=True))
    os.replace(tmp, path)
    return signature


class BERTScore(Metric):
    """BERTScore (Zhang et al., 2020, ICLR): greedy cosine matching of contextual embeddings.

    Main score F1; precision and recall are extra columns. ``model``: a local folder or hub id
    (default: the embedded all-MiniLM-L6-v2); ``layer``; ``idf`` weights from the references of
    the scored set; ``rescale``: baseline rescaling with the bert_score baseline file for the model
    and layer (``baseline``: an explicit file). Implementation: :mod:`assay.workers.bertscore`.
    """

    name: ClassVar[str] = "bertscore"
    extra_columns: ClassVar[tuple[str, ...]] = ("precision", "recall", "f1")

    def __init__(self, model: str | None = None, layer: int | None = None, idf: bool = False,
                 rescale: bool = False, baseline: str | None = None, lang: str = "en",
                 max_length: int | None = None, device: str | None = None) -> None:
        self.model, self.layer, self.idf, self.rescale = model, layer, bool(idf), bool(rescale)
        self.baseline, self.lang, self.max_length, self.device = baseline, lang, max_length, device
        self._scorer: Any = None
        self._scorer_baseline: str | None = None

    def _baseline_file(self) -> str | None:
        if not self.rescale:
            return None
        if self.baseline:
            return self.baseline
        from assay.workers.rescale_baselines import baseline_file, baseline_model_name, stored_baseline_file

        computed = stored_baseline_file(load_settings(), self.lang, self.model)
        if computed.is_file():  # from `assay bertscore-baseline`
            return str(computed)
        root = Path(os.environ.get("ASSAY_BASELINE_DIR", Path(__file__).resolve().parents[1].parent
                                   / "shared" / "data" / "bertscore-rescale-baseline"))
        shipped = baseline_file(root, self.lang, baseline_model_name(self.model))
        if not shipped.is_file():
            raise NotFoundError(
                f"no rescaling baseline for {baseline_model_name(self.model)} ({self.lang}): neither {computed} nor "
                f"{shipped} exists. Compute one with `assay bertscore-baseline --dataset NAME"
                f"{'' if self.model is None else ' --model ' + self.model} --layer N`, or give a baseline file"
            )
        return str(shipped)

    def _baseline_state(self) -> str | None:
        """Which baseline file, with which content, rescaling uses now (None without rescaling)."""
        if not self.rescale:
            return None
        baseline = Path(self._baseline_file() or "")
        return f"{baseline}#{hashlib.sha256(baseline.read_bytes()).hexdigest() if baseline.is_file() else None}"

    def scorer(self) -> Any:
        state = self._baseline_state()
        if self._scorer is None or state != self._scorer_baseline:  # a recomputed baseline: reload it
            from assay.workers.bertscore import BERTScorer

            encoder = self._scorer.encoder if self._scorer is not None else None
            self._scorer = BERTScorer(None if encoder else self.model, None if encoder else self.layer,
                                      idf=self.idf, rescale_baseline=self._baseline_file(), device=self.device,
                                      max_length=self.max_length, encoder=encoder)
            self._scorer_baseline = state
        return self._scorer

    def params(self) -> dict[str, object]:
        return {"model": self.model, "layer": self.layer, "idf": self.idf, "rescale": self.rescale,
                "baseline": self.baseline, "lang": self.lang, "max_length": self.max_length}

    def signature(self) -> str:
        folder = default_model_path() if self.model is None else Path(self.model)
        # the baseline's values are in the signature: a new baseline file gives a new key
        params: dict[str, Any] = {**self.params(), "baseline_state": self._baseline_state()}
        return cached_signature("bertscore", folder if folder.exists() else None, params,
                                lambda: str(self.scorer().signature("F")))

    @property
    def reference_dependent(self) -> bool:
        """With idf, a segment's score depends on every reference of the scored set."""
        return self.idf

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
              sources: Sequence[str | None] | None = None, *,
              idf_sentences: Sequence[str] | None = None) -> SegmentScores:
        """P, R, F per segment (main score F). With idf, the weights come from ``idf_sentences``
        (the pipeline passes every reference of the scored set) or else from ``references``."""
        self.check_inputs(candidates, references)
        import warnings

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            precision, recall, f1 = self.scorer().score(
                list(candidates), [list(r) for r in references],
                idf_sentences=list(idf_sentences) if idf_sentences is not None else None)
        notes = sorted({str(w.message) for w in caught})
        return SegmentScores(np.asarray(f1), extra={"precision": precision, "recall": recall, "f1": f1},
                             warnings=notes)


class BLEURT(Metric):
    """The BLEURT-style learned metric (Sellam et al., 2020, ACL, §3) from a checkpoint folder
    (``model.safetensors`` + ``assay_checkpoint.json`` + tokenizer files; see
    :mod:`assay.workers.checkpoint`). Implementation: :mod:`assay.workers.bleurt`."""

    name: ClassVar[str] = "bleurt"

    def __init__(self, checkpoint: str, device: str | None = None) -> None:
        self.checkpoint = str(Path(checkpoint).expanduser().resolve())
        if not Path(self.checkpoint).is_dir():
            raise NotFoundError(f"{self.checkpoint}: no such checkpoint folder")
        self.device = device
        self._scorer: Any = None

    def scorer(self) -> Any:
        if self._scorer is None:
            from assay.workers.bleurt import BleurtScorer

            self._scorer = BleurtScorer(Path(self.checkpoint), device=self.device)
        return self._scorer

    def params(self) -> dict[str, object]:
        return {"checkpoint": self.checkpoint}

    def signature(self) -> str:
        def compute() -> str:
            from assay.metrics.signature import Signature

            return Signature(self.name, self.version, self.scorer().signature_params()).render()

        return cached_signature("bleurt", Path(self.checkpoint), self.params(), compute)

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
              sources: Sequence[str | None] | None = None) -> SegmentScores:
        self.check_inputs(candidates, references)
        return SegmentScores(self.scorer().score([list(r) for r in references], list(candidates)))
