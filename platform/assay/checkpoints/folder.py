"""A learned-metric checkpoint folder as files: its format, its JSON description read and checked,
and its content digest. Nothing here imports torch: registering, scanning and verifying a folder's
digest are file operations, and a command that only reads folders (``assay checkpoints scan``, the
nightly sweep's watched folders) starts without the model stack. Building, loading and saving the
model a folder holds is :mod:`assay.workers.checkpoint`, whose docstring gives the format in full
(Sellam et al., 2020, §3 and appendix A.2: an encoder, a linear head and the ratings' normalisation).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.checkpoints.stamps import digest_if_unchanged, digest_once
from assay.config import Settings, load_settings
from assay.errors import CheckpointError
from assay.provenance import short
from assay.training.config import HEAD_INPUTS

__all__ = [
    "CONFIG_FILE", "ENCODER_PREFIX", "FORMAT_NAME", "FORMAT_VERSION", "HEAD_PREFIX", "PICKLE_SUFFIXES",
    "SIGNAL_KINDS", "SIGNAL_PREFIX", "WEIGHTS_FILE", "CheckpointConfig", "SignalHeadSpec", "checkpoint_digest",
    "checkpoint_files", "digest_from_stamp", "read_config", "stamped_digest", "valid_signal_name",
    "validate_config", "verified_digest",
]

FORMAT_NAME = "assay-learned-metric-checkpoint"
FORMAT_VERSION = 1
CONFIG_FILE = "assay_checkpoint.json"
WEIGHTS_FILE = "model.safetensors"
ENCODER_PREFIX = "encoder."
HEAD_PREFIX = "head."
SIGNAL_PREFIX = "signal_heads."
SIGNAL_KINDS = ("regression", "classification")
_SIGNAL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")

@functools.cache
def _reserved_names() -> frozenset[str]:
    """Names a torch ``ModuleDict`` cannot hold as keys (its own attributes: "keys", "update",
    "training", ...). torch is imported here, on the first checkpoint with signal heads, not when
    this module is."""
    from torch import nn

    return frozenset(dir(nn.ModuleDict()))


@dataclass(frozen=True)
class SignalHeadSpec:
    """One entry of ``signal_heads`` in ``assay_checkpoint.json`` (see the module docstring): a
    pre-training signal's head (Sellam et al., 2020, §4.3 and Table 1)."""

    name: str
    kind: str
    """``regression`` or ``classification``"""
    out_dim: int
    weight: float = 1.0
    """γ_k, the task's weight in the pre-training loss (eq. 1)"""
    normalisation: Mapping[str, Any] = field(default_factory=lambda: {"type": "none"})

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "out_dim": int(self.out_dim), "weight": float(self.weight),
                "normalisation": dict(self.normalisation)}


@dataclass
class CheckpointConfig:
    """The content of ``assay_checkpoint.json`` (see the module docstring for the schema)."""

    base_encoder: dict[str, Any]
    max_length: int
    head: dict[str, Any]
    normalisation: dict[str, Any]
    encoder_config: dict[str, Any]
    tokenizer_files: list[str] = field(default_factory=list)
    created_at: str = ""
    lineage: dict[str, Any] = field(default_factory=dict)
    software: dict[str, Any] = field(default_factory=dict)
    weights: dict[str, Any] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION
    signal_heads: list[dict[str, Any]] = field(default_factory=list)
    """the ``signal_heads`` entries (empty: the key is absent)"""

    def to_json(self) -> dict[str, Any]:
        data = {
            "format": FORMAT_NAME,
            "format_version": self.format_version,
            "base_encoder": self.base_encoder,
            "max_length": self.max_length,
            "head": self.head,
            "normalisation": self.normalisation,
            "encoder_config": self.encoder_config,
            "tokenizer_files": self.tokenizer_files,
            "weights": self.weights,
            "created_at": self.created_at,
            "lineage": self.lineage,
            "software": self.software,
        }
        if self.signal_heads:
            data["signal_heads"] = self.signal_heads
        return data

    def signal_specs(self) -> list[SignalHeadSpec]:
        """The signal heads as :class:`SignalHeadSpec` (in the JSON's order)."""
        return [SignalHeadSpec(h["name"], h["kind"], int(h["out_dim"]), float(h["weight"]), dict(h["normalisation"]))
                for h in self.signal_heads]

    def denormalise(self, raw: Any) -> Any:
        """Map head outputs (a tensor or an array) back to the rating scale (undo the standardisation of
        appendix A.2)."""
        if self.normalisation["type"] == "affine":
            return raw * float(self.normalisation["std"]) + float(self.normalisation["mean"])
        return raw


