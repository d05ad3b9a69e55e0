"""BLEURT-style learned metric: a BERT encoder reads ``[CLS] reference [SEP] candidate [SEP]`` and a
linear layer on the [CLS] vector predicts the rating (Sellam, Das & Parikh, 2020, "BLEURT: Learning
Robust Metrics for Text Generation", ACL, §3: ``ŷ = f(x, x̃) = W ṽ[CLS] + b``).

Checkpoints are folders in the format of :mod:`assay.workers.checkpoint`; this module only scores.

Input encoding (as google-research/bleurt ``encoding.encode_example``, after BERT's
``run_classifier``):

* reference and candidate are WordPiece-tokenised separately, without special tokens;
* if ``len(ref) + len(cand) > max_length - 3`` they are truncated *longest first*: repeatedly drop
  the last token of whichever side is currently longer, the candidate when both are equally long
  (bleurt's ``_truncate_seq_pair``). This is implemented here explicitly: the Hugging Face
  tokenizers' ``truncation="longest_first"`` was checked (tokenizers 0.23) and differs on ties —
  with both sides equally long and an odd budget it keeps the extra token on the candidate side
  (budget 5 of 6+6 tokens: ref 2 / cand 3, where bleurt keeps ref 3 / cand 2);
* ``token_type_ids`` are 0 for ``[CLS] reference [SEP]`` and 1 for ``candidate [SEP]`` (and 0 on
  padding, as in bleurt); ``attention_mask`` is 1 on tokens, 0 on padding.

Pairs are scored in batches built by length: sorted by total token length (longest first, ties in
input order), and cut so that ``batch size × longest sequence in the batch ≤ token_budget``
(padded token positions; a single pair longer than the budget forms its own batch), under
``torch.inference_mode``. Scores come back in input order as float64, after the checkpoint's
normalisation is undone (``mean + std · ŷ``; appendix A.2 of the paper normalises the regression
labels before training).

Multiple references: BLEURT scores one reference per candidate. Given several, Assay scores the
candidate against each reference separately and keeps the **maximum** (the candidate is as good as
its closest reference; the same rule as multi-reference BERTScore in ``bert_score``).

Pairs that had to be truncated are counted, reported in :class:`BleurtResult` and announced with a
:class:`TruncationWarning` (and a log line), once per call.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from assay.checkpoints.folder import stamped_digest, verified_digest
from assay.checkpoints.ref import CheckpointRef
from assay.errors import CheckpointError
from assay.metrics.signature import package_version, render_signature
from assay.workers.checkpoint import LoadedCheckpoint, load_checkpoint
from assay.workers.device import DeviceLike, pick_device
from assay.workers.encoder import TruncationWarning

log = logging.getLogger(__name__)

#: padded token positions per batch (batch size × longest sequence in the batch)
DEFAULT_TOKEN_BUDGET = 8192
DEFAULT_MAX_BATCH_SIZE = 256
#: [CLS], [SEP] after the reference, [SEP] after the candidate
N_SPECIAL_TOKENS = 3
MULTI_REFERENCE_RULE = "max"
METRIC_NAME = "bleurt"
METRIC_VERSION = "1"
"""Version of Assay's BLEURT scoring (the ``v:`` field of its signatures)."""


# ---------------------------------------------------------------------------------------------
# Encoding
# ---------------------------------------------------------------------------------------------


def truncate_longest_first(ref: Sequence[int], cand: Sequence[int], max_tokens: int) -> tuple[list[int], list[int]]:
    """Truncate a pair to at most ``max_tokens`` tokens in all, dropping from the end of the
    longer side first (the candidate on ties), exactly as bleurt's ``_truncate_seq_pair``."""
    if max_tokens < 0:
        raise ValueError(f"max_tokens must be >= 0, not {max_tokens}")
    n_ref, n_cand = len(ref), len(cand)
    while n_ref + n_cand > max_tokens:
        if n_ref > n_cand:
            n_ref -= 1
        else:
            n_cand -= 1
    return list(ref[:n_ref]), list(cand[:n_cand])


