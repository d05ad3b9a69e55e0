"""``assay train --stage finetune``, ``assay checkpoints ...`` and ``assay score --checkpoint NAME``
end to end on the real WMT16 ratings, through the real Prefect engine.

The encoder is a tiny *randomly initialised* BERT (2 layers, hidden 32; not a trained model) with
the real all-MiniLM-L6-v2 WordPiece tokenizer, so the pipeline runs on real text in seconds; the
numbers it produces mean nothing and are not checked, only the mechanics and the records.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assay.cli.main import cli
from assay.training.recipes import stage_defaults
from tests.ingested_homes import Ingest
from tests.robustness_support import save_tiny_encoder


@pytest.fixture(scope="module")
def tiny_minilm_vocab_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny RANDOM BERT (BertConfig, 2 layers, hidden 32) with MiniLM's real tokenizer."""
    return save_tiny_encoder(tmp_path_factory.mktemp("tiny") / "tiny-random-bert")


def _ok(runner: CliRunner, args: list[str]) -> str:
    result = runner.invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_finetune_register_score_and_leaderboard(prefect_engine: None, ingested: Callable[..., Path],
                                                 tiny_minilm_vocab_encoder: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    ingested("wmt16-da-seg")
    out = _ok(runner, ["train", "--stage", "finetune", "--data", "wmt16", "--init", str(tiny_minilm_vocab_encoder),
                       "--steps", "3", "--eval-every", "3", "--save-every", "3", "--batch-size", "8",
                       "--name", "ft-tiny", "--json"])
    result = json.loads(out)
    assert result["registered"]["name"] == "ft-tiny" and result["registered"]["created"]
    assert result["best_step"] == 3 and result["steps"] == 3
    # WMT16 to-English: 6 pairs x 560 rated segments, 10% of the items held out
    assert result["n_train"] + result["n_validation"] == 3360
    assert result["n_validation"] == pytest.approx(336, abs=6)

    listed = json.loads(_ok(runner, ["checkpoints", "list", "--json"]))
    assert [c["name"] for c in listed] == ["ft-tiny"]
    info = json.loads(_ok(runner, ["checkpoints", "show", "ft-tiny", "--json"]))
    assert info["operation"] == "finetune"
    assert info["lineage"]["datasets"][0]["label"] == "wmt16@1"
    assert len(info["lineage"]["datasets"][0]["digest"]) == 64
    assert info["lineage"]["best_step"] == 3
    assert [p["step"] for p in info["lineage"]["validation_curve"]] == [3]
    # a stage on its own trains with the recipe's settings for the stage (issue 31), except what was given
    hyperparameters = info["lineage"]["hyperparameters"]
    assert {k: hyperparameters[k] for k in ("learning_rate", "warmup_ratio", "patience")} == {
        k: stage_defaults("finetune")[k] for k in ("learning_rate", "warmup_ratio", "patience")}
    assert hyperparameters["eval_every"] == 3 and hyperparameters["max_steps"] == 3
    assert info["run_id"] == result["run_id"]
    assert "best step" in _ok(runner, ["checkpoints", "show", "ft-tiny"])

    # the same content again is a no-op; an export is byte-identical (same digest)
    again = json.loads(_ok(runner, ["checkpoints", "register", result["checkpoint"], "--json"]))
    assert not again["created"] and again["name"] == "ft-tiny"
    exported = tmp_path / "exported"
    _ok(runner, ["checkpoints", "export", "ft-tiny", str(exported)])
    moved = json.loads(_ok(runner, ["checkpoints", "register", str(exported), "--json"]))
    assert moved["digest"] == info["digest"] and not moved["created"]

    # scoring by name; the leaderboard names the checkpoint with its lineage
    _ok(runner, ["score", "--dataset", "wmt16", "--checkpoint", "ft-tiny"])
    _ok(runner, ["score", "--dataset", "wmt16", "--metric", "sentbleu"])
    _ok(runner, ["evaluate", "--dataset", "wmt16", "--level", "seg", "--resamples", "50"])
    rows = json.loads(_ok(runner, ["leaderboard", "--dataset", "wmt16", "--json"]))
    by_metric = {r["metric"]: r for r in rows}
    assert by_metric["bleurt"]["checkpoint"] == "ft-tiny (finetune)"
    assert by_metric["sentbleu"]["checkpoint"] is None
    assert "ft-tiny (finetune)" in _ok(runner, ["leaderboard", "--dataset", "wmt16"])


def test_a_broken_checkpoint_is_refused_and_nothing_registered(tmp_path: Path,
                                                              tiny_minilm_vocab_encoder: Path) -> None:
    from assay.workers.checkpoint import create_from_encoder

    good = create_from_encoder(tiny_minilm_vocab_encoder, tmp_path / "good", seed=1)
    broken = tmp_path / "broken"
    shutil.copytree(good, broken)
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    runner = CliRunner()
    result = runner.invoke(cli, ["checkpoints", "register", str(broken)])
    assert result.exit_code == 2
    assert "model.safetensors" in result.output
    assert json.loads(_ok(runner, ["checkpoints", "list", "--json"])) == []
    assert not list(tmp_path.glob(".tmp-*"))


def test_training_refuses_what_the_recipe_evaluates_on_and_resume_without_name(
        ingested: Callable[..., Path]) -> None:
    runner = CliRunner()
    ingested("wmt16-da-seg")
    result = runner.invoke(cli, ["train", "--stage", "finetune", "--data", "wmt16", "--exclude", "wmt16",
                                 "--steps", "1"])
    assert result.exit_code == 2 and "evaluates on" in result.output
    result = runner.invoke(cli, ["train", "--stage", "finetune", "--data", "wmt16", "--resume", "--steps", "1"])
    assert result.exit_code == 2 and "--resume continues a named run" in result.output
    result = runner.invoke(cli, ["train", "--stage", "finetune", "--data", "wmt16", "--steps", "1", "--epochs", "1"])
    assert result.exit_code == 2 and "--steps or --epochs" in result.output


def test_a_recipe_refuses_to_pretrain_on_a_dataset_that_contains_its_evaluation_set(
        prefect_engine: None, ingested: Callable[..., Path]) -> None:
    """Issue 18, bad input: WMT17 ingested a second time under another name ("mixed"), synthesized
    from without excluding wmt17, then offered to a recipe that evaluates on wmt17. The name check
    cannot see it; the sentences can. One error naming both, exit 2, no checkpoint, no training run."""
    runner = CliRunner()
    ingested("wmt16-da-seg", "wmt17-da", Ingest("wmt17-da", name="mixed"))
    synth = json.loads(_ok(runner, ["synth", "--from", "mixed", "--exclude", "wmt16", "--pairs", "40",
                                    "--signal", "bleu", "--name", "synth-mixed", "--json", "--quiet"]))
    assert synth["rows"] == 40
    refused = runner.invoke(cli, ["train", "--recipe", "bleurt", "--synthetic", "synth-mixed", "--evaluate-on",
                                  "wmt17", "--pretrain-steps", "2", "--finetune-steps", "2", "--quiet"])
    assert refused.exit_code == 2, refused.output
    assert re.search(r"pre-training on synth-mixed@1: \d+ of its \d+ sentences occur in wmt17, which this recipe "
                     r"evaluates on \(e\.g\. '.+'\); synthesize from datasets without them", refused.output)
    assert "no checkpoints registered" in _ok(runner, ["checkpoints", "list"])
    from sqlalchemy import select

    from assay.catalog.engine import session_scope
    from assay.catalog.models import Run
    from assay.config import load_settings

    with session_scope(load_settings()) as session:
        assert not list(session.scalars(select(Run.kind).where(Run.kind.in_(["pretrain", "finetune"]))))


def test_recipe_synthesizes_pretrains_and_finetunes_without_touching_the_evaluation_set(
        prefect_engine: None, ingested: Callable[..., Path], tiny_minilm_vocab_encoder: Path) -> None:
    """``assay synth`` and ``assay train --recipe bleurt`` at a toy size (200 pairs, 3 steps a stage)."""
    runner = CliRunner()
    ingested("wmt16-da-seg", "wmt17-da", "wmt18-da")
    refused = runner.invoke(cli, ["synth", "--from", "wmt17", "--exclude", "wmt17", "--pairs", "10"])
    assert refused.exit_code == 2 and "wmt17" in refused.output
    synth = json.loads(_ok(runner, ["synth", "--pairs", "200", "--json"]))
    assert synth["rows"] == 200 and synth["label"] == "synth-wmt16-wmt18@1"
    again = json.loads(_ok(runner, ["synth", "--pairs", "200", "--json"]))
    assert not again["created"] and again["version_digest"] == synth["version_digest"]

    out = json.loads(_ok(runner, [
        "train", "--recipe", "bleurt", "--synthetic", synth["label"], "--init", str(tiny_minilm_vocab_encoder),
        "--pretrain-steps", "3", "--finetune-steps", "3", "--batch-size", "8", "--name", "toy", "--head-input", "cls",
        "--json"]))
    assert out["recipe"]["pooling"] == "cls"
    assert list(out["stages"]) == ["pretrain", "finetune"]
    assert out["checkpoint"] == "toy-finetune-s12345"
    info = json.loads(_ok(runner, ["checkpoints", "show", "toy-finetune-s12345", "--json"]))
    assert info["parent"] == "toy-pretrain-s12345"
    assert info["lineage"]["excluded"] == ["wmt17"]
    assert info["recipe"] == {"recipe": "bleurt", "name": "toy", "stage": "finetune"}  # the checkpoint page's row
    assert [a["name"] for a in info["ancestors"]] == ["toy-pretrain-s12345"]
    pre = json.loads(_ok(runner, ["checkpoints", "show", "toy-pretrain-s12345", "--json"]))
    assert pre["lineage"]["datasets"][0]["label"] == "synth-wmt16-wmt18@1"
    assert {"bleu", "chrf", "bertscore_f", "backtrans_flag"} <= {h["name"] for h in pre["heads"]}
    assert "wmt17" in pre["lineage"]["excluded"]
    # the recipe's pooling reaches both stages' heads (the pre-trained checkpoint is made with it)
    assert pre["lineage"]["hyperparameters"]["head_input"] == info["lineage"]["hyperparameters"]["head_input"] == "cls"

    # the later stages again over the same pre-trained checkpoint: nothing synthesized or pre-trained
    again = json.loads(_ok(runner, [
        "train", "--recipe", "bleurt", "--pretrained", "toy-pretrain-s12345", "--finetune-steps", "2",
        "--batch-size", "8", "--name", "toy2", "--head-input", "cls", "--json"]))
    assert list(again["stages"]) == ["finetune"] and again["recipe"]["pretrained"] == "toy-pretrain-s12345"
    second = json.loads(_ok(runner, ["checkpoints", "show", again["checkpoint"], "--json"]))
    assert second["parent"] == "toy-pretrain-s12345" and second["lineage"]["excluded"] == ["wmt17"]
    refused = runner.invoke(cli, ["train", "--stage", "finetune", "--data", "wmt16", "--pretrained", "toy"])
    assert refused.exit_code == 2 and "--pretrained apply to --recipe" in refused.output


def test_recipe_pooling_is_validated() -> None:
    from assay.errors import UsageError
    from assay.training.recipes import BleurtRecipe

    # mean pooling by default (the embedded encoder's own; docs/RECIPE.md), the paper's v[CLS] on request
    assert BleurtRecipe().stage_config("finetune")["head_input"] == "mean"
    assert BleurtRecipe.from_dict({"pooling": "cls"}).stage_config("pretrain")["head_input"] == "cls"
    with pytest.raises(UsageError, match="pooling 'max'; expected one of cls, pooler, mean"):
        BleurtRecipe.from_dict({"pooling": "max"})
    with pytest.raises(UsageError, match="pretrained names the pre-trained checkpoint"):
        BleurtRecipe.from_dict({"pretrained": "pre", "pretraining": False})
    with pytest.raises(UsageError, match="pretrained names the pre-trained checkpoint"):
        BleurtRecipe.from_dict({"pretrained": "pre", "synthetic": "synth-wmt16-wmt18"})


def test_data_parallel_finetuning_under_torchrun_registers_like_one_process(
        prefect_engine: None, ingested: Callable[..., Path], tiny_minilm_vocab_encoder: Path) -> None:
    """``--processes 2``: two processes under torchrun, gloo over loopback on the CPU (the
    numerical match with one process is checked in tests/training/test_distributed.py)."""
    runner = CliRunner()
    ingested("wmt16-da-seg")
    out = json.loads(_ok(runner, ["train", "--stage", "finetune", "--data", "wmt16", "--init",
                                  str(tiny_minilm_vocab_encoder), "--steps", "2", "--batch-size", "8",
                                  "--processes", "2", "--name", "ddp", "--json"]))
    assert out["world_size"] == 2 and out["steps"] == 2
    assert out["registered"]["name"] == "ddp" and out["registered"]["created"]
    info = json.loads(_ok(runner, ["checkpoints", "show", "ddp", "--json"]))
    assert info["lineage"]["world_size"] == 2 and info["run_id"] == out["run_id"]


class _Interrupted(Exception):
    """Stands in for a kill: raised from the event handler mid-run."""


def test_resume_refuses_a_run_whose_data_version_was_deleted(ingested: Callable[..., Path],
                                                             tiny_minilm_vocab_encoder: Path,
                                                             tmp_path: Path) -> None:
    """Issue 18, bad input: a fine-tuning run interrupted after its save at step 2, then its data
    version's files are removed from the store, then its catalog row: each time ``--resume`` is
    refused with one error naming the version (exit 2), and nothing is written (no run row, the
    work folder as it was)."""
    import shutil

    from sqlalchemy import delete, func, select

    from assay.catalog.engine import session_scope
    from assay.catalog.models import DatasetVersion, Run
    from assay.config import load_settings
    from assay.training.stage_request import StageRequest
    from assay.workers.training.stage_runs import run_stage
    from assay.workers.training.stage_steps import plan_stage

    runner = CliRunner()
    ingested("wmt16-da-seg")
    settings = load_settings()
    plan = plan_stage(settings, StageRequest("finetune", ("wmt16",), init=str(tiny_minilm_vocab_encoder), name="ft",
                                             config={"max_steps": 6, "save_every": 2, "eval_every": 2,
                                                     "batch_size": 8, "max_length": 64}))

    def interrupt(event: dict[str, Any]) -> None:
        if event.get("event") == "step" and event["step"] == 3:
            raise _Interrupted

    with pytest.raises(_Interrupted):
        run_stage(settings, plan, on_event=interrupt)
    work = Path(plan.work_dir)
    before = sorted(p.name for p in work.rglob("*"))
    with session_scope(settings) as session:
        runs = session.scalar(select(func.count()).select_from(Run))
        store_path = session.scalars(select(DatasetVersion.store_path)).one()
    resume = ["train", "--stage", "finetune", "--data", "wmt16", "--init", str(tiny_minilm_vocab_encoder),
              "--name", "ft", "--resume", "--steps", "6", "--save-every", "2", "--eval-every", "2", "--batch-size",
              "8", "--max-length", "64", "--quiet"]

    shutil.rmtree(settings.home / store_path)  # the version's files gone (a cleanup that went too far)
    refused = runner.invoke(cli, resume)
    assert refused.exit_code == 2, refused.output
    assert re.search(r"cannot resume 'ft': it was training on wmt16@1 \(digest [0-9a-f]{12}\), which has no files "
                     r"in the store any more .*Start a new run instead", refused.output), refused.output

    with session_scope(settings) as session:  # and its catalog row deleted too
        session.execute(delete(DatasetVersion))
    refused = runner.invoke(cli, resume)
    assert refused.exit_code == 2, refused.output
    assert "it was training on wmt16@1" in refused.output and "which is no longer in the catalog" in refused.output
    with session_scope(settings) as session:
        assert session.scalar(select(func.count()).select_from(Run)) == runs
    assert sorted(p.name for p in work.rglob("*")) == before


def test_a_stage_on_its_own_takes_the_recipes_settings_for_that_stage() -> None:
    """Issue 31: ``assay train --stage STAGE`` with no options trains with what the recipe uses for
    that stage (learning rate, warm-up, schedule, cadence, patience, unfreezing), one epoch long; what
    the options name wins; ``--help`` says where each default comes from."""
    from assay.cli.training_options import config_from_options
    from assay.training.config import DEFAULT_POOLING, TrainConfig
    from assay.training.recipes import BleurtRecipe

    recipe = BleurtRecipe()
    for stage, settings in (("finetune", recipe.finetune), ("pretrain", recipe.pretrain)):
        config = config_from_options({}, stage)
        assert config == {**{k: v for k, v in settings.items() if k not in ("epochs", "max_steps")}, "epochs": 1.0}
        TrainConfig(**config)  # a valid config as it stands
    assert config_from_options({}, "pretrain")["unfreeze"] == [[0, 4]]
    given = config_from_options({"lr": 1e-4, "steps": 7, "head_input": "cls"}, "finetune")
    assert given["learning_rate"] == 1e-4 and given["max_steps"] == 7 and "epochs" not in given
    assert given["head_input"] == "cls" and recipe.pooling == DEFAULT_POOLING
    shown = " ".join(CliRunner().invoke(cli, ["train", "--help"], terminal_width=400).stdout.split())
    rates = (recipe.finetune["learning_rate"], recipe.pretrain["learning_rate"])
    lr = (f"default {rates[0]}" if rates[0] == rates[1]  # one value when the stages agree (5e-5 since issue 31)
          else f"default {rates[0]} fine-tuning, {rates[1]} pre-training")
    assert lr + ", the recipe's" in shown and f"(default {DEFAULT_POOLING};" in shown
    assert "(default hold-epoch fine-tuning, linear pre-training, the recipe's)" in shown
