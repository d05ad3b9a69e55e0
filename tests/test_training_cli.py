"""``assay train --stage finetune``, ``assay checkpoints ...`` and ``assay score --checkpoint NAME``
end to end on the real WMT16 ratings, through the real Prefect engine.

The encoder is a tiny *randomly initialised* BERT (2 layers, hidden 32; not a trained model) with
the real all-MiniLM-L6-v2 WordPiece tokenizer, so the pipeline runs on real text in seconds; the
numbers it produces mean nothing and are not checked, only the mechanics and the records.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.cli.main import cli
from tests.robustness_support import save_tiny_encoder


@pytest.fixture(scope="module")
def tiny_minilm_vocab_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny RANDOM BERT (BertConfig, 2 layers, hidden 32) with MiniLM's real tokenizer."""
    return save_tiny_encoder(tmp_path_factory.mktemp("tiny") / "tiny-random-bert")


def _ok(runner: CliRunner, args: list[str]) -> str:
    result = runner.invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_finetune_register_score_and_leaderboard(prefect_engine: None, shared_data: Path,
                                                 tiny_minilm_vocab_encoder: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    _ok(runner, ["ingest", str(shared_data / "wmt16-da-seg")])
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
    assert info["lineage"]["hyperparameters"]["learning_rate"] == 1e-5
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


def test_training_refuses_what_the_recipe_evaluates_on_and_resume_without_name(shared_data: Path) -> None:
    runner = CliRunner()
    _ok(runner, ["ingest", str(shared_data / "wmt16-da-seg")])
    result = runner.invoke(cli, ["train", "--stage", "finetune", "--data", "wmt16", "--exclude", "wmt16",
                                 "--steps", "1"])
    assert result.exit_code == 2 and "evaluates on" in result.output
    result = runner.invoke(cli, ["train", "--stage", "finetune", "--data", "wmt16", "--resume", "--steps", "1"])
    assert result.exit_code == 2 and "--resume continues a named run" in result.output
    result = runner.invoke(cli, ["train", "--stage", "finetune", "--data", "wmt16", "--steps", "1", "--epochs", "1"])
    assert result.exit_code == 2 and "--steps or --epochs" in result.output


def test_recipe_synthesizes_pretrains_and_finetunes_without_touching_the_evaluation_set(
        prefect_engine: None, shared_data: Path, tiny_minilm_vocab_encoder: Path) -> None:
    """``assay synth`` and ``assay train --recipe bleurt`` at a toy size (200 pairs, 3 steps a stage)."""
    runner = CliRunner()
    for folder in ("wmt16-da-seg", "wmt17-da", "wmt18-da"):
        _ok(runner, ["ingest", str(shared_data / folder)])
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
    assert [a["name"] for a in info["ancestors"]] == ["toy-pretrain-s12345"]
    pre = json.loads(_ok(runner, ["checkpoints", "show", "toy-pretrain-s12345", "--json"]))
    assert pre["lineage"]["datasets"][0]["label"] == "synth-wmt16-wmt18@1"
    assert {"bleu", "chrf", "bertscore_f", "backtrans_flag"} <= {h["name"] for h in pre["heads"]}
    assert "wmt17" in pre["lineage"]["excluded"]
    # the recipe's pooling reaches both stages' heads (the pre-trained checkpoint is made with it)
    assert pre["lineage"]["hyperparameters"]["head_input"] == info["lineage"]["hyperparameters"]["head_input"] == "cls"


def test_recipe_pooling_is_validated() -> None:
    from assay.errors import UsageError
    from assay.training.recipes import BleurtRecipe

    # mean pooling by default (the embedded encoder's own; docs/RECIPE.md), the paper's v[CLS] on request
    assert BleurtRecipe().stage_config("finetune")["head_input"] == "mean"
    assert BleurtRecipe.from_dict({"pooling": "cls"}).stage_config("pretrain")["head_input"] == "cls"
    with pytest.raises(UsageError, match="pooling 'max'; expected one of cls, pooler, mean"):
        BleurtRecipe.from_dict({"pooling": "max"})


def test_data_parallel_finetuning_under_torchrun_registers_like_one_process(
        prefect_engine: None, shared_data: Path, tiny_minilm_vocab_encoder: Path) -> None:
    """``--processes 2``: two processes under torchrun, gloo over loopback on the CPU (the
    numerical match with one process is checked in tests/training/test_distributed.py)."""
    runner = CliRunner()
    _ok(runner, ["ingest", str(shared_data / "wmt16-da-seg")])
    out = json.loads(_ok(runner, ["train", "--stage", "finetune", "--data", "wmt16", "--init",
                                  str(tiny_minilm_vocab_encoder), "--steps", "2", "--batch-size", "8",
                                  "--processes", "2", "--name", "ddp", "--json"]))
    assert out["world_size"] == 2 and out["steps"] == 2
    assert out["registered"]["name"] == "ddp" and out["registered"]["created"]
    info = json.loads(_ok(runner, ["checkpoints", "show", "ddp", "--json"]))
    assert info["lineage"]["world_size"] == 2 and info["run_id"] == out["run_id"]
