"""The BLEURT recipe (Sellam et al., 2020): synthetic pre-training (§4) → fine-tuning on WMT
ratings (§3, §5.1) → optionally fine-tuning on WebNLG (§5.3, "BLEURT was trained in three
steps").

A recipe is a plan of stages; it names the datasets it evaluates on, and none of its stages may
draw from them (the synthetic corpus excludes them, fine-tuning refuses them), so the lineage of
every checkpoint it makes shows the exclusion.

Default sizes are for this project's 2-core CPU machines: 64 minutes alone on an AVX2 host, 39 on an AVX-512 one
(docs/RECIPE.md):
80,000 synthetic pairs pre-trained for one epoch, then six epochs over WMT16's to-English ratings (the paper
pre-trains BERT-large for 800,000 steps on 6.5 million pairs and fine-tunes for 40,000 steps).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from assay.config import DEFAULT_SEED
from assay.errors import UsageError
from assay.synthetic.spec import PerturbationSpec, SignalSpec, SynthesisSpec
from assay.training.config import DEFAULT_POOLING, HEAD_INPUTS
from assay.training.plan import check_not_excluded

#: offline signals of Table 1 (no translation or NLI model needed) plus chrF
DEFAULT_SIGNALS = ("bleu", "rouge", "chrf", "bertscore", "backtrans_flag")


def _pretrain_defaults() -> dict[str, Any]:
    # a validation every 1,000 steps (and after the last): one on 10 % of 80,000 pairs costs 60-90 s
    # on the CPU, and at 250 they took 15 of the recipe's minutes while every run's best step was its
    # last (docs/RECIPE.md); saves stay every 250 steps, so a killed run loses little.
    # unfreeze [[0, 4]]: the top four of MiniLM's six blocks (and the heads) learn the synthetic
    # signals; the embeddings and the bottom two blocks stay as the encoder was trained, and cost no
    # backward pass (a step about a quarter cheaper on the CPU); fine-tuning trains every block
    return {"epochs": 1.0, "learning_rate": 5e-5, "warmup_ratio": 0.1, "eval_every": 1000, "save_every": 250,
            "unfreeze": [[0, 4]]}


def _finetune_defaults() -> dict[str, Any]:
    # six epochs: at four, every run's best validation was its last step; six gave +0.29 and +0.53
    # WMT17 tau (seeds 2 and 12345) over four from the same pre-trained checkpoints (docs/RECIPE.md).
    # 5e-5 held through the first epoch, then a linear decay to 0 ("hold-epoch"): level with 3e-5 and a
    # linear decay on both validation sources (WMT16's held-out items, WMT18's systems; two seeds),
    # and one epoch of it learns as much as a plain loop (WMT17 42.34 against 31.85; docs/RECIPE.md)
    return {"epochs": 6.0, "learning_rate": 5e-5, "warmup_ratio": 0.1, "lr_schedule": "hold-epoch",
            "eval_every": 95, "save_every": 95, "patience": 4}


def _webnlg_defaults() -> dict[str, Any]:
    return {**_finetune_defaults(), "epochs": 4.0}


RECIPE = "bleurt"
"""The recipe's name, as ``assay train --recipe`` takes it and a checkpoint's lineage records it."""


@dataclass(frozen=True)
class BleurtRecipe:
    """The stages and their settings; every field is recorded with the recipe's run."""

    evaluate_on: tuple[str, ...] = ("wmt17",)
    """datasets the resulting metric is evaluated on: never trained on, never drawn from"""
    sources: tuple[str, ...] = ("wmt16", "wmt18")
    """datasets the synthetic sentences are drawn from"""
    synthetic: str | None = None
    """an existing synthetic version to pre-train on instead of synthesizing"""
    pretrained: str | None = None
    """an existing pre-trained checkpoint (name, digest or folder) to fine-tune instead of synthesizing
    and pre-training: the recipe's later stages re-run over the same first two (its lineage names it)"""
    n_pairs: int = 80_000
    """synthetic pairs: at 40,000 three seeds averaged 49.85 WMT17 tau, short of 50 (docs/RECIPE.md)"""
    signals: tuple[str, ...] = DEFAULT_SIGNALS
    mask_filling_share: float = 0.5
    """share of pairs made by mask filling; the rest are WMT system outputs (backtranslation's stand-in)"""
    word_dropping_share: float = 0.3
    failure_modes_share: float = 0.1
    """share of pairs that are MetricX-24's degenerate candidates (``failure_modes``: empty, gibberish,
    unrelated, under-translated, duplicated, a copy; Juraska et al., 2024, §3), taken from mask filling
    and system outputs in proportion. 0.1 since 2026-11-28, chosen on validation only: level on WMT16's
    held-out items, ahead on WMT18's systems by Kendall tau, at the same cost (docs/RECIPE.md); 0 leaves
    the corpus as it was before"""
    masked_lm: str | None = None
    """a Hugging Face masked LM for mask filling (default: the offline n-gram filler)"""
    pretraining: bool = True
    """False: fine-tune the encoder directly (the paper's "BLEURT -pre" ablation)"""
    finetune_data: tuple[str, ...] = ("wmt16",)
    webnlg: str | None = None
    """a WebNLG version for the third stage (§5.3), or None"""
    webnlg_aspect: str = "semantics"
    init: str | None = None
    """the encoder to start from (default: the embedded all-MiniLM-L6-v2)"""
    pooling: str = DEFAULT_POOLING
    """what the heads read (TrainConfig.head_input): 'mean' (the default, :data:`DEFAULT_POOLING`) or
    'cls' (the paper's v[CLS], §3)"""
    seed: int = DEFAULT_SEED
    name: str = "bleurt"
    """prefix of the checkpoints' names"""
    pretrain: dict[str, Any] = field(default_factory=_pretrain_defaults)
    finetune: dict[str, Any] = field(default_factory=_finetune_defaults)
    webnlg_finetune: dict[str, Any] = field(default_factory=_webnlg_defaults)

    def validate(self) -> BleurtRecipe:
        if not self.evaluate_on:
            raise UsageError("the recipe needs --evaluate-on: the datasets it must never train on")
        check_not_excluded(self.sources, self.evaluate_on, "the synthetic corpus")
        check_not_excluded(self.finetune_data, self.evaluate_on, "fine-tuning")
        if self.webnlg:
            check_not_excluded([self.webnlg], self.evaluate_on, "WebNLG fine-tuning")
        if not self.finetune_data:
            raise UsageError("the recipe fine-tunes on rated data: give --finetune-data")
        if self.pretrained and (not self.pretraining or self.synthetic):
            raise UsageError("recipe: pretrained names the pre-trained checkpoint to fine-tune; it goes with "
                             "pretraining = true and without synthetic (nothing is synthesized or pre-trained)")
        if not 0.0 <= self.failure_modes_share < 1.0:
            raise UsageError(f"recipe: failure_modes_share {self.failure_modes_share!r}; expected a share in [0, 1)")
        if self.pooling not in HEAD_INPUTS:
            raise UsageError(f"recipe: pooling {self.pooling!r}; expected one of {', '.join(HEAD_INPUTS)}")
        return self

    def synthesis_spec(self) -> SynthesisSpec:
        """The synthetic corpus (§4.1): mask filling and system outputs, word dropping on a share, and
        MetricX-24's failure modes on a share of their own when ``failure_modes_share`` is set."""
        perturbation = "mask_filling_mlm" if self.masked_lm else "mask_filling"
        params = {"model": self.masked_lm} if self.masked_lm else {}
        rest = 1.0 - self.failure_modes_share
        base: tuple[PerturbationSpec, ...] = (
            PerturbationSpec(perturbation, round(self.mask_filling_share * rest, 6), params),
            PerturbationSpec("system_outputs", round((1 - self.mask_filling_share) * rest, 6)))
        if self.failure_modes_share:
            base += (PerturbationSpec("failure_modes", self.failure_modes_share),)
        return SynthesisSpec(
            sources=self.sources, exclude=self.evaluate_on, n_pairs=self.n_pairs,
            perturbations=(*base, PerturbationSpec("word_dropping", self.word_dropping_share)),
            signals=tuple(SignalSpec(s) for s in self.signals), seed=self.seed,
        ).validate()

    def stage_config(self, stage: str) -> dict[str, Any]:
        """The stage's training config; its ``extra`` names the recipe and the stage, so the
        checkpoint's lineage says which recipe made it (``assay checkpoints show``, the served page)."""
        base = {"pretrain": self.pretrain, "finetune": self.finetune, "webnlg": self.webnlg_finetune}[stage]
        return {"seed": self.seed, "head_input": self.pooling, **base,
                "extra": {**base.get("extra", {}), "recipe": RECIPE, "recipe_name": self.name, "recipe_stage": stage}}

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("evaluate_on", "sources", "signals", "finetune_data"):
            data[key] = list(data[key])
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BleurtRecipe:
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise UsageError(f"recipe: unknown key(s) {', '.join(unknown)}")
        values = dict(data)
        for key in ("evaluate_on", "sources", "signals", "finetune_data"):
            if key in values:
                values[key] = tuple(values[key])
        return cls(**values).validate()

    def with_overrides(self, **changes: Any) -> BleurtRecipe:
        """A copy with the given fields replaced (None values leave a field as it is); ``pretrain``,
        ``finetune`` and ``webnlg_finetune`` are merged into the defaults, not replaced."""
        values: dict[str, Any] = {}
        for key, value in changes.items():
            if value is None:
                continue
            if key in ("pretrain", "finetune", "webnlg_finetune"):
                merged = {**getattr(self, key), **value}
                if "max_steps" in value:
                    merged.pop("epochs", None)
                if "epochs" in value:
                    merged.pop("max_steps", None)
                values[key] = merged
            else:
                values[key] = tuple(value) if isinstance(value, list) else value
        return replace(self, **values).validate()


