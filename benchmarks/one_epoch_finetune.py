"""One epoch of fine-tuning on WMT16, Assay's stage beside a plain PyTorch loop, both tested on WMT17.

BLEURT (Sellam et al., 2020, §3) fine-tunes a pre-trained encoder with a linear head on human
ratings; its WMT experiments (§5.1) train on earlier years and report Kendall tau per to-English pair
of WMT17. This benchmark asks how much one epoch of that buys, in this process, on this machine:

(plain) a 30-line loop: the embedded all-MiniLM-L6-v2, a linear head on [CLS], AdamW at 3e-5, batch
        32, no warm-up and no schedule, max length 128, every rated WMT16 to-English pair, shuffled,
        MSE on the raw ratings (``human_z``);
(assay) ``assay train --stage finetune --data wmt16 --epochs 1`` with nothing else given: the
        stand-alone defaults (the recipe's fine-tuning settings, :func:`assay.training.recipes.stage_defaults`),
        10 % of the items held out for validation.

Both are scored on WMT17's judged to-English segments, each pair's Kendall tau-b computed here with
scipy from the two models' predictions (one code path for both); Assay's checkpoint is also
evaluated by ``assay evaluate``'s own WMT17 protocol, which must agree. The target (issue 31): Assay's
average tau >= 0.40, the plain loop's level. ``--variant KEY=VALUE`` trains further Assay stages with
one setting changed (e.g. ``lr_schedule=linear``), each reported beside the rest.

    python benchmarks/one_epoch_finetune.py --out one-epoch.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TARGET_TAU = 0.40


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--home", type=Path, help="ASSAY_HOME to use (default: a new temporary folder)")
    p.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--skip-plain", action="store_true", help="only Assay's stage(s)")
    p.add_argument("--variant", action="append", default=[], metavar="KEY=VALUE",
                   help="another Assay stage with one TrainConfig field changed (JSON value); repeatable")
    p.add_argument("--out", type=Path, help="also write the JSON here")
    return p.parse_args()


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _kendall_per_pair(groups: list[str], human: list[float], predicted: list[float]) -> dict[str, Any]:
    """Kendall tau-b per group (scipy) and their plain average, x1 (not x100)."""
    from scipy.stats import kendalltau

    per: dict[str, float] = {}
    for group in sorted(set(groups)):
        idx = [i for i, g in enumerate(groups) if g == group]
        per[group] = round(float(kendalltau([human[i] for i in idx], [predicted[i] for i in idx]).statistic), 4)
    return {"average": round(sum(per.values()) / len(per), 4), "per_pair": per, "n_segments": len(groups)}


def plain_loop(train: Any, test: Any, seed: int) -> dict[str, Any]:
    """The plain loop: no Assay code between the data and the numbers."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from assay.workers.encoder import default_model_path

    random.seed(seed)
    torch.manual_seed(seed)
    path = default_model_path()
    tokenizer, encoder = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path)
    head = torch.nn.Linear(encoder.config.hidden_size, 1)
    params = list(encoder.parameters()) + list(head.parameters())
    optimizer = torch.optim.AdamW(params, lr=3e-5)
    refs, cands = train.column("reference").to_pylist(), train.column("candidate").to_pylist()
    ratings = train.column("rating").to_pylist()
    order = list(range(len(refs)))
    random.shuffle(order)
    started = time.perf_counter()
    encoder.train()
    for start in range(0, len(order), 32):
        batch = order[start:start + 32]
        enc = tokenizer([refs[i] for i in batch], [cands[i] for i in batch], padding=True, truncation=True,
                        max_length=128, return_tensors="pt")
        predicted = head(encoder(**enc).last_hidden_state[:, 0]).squeeze(-1)
        loss = torch.nn.functional.mse_loss(predicted, torch.tensor([ratings[i] for i in batch]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    train_seconds = time.perf_counter() - started
    encoder.eval()
    refs, cands = test.column("reference").to_pylist(), test.column("candidate").to_pylist()
    scores: list[float] = []
    with torch.inference_mode():
        for start in range(0, len(refs), 64):
            enc = tokenizer(refs[start:start + 64], cands[start:start + 64], padding=True, truncation=True,
                            max_length=128, return_tensors="pt")
            scores += head(encoder(**enc).last_hidden_state[:, 0]).squeeze(-1).tolist()
    result = _kendall_per_pair(test.column("group").to_pylist(), test.column("rating").to_pylist(), scores)
    return {**result, "n_train_pairs": len(order), "steps": (len(order) + 31) // 32,
            "train_seconds": round(train_seconds, 1)}


def assay_stage(settings: Any, test: Any, name: str, config: dict[str, Any]) -> dict[str, Any]:
    """``assay train --stage finetune --data wmt16`` with ``config`` as the options give it, then the
    checkpoint's predictions on the test segments (Assay's scorer)."""
    from assay.cli.training_options import config_from_options
    from assay.training.stage_request import stage_request
    from assay.workers.bleurt import BleurtScorer
    from assay.workers.training.stage_steps import StageSteps, train_stage

    full = {**config_from_options({"epochs": 1.0}, "finetune"), **config}  # what the command would train with
    started = time.perf_counter()
    result = train_stage(stage_request("finetune", ["wmt16"], config=full, name=name), StageSteps(settings))
    train_seconds = time.perf_counter() - started
    scorer = BleurtScorer(result["registered"]["path"])
    references, candidates = test.column("reference").to_pylist(), test.column("candidate").to_pylist()
    scores = [float(s) for s in scorer.score(references, candidates)]
    out = _kendall_per_pair(test.column("group").to_pylist(), test.column("rating").to_pylist(), scores)
    return {**out, "config": full, "checkpoint": result["registered"]["name"],
            "digest": result["registered"]["digest"], "validation_kendall_tau": result.get("best_kendall_tau"),
            "steps": result.get("steps"), "n_train_pairs": result.get("n_train"),
            "train_seconds": round(train_seconds, 1)}


def assay_evaluation(settings: Any, digest: str) -> float:
    """The checkpoint's average tau by ``assay score`` and ``assay evaluate`` (WMT17's protocol)."""
    from assay.jobs.evaluation import evaluate
    from assay.jobs.scoring import score_dataset
    from assay.metrics.registry import MetricSpec

    signature = score_dataset("wmt17", MetricSpec.from_dict({"name": "bleurt", "params": {"checkpoint": digest}}),
                              settings=settings)["signature"]
    rows = evaluate("wmt17", level="seg", metrics=[signature], statistics=["kendall"], n_resamples=0,
                    settings=settings)["rows"]
    values = [r["value"] for r in rows if r["signature"] == signature and r["group"].endswith("-en")]
    return round(sum(values) / len(values), 4)


def main() -> int:
    args = _args()
    home = args.home or Path(tempfile.mkdtemp(prefix="assay-one-epoch-"))
    os.environ["ASSAY_HOME"] = str(home)
    os.environ.pop("ASSAY_CATALOG_URL", None)
    from assay.config import load_settings
    from assay.jobs.ingest import ingest_path
    from assay.training.plan import ratings_table

    settings = load_settings()
    for folder in ("wmt16-da-seg", "wmt17-da"):
        ingest_path(args.data_dir / folder, settings=settings)
    train, _ = ratings_table(settings, "wmt16")
    test, _ = ratings_table(settings, "wmt17")
    report: dict[str, Any] = {"home": str(home), "seed": args.seed, "target_average_tau": TARGET_TAU,
                              "train": {"dataset": "wmt16", "pairs": train.num_rows},
                              "test": {"dataset": "wmt17", "segments": test.num_rows}}
    if not args.skip_plain:
        _log("plain loop: one epoch")
        report["plain"] = plain_loop(train, test, args.seed)
        _log(f"plain loop: average tau {report['plain']['average']}")
    stages = {"assay": {"seed": args.seed}}
    for variant in args.variant:
        key, _, value = variant.partition("=")
        stages[f"assay[{key}={value}]"] = {"seed": args.seed, key: json.loads(value)}
    for label, config in stages.items():
        _log(f"{label}: one epoch")
        name = f"one-epoch-{len(report)}-s{args.seed}"
        out = assay_stage(settings, test, name, {"epochs": 1.0, **config})
        out["assay_evaluate_average"] = assay_evaluation(settings, out["digest"])
        report[label] = out
        _log(f"{label}: average tau {out['average']} (assay evaluate: {out['assay_evaluate_average']})")
    report["assay_meets_target"] = report["assay"]["average"] >= TARGET_TAU
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
