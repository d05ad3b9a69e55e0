"""The model-based pre-training signals of BLEURT (Sellam et al., 2020, §4.2, Table 1, appendix A.2).

``bertscore`` (:class:`BERTScoreSignal`)
    τ_BERTscore = (P, R, F) with Assay's BERTScore (:mod:`assay.workers.bertscore`, through the
    registered ``bertscore`` metric, so its signature is the metric's). The paper used "a custom
    implementation of BERTSCORE, based on BERT-large uncased" (A.2); the default here is the
    embedded all-MiniLM-L6-v2 at layer 4, and any encoder can be named. No idf: idf weights would
    depend on which pairs share a batch.
``backtrans_likelihood`` (:class:`BacktranslationLikelihood`)
    τ_{en-X, z̃|z} and τ_{en-X, z|z̃}: ``log P(z̃ | z) / |z̃|`` with ``P(z̃ | z) ≈ P_X→en(z̃ | z*_X)``,
    ``z*_X = argmax P_en→X(z_X | z)`` (§4.2: the sum over pivot sentences approximated by the
    best one, assumed to have probability 1), and the same with z and z̃ swapped. The paper uses
    two languages (en↔de, en↔fr): give the signal twice with aliases (``backtrans_de``,
    ``backtrans_fr``). Columns ``fwd`` (z̃ | z) and ``bwd`` (z | z̃). ``|z̃|`` counts the model's
    target tokens, end-of-sentence included.
``entailment`` (:class:`Entailment`)
    τ_entail: whether z entails, contradicts or is neutral to z̃ (premise z, hypothesis z̃), by an
    ``AutoModelForSequenceClassification`` NLI model ("BERT finetuned on ... MNLI", §4.2). Its
    classes are read from the model's ``id2label`` and mapped to entail / neutral / contradict
    (labels containing "entail", "neutral", "contradict"). ``output="class"``: one column, the
    index of the most likely class (0 entail, 1 neutral, 2 contradict); ``output="probabilities"``:
    three columns of class probabilities, the paper's soft targets ("We report the probability of
    three labels").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from assay.errors import UsageError
from assay.metrics import params as check
from assay.metrics.signature import package_version
from assay.synthetic.base import PairBatch, Signal
from assay.synthetic.signals import MetricSignal
from assay.workers.device import pick_device
from assay.workers.metrics import BERTScore
from assay.workers.synthetic_models import RoundTrip, input_limit, load_model, model_identity

__all__ = ["BERTScoreSignal", "BacktranslationLikelihood", "Entailment", "entailment_classes"]

ENTAILMENT_CLASSES = ("entail", "neutral", "contradict")


class BERTScoreSignal(MetricSignal):
    """τ_BERTscore = (P, R, F) (see the module docstring). ``model``: a folder or hub id (default:
    the embedded MiniLM); ``layer``; ``max_length``; ``device``."""

    name: ClassVar[str] = "bertscore"

    def __init__(self, model: str | None = None, layer: int | None = None, max_length: int | None = None,
                 device: str | None = None) -> None:
        self.metric = BERTScore(model=model, layer=layer, max_length=max_length, device=device)

    @property
    def components(self) -> tuple[str, ...]:
        return ("p", "r", "f")

    def params(self) -> dict[str, Any]:
        p = self.metric.params()
        return {key: p[key] for key in ("model", "layer", "max_length", "device")}

    def compute(self, batch: PairBatch) -> dict[str, np.ndarray]:
        _, extra, inverse = self._scores(batch)
        return {"p": extra["precision"][inverse], "r": extra["recall"][inverse], "f": extra["f1"][inverse]}


class BacktranslationLikelihood(Signal):
    """τ_{en-X, z̃|z} and τ_{en-X, z|z̃} (see the module docstring). ``forward_model``: English → X;
    ``backward_model``: X → English; ``num_beams`` for the pivot translations."""

    name: ClassVar[str] = "backtrans_likelihood"

    def __init__(self, forward_model: str, backward_model: str, num_beams: int = 4, batch_size: int = 32,
                 max_new_tokens: int = 256, forward_prefix: str = "", backward_prefix: str = "",
                 device: str = "auto") -> None:
        self.round_trip = RoundTrip(self.name, forward_model, backward_model, num_beams, batch_size, max_new_tokens,
                                    forward_prefix, backward_prefix, device)

    @property
    def components(self) -> tuple[str, ...]:
        return ("fwd", "bwd")

    def params(self) -> dict[str, Any]:
        return self.round_trip.params()

    def signature_params(self) -> dict[str, Any]:
        return {**self.round_trip.signature_params(), "norm": "target_tokens"}

    def compute(self, batch: PairBatch) -> dict[str, np.ndarray]:
        references, candidates = list(batch.references), list(batch.candidates)
        forward, backward = self.round_trip.forward, self.round_trip.backward
        ref_pivots = forward.translate(references)
        cand_pivots = forward.translate(candidates)
        return {"fwd": backward.mean_logprob(ref_pivots, candidates),
                "bwd": backward.mean_logprob(cand_pivots, references)}


def entailment_classes(id2label: dict[int, str], model: str) -> list[int]:
    """For each of entail, neutral, contradict, the model's class index (from ``id2label``)."""
    found: dict[str, list[int]] = {c: [] for c in ENTAILMENT_CLASSES}
    for index, label in id2label.items():
        for c in ENTAILMENT_CLASSES:
            if c in str(label).lower():
                found[c].append(int(index))
    if any(len(v) != 1 for v in found.values()):
        labels = ", ".join(f"{k}={v}" for k, v in sorted(id2label.items()))
        raise UsageError(f"entailment: the classes of model {model!r} ({labels}) do not name entailment, neutral and "
                         "contradiction once each (expected labels such as ENTAILMENT, NEUTRAL, CONTRADICTION in its "
                         "config's id2label)")
    return [found[c][0] for c in ENTAILMENT_CLASSES]


