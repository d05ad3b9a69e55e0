"""The model-based metrics as pipeline metrics: BERTScore (Zhang et al., 2020) and the BLEURT-style
learned metric (Sellam et al., 2020). Both register in the entry-point group ``assay.metrics``.

Both load their model on first use. Their signature needs facts about the model (weights digest,
tokenizer, maximum length) that are known only once it is loaded, so the signature's fields are
cached on disk (``ASSAY_HOME/cache/signatures.json``), keyed by the model or checkpoint folder's
file names, sizes and modification times, the parameters and the installed torch/transformers
versions. A repeated request therefore renders its signature, finds every segment cached and
finishes without importing torch or loading a model.

A model whose weights cannot be digested raises :class:`~assay.metrics.base.UndigestedModelError`;
with ``allow_undigested=True`` it is scored anyway, its signature says ``model:<name>@undigested``
and scoring returns the scores without storing them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from assay.atomic import write_text
from assay.config import load_settings
from assay.errors import NotFoundError
from assay.metrics import params as check
from assay.metrics.base import Metric, ScoringContext, SegmentScores
from assay.metrics.signature import package_version
from assay.workers.embedded_model import DEFAULT_MODEL_NAME, default_model_path

#: the target languages of the embedded default encoder, all-MiniLM-L6-v2 (trained on English pairs)
EMBEDDED_MODEL_LANGUAGES = frozenset({"en"})
#: a registered checkpoint's full content digest (what ``checkpoint`` holds when it is not a folder)
_DIGEST = re.compile(r"[0-9a-f]{64}")


def _folder_state(folder: Path) -> list[tuple[str, int, int]]:
    return sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in os.scandir(folder) if e.is_file())


def cached_signature_facts(kind: str, folder: Path | None, params: dict[str, Any],
                           compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The signature facts of (kind, model files, params, library versions), computed once per
    state: ``{"fields": <signature fields, in order>, "model_digest": <sha256 or None>}``. On disk
    the fields are ``[key, value]`` pairs, so their order survives JSON."""
    state = {"kind": kind, "params": params,
             "versions": {name: package_version(name) for name in ("torch", "transformers")},
             "files": _folder_state(folder) if folder is not None and folder.is_dir() else None,
             "folder": str(folder) if folder is not None else None}
    key = hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()
    path = load_settings().cache_dir / "signatures.json"
    try:
        cache = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, ValueError):
        cache = {}
    cached = cache.get(key)
    if isinstance(cached, dict) and isinstance(cached.get("fields"), list):
        return {**cached, "fields": {str(k): v for k, v in cached["fields"]}}
    facts = compute()
    cache[key] = {**facts, "fields": [[k, v] for k, v in facts["fields"].items()]}
    write_text(json.dumps(cache, indent=1, sort_keys=True), path)
    return facts


class BERTScore(Metric):
    """BERTScore (Zhang et al., 2020, ICLR): greedy cosine matching of contextual embeddings.

    Main score F1; precision and recall are extra columns. ``model``: a local folder or hub id
    (default: the embedded all-MiniLM-L6-v2, which covers English targets only: ``languages``);
    ``layer`` (checked against the model's layers when it loads); ``idf`` weights from the
    references of the scored set (``depends_on_reference_corpus``); ``rescale``: baseline rescaling
    with the baseline file for the model and layer (``baseline``: an explicit file; ``lang`` its
    language folder); ``allow_undigested``: score a model whose weights cannot be digested, without
    caching. Implementation: :mod:`assay.workers.bertscore`.
    """

    name: ClassVar[str] = "bertscore"
    version: ClassVar[str] = "1"  # = assay.workers.bertscore.METRIC_VERSION (that module needs torch)
    model_based: ClassVar[bool] = True
    extra_columns: ClassVar[tuple[str, ...]] = ("precision", "recall", "f1")

    def __init__(self, model: str | None = None, layer: int | None = None, idf: bool = False,
                 rescale: bool = False, baseline: str | None = None, lang: str = "en",
                 max_length: int | None = None, device: str | None = None, allow_undigested: bool = False) -> None:
        self.model = None if model is None else check.text(self.name, "model", model)
        self.layer = None if layer is None else check.integer(self.name, "layer", layer, minimum=0)
        self.idf = check.flag(self.name, "idf", idf)
        self.rescale = check.flag(self.name, "rescale", rescale)
        self.baseline = None if baseline is None else check.text(self.name, "baseline", baseline)
        self.lang = check.text(self.name, "lang", lang)
        self.max_length = None if max_length is None else check.integer(self.name, "max_length", max_length, minimum=2)
        self.device = None if device is None else check.text(self.name, "device", device)
        self.allow_undigested = check.flag(self.name, "allow_undigested", allow_undigested)
        self.depends_on_reference_corpus = self.idf
        self.languages = EMBEDDED_MODEL_LANGUAGES if self.model is None else None
        self._scorer: Any = None
        self._scorer_baseline: str | None = None

    def _baseline_file(self) -> str | None:
        if not self.rescale:
            return None
        if self.baseline:
            return self.baseline
        from assay.workers.rescale_baselines import baseline_file, baseline_model_name, stored_baseline_file

        settings = load_settings()
        computed = stored_baseline_file(settings, self.lang, self.model)
        if computed.is_file():  # from `assay bertscore-baseline`
            return str(computed)
        shipped = (baseline_file(settings.baseline_dir, self.lang, baseline_model_name(self.model))
                   if settings.baseline_dir is not None else None)
        if shipped is None or not shipped.is_file():
            looked = f"neither {computed} nor {shipped} exists" if shipped else f"{computed} does not exist " \
                "(and ASSAY_BASELINE_DIR is not set)"
            raise NotFoundError(
                f"no rescaling baseline for {baseline_model_name(self.model)} ({self.lang}): {looked}. Compute one "
                f"with `assay bertscore-baseline --dataset NAME{'' if self.model is None else ' --model ' + self.model}"
                " --layer N`, or give a baseline file"
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
                "baseline": self.baseline, "lang": self.lang, "max_length": self.max_length, "device": self.device,
                "allow_undigested": self.allow_undigested}

    def _facts(self) -> dict[str, Any]:
        folder = default_model_path() if self.model is None else Path(self.model).expanduser()
        # the baseline's values are in the signature: a new baseline file gives a new key
        key = {**self.params(), "device": None, "baseline_state": self._baseline_state()}

        def compute() -> dict[str, Any]:
            scorer = self.scorer()
            fields = scorer.signature_fields("F", allow_undigested=self.allow_undigested)
            digest = scorer.signature_params(allow_undigested=self.allow_undigested)["model_digest"]
            return {"fields": fields, "model_digest": digest}

        return cached_signature_facts("bertscore", folder if folder.is_dir() else None, key, compute)

    def signature_params(self) -> dict[str, object]:
        return dict(self._facts()["fields"])

    def model_digest(self) -> str | None:
        digest = self._facts()["model_digest"]
        return None if digest is None else str(digest)

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
              sources: Sequence[str | None] | None = None, *, context: ScoringContext | None = None,
              ) -> SegmentScores:
        """P, R, F per segment (main score F). With idf, the weights come from
        ``context.reference_corpus`` (scoring passes every reference of the scored set) or else
        from ``references``."""
        self.check_inputs(candidates, references)
        import warnings

        corpus = context.reference_corpus if context is not None and self.idf else None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            precision, recall, f1 = self.scorer().score(
                list(candidates), [list(r) for r in references],
                idf_sentences=list(corpus) if corpus is not None else None)
        notes = sorted({str(w.message) for w in caught})
        return SegmentScores(np.asarray(f1), extra={"precision": precision, "recall": recall, "f1": f1},
                             warnings=notes)


