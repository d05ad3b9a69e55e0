"""Hugging Face models for BLEURT's synthetic pairs (Sellam et al., 2020, §4.1, appendix A.1):
loading by local folder or hub id, identifying them in signatures, translating and scoring
translations, and the two model-based perturbations.

``mask_filling_mlm`` (:class:`MaskedLMFilling`)
    Mask filling with a masked language model, as BLEURT does with BERT: masks placed as in
    appendix A.1 (:mod:`assay.synthetic.masking`: random words or a contiguous run, up to 15
    masks counted in the model's tokens, one per token), filled left to right by beam search of
    width 8 ("instead of running the language model once and picking the most likely token at
    each position, we use beam search (the beam size 8 by default). This enforces consistency and
    avoids repeated sequences", A.1). At each step every beam's next mask is predicted with the
    other masks still in place; the ``beam_width`` best (beam, token) extensions by summed
    log-probability survive. Special tokens are never filled in.
``backtranslation`` (:class:`Backtranslation`)
    A round trip English → X → English with two sequence-to-sequence models (§4.1; A.1:
    ``z̃ = argmax P_fr→en(z_en | z*_fr)`` with ``z*_fr = argmax P_en→fr(z_fr | z)``), the argmax
    approximated by beam search.

Any ``AutoModelForMaskedLM`` / ``AutoModelForSeq2SeqLM`` works, from a local folder or a hub id
(``from_pretrained``); a model is loaded on first use. Its signature field is
``<name>@<sha256 of the weights>`` (:func:`assay.workers.encoder.model_digest`), or
``<name>@undigested`` for a hub model whose snapshot folder cannot be found.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from assay.errors import NotFoundError, UndigestedModelError
from assay.metrics import params as check
from assay.metrics.signature import model_field, package_version
from assay.synthetic.base import Perturbation
from assay.synthetic.masking import MAX_MASKS, sample_mask
from assay.synthetic.ngram import BEAM_WIDTH
from assay.workers.device import pick_device
from assay.workers.encoder import model_digest

__all__ = ["Backtranslation", "MaskedLMFilling", "RoundTrip", "Translator", "load_model", "model_identity"]


def _local_folder(source: str) -> Path | None:
    path = Path(source).expanduser()
    if path.is_dir():
        return path.resolve()
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(source, local_files_only=True))
    except Exception:  # not a cached hub snapshot: no digest
        return None


def model_identity(source: str) -> str:
    """``<name>@<digest>`` of a model folder or cached hub model, ``<name>@undigested`` otherwise."""
    folder = _local_folder(source)
    digest = None
    if folder is not None:
        try:
            digest = model_digest(folder, name=source)
        except (UndigestedModelError, NotFoundError):
            digest = None
    return model_field(source, digest)


def load_model(kind: str, source: str, device: torch.device, what: str) -> tuple[Any, Any]:
    """(tokenizer, model in eval mode on ``device``) of ``AutoModelFor<kind>`` from ``source``."""
    import transformers
    from transformers import AutoTokenizer, GPT2Tokenizer, RobertaTokenizer

    auto = getattr(transformers, f"AutoModelFor{kind}")
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        if isinstance(tokenizer, GPT2Tokenizer | RobertaTokenizer):  # pre-split words need a prefix space
            tokenizer = AutoTokenizer.from_pretrained(source, add_prefix_space=True)
        model = auto.from_pretrained(source)
    except (OSError, ValueError) as exc:
        raise NotFoundError(f"{what}: cannot load {source!r} as {auto.__name__} ({str(exc).splitlines()[0]}); "
                            "give a local model folder or a Hugging Face hub id") from exc
    return tokenizer, model.eval().to(device)


def input_limit(tokenizer: Any, model: Any, requested: int | None = None) -> int:
    """The most tokens an input may have: ``requested``, the tokenizer's maximum and the model's
    position embeddings, whichever is smallest."""
    limits = [requested, getattr(model.config, "max_position_embeddings", None), tokenizer.model_max_length]
    return int(min(x for x in limits if isinstance(x, int) and x > 0))


def _device_param(what: str, device: str) -> str:
    return check.text(what, "device", device)


# --------------------------------------------------------------------------------------------------
# Mask filling with a masked language model


@dataclass
class _Masked:
    """One sentence to fill: its token ids, which word each token belongs to, the masked token
    positions (sorted) and the masked words."""

    ids: list[int]
    word_of: list[int | None]
    positions: list[int]
    words: list[str]
    masked_words: set[int] = field(default_factory=set)


def _mlm_head(model: Any) -> Any | None:
    """The prediction head of a masked LM, to apply at the masked positions only (the full vocabulary
    logits of every position of every beam would not fit in memory); None: unknown architecture."""
    for name in ("cls", "lm_head", "predictions"):
        head = getattr(model, name, None)
        if isinstance(head, torch.nn.Module):
            return head
    return None


class MaskedLMFilling(Perturbation):
    """BLEURT's mask filling with a masked LM (see the module docstring). ``model``: local folder or
    hub id; ``max_masks`` (A.1: 15), ``contiguous_share`` (probability of the contiguous strategy),
    ``beam_width`` (A.1: 8), ``batch_size`` (sentences per forward batch; every sentence has
    ``beam_width`` rows), ``max_length`` (tokens; longer sentences are cut before masking)."""

    name: ClassVar[str] = "mask_filling_mlm"
    family: ClassVar[str] = "mask_filling"

    def __init__(self, model: str, max_masks: int = MAX_MASKS, contiguous_share: float = 0.5,
                 beam_width: int = BEAM_WIDTH, batch_size: int = 16, max_length: int = 256,
                 device: str = "auto") -> None:
        self.model = check.text(self.name, "model", model)
        self.max_masks = check.integer(self.name, "max_masks", max_masks, minimum=1)
        self.contiguous_share = check.number(self.name, "contiguous_share", contiguous_share, low=0, high=1)
        self.beam_width = check.integer(self.name, "beam_width", beam_width, minimum=1)
        self.batch_size = check.integer(self.name, "batch_size", batch_size, minimum=1)
        self.max_length = check.integer(self.name, "max_length", max_length, minimum=4)
        self.device = _device_param(self.name, device)
        self._loaded: tuple[Any, Any] | None = None

    def params(self) -> dict[str, Any]:
        return {"model": self.model, "max_masks": self.max_masks, "contiguous_share": self.contiguous_share,
                "beam_width": self.beam_width, "batch_size": self.batch_size, "max_length": self.max_length,
                "device": self.device}

    def signature_params(self) -> dict[str, Any]:
        return {"filler": model_identity(self.model), "masks": self.max_masks, "contiguous": self.contiguous_share,
                "beam": self.beam_width, "maxlen": self.max_length, "hf": package_version("transformers"),
                "torch": package_version("torch")}

    def _model(self) -> tuple[Any, Any]:
        if self._loaded is None:
            self._loaded = load_model("MaskedLM", self.model, pick_device(self.device), self.name)
        return self._loaded

    def _plan(self, sentence: str, rng: np.random.Generator) -> _Masked:
        tokenizer, model = self._model()
        words = sentence.split()
        encoded = tokenizer(words, is_split_into_words=True, truncation=True,
                            max_length=input_limit(tokenizer, model, self.max_length))
        word_of = encoded.word_ids()
        costs = np.zeros(len(words), dtype=np.int64)
        for w in word_of:
            if w is not None:
                costs[w] += 1
        # a word cut off by truncation (cost 0) is never masked
        usable = np.flatnonzero(costs > 0)
        _, chosen = sample_mask(costs[usable], rng, max_masks=self.max_masks, contiguous_share=self.contiguous_share)
        masked = {int(usable[i]) for i in chosen}
        positions = [t for t, w in enumerate(word_of) if w is not None and w in masked]
        return _Masked(list(encoded["input_ids"]), word_of, positions, words, masked)

    def perturb(self, sentences: Sequence[str], rng: np.random.Generator) -> list[str]:
        # every random draw first, so the result does not depend on batch_size
        plans = [self._plan(s, rng) for s in sentences]
        out = [" ".join(p.words) for p in plans]
        todo = [i for i, p in enumerate(plans) if p.positions]
        for start in range(0, len(todo), self.batch_size):
            rows = todo[start:start + self.batch_size]
            filled = self._fill([plans[i] for i in rows])
            for i, ids in zip(rows, filled, strict=True):
                out[i] = self._detokenize(plans[i], ids)
        return out

    @torch.inference_mode()
    def _fill(self, plans: list[_Masked]) -> list[list[int]]:
        """Left-to-right beam search over the masks of each sentence, all sentences at once."""
        tokenizer, model = self._model()
        device = next(model.parameters()).device
        n, beams = len(plans), self.beam_width
        width = max(len(p.ids) for p in plans)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        ids = torch.full((n, width), pad, dtype=torch.long)
        attention = torch.zeros((n, width), dtype=torch.long)
        for row, plan in enumerate(plans):
            ids[row, :len(plan.ids)] = torch.tensor(plan.ids)
            attention[row, :len(plan.ids)] = 1
            ids[row, plan.positions] = tokenizer.mask_token_id
        ids = ids[:, None, :].repeat(1, beams, 1).to(device)
        attention = attention[:, None, :].repeat(1, beams, 1).to(device)
        scores = torch.full((n, beams), float("-inf"), device=device)
        scores[:, 0] = 0.0  # the beams start as copies of one sentence: only the first is live
        vocab = len(tokenizer)
        banned = torch.zeros(model.config.vocab_size, dtype=torch.bool, device=device)
        banned[[i for i in tokenizer.all_special_ids if i < banned.numel()]] = True
        banned[vocab:] = True
        head = _mlm_head(model)
        steps = max(len(p.positions) for p in plans)
        for step in range(steps):
            active = [r for r, p in enumerate(plans) if len(p.positions) > step]
            act = torch.tensor(active, device=device)
            where = torch.tensor([plans[r].positions[step] for r in active], device=device)
            flat_ids = ids[act].reshape(-1, width)
            flat_att = attention[act].reshape(-1, width)
            at = where.repeat_interleave(beams)
            if head is not None:
                hidden = model.base_model(input_ids=flat_ids, attention_mask=flat_att)[0]
                logits = head(hidden[torch.arange(hidden.shape[0], device=device), at])
            else:
                logits = model(input_ids=flat_ids, attention_mask=flat_att).logits[
                    torch.arange(flat_ids.shape[0], device=device), at]
            logp = torch.log_softmax(logits.float(), dim=-1).masked_fill(banned[: logits.shape[-1]], float("-inf"))
            total = (scores[act][:, :, None] + logp.view(len(active), beams, -1)).view(len(active), -1)
            best, index = total.topk(beams, dim=-1)
            source_beam = index // logp.shape[-1]
            token = index % logp.shape[-1]
            chosen = torch.gather(ids[act], 1, source_beam[:, :, None].expand(-1, -1, width)).clone()
            chosen[torch.arange(len(active), device=device)[:, None], torch.arange(beams, device=device)[None, :],
                   where[:, None].expand(-1, beams)] = token
            ids[act] = chosen
            scores[act] = best
        top = scores.argmax(dim=1)
        return [ids[r, int(top[r])].tolist() for r in range(n)]

    def _detokenize(self, plan: _Masked, ids: list[int]) -> str:
        """The words, each masked word replaced by its filled tokens, decoded word by word (so the
        sentence keeps its word count; a word whose tokens decode to nothing is left out). A filled
        word that starts with a continuation piece (``##s``) is written without its marker."""
        tokenizer, _ = self._model()
        tokens_of: dict[int, list[int]] = {}
        for t, w in enumerate(plan.word_of):
            if w is not None:
                tokens_of.setdefault(w, []).append(ids[t])
        out = []
        for w, word in enumerate(plan.words):
            if w in plan.masked_words:
                text = tokenizer.decode(tokens_of[w], skip_special_tokens=True, clean_up_tokenization_spaces=False)
                word = "".join(text.replace("##", "").split())
            out.append(word)
        return " ".join(w for w in out if w)


# --------------------------------------------------------------------------------------------------
# Translation


class Translator:
    """One sequence-to-sequence translation model: beam-search translations (cached per sentence)
    and length-normalised log-likelihoods of given targets."""

    def __init__(self, model: str, *, num_beams: int, batch_size: int, max_new_tokens: int, prefix: str,
                 device: str, what: str) -> None:
        self.source, self.num_beams, self.batch_size = model, num_beams, batch_size
        self.max_new_tokens, self.prefix, self.device, self.what = max_new_tokens, prefix, device, what
        self._loaded: tuple[Any, Any] | None = None
        self._cache: dict[str, str] = {}

    def _model(self) -> tuple[Any, Any]:
        if self._loaded is None:
            self._loaded = load_model("Seq2SeqLM", self.source, pick_device(self.device), self.what)
        return self._loaded

    def _batches(self, texts: Sequence[str]) -> list[list[int]]:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        return [order[i:i + self.batch_size] for i in range(0, len(order), self.batch_size)]

    @torch.inference_mode()
    def translate(self, sentences: Sequence[str]) -> list[str]:
        """The beam-search translation of every sentence (each distinct sentence translated once)."""
        tokenizer, model = self._model()
        device = next(model.parameters()).device
        todo = [s for s in dict.fromkeys(sentences) if s not in self._cache]
        for rows in self._batches(todo):
            batch = [self.prefix + todo[i] for i in rows]
            encoded = tokenizer(batch, return_tensors="pt", padding=True, truncation=True,
                                max_length=input_limit(tokenizer, model)).to(device)
            encoded.pop("token_type_ids", None)
            generated = model.generate(**encoded, num_beams=self.num_beams, max_new_tokens=self.max_new_tokens,
                                       do_sample=False)
            for i, text in zip(rows, tokenizer.batch_decode(generated, skip_special_tokens=True), strict=True):
                self._cache[todo[i]] = " ".join(text.split())
        return [self._cache[s] for s in sentences]

    @torch.inference_mode()
    def mean_logprob(self, sources: Sequence[str], targets: Sequence[str]) -> np.ndarray:
        """``log P(target | source) / |target|`` per pair, ``|target|`` counting the target's tokens
        as the model scores them (end-of-sentence included); NaN for a target without tokens."""
        tokenizer, model = self._model()
        device = next(model.parameters()).device
        out = np.full(len(sources), np.nan)
        for rows in self._batches([f"{s} {t}" for s, t in zip(sources, targets, strict=True)]):
            encoded = tokenizer([self.prefix + sources[i] for i in rows], text_target=[targets[i] for i in rows],
                                return_tensors="pt", padding=True, truncation=True,
                                max_length=input_limit(tokenizer, model)).to(device)
            encoded.pop("token_type_ids", None)
            labels = encoded.pop("labels")
            pad = tokenizer.pad_token_id
            present = labels != pad if pad is not None else torch.ones_like(labels, dtype=torch.bool)
            logits = model(**encoded, labels=labels.masked_fill(~present, -100)).logits.float()
            logp = torch.log_softmax(logits, dim=-1).gather(-1, labels[:, :, None]).squeeze(-1)
            sums = (logp * present).sum(dim=1)
            counts = present.sum(dim=1)
            values = torch.where(counts > 0, sums / counts.clamp(min=1), torch.nan)
            out[rows] = values.double().cpu().numpy()
        return out


class RoundTrip:
    """English → X → English with two translation models (§4.1, §4.2), as the backtranslation
    perturbation and the backtranslation likelihood signal configure it: ``forward_model``
    (English → X), ``backward_model`` (X → English), beam search of ``num_beams``, at most
    ``max_new_tokens`` generated tokens, ``batch_size`` sentences per batch, ``forward_prefix`` /
    ``backward_prefix`` put before each input (a T5-style task prefix)."""

    def __init__(self, what: str, forward_model: str, backward_model: str, num_beams: int, batch_size: int,
                 max_new_tokens: int, forward_prefix: str, backward_prefix: str, device: str) -> None:
        self.forward_model = check.text(what, "forward_model", forward_model)
        self.backward_model = check.text(what, "backward_model", backward_model)
        self.num_beams = check.integer(what, "num_beams", num_beams, minimum=1)
        self.batch_size = check.integer(what, "batch_size", batch_size, minimum=1)
        self.max_new_tokens = check.integer(what, "max_new_tokens", max_new_tokens, minimum=1)
        self.forward_prefix, self.backward_prefix = str(forward_prefix), str(backward_prefix)
        self.device = _device_param(what, device)
        self.forward = self._translator(what, self.forward_model, self.forward_prefix)
        self.backward = self._translator(what, self.backward_model, self.backward_prefix)

    def _translator(self, what: str, model: str, prefix: str) -> Translator:
        return Translator(model, num_beams=self.num_beams, batch_size=self.batch_size,
                          max_new_tokens=self.max_new_tokens, prefix=prefix, device=self.device, what=what)

    def params(self) -> dict[str, Any]:
        return {"forward_model": self.forward_model, "backward_model": self.backward_model,
                "num_beams": self.num_beams, "batch_size": self.batch_size, "max_new_tokens": self.max_new_tokens,
                "forward_prefix": self.forward_prefix, "backward_prefix": self.backward_prefix,
                "device": self.device}

    def signature_params(self) -> dict[str, Any]:
        return {"fwd": model_identity(self.forward_model), "bwd": model_identity(self.backward_model),
                "beams": self.num_beams, "maxnew": self.max_new_tokens, "fwd_prefix": self.forward_prefix or None,
                "bwd_prefix": self.backward_prefix or None, "hf": package_version("transformers"),
                "torch": package_version("torch")}

    def __call__(self, sentences: Sequence[str]) -> list[str]:
        """The round-trip translation of every sentence."""
        return self.backward.translate(self.forward.translate(sentences))


class Backtranslation(Perturbation):
    """Backtranslation (§4.1, A.1): the round trip English → X → English of the reference (the
    parameters are :class:`RoundTrip`'s)."""

    name: ClassVar[str] = "backtranslation"
    family: ClassVar[str] = "backtranslation"

    def __init__(self, forward_model: str, backward_model: str, num_beams: int = 4, batch_size: int = 32,
                 max_new_tokens: int = 256, forward_prefix: str = "", backward_prefix: str = "",
                 device: str = "auto") -> None:
        self.round_trip = RoundTrip(self.name, forward_model, backward_model, num_beams, batch_size, max_new_tokens,
                                    forward_prefix, backward_prefix, device)

    def params(self) -> dict[str, Any]:
        return self.round_trip.params()

    def signature_params(self) -> dict[str, Any]:
        return self.round_trip.signature_params()

    def perturb(self, sentences: Sequence[str], rng: np.random.Generator) -> list[str]:
        return self.round_trip(sentences)