@dataclass(frozen=True)
class EncodedPair:
    """One ``[CLS] reference [SEP] candidate [SEP]`` input, unpadded."""

    input_ids: list[int]
    token_type_ids: list[int]
    ref_tokens: int
    """reference tokens kept (without special tokens)"""
    cand_tokens: int
    """candidate tokens kept (without special tokens)"""
    dropped: int
    """tokens removed by truncation (0: not truncated)"""

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    def __len__(self) -> int:
        return len(self.input_ids)


def plan_batches(lengths: Sequence[int], token_budget: int, max_batch_size: int) -> list[list[int]]:
    """Indices grouped into batches: sorted by length (longest first, ties by index), each batch
    holding at most ``max_batch_size`` items and ``len(batch) * longest <= token_budget`` padded
    tokens (a single item longer than the budget is a batch of its own)."""
    if token_budget < 1 or max_batch_size < 1:
        raise ValueError("token_budget and max_batch_size must be >= 1")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for i in order:
        if current and ((len(current) + 1) * longest > token_budget or len(current) >= max_batch_size):
            batches.append(current)
            current = []
        if not current:
            longest = lengths[i]
        current.append(i)
    if current:
        batches.append(current)
    return batches


@dataclass
class BleurtResult:
    """Scores in input order plus what happened on the way."""

    scores: np.ndarray
    """float64, one per candidate (the max over its references)"""
    truncated: np.ndarray
    """bool, per candidate: at least one of its (reference, candidate) inputs was truncated"""
    n_pairs: int
    """(reference, candidate) inputs scored"""
    n_truncated_pairs: int
    n_batches: int
    warnings: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# The scorer
# ---------------------------------------------------------------------------------------------


