"""A sweep's search space, declared in a small TOML (or YAML) file and validated before anything runs.

A sweep searches the trainer's hyper-parameters (:class:`~assay.training.config.TrainConfig`) for
the fine-tuning stage of the BLEURT recipe (Sellam et al., 2020, §3 and appendix B.1, where the
learning rate, batch size and number of steps were chosen on held-out ratings); every trial is one
training stage and is judged by its validation Kendall tau, the number the trainer already keeps
its best step by. The file::

    [trial]                     # what every trial trains
    stage = "finetune"
    data = ["wmt16"]            # stored rated versions (NAME or NAME@VERSION)
    init = "bleurt-pretrain-s12345"   # optional: a registered checkpoint (default: the embedded encoder)
    exclude = ["wmt17"]         # the evaluation sets: never trained on
    [trial.config]              # fixed hyper-parameters of every trial
    epochs = 2
    eval_every = 20

    [params.learning_rate]      # a range: low/high (log = true for a log scale; step for integers)
    low = 1e-5
    high = 1e-4
    log = true
    [params.head_input]         # a choice
    choices = ["cls", "mean"]

    [pruner]                    # Optuna's median rule (Golovin et al., 2017), "halving"
    kind = "median"             # (asynchronous successive halving, Li et al., 2020), or "none"
    startup_trials = 2          # trials that always run to the end
    warmup_evaluations = 1      # validations of a trial before it may be stopped
    reduction_factor = 3        # halving only: a trial goes on past a rung if in the top 1/3 there

    [[enqueue]]                 # optional: values to try first, in order (e.g. the recipe's defaults)
    learning_rate = 3e-5
    head_input = "mean"

Every mistake is one :class:`~assay.errors.InputError` naming the file, the line of the key and
what was expected: an unknown parameter, an empty range, a value of the wrong type.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import InputError
from assay.provenance import json_digest
from assay.training.config import FIELD_TYPES, HEAD_INPUTS, LR_SCHEDULES, TrainConfig

#: the hyper-parameters a sweep may search (TrainConfig fields that change what is learned, not how
#: fast or where), with their type as TrainConfig declares it (:data:`assay.training.config.FIELD_TYPES`)
TUNABLE: dict[str, type] = {name: FIELD_TYPES[name] for name in (
    "learning_rate", "warmup_ratio", "lr_schedule", "weight_decay", "max_grad_norm", "epochs", "batch_size",
    "max_steps", "patience", "head_input", "freeze_embeddings", "group_by_length")}
_CHOICES = {"head_input": HEAD_INPUTS, "lr_schedule": LR_SCHEDULES}
DIGEST_SEPARATORS = (", ", ": ")
"""``json``'s default separators, which a search space's digest was first computed with."""
STAGES = ("finetune",)
PRUNERS = ("median", "halving", "none")
_TRIAL_KEYS = {"stage", "data", "init", "exclude", "config", "groups", "aspect"}
_PRUNER_KEYS = {"kind", "startup_trials", "warmup_evaluations", "reduction_factor"}


@dataclass(frozen=True)
class Param:
    """One searched hyper-parameter: a range (``low``..``high``, optionally log-scaled or stepped) or
    a list of ``choices``."""

    name: str
    kind: str
    """'float', 'int' or 'categorical'"""
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: tuple[Any, ...] = ()


@dataclass(frozen=True)
class SearchSpace:
    """What a sweep's trials train, what they vary, and when a trial is stopped early."""

    path: str
    stage: str
    data: tuple[str, ...]
    params: tuple[Param, ...]
    init: str | None = None
    exclude: tuple[str, ...] = ()
    groups: tuple[str, ...] | None = None
    aspect: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    pruner: str = "median"
    startup_trials: int = 2
    warmup_evaluations: int = 1
    reduction_factor: int = 3
    """``halving``: the share 1/reduction_factor of trials that go on past each rung"""
    enqueue: tuple[dict[str, Any], ...] = ()
    """values to try first, in order, before the sampler chooses (each names every parameter)"""

    def canonical(self) -> dict[str, Any]:
        """Everything that defines the search (not where the file lies), as plain JSON."""
        data = asdict(self)
        data.pop("path")
        data["params"] = [{k: v for k, v in asdict(p).items() if v not in (None, (), False)} | {"name": p.name}
                          for p in self.params]
        if not self.enqueue:
            data.pop("enqueue")  # a space without one keeps the digest it had before [[enqueue]] existed
        if self.pruner != "halving":
            data.pop("reduction_factor")  # as enqueue: only what acts is part of the search
        return json.loads(json.dumps(data, sort_keys=True))

    @classmethod
    def from_canonical(cls, data: Mapping[str, Any], path: str = "") -> SearchSpace:
        """The space :meth:`canonical` wrote (as a sweep's study keeps it)."""
        values = dict(data)
        values["params"] = tuple(Param(**{**p, "choices": tuple(p.get("choices", ()))}) for p in data["params"])
        for key in ("data", "exclude"):
            values[key] = tuple(values.get(key) or ())
        if values.get("groups") is not None:
            values["groups"] = tuple(values["groups"])
        values["enqueue"] = tuple(dict(v) for v in values.get("enqueue") or ())
        return cls(path=path, **values)

    @property
    def digest(self) -> str:
        """sha256 of :meth:`canonical` (:func:`assay.provenance.json_digest`), with the separators
        it was first computed with (:data:`DIGEST_SEPARATORS`): a study keeps it (``space_digest``)
        and so does every trial's checkpoint lineage, so it must not change."""
        return json_digest(self.canonical(), separators=DIGEST_SEPARATORS)

    def trial_config(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """A trial's TrainConfig fields: the fixed ones, then the sampled ``values``."""
        config = {**self.config, **values}
        if "max_steps" in values:
            config.pop("epochs", None)
        if "epochs" in values:
            config.pop("max_steps", None)
        return config


def changes(old: Any, new: Any, prefix: str = "") -> list[str]:
    """What differs between two canonical spaces, one ``key: old -> new`` line each."""
    out = []
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new)):
            out += changes(old.get(key), new.get(key), f"{prefix}{key}.")
        return out
    if isinstance(old, list) and isinstance(new, list) and all(isinstance(p, dict) and "name" in p
                                                               for p in old + new):
        return changes({p["name"]: p for p in old}, {p["name"]: p for p in new}, prefix)
    if old != new:
        out.append(f"{prefix.rstrip('.')}: {json.dumps(old)} -> {json.dumps(new)}")
    return out


