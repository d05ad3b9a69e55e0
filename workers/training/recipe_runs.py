"""Running the BLEURT recipe (:mod:`assay.training.recipes`): synthesize → pre-train → fine-tune
on WMT → optionally fine-tune on WebNLG, each stage's checkpoint the next one's ``--init``.

The order of the stages and what each passes to the next is written once, in :func:`run_recipe`;
the stages themselves once, in :class:`RecipeStages`, which runs them in this process (benchmarks,
GPU hosts without an orchestrator); the ``train`` flow hands :func:`run_recipe` the same object
with each stage run as its own flow (:func:`assay.flows.step_tasks.as_tasks`). A stage hands
the next one its registered checkpoint by digest, never by name (a name can be re-pointed or taken;
the digest is the content the next stage starts from).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from assay.config import Settings
from assay.synthetic.versions import store_synthetic
from assay.training.recipes import BleurtRecipe
from assay.training.stage_request import StageRequest
from assay.workers.training.stage_runs import EventHandler
from assay.workers.training.stage_steps import StageSteps, train_stage


@dataclass
class RecipeStages:
    """The recipe's stages, each in this process, recorded like the flows record them."""

    settings: Settings
    on_event: EventHandler | None = None

    def synthesize(self, spec: dict[str, Any], name: str) -> dict[str, Any]:
        from assay.progress import SynthesisProgress
        from assay.synthetic.spec import SynthesisSpec

        progress = SynthesisProgress(f"synthesizing {name}")
        try:
            return store_synthetic(SynthesisSpec.from_dict(spec), name=name, settings=self.settings,
                                   progress=progress).as_dict()
        finally:
            progress.close()

    def train(self, request: StageRequest) -> dict[str, Any]:
        return train_stage(request, StageSteps(self.settings, self.on_event))


def _checkpoint_name(recipe: BleurtRecipe, stage: str) -> str:
    variant = "" if recipe.pretraining else "-nopre"
    return f"{recipe.name}{variant}-{stage}-s{recipe.seed}"


def run_recipe(recipe: BleurtRecipe, stages: RecipeStages, *, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the recipe's stages in order; returns every stage's result and timing, and the final
    checkpoint's name and digest."""
    recipe.validate()
    exclude = tuple(recipe.evaluate_on)
    results: dict[str, Any] = {"recipe": recipe.as_dict(), "stages": {}}
    init = recipe.init

    def timed(stage: str, call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        log(f"recipe stage {stage} ...")
        started = time.perf_counter()
        out = call()
        out["stage_seconds"] = round(time.perf_counter() - started, 2)
        results["stages"][stage] = out
        return out

    if recipe.pretrained:
        log(f"recipe: fine-tuning the pre-trained checkpoint {recipe.pretrained} (no synthesis, no pre-training)")
        init = recipe.pretrained
    elif recipe.pretraining:
        synthetic = recipe.synthetic
        if synthetic is None:
            spec = recipe.synthesis_spec()
            made = timed("synthesize", lambda: stages.synthesize(spec.as_dict(), f"{recipe.name}-synth"))
            synthetic = made["label"]
        pre = timed("pretrain", lambda: stages.train(StageRequest(
            "pretrain", (synthetic,), init, recipe.stage_config("pretrain"), _checkpoint_name(recipe, "pretrain"),
            exclude=exclude, signals=tuple(recipe.signals))))
        init = pre["registered"]["digest"]
    fine = timed("finetune", lambda: stages.train(StageRequest(
        "finetune", tuple(recipe.finetune_data), init, recipe.stage_config("finetune"),
        _checkpoint_name(recipe, "finetune"), exclude=exclude)))
    final = fine["registered"]
    if recipe.webnlg:
        webnlg, parent = recipe.webnlg, final["digest"]
        web = timed("webnlg", lambda: stages.train(StageRequest(
            "finetune", (webnlg,), parent, recipe.stage_config("webnlg"), _checkpoint_name(recipe, "webnlg"),
            exclude=exclude, aspect=recipe.webnlg_aspect)))
        final = web["registered"]
    results["checkpoint"] = final["name"]
    results["checkpoint_digest"] = final["digest"]
    return results