class BleurtScorer:
    """Score candidates against references with a BLEURT-style checkpoint folder.

    ``device``: None or "auto" picks CUDA when available, else the CPU
    (:func:`assay.workers.device.pick_device`); "cpu", "cuda", "cuda:N" name one.
    ``token_budget``: padded token positions per batch; ``max_batch_size`` caps pairs per batch.
    Neither changes the scores beyond float32 rounding of the head output (about 3e-7 on CPU for
    MiniLM; tested at 1e-6), which an affine normalisation multiplies by its ``std``.
    ``expected_digest`` (and the checkpoint's ``name``, for the message): the registered digest the
    folder must still have; a changed one is refused. The folder is hashed here, once per host while
    its files are unchanged (:func:`assay.workers.checkpoint.stamped_digest`): the next process on
    this host that loads it unchanged reads the digest from its verification stamp.
    """

    def __init__(
        self,
        checkpoint: str | Path,
        device: DeviceLike = None,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
        expected_digest: str | None = None,
        name: str | None = None,
    ) -> None:
        if token_budget < 1 or max_batch_size < 1:
            raise ValueError("token_budget and max_batch_size must be >= 1")
        self.folder = Path(checkpoint)
        self.device = pick_device(device)
        self.token_budget = int(token_budget)
        self.max_batch_size = int(max_batch_size)
        # at most one hash of the folder per host while its files are unchanged (a verification
        # stamp, assay.checkpoints.stamps), checked against the registered digest when there is one
        self.digest = (stamped_digest(self.folder) if expected_digest is None
                       else verified_digest(self.folder, expected_digest, name))
        loaded: LoadedCheckpoint = load_checkpoint(self.folder, self.device)
        self.config = loaded.config
        self.model = loaded.model
        self.tokenizer = loaded.tokenizer
        self.max_length = int(self.config.max_length)
        if int(self.config.head["out_dim"]) != 1:
            raise CheckpointError(self.folder, f"head.out_dim is {self.config.head['out_dim']}",
                                  expected="1 (one rating per pair) for BLEURT scoring")
        if int(self.config.encoder_config.get("type_vocab_size", 0) or 0) < 2:
            raise CheckpointError(self.folder, "the encoder has fewer than two token types",
                                  expected="type_vocab_size >= 2 for [CLS] reference [SEP] candidate [SEP]")
        ids = {name: getattr(self.tokenizer, f"{name}_token_id", None) for name in ("cls", "sep", "pad")}
        missing = [name for name, value in ids.items() if value is None]
        if missing:
            raise CheckpointError(self.folder, f"the tokenizer has no {'/'.join(missing)} token",
                                  expected="a BERT-style tokenizer with [CLS], [SEP] and [PAD]")
        self.cls_id = int(ids["cls"])  # type: ignore[arg-type]
        self.sep_id = int(ids["sep"])  # type: ignore[arg-type]
        self.pad_id = int(ids["pad"])  # type: ignore[arg-type]

    # -- encoding ---------------------------------------------------------------------------

    def _tokenize(self, texts: Sequence[str]) -> dict[str, list[int]]:
        unique = list(dict.fromkeys(texts))
        if not unique:
            return {}
        out = self.tokenizer(
            unique, add_special_tokens=False, return_attention_mask=False, return_token_type_ids=False,
            verbose=False,
        )
        return dict(zip(unique, out["input_ids"], strict=True))

    def encode(self, references: Sequence[str], candidates: Sequence[str]) -> list[EncodedPair]:
        """``[CLS] ref [SEP] cand [SEP]`` ids and segment ids per pair, truncated to max_length."""
        if len(references) != len(candidates):
            raise ValueError(f"{len(references)} references but {len(candidates)} candidates")
        for what, texts in (("reference", references), ("candidate", candidates)):
            for i, text in enumerate(texts):
                if not isinstance(text, str):
                    raise TypeError(f"{what} {i} is a {type(text).__name__}, not a str")
        pieces = self._tokenize([*references, *candidates])
        budget = self.max_length - N_SPECIAL_TOKENS
        pairs = []
        for ref_text, cand_text in zip(references, candidates, strict=True):
            ref_full, cand_full = pieces[ref_text], pieces[cand_text]
            ref, cand = truncate_longest_first(ref_full, cand_full, budget)
            input_ids = [self.cls_id, *ref, self.sep_id, *cand, self.sep_id]
            token_type_ids = [0] * (len(ref) + 2) + [1] * (len(cand) + 1)
            dropped = len(ref_full) + len(cand_full) - len(ref) - len(cand)
            pairs.append(EncodedPair(input_ids, token_type_ids, len(ref), len(cand), dropped))
        return pairs

    def collate(self, pairs: Sequence[EncodedPair]) -> dict[str, torch.Tensor]:
        """Pad a batch to its longest pair: ``input_ids``, ``token_type_ids``, ``attention_mask``
        (int64, on the scorer's device)."""
        width = max(len(p) for p in pairs)
        ids = torch.full((len(pairs), width), self.pad_id, dtype=torch.long)
        types = torch.zeros((len(pairs), width), dtype=torch.long)
        mask = torch.zeros((len(pairs), width), dtype=torch.long)
        for row, pair in enumerate(pairs):
            n = len(pair)
            ids[row, :n] = torch.tensor(pair.input_ids, dtype=torch.long)
            types[row, :n] = torch.tensor(pair.token_type_ids, dtype=torch.long)
            mask[row, :n] = 1
        return {
            "input_ids": ids.to(self.device),
            "token_type_ids": types.to(self.device),
            "attention_mask": mask.to(self.device),
        }

    # -- scoring ----------------------------------------------------------------------------

    def _score_encoded(self, pairs: Sequence[EncodedPair]) -> tuple[np.ndarray, int]:
        out = np.empty(len(pairs), dtype=np.float64)
        batches = plan_batches([len(p) for p in pairs], self.token_budget, self.max_batch_size)
        with torch.inference_mode():
            for batch in batches:
                inputs = self.collate([pairs[i] for i in batch])
                raw = self.model(**inputs)[:, 0].to(device="cpu", dtype=torch.float64)
                scores = self.config.denormalise(raw)
                out[np.asarray(batch, dtype=np.int64)] = scores.numpy()
        return out, len(batches)

    def score_detailed(
        self, references: Sequence[str | Sequence[str]], candidates: Sequence[str]
    ) -> BleurtResult:
        """Like :meth:`score`, with truncation counts and batch statistics."""
        if isinstance(references, str) or isinstance(candidates, str):
            raise TypeError("references and candidates must be sequences of strings, not one string")
        if len(references) != len(candidates):
            raise ValueError(f"{len(references)} references but {len(candidates)} candidates")
        owners: list[int] = []
        flat_refs: list[str] = []
        flat_cands: list[str] = []
        for i, (refs, cand) in enumerate(zip(references, candidates, strict=True)):
            ref_list = [refs] if isinstance(refs, str) else list(refs)
            if not ref_list:
                raise ValueError(f"candidate {i} has no reference")
            for ref in ref_list:
                owners.append(i)
                flat_refs.append(ref)
                flat_cands.append(cand)
        # each distinct (reference, candidate) pair is encoded and scored once (systems that
        # produced the same output, repeated references): the model is deterministic at inference
        index: dict[tuple[str, str], int] = {}
        slots = [index.setdefault((ref, cand), len(index)) for ref, cand in zip(flat_refs, flat_cands, strict=True)]
        distinct = self.encode([ref for ref, _ in index], [cand for _, cand in index])
        distinct_scores, n_batches = self._score_encoded(distinct) if distinct else (np.empty(0), 0)
        pairs = [distinct[i] for i in slots]
        pair_scores = distinct_scores[np.asarray(slots, dtype=np.int64)] if slots else np.empty(0)
        owner = np.asarray(owners, dtype=np.int64)
        scores = np.full(len(candidates), -np.inf, dtype=np.float64)
        with np.errstate(invalid="ignore"):  # a NaN score stays NaN; scoring refuses it with a count
            np.maximum.at(scores, owner, pair_scores)
        pair_truncated = np.asarray([p.truncated for p in pairs], dtype=bool)
        truncated = np.zeros(len(candidates), dtype=bool)
        np.logical_or.at(truncated, owner, pair_truncated)
        n_trunc = int(pair_truncated.sum())
        messages = []
        if n_trunc:
            message = (
                f"{n_trunc} of {len(pairs)} reference/candidate pairs were longer than max_length="
                f"{self.max_length} tokens and were truncated (longest side first)"
            )
            messages.append(message)
            log.warning(message)
            warnings.warn(message, TruncationWarning, stacklevel=3)
        return BleurtResult(
            scores=scores,
            truncated=truncated,
            n_pairs=len(pairs),
            n_truncated_pairs=n_trunc,
            n_batches=n_batches,
            warnings=messages,
        )

    def score(self, references: Sequence[str | Sequence[str]], candidates: Sequence[str]) -> np.ndarray:
        """BLEURT scores (float64, input order) of ``candidates[i]`` against ``references[i]``.

        ``references[i]`` is a string or a list of strings; with several references the
        candidate's score is the maximum over them (see the module docstring).
        """
        return self.score_detailed(references, candidates).scores

    # -- provenance -------------------------------------------------------------------------

    def signature_params(self) -> dict[str, Any]:
        """Everything that determines the scores, as flat ``key: value`` pairs for a signature."""
        head = self.config.head
        norm = self.config.normalisation
        if norm["type"] == "affine":
            norm_text = f"affine(mean={float(norm['mean'])!r},std={float(norm['std'])!r})"
        else:
            norm_text = "none"
        return {
            "checkpoint": self.digest,
            "base_encoder": str(self.config.base_encoder.get("name", "")),
            "max_length": self.max_length,
            "head": f"{head['type']}({head['in_dim']}x{head['out_dim']},{head.get('input', 'cls')})",
            "normalisation": norm_text,
            "truncation": "longest_first",
            "multi_ref": MULTI_REFERENCE_RULE,
            "torch": package_version("torch"),
            "transformers": package_version("transformers"),
        }

    def signature_fields(self) -> dict[str, object]:
        """The signature's ``key:value`` fields: :meth:`signature_params` with the checkpoint digest
        shortened as every signature shows digests (``docs/SIGNATURES.md``, :attr:`CheckpointRef.short`)."""
        params = self.signature_params()
        return {**params, "checkpoint": CheckpointRef(str(params["checkpoint"])).short}

    def signature(self) -> str:
        """``bleurt|checkpoint:<short digest>|base_encoder:...|...|v:1|assay:<version>``, the line
        :class:`assay.workers.metrics.BLEURT` gives its scores."""
        return render_signature(METRIC_NAME, self.signature_fields(), METRIC_VERSION)