def _fail(path: Path, problem: str, expected: str | None = None) -> CheckpointError:
    return CheckpointError(path, problem, expected=expected)


def _require(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], path: Path, where: str = "") -> Any:
    name = f"{where}{key}"
    if key not in data:
        raise _fail(path, f"missing key '{name}'")
    value = data[key]
    # bool is an int subclass: refuse it where a number is expected
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
        raise _fail(path, f"key '{name}' has the wrong type ({type(value).__name__})", expected=_kind_name(kind))
    return value


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in _as_tuple(kind))


def validate_config(data: Any, path: Path) -> CheckpointConfig:
    """Check a parsed ``assay_checkpoint.json``; errors name ``path`` and the offending key."""
    if not isinstance(data, dict):
        raise _fail(path, f"the top level is a {type(data).__name__}", expected="a JSON object")
    fmt = _require(data, "format", str, path)
    if fmt != FORMAT_NAME:
        raise _fail(path, f"key 'format' is {fmt!r}", expected=repr(FORMAT_NAME))
    version = _require(data, "format_version", int, path)
    if version != FORMAT_VERSION:
        raise _fail(
            path,
            f"key 'format_version' is {version}, which this version of Assay cannot read",
            expected=str(FORMAT_VERSION),
        )
    base = _require(data, "base_encoder", dict, path)
    _require(base, "name", str, path, "base_encoder.")
    _require(base, "source", str, path, "base_encoder.")
    max_length = _require(data, "max_length", int, path)
    if max_length < 4:
        raise _fail(path, f"key 'max_length' is {max_length}", expected="an integer >= 4")

    head = _require(data, "head", dict, path)
    head_type = _require(head, "type", str, path, "head.")
    if head_type != "linear":
        raise _fail(path, f"key 'head.type' is {head_type!r}", expected="'linear'")
    in_dim = _require(head, "in_dim", int, path, "head.")
    out_dim = _require(head, "out_dim", int, path, "head.")
    if in_dim < 1 or out_dim < 1:
        raise _fail(path, "keys 'head.in_dim'/'head.out_dim' must be positive", expected="integers >= 1")
    head_input = head.get("input", "cls")
    if head_input not in HEAD_INPUTS:
        raise _fail(path, f"key 'head.input' is {head_input!r}", expected=" or ".join(map(repr, HEAD_INPUTS)))

    norm = _require(data, "normalisation", dict, path)
    _validate_normalisation(norm, path, "normalisation.")

    enc = _require(data, "encoder_config", dict, path)
    _require(enc, "model_type", str, path, "encoder_config.")
    hidden = enc.get("hidden_size")
    if isinstance(hidden, int) and hidden != in_dim:
        raise _fail(path, f"key 'head.in_dim' is {in_dim} but encoder_config.hidden_size is {hidden}",
                    expected="equal sizes")
    max_pos = enc.get("max_position_embeddings")
    if isinstance(max_pos, int) and max_length > max_pos:
        raise _fail(path, f"key 'max_length' is {max_length} but the encoder has {max_pos} positions",
                    expected=f"max_length <= {max_pos}")
    tok_files = _require(data, "tokenizer_files", list, path)
    if not tok_files or not all(isinstance(n, str) and n and "/" not in n and "\\" not in n for n in tok_files):
        raise _fail(path, "key 'tokenizer_files' must list the tokenizer's file names",
                    expected="a non-empty list of plain file names")
    weights = _require(data, "weights", dict, path)
    wfile = _require(weights, "file", str, path, "weights.")
    if wfile != WEIGHTS_FILE:
        raise _fail(path, f"key 'weights.file' is {wfile!r}", expected=repr(WEIGHTS_FILE))
    created_at = _require(data, "created_at", str, path)
    lineage = _require(data, "lineage", dict, path)
    parent = lineage.get("parent_digest")
    if parent is not None and not isinstance(parent, str):
        raise _fail(path, "key 'lineage.parent_digest' has the wrong type", expected="a hex digest or null")
    software = data.get("software", {})
    signal_heads = _validate_signal_heads(data.get("signal_heads", []), path)
    return CheckpointConfig(
        base_encoder=dict(base),
        max_length=max_length,
        head={"type": head_type, "in_dim": in_dim, "out_dim": out_dim, "input": head_input},
        normalisation=dict(norm),
        encoder_config=dict(enc),
        tokenizer_files=list(tok_files),
        created_at=created_at,
        lineage=dict(lineage),
        software=dict(software) if isinstance(software, dict) else {},
        weights=dict(weights),
        format_version=version,
        signal_heads=signal_heads,
    )