#: what a stage's length is set by: the command's own options (one stage: --steps or --epochs,
#: default one epoch), never the recipe's
_LENGTH_KEYS = ("epochs", "max_steps")


def stage_defaults(stage: str) -> dict[str, Any]:
    """The settings a stage trained on its own (``assay train --stage STAGE``) starts from: the
    recipe's for that stage (learning rate, warm-up, schedule, evaluation and save cadence, patience,
    unfreezing), so that one stage from the README gives the checkpoint the recipe's stage would.
    Not its length (the command's ``--steps``/``--epochs``), its seed or its notes; pooling is
    :data:`~assay.training.config.DEFAULT_POOLING` either way (TrainConfig.head_input None)."""
    if stage not in ("pretrain", "finetune"):
        raise UsageError(f"unknown training stage {stage!r} (expected pretrain or finetune)")
    recipe = BleurtRecipe()
    return {key: value for key, value in {"pretrain": recipe.pretrain, "finetune": recipe.finetune}[stage].items()
            if key not in _LENGTH_KEYS}


def stage_names(recipe: BleurtRecipe) -> Sequence[str]:
    """The stages the recipe runs, in order."""
    stages = ["synthesize", "pretrain"] if recipe.pretraining and not recipe.pretrained else []
    stages.append("finetune")
    if recipe.webnlg:
        stages.append("webnlg")
    return stages