def load_space(path: str | Path) -> SearchSpace:
    """Read and validate a search-space file (``.toml``, or ``.yaml``/``.yml``)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(path, f"cannot read the search space: {exc.strerror or exc}") from exc
    data = _parse(path, text)
    where = _Where(path, text)
    unknown = sorted(set(data) - {"trial", "params", "pruner", "enqueue"})
    if unknown:
        raise where.error(unknown[0], None, f"unknown table {unknown[0]!r}",
                          "the tables trial, params, pruner and enqueue")
    trial = _table(data, "trial", where, required=True)
    bad = sorted(set(trial) - _TRIAL_KEYS)
    if bad:
        raise where.error("trial", bad[0], f"unknown key 'trial.{bad[0]}'", f"one of {', '.join(sorted(_TRIAL_KEYS))}")
    stage = trial.get("stage", "finetune")
    if stage not in STAGES:
        raise where.error("trial", "stage", f"key 'trial.stage' is {stage!r}", "'finetune'")
    data_versions = _strings(trial.get("data"), "trial", "data", where, required=True)
    exclude = _strings(trial.get("exclude", []), "trial", "exclude", where)
    groups = _strings(trial["groups"], "trial", "groups", where) if "groups" in trial else None
    init = trial.get("init")
    if init is not None and not (isinstance(init, str) and init.strip()):
        raise where.error("trial", "init", "key 'trial.init' is not a checkpoint name", "a registered checkpoint name")
    aspect = trial.get("aspect")
    if aspect is not None and not isinstance(aspect, str):
        raise where.error("trial", "aspect", "key 'trial.aspect' is not a string", "an aspect name")
    config = _table(trial, "config", where, parent="trial")
    for key in config:
        if key not in TrainConfig.__dataclass_fields__:
            raise where.error("trial.config", key, f"unknown key 'trial.config.{key}'", "a TrainConfig field")
    params_table = _table(data, "params", where, required=True)
    if not params_table:
        raise where.error("params", None, "no parameters to search", "at least one [params.NAME] table")
    params = tuple(_param(name, spec, where) for name, spec in params_table.items())
    clash = sorted(set(config) & {p.name for p in params})
    if clash:
        raise where.error("trial.config", clash[0], f"'{clash[0]}' is both fixed (trial.config) and searched "
                          f"(params.{clash[0]})", "each hyper-parameter in one place")
    pruner = _table(data, "pruner", where)
    bad = sorted(set(pruner) - _PRUNER_KEYS)
    if bad:
        raise where.error("pruner", bad[0], f"unknown key 'pruner.{bad[0]}'",
                          f"one of {', '.join(sorted(_PRUNER_KEYS))}")
    kind = pruner.get("kind", "median")
    if kind not in PRUNERS:
        raise where.error("pruner", "kind", f"key 'pruner.kind' is {kind!r}", "'median', 'halving' or 'none'")
    counts = {}
    for key, default, least in (("startup_trials", 2, 0), ("warmup_evaluations", 1, 0), ("reduction_factor", 3, 2)):
        value = pruner.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise where.error("pruner", key, f"key 'pruner.{key}' is {value!r}", f"an integer >= {least}")
        counts[key] = value
    enqueue = _enqueued(data.get("enqueue", []), params, where)
    space = SearchSpace(path=str(path), stage=stage, data=data_versions, params=params, init=init,
                        exclude=exclude, groups=groups, aspect=aspect, config=dict(config), pruner=kind,
                        enqueue=enqueue, **counts)
    _check_trial_configs(space, where)
    return space


def _enqueued(entries: Any, params: tuple[Param, ...], where: _Where) -> tuple[dict[str, Any], ...]:
    """``[[enqueue]]``: each entry gives every parameter a value inside its range or choices."""
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        raise where.error("enqueue", None, "'enqueue' is not a list of tables", "[[enqueue]] tables")
    by_name = {p.name: p for p in params}
    out = []
    for entry in entries:
        unknown = sorted(set(entry) - set(by_name))
        if unknown:
            raise where.error("enqueue", unknown[0], f"[[enqueue]] names {unknown[0]!r}, which is not searched",
                              f"values for the searched parameters ({', '.join(by_name)})")
        missing = [name for name in by_name if name not in entry]
        if missing:
            raise where.error("enqueue", None, f"an [[enqueue]] entry has no value for {missing[0]!r}",
                              "a value for every searched parameter")
        for name, value in entry.items():
            param = by_name[name]
            if param.kind == "categorical":
                fits = value in param.choices
            else:
                assert param.low is not None and param.high is not None
                fits = _is(value, TUNABLE[name]) and param.low <= value <= param.high
            if not fits:
                allowed = (f"one of {list(param.choices)}" if param.kind == "categorical"
                           else f"a {TUNABLE[name].__name__} in [{param.low}, {param.high}]")
                raise where.error("enqueue", name, f"[[enqueue]] gives {name} = {value!r}", allowed)
        out.append(dict(entry))
    return tuple(out)


def _check_trial_configs(space: SearchSpace, where: _Where) -> None:
    """The fixed config with each parameter at its bounds must be a valid TrainConfig."""
    from assay.errors import UsageError

    probes: list[dict[str, Any]] = [{}]
    for p in space.params:
        probes += [{p.name: v} for v in ((p.low, p.high) if p.kind != "categorical" else p.choices)]
    for values in probes:
        config = space.trial_config(values)
        if "max_steps" not in config and "epochs" not in config:
            config["epochs"] = 1.0
        try:
            TrainConfig(**config)
        except (UsageError, TypeError) as exc:
            name = next(iter(values), None)
            named = re.search(r"TrainConfig\.(\w+)", str(exc))
            if name:
                table, key = "params", name
            elif named and named[1] in space.config:
                table, key = "trial.config", named[1]
            else:
                table, key = "trial", "config"
            raise where.error(table, key, f"the trainer refuses {values or space.config}: {exc}",
                              "values TrainConfig accepts") from exc


def _param(name: str, spec: Any, where: _Where) -> Param:
    table = f"params.{name}"
    if name not in TUNABLE:
        raise where.error("params", name, f"unknown parameter {name!r}",
                          f"one of {', '.join(sorted(TUNABLE))}")
    if not isinstance(spec, Mapping):
        raise where.error("params", name, f"'params.{name}' is not a table", "low/high or choices")
    kind = TUNABLE[name]
    allowed = {"choices"} if "choices" in spec else {"low", "high", "log", "step"}
    bad = sorted(set(spec) - allowed)
    if bad:
        raise where.error(table, bad[0], f"unexpected key '{table}.{bad[0]}'",
                          "choices alone, or low, high and optionally log or step")
    if "choices" in spec:
        choices = spec["choices"]
        if not isinstance(choices, list) or not choices:
            raise where.error(table, "choices", f"'{table}.choices' is empty or not a list", "a non-empty list")
        for value in choices:
            if not _is(value, kind):
                raise where.error(table, "choices", f"'{table}.choices' holds {value!r}",
                                  f"{kind.__name__} values for {name}")
            if name in _CHOICES and value not in _CHOICES[name]:
                raise where.error(table, "choices", f"'{table}.choices' holds {value!r}",
                                  f"one of {', '.join(_CHOICES[name])}")
        if len(set(map(json.dumps, choices))) < len(choices):
            raise where.error(table, "choices", f"'{table}.choices' repeats a value", "distinct values")
        return Param(name, "categorical", choices=tuple(choices))
    if kind in (str, bool):
        raise where.error(table, None, f"'{name}' takes choices, not a range", f"{table}.choices = [...]")
    for key in ("low", "high"):
        if key not in spec:
            raise where.error(table, None, f"'{table}' has no {key}", "low and high")
        value = spec[key]
        if not _is(value, kind) or not math.isfinite(float(value)):
            raise where.error(table, key, f"'{table}.{key}' is {value!r}", f"a finite {kind.__name__}")
    low, high = spec["low"], spec["high"]
    if not low < high:
        raise where.error(table, "high", f"the range of '{name}' is empty: low {low!r} >= high {high!r}", "low < high")
    log = spec.get("log", False)
    if not isinstance(log, bool):
        raise where.error(table, "log", f"'{table}.log' is {log!r}", "true or false")
    if log and low <= 0:
        raise where.error(table, "low", f"'{table}.low' is {low!r} on a log scale", "low > 0 with log = true")
    step = spec.get("step")
    if step is not None and (not _is(step, kind) or step <= 0 or (log and step is not None)):
        raise where.error(table, "step", f"'{table}.step' is {step!r}", f"a positive {kind.__name__}, without log")
    return Param(name, kind.__name__, low=low, high=high, log=log, step=step)


def _is(value: Any, kind: type) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind is float:
        return isinstance(value, int | float)
    return isinstance(value, kind)


def _parse(path: Path, text: str) -> dict[str, Any]:
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise InputError(path, f"not valid YAML: {getattr(exc, 'problem', exc)}",
                             line=mark.line + 1 if mark else None, expected="a YAML mapping") from exc
    elif path.suffix.lower() == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            found = re.search(r"line (\d+)", str(exc))
            raise InputError(path, f"not valid TOML: {exc}", line=int(found[1]) if found else None,
                             expected="a TOML document") from exc
    else:
        raise InputError(path, f"unknown search-space format {path.suffix!r}", expected=".toml, .yaml or .yml")
    if not isinstance(data, dict):
        raise InputError(path, "the search space is not a mapping", line=1, expected="tables trial and params")
    return data


def _table(data: Mapping[str, Any], key: str, where: _Where, *, required: bool = False,
           parent: str | None = None) -> dict[str, Any]:
    name = f"{parent}.{key}" if parent else key
    if key not in data:
        if required:
            raise where.error(name, None, f"no [{name}] table", f"a [{name}] table")
        return {}
    value = data[key]
    if not isinstance(value, Mapping):
        raise where.error(parent or key, key if parent else None, f"'{name}' is not a table", f"a [{name}] table")
    return dict(value)


def _strings(value: Any, table: str, key: str, where: _Where, *, required: bool = False) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value) or (
            required and not value):
        raise where.error(table, key, f"key '{table}.{key}' is {value!r}",
                          "a non-empty list of names" if required else "a list of names")
    return tuple(value)


@dataclass
class _Where:
    """Finds the line of a table or key in the file's text, for the error message."""

    path: Path
    text: str

    def line(self, table: str, key: str | None) -> int | None:
        lines = self.text.splitlines()
        start = 0
        header = re.compile(r"^\s*\[{1,2}\s*" + re.escape(table) + r"\s*\]{1,2}\s*(#.*)?$")
        for i, text in enumerate(lines):
            if header.match(text) or re.match(r"^\s*" + re.escape(table.split(".")[-1]) + r"\s*:\s*$", text):
                start = i
                if key is None:
                    return i + 1
                break
        else:
            if key is None:
                return None
        if key is None:
            return None
        pattern = re.compile(r"^\s*(-\s*)?[\"']?" + re.escape(key) + r"[\"']?\s*[=:]|^\s*\[{1,2}\s*" +
                             re.escape(f"{table}.{key}") + r"\s*\]")
        for i in range(start, len(lines)):
            if pattern.match(lines[i]):
                return i + 1
        return None

    def error(self, table: str, key: str | None, problem: str, expected: str) -> InputError:
        return InputError(self.path, problem, line=self.line(table, key), expected=expected)