class Entailment(Signal):
    """τ_entail (see the module docstring). ``model``: an NLI sequence classifier; ``output``:
    ``class`` or ``probabilities``; ``batch_size``; ``max_length`` (tokens of the pair)."""

    name: ClassVar[str] = "entailment"
    kind: ClassVar[str] = "classification"
    classes: ClassVar[tuple[str, ...]] = ENTAILMENT_CLASSES

    def __init__(self, model: str, output: str = "class", batch_size: int = 32, max_length: int = 256,
                 device: str = "auto") -> None:
        self.model = check.text(self.name, "model", model)
        self.output = check.choice(self.name, "output", output, ("class", "probabilities"))
        self.batch_size = check.integer(self.name, "batch_size", batch_size, minimum=1)
        self.max_length = check.integer(self.name, "max_length", max_length, minimum=4)
        self.device = check.text(self.name, "device", device)
        self._loaded: tuple[Any, Any, list[int]] | None = None

    @property
    def components(self) -> tuple[str, ...]:
        return () if self.output == "class" else ENTAILMENT_CLASSES

    def params(self) -> dict[str, Any]:
        return {"model": self.model, "output": self.output, "batch_size": self.batch_size,
                "max_length": self.max_length, "device": self.device}

    def signature_params(self) -> dict[str, Any]:
        return {"model": model_identity(self.model), "output": self.output, "maxlen": self.max_length,
                "premise": "reference", "hf": package_version("transformers"), "torch": package_version("torch")}

    def _model(self) -> tuple[Any, Any, list[int]]:
        if self._loaded is None:
            tokenizer, model = load_model("SequenceClassification", self.model, pick_device(self.device), self.name)
            self._loaded = (tokenizer, model, entailment_classes(dict(model.config.id2label), self.model))
        return self._loaded

    @torch.inference_mode()
    def probabilities(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """(n, 3) probabilities of entail, neutral, contradict."""
        tokenizer, model, order = self._model()
        device = next(model.parameters()).device
        out = np.zeros((len(premises), 3))
        for start in range(0, len(premises), self.batch_size):
            stop = start + self.batch_size
            encoded = tokenizer(list(premises[start:stop]), list(hypotheses[start:stop]), return_tensors="pt",
                                padding=True, truncation=True,
                                max_length=input_limit(tokenizer, model, self.max_length)).to(device)
            probs = torch.softmax(model(**encoded).logits.float(), dim=-1)[:, order]
            out[start:stop] = probs.double().cpu().numpy()
        return out

    def compute(self, batch: PairBatch) -> dict[str, np.ndarray]:
        probs = self.probabilities(batch.references, batch.candidates)
        if self.output == "class":
            return {"": probs.argmax(axis=1).astype(np.float64)}
        return {c: probs[:, i] for i, c in enumerate(ENTAILMENT_CLASSES)}