def _checkpoint_languages(folder: Path) -> frozenset[str] | None:
    """A checkpoint built on the embedded English MiniLM covers English targets; others: unknown."""
    try:
        config = json.loads((folder / "assay_checkpoint.json").read_text(encoding="utf-8"))
        name = config["base_encoder"]["name"]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # the checkpoint loader reports a defective folder properly
    return EMBEDDED_MODEL_LANGUAGES if name == DEFAULT_MODEL_NAME else None


class BLEURT(Metric):
    """The BLEURT-style learned metric (Sellam et al., 2020, ACL, §3) from a checkpoint
    (``model.safetensors`` + ``assay_checkpoint.json`` + tokenizer files; see
    :mod:`assay.workers.checkpoint`). Implementation: :mod:`assay.workers.bleurt`.

    ``checkpoint``: the digest of a registered checkpoint (what the nightly evaluation and
    ``assay score --checkpoint NAME`` pass), resolved to its folder in the shared store once and
    verified against that digest when the model loads (one hash); or the path of an unregistered
    checkpoint folder, hashed once when it loads."""

    name: ClassVar[str] = "bleurt"
    version: ClassVar[str] = "1"  # = assay.workers.bleurt.METRIC_VERSION (that module needs torch)
    model_based: ClassVar[bool] = True

    def __init__(self, checkpoint: str, device: str | None = None) -> None:
        reference = check.text(self.name, "checkpoint", checkpoint)
        self.registered_digest: str | None = None
        self.registered_name: str | None = None
        if _DIGEST.fullmatch(reference):
            from assay.checkpoints.registry import folder_of_digest

            self.registered_name, self.folder = folder_of_digest(load_settings(), reference)
            self.registered_digest = self.checkpoint = reference
        else:
            self.folder = Path(reference).expanduser().resolve()
            self.checkpoint = str(self.folder)
            if not self.folder.is_dir():
                raise NotFoundError(f"{self.checkpoint}: no such checkpoint folder")
        self.device = None if device is None else check.text(self.name, "device", device)
        self.languages = _checkpoint_languages(self.folder)
        self._scorer: Any = None

    def scorer(self) -> Any:
        if self._scorer is None:
            from assay.workers.bleurt import BleurtScorer

            self._scorer = BleurtScorer(self.folder, device=self.device, expected_digest=self.registered_digest,
                                        name=self.registered_name)
        return self._scorer

    def params(self) -> dict[str, object]:
        return {"checkpoint": self.checkpoint, "device": self.device}

    def _facts(self) -> dict[str, Any]:
        def compute() -> dict[str, Any]:
            scorer = self.scorer()
            return {"fields": scorer.signature_fields(), "model_digest": scorer.digest}

        return cached_signature_facts("bleurt", self.folder, {"checkpoint": self.checkpoint}, compute)

    def signature_params(self) -> dict[str, object]:
        return dict(self._facts()["fields"])

    def model_digest(self) -> str | None:
        return str(self._facts()["model_digest"])

    def checkpoint_digest(self) -> str | None:
        """The checkpoint's digest: its model is the checkpoint."""
        return self.model_digest()

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
              sources: Sequence[str | None] | None = None, *, context: ScoringContext | None = None,
              ) -> SegmentScores:
        self.check_inputs(candidates, references)
        result = self.scorer().score_detailed([list(r) for r in references], list(candidates))
        return SegmentScores(result.scores, warnings=list(result.warnings))