def _validate_normalisation(norm: Mapping[str, Any], path: Path, where: str) -> None:
    norm_type = _require(norm, "type", str, path, where)
    if norm_type == "affine":
        mean = _require(norm, "mean", (int, float), path, where)
        std = _require(norm, "std", (int, float), path, where)
        if not math.isfinite(mean) or not math.isfinite(std) or std <= 0:
            raise _fail(
                path, f"keys '{where}mean'/'{where}std' are {mean}/{std}",
                expected="a finite mean and a finite std > 0",
            )
    elif norm_type != "none":
        raise _fail(path, f"key '{where}type' is {norm_type!r}", expected="'affine' or 'none'")


def valid_signal_name(name: str) -> bool:
    """Whether ``name`` can name a signal head (and its ``signal_heads.<name>.*`` tensors)."""
    return bool(_SIGNAL_NAME.fullmatch(name)) and name not in _reserved_names()


def _validate_signal_heads(entries: Any, path: Path) -> list[dict[str, Any]]:
    """The optional ``signal_heads`` list (see the module docstring)."""
    if not isinstance(entries, list):
        raise _fail(path, f"key 'signal_heads' has the wrong type ({type(entries).__name__})",
                    expected="a list of head descriptions")
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        where = f"signal_heads[{i}]."
        if not isinstance(entry, dict):
            raise _fail(path, f"key 'signal_heads[{i}]' has the wrong type ({type(entry).__name__})",
                        expected="an object with name, kind, out_dim, weight, normalisation")
        name = _require(entry, "name", str, path, where)
        if not valid_signal_name(name) or name in seen:
            raise _fail(path, f"key '{where}name' is {name!r}" + (" (a duplicate)" if name in seen else ""),
                        expected="a unique name of 1-64 letters, digits, '_' or '-', starting with a letter "
                        "(and not a torch ModuleDict attribute such as 'keys' or 'update')")
        seen.add(name)
        kind = _require(entry, "kind", str, path, where)
        if kind not in SIGNAL_KINDS:
            raise _fail(path, f"key '{where}kind' is {kind!r}", expected=" or ".join(map(repr, SIGNAL_KINDS)))
        out_dim = _require(entry, "out_dim", int, path, where)
        if (kind == "regression" and out_dim != 1) or (kind == "classification" and out_dim < 2):
            raise _fail(path, f"key '{where}out_dim' is {out_dim} for a {kind} head",
                        expected="1 for regression, >= 2 classes for classification")
        weight = _require(entry, "weight", (int, float), path, where)
        if not math.isfinite(weight) or weight < 0:
            raise _fail(path, f"key '{where}weight' is {weight}", expected="a finite weight >= 0")
        norm = _require(entry, "normalisation", dict, path, where)
        _validate_normalisation(norm, path, f"{where}normalisation.")
        if kind == "classification" and norm["type"] != "none":
            raise _fail(path, f"key '{where}normalisation.type' is {norm['type']!r} for a classification head",
                        expected="'none' (logits are not standardised)")
        out.append({"name": name, "kind": kind, "out_dim": out_dim, "weight": float(weight),
                    "normalisation": dict(norm)})
    return out


