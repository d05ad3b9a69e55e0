"""Running the BLEURT recipe (:mod:`assay.training.recipes`): synthesize → pre-train → fine-tune
on WMT → optionally fine-tune on WebNLG, each stage's checkpoint the next one's ``--init``.

The order of the stages and what each passes to the next is written once, in :func:`run_recipe`;
who executes a stage is injected: :class:`InProcessStages` runs them in this process (benchmarks,
GPU hosts without an orchestrator), the ``train`` flow passes its Prefect subflows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from assay.config import Settings
from assay.synthetic.versions import store_synthetic
from assay.training.plan import plan_finetune
from assay.training.pretraining import plan_pretrain
from assay.training.recipes import BleurtRecipe
from assay.workers.training_jobs import EventHandler, resolve_init, run_stage


class Stages(Protocol):
    def synthesize(self, spec: dict[str, Any], name: str) -> dict[str, Any]: ...

    def pretrain(self, synthetic: str, init: str | None, config: dict[str, Any], name: str,
                 exclude: list[str], signals: list[str] | None) -> dict[str, Any]: ...

    def finetune(self, data: list[str], init: str | None, config: dict[str, Any], name: str, exclude: list[str],
                 aspect: str | None) -> dict[str, Any]: ...


@dataclass
class InProcessStages:
    """Every stage in this process, recorded like the flows record them."""

    settings: Settings
    on_event: EventHandler | None = None

    def synthesize(self, spec: dict[str, Any], name: str) -> dict[str, Any]:
        from assay.synthetic.spec import SynthesisSpec

        return store_synthetic(SynthesisSpec.from_dict(spec), name=name, settings=self.settings).as_dict()

    def pretrain(self, synthetic: str, init: str | None, config: dict[str, Any], name: str,
                 exclude: list[str], signals: list[str] | None) -> dict[str, Any]:
        folder, digest = resolve_init(self.settings, init)
        plan = plan_pretrain(self.settings, synthetic, init=folder, init_digest=digest, config=config, name=name,
                             exclude=exclude, signals=signals)
        return run_stage(self.settings, plan, on_event=self.on_event)

    def finetune(self, data: list[str], init: str | None, config: dict[str, Any], name: str, exclude: list[str],
                 aspect: str | None) -> dict[str, Any]:
        folder, digest = resolve_init(self.settings, init)
        plan = plan_finetune(self.settings, data, init=folder, init_digest=digest, config=config, name=name,
                             exclude=exclude, aspect=aspect)
        return run_stage(self.settings, plan, on_event=self.on_event)


def _checkpoint_name(recipe: BleurtRecipe, stage: str) -> str:
    variant = "" if recipe.pretraining else "-nopre"
    return f"{recipe.name}{variant}-{stage}-s{recipe.seed}"


def run_recipe(recipe: BleurtRecipe, stages: Stages, *, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the recipe's stages in order; returns every stage's result and timing, and the final
    checkpoint's name."""
    recipe.validate()
    exclude = list(recipe.evaluate_on)
    results: dict[str, Any] = {"recipe": recipe.as_dict(), "stages": {}}
    init = recipe.init

    def timed(stage: str, call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        log(f"recipe stage {stage} ...")
        started = time.perf_counter()
        out = call()
        out["stage_seconds"] = round(time.perf_counter() - started, 2)
        results["stages"][stage] = out
        return out

    if recipe.pretraining:
        synthetic = recipe.synthetic
        if synthetic is None:
            spec = recipe.synthesis_spec()
            made = timed("synthesize", lambda: stages.synthesize(spec.as_dict(), f"{recipe.name}-synth"))
            synthetic = made["label"]
        pre = timed("pretrain", lambda: stages.pretrain(
            synthetic, init, recipe.stage_config("pretrain"), _checkpoint_name(recipe, "pretrain"), exclude,
            list(recipe.signals)))
        init = pre["registered"]["name"]
    fine = timed("finetune", lambda: stages.finetune(
        list(recipe.finetune_data), init, recipe.stage_config("finetune"), _checkpoint_name(recipe, "finetune"),
        exclude, None))
    final = fine["registered"]["name"]
    if recipe.webnlg:
        webnlg = recipe.webnlg
        web = timed("webnlg", lambda: stages.finetune(
            [webnlg], final, recipe.stage_config("webnlg"), _checkpoint_name(recipe, "webnlg"), exclude,
            recipe.webnlg_aspect))
        final = web["registered"]["name"]
    results["checkpoint"] = final
    return results