def read_config(folder: str | Path) -> CheckpointConfig:
    """Read and validate ``FOLDER/assay_checkpoint.json`` (no weights are touched)."""
    folder = Path(folder)
    path = folder / CONFIG_FILE
    if not folder.is_dir():
        raise _fail(folder, "is not a checkpoint folder (no such directory)")
    if not path.is_file():
        _refuse_pickle_only(folder)
        raise _fail(path, "missing: not an Assay checkpoint folder", expected=f"{CONFIG_FILE} beside {WEIGHTS_FILE}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        raise CheckpointError(path, f"not valid JSON: {exc}", line=line) from exc
    return validate_config(data, path)


def _refuse_pickle_only(folder: Path) -> None:
    if (folder / WEIGHTS_FILE).is_file():
        return
    pickles = sorted(p.name for p in folder.iterdir() if p.is_file() and p.name.lower().endswith(PICKLE_SUFFIXES))
    if pickles:
        raise _fail(
            folder,
            f"holds only pickle-format weights ({', '.join(pickles)}), which Assay never loads "
            "(unpickling can run arbitrary code)",
            expected=f"{WEIGHTS_FILE}; convert the weights with safetensors and save them with save_checkpoint",
        )


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def checkpoint_files(folder: str | Path) -> list[str]:
    """The files a checkpoint consists of (sorted): weights, JSON and the listed tokenizer files."""
    config = read_config(folder)
    return sorted({WEIGHTS_FILE, CONFIG_FILE, *config.tokenizer_files})


def stamped_digest(folder: str | Path, settings: Settings | None = None, *, reuse: bool = True) -> str:
    """:func:`checkpoint_digest` of ``folder``, hashed at most once per host while its files are
    unchanged: a folder hashed before on this host, whose files all keep their size, modification
    time and inode, takes the digest from its verification stamp
    (:func:`assay.checkpoints.stamps.digest_once`; ``reuse=False`` hashes in full regardless)."""
    folder = Path(folder)
    return digest_once(settings or load_settings(), folder, checkpoint_files(folder), checkpoint_digest, reuse=reuse)


def digest_from_stamp(folder: str | Path, settings: Settings | None = None) -> str | None:
    """The digest of ``folder`` from this host's verification stamp when none of its files changed
    since it was hashed; None otherwise. Nothing is hashed."""
    folder = Path(folder)
    return digest_if_unchanged(settings or load_settings(), folder, checkpoint_files(folder))


def verified_digest(folder: str | Path, expected: str, name: str | None = None,
                    settings: Settings | None = None) -> str:
    """Check that ``folder`` still has the registered ``expected`` digest, hashing it at most once
    per host while its files are unchanged (:func:`stamped_digest`); a folder changed since it was
    registered is a :class:`CheckpointError` naming the checkpoint, the folder and both digests.
    A stamp only confirms: a folder is refused after a full hash, never on a stamp's word."""
    found = stamped_digest(folder, settings)
    if found != expected:
        found = stamped_digest(folder, settings, reuse=False)
    if found != expected:
        label = f"checkpoint {name!r}" if name else f"checkpoint {short(expected)}"
        raise CheckpointError(Path(folder), f"changed since {label} was registered: its files now have digest "
                              f"{found}, the registered digest is {expected}",
                              expected="the registered content (register the changed folder as a new checkpoint)")
    return found


def checkpoint_digest(folder: str | Path) -> str:
    """sha256 identifying a checkpoint's content, for metric signatures and the catalog.

    Over the files of :func:`checkpoint_files` in sorted name order, the digest hashes
    ``name + "\\0" + sha256(file content) + "\\n"`` for each; other files in the folder are ignored.
    Any change to the weights, the JSON (including ``created_at`` and lineage) or the tokenizer
    changes it.
    """
    folder = Path(folder)
    h = hashlib.sha256()
    for name in checkpoint_files(folder):
        path = folder / name
        if not path.is_file():
            raise _fail(path, "missing", expected="every file of the checkpoint")
        h.update(f"{name}\0{_file_sha256(path)}\n".encode())
    return h.hexdigest()
