"""The BLEURT recipe end to end on WMT17 to-English, against BERTScore and sentBLEU; prints JSON.

Sellam et al. (2020), §5.1 (Table 2): a learned metric fine-tuned on earlier WMT years' ratings is
evaluated on WMT17 segment-level DA by Kendall tau-b and Pearson r per to-English pair. Compared,
all scored with Assay and evaluated by the job ``assay evaluate`` runs (:func:`assay.jobs.evaluation.evaluate`):

(a) the embedded MiniLM fine-tuned on WMT16 only (no pre-training, "BLEURT -pre");
(b) the same pre-trained on the synthetic pairs first (synthesized from WMT16 + WMT18, never WMT17);
(c) BERTScore-MiniLM-L4 F1; (d) sentBLEU.

Beside the test, the validation source the recipe's defaults are chosen on (docs/RECIPE.md): WMT18
to-English at system level, each trained variant's system score the mean over a fixed, seeded sample of
segments per pair (``--wmt18-segments``, default 300), against WMT18's official system-level DA z;
Pearson r and Kendall tau per pair. The sample is one of the recipe's ``evaluate_on`` datasets, so the
synthetic corpus drops its sentences.

Then the quality-drift experiment (§5.2): WMT17 split into disjoint item pools, train skewed to low
ratings and test skewed to high ones at α ∈ {0, 1.5, 3.0}; (a) and (b) fine-tuned on each train
sample and evaluated on its test sample.

Every stage's pair count, steps, time and the device are printed. Runs in a fresh ASSAY_HOME
(``--home``, default a temporary folder); ``--data-dir`` is ``../shared/data``. Sizes default to
the CPU recipe (80,000 pairs, 1 pre-training epoch, 6 fine-tuning epochs): the recipe itself took 64
minutes alone on an AVX2 host of the project's 2-core machines and 39 on an AVX-512 one (``host`` in the
JSON), and (a) and the drift experiment come on top of it; a GPU host can afford more (``--pairs``,
``--pretrain-epochs``).

    python benchmarks/bleurt_recipe.py --out recipe.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--home", type=Path, help="ASSAY_HOME to use (default: a new temporary folder)")
    p.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    p.add_argument("--pairs", type=int, default=80_000)
    p.add_argument("--synthetic", help="pre-train on this stored synthetic version instead of synthesizing")
    p.add_argument("--pretrained", help="variant (b) fine-tunes this pre-trained checkpoint (name or folder, e.g. an "
                   "earlier run's recipe-b-pretrain-sSEED) instead of synthesizing and pre-training again")
    p.add_argument("--pretrain-epochs", type=float, default=1.0)
    p.add_argument("--finetune-epochs", type=float, default=6.0)
    p.add_argument("--pretrain-lr", type=float)
    p.add_argument("--finetune-lr", type=float)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--failure-modes", type=float,
                   help="share of synthetic pairs that are MetricX-24's degenerate candidates (default: the recipe's)")
    p.add_argument("--wmt18-segments", type=int, default=300,
                   help="segments per pair of the WMT18 system-level validation sample (0 to skip it)")
    p.add_argument("--pooling", help="what the heads read: mean (the recipe's default) or cls (the paper's)")
    p.add_argument("--device", default="auto")
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--alphas", default="0,1.5,3", help="quality-drift skews ('' to skip the drift experiment)")
    p.add_argument("--resamples", type=int, default=200, help="bootstrap resamples of the evaluation")
    p.add_argument("--variants", default="a,b", help="which learned variants to train (a: no pre-training, b: recipe)")
    p.add_argument("--drift-only", action="store_true",
                   help="only the drift experiment, with the pre-trained checkpoint an earlier run left in --home")
    p.add_argument("--out", type=Path, help="also write the JSON here")
    return p.parse_args()


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _host(device: str) -> dict[str, Any]:
    """What the timings ran on. Hosts of one kind differ (the same recipe once took 65 minutes on one 2-core
    host and 101 on an AVX2-only one), so the report says which it was, and how much CPU time went
    to other guests (steal)."""
    import platform

    import torch

    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                 if line.startswith("model name")]
        model = names[0] if names else model
    host: dict[str, Any] = {"cpu": model, "logical_cpus": os.cpu_count(),
                            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
                            "torch_threads": torch.get_num_threads(), "torch": torch.__version__}
    if device.startswith("cuda"):
        host["gpu"] = torch.cuda.get_device_name(0)
    return host


def _cpu_ticks() -> list[int] | None:
    """The machine's CPU time counters (/proc/stat: user, nice, system, idle, iowait, irq, softirq,
    steal), or None where there is no /proc."""
    stat = Path("/proc/stat")
    if not stat.exists():
        return None
    fields = stat.read_text().splitlines()[0].split()
    return [int(v) for v in fields[1:9]]


def _cpu_shares(before: list[int] | None, after: list[int] | None) -> dict[str, float] | None:
    """How the machine's CPU time was spent between two readings: user, system, idle and steal
    (time the hypervisor gave to another guest) as shares of the total. On a shared host the same
    work takes longer when steal is high, so the report carries it beside the stage times."""
    if before is None or after is None:
        return None
    delta = [b - a for a, b in zip(before, after, strict=True)]
    total = sum(delta) or 1
    user, nice, system, idle, iowait, irq, softirq, steal = delta
    return {"user": round((user + nice) / total, 4), "system": round((system + irq + softirq) / total, 4),
            "idle": round((idle + iowait) / total, 4), "steal": round(steal / total, 4)}


#: WMT18's to-English pairs: the system-level validation source (the package's other pairs have no outputs)
WMT18_TO_ENGLISH = ("cs-en", "de-en", "et-en", "fi-en", "ru-en", "tr-en", "zh-en")
WMT18_VALIDATION = "wmt18-val"


def _ingest(settings: Any, data_dir: Path, wmt18_segments: int) -> dict[str, Any]:
    from assay.jobs.ingest import ingest_path

    out = {}
    for name, folder in (("wmt16", "wmt16-da-seg"), ("wmt17", "wmt17-da"), ("wmt18", "wmt18-da")):
        result = ingest_path(data_dir / folder, settings=settings)
        out[name] = {"version": result.version.label, "digest": result.version.digest}
    if wmt18_segments > 0:
        # the same seeded sample as `assay ingest ../shared/data/wmt18-da --name wmt18-val -o sample_segments=300
        # -o groups=...` (docs/RECIPE.md): every system's outputs of the same segments
        result = ingest_path(data_dir / "wmt18-da", name=WMT18_VALIDATION, settings=settings,
                             options={"sample_segments": str(wmt18_segments), "groups": ",".join(WMT18_TO_ENGLISH)})
        out[WMT18_VALIDATION] = {"version": result.version.label, "digest": result.version.digest,
                                 "segments_per_pair": wmt18_segments}
    return out


def _wmt18_system_level(settings: Any, checkpoints: dict[str, str], resamples: int) -> dict[str, Any]:
    """Each trained variant's WMT18 to-English system-level Pearson r and Kendall tau (x100) per pair on
    the seeded segment sample, and their averages: the validation the defaults are chosen on."""
    from assay.jobs.evaluation import evaluate

    signatures: dict[str, str] = {}
    seconds: dict[str, float] = {}
    for variant, checkpoint in checkpoints.items():
        folder = settings.checkpoints_dir / checkpoint
        scored = _score(WMT18_VALIDATION, {"name": "bleurt", "params": {"checkpoint": str(folder)}}, settings,
                        scope="outputs")
        signatures[variant], seconds[variant] = scored["signature"], scored["seconds"]
    evaluated = evaluate(WMT18_VALIDATION, level="sys", metrics=list(signatures.values()),
                         statistics=["pearson", "kendall"], n_resamples=resamples, settings=settings)
    return {variant: {**_table(evaluated["rows"], signature), "signature": signature,
                      "score_seconds": seconds[variant]} for variant, signature in signatures.items()}


def _score(dataset: str, spec: dict[str, Any], settings: Any, scope: str = "judged") -> dict[str, Any]:
    from assay.jobs.scoring import score_dataset
    from assay.metrics.registry import MetricSpec

    started = time.perf_counter()
    result = score_dataset(dataset, MetricSpec.from_dict(spec), scope=scope, settings=settings)
    return {"signature": result["signature"], "seconds": round(time.perf_counter() - started, 2)}


def _table(rows: list[dict[str, Any]], signature: str) -> dict[str, Any]:
    """Per to-English pair Kendall tau-b and Pearson r (x100), and their plain averages."""
    cells: dict[str, dict[str, float]] = {}
    for row in rows:
        if row["signature"] != signature or row["value"] is None or not row["group"].endswith("-en"):
            continue
        cells.setdefault(row["group"], {})[row["statistic"]] = round(100 * row["value"], 2)
    pairs = sorted(cells)
    average = {stat: round(sum(cells[p][stat] for p in pairs) / len(pairs), 2)
               for stat in ("kendall", "pearson") if pairs and all(stat in cells[p] for p in pairs)}
    return {"per_pair": cells, "average": average}


def _stage_summary(stage: dict[str, Any]) -> dict[str, Any]:
    keys = ("n_train", "n_validation", "steps", "best_step", "best_kendall_tau", "pairs_per_second", "seconds",
            "stage_seconds", "device", "stopped_early", "rows", "label", "digest")
    out = {k: stage[k] for k in keys if k in stage}
    if "registered" in stage:
        out["checkpoint"] = stage["registered"]["name"]
        out["digest"] = stage["registered"]["digest"]
    return out


def main() -> int:
    args = _args()
    home = args.home or Path(tempfile.mkdtemp(prefix="assay-recipe-"))
    os.environ["ASSAY_HOME"] = str(home)
    os.environ.pop("ASSAY_CATALOG_URL", None)
    from assay.config import load_settings
    from assay.jobs.evaluation import evaluate
    from assay.training.recipes import BleurtRecipe
    from assay.workers.device import pick_device
    from assay.workers.training.recipe_runs import RecipeStages, run_recipe

    settings = load_settings()
    device = str(pick_device(None if args.device == "auto" else args.device))
    report: dict[str, Any] = {"device": device, "host": _host(device), "home": str(home), "seed": args.seed}
    _log(f"ASSAY_HOME={home} device={device} host={report['host']}")
    started = time.perf_counter()
    ticks = _cpu_ticks()
    report["data"] = _ingest(settings, args.data_dir, args.wmt18_segments)
    report["ingest_seconds"] = round(time.perf_counter() - started, 2)

    def stage_config(epochs: float, lr: float | None) -> dict[str, Any]:
        config: dict[str, Any] = {"epochs": epochs, "device": args.device}
        if lr is not None:
            config["learning_rate"] = lr
        if args.batch_size is not None:
            config["batch_size"] = args.batch_size
        return config

    evaluate_on = ("wmt17", WMT18_VALIDATION) if args.wmt18_segments > 0 else ("wmt17",)
    base = BleurtRecipe(seed=args.seed, n_pairs=args.pairs, synthetic=args.synthetic, evaluate_on=evaluate_on)
    if args.failure_modes is not None:
        base = base.with_overrides(failure_modes_share=args.failure_modes)
    if args.pretrained:
        base = base.with_overrides(pretrained=str(args.pretrained))
    if args.pooling:
        base = base.with_overrides(pooling=args.pooling)
    base = base.with_overrides(pretrain=stage_config(args.pretrain_epochs, args.pretrain_lr),
                               finetune=stage_config(args.finetune_epochs, args.finetune_lr))
    report["recipe"] = base.as_dict()
    if args.drift_only:
        alphas = [float(a) for a in args.alphas.split(",") if a.strip()]
        report["drift"] = _drift(settings, alphas, {}, base, args, _log)
        print(json.dumps(report, indent=2))
        if args.out:
            args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        return 0
    stages = RecipeStages(settings)
    signatures: dict[str, str] = {}
    checkpoints: dict[str, str] = {}
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for variant in variants:
        recipe = (base.with_overrides(name="recipe-b") if variant == "b"
                  else replace(base, pretraining=False, pretrained=None, name="recipe-a").validate())
        _log(f"variant ({variant}): {'pre-training + ' if variant == 'b' else ''}fine-tuning")
        result = run_recipe(recipe, stages, log=_log)
        report[f"stages_{variant}"] = {k: _stage_summary(v) for k, v in result["stages"].items()}
        checkpoints[variant] = result["checkpoint"]
        folder = settings.checkpoints_dir / result["checkpoint"]
        scored = _score("wmt17", {"name": "bleurt", "params": {"checkpoint": str(folder)}}, settings)
        signatures[variant] = scored["signature"]
        report[f"stages_{variant}"]["score_wmt17_seconds"] = scored["seconds"]
    baselines = (("c", {"name": "bertscore", "params": {"layer": 4}}), ("d", {"name": "sentbleu", "params": {}}))
    for variant, spec in baselines:
        scored = _score("wmt17", spec, settings)
        signatures[variant] = scored["signature"]
    _log("evaluating on WMT17 (segment level, Kendall tau-b and Pearson r)")
    evaluated = evaluate("wmt17", level="seg", metrics=list(signatures.values()), statistics=["kendall", "pearson"],
                         n_resamples=args.resamples, settings=settings)
    names = {"a": "finetuned_wmt16_only", "b": "pretrained_then_finetuned", "c": "bertscore_minilm_l4_f",
             "d": "sentbleu"}
    report["wmt17"] = {f"({v}) {names[v]}": {**_table(evaluated["rows"], s), "signature": s}
                       for v, s in signatures.items()}
    averages = {v: _table(evaluated["rows"], s)["average"] for v, s in signatures.items()}
    report["averages_kendall"] = {v: a.get("kendall") for v, a in averages.items()}
    report["averages_pearson"] = {v: a.get("pearson") for v, a in averages.items()}
    if "a" in averages and "b" in averages:
        report["goals"] = {
            "b_avg_tau_at_least_50": averages["b"].get("kendall", 0) >= 50.0,
            "b_minus_a_at_least_2": averages["b"].get("kendall", 0) - averages["a"].get("kendall", 0) >= 2.0,
            "b_minus_c": round(averages["b"].get("kendall", 0) - averages["c"].get("kendall", 0), 2),
        }
    if args.wmt18_segments > 0 and checkpoints:
        _log(f"WMT18 to-English at system level ({args.wmt18_segments} segments per pair)")
        report["wmt18_system_level"] = _wmt18_system_level(settings, checkpoints, args.resamples)
    alphas = [float(a) for a in args.alphas.split(",") if a.strip()]
    if alphas and "a" in checkpoints and "b" in checkpoints:
        report["drift"] = _drift(settings, alphas, checkpoints, base, args, _log)
    report["total_seconds"] = round(time.perf_counter() - started, 2)
    report["host"]["cpu_time_shares"] = _cpu_shares(ticks, _cpu_ticks())
    text = json.dumps(report, indent=2, sort_keys=False)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


def _drift(settings: Any, alphas: list[float], checkpoints: dict[str, str], recipe: Any, args: argparse.Namespace,
           log: Any) -> dict[str, Any]:
    """§5.2: fine-tune (a) the encoder and (b) the pre-trained checkpoint on each skewed train
    sample, evaluate on the opposite-skew test sample; the drop relative to α = 0 per variant."""
    from assay.metrics.registry import MetricSpec
    from assay.training.robustness import Variant, read_results
    from assay.workers.training.robustness_runs import prepare_drift, run_experiment

    pretrained = args.pretrained or f"recipe-b-pretrain-s{args.seed}"
    log(f"quality drift at alpha {alphas}")
    experiment = prepare_drift("wmt17", alphas=alphas, variants=[Variant("a_no_pretraining", "encoder"),
                                                                Variant("b_pretrained", pretrained)],
                               baselines=[MetricSpec("sentbleu")], config=recipe.stage_config("finetune"),
                               seed=args.seed, statistics=["kendall"], n_resamples=args.resamples,
                               settings=settings)
    run_experiment(experiment, settings)
    rows = [r for r in read_results(settings, "drift") if r["experiment_id"] == experiment.id]
    table: dict[str, dict[str, float]] = {}
    for row in rows:
        if row["statistic"] == "kendall" and row["kind"] != "baseline":
            table.setdefault(row["variant"], {})[f"{row['alpha']:g}"] = round(100 * row["value"], 2)
    drops = {v: {a: round(vals[a] - vals.get("0", float("nan")), 2) for a in vals} for v, vals in table.items()}
    out: dict[str, Any] = {"kendall_x100": table, "change_from_alpha_0": drops}
    if "a_no_pretraining" in drops and "b_pretrained" in drops:
        out["goal_b_loses_less"] = {a: drops["b_pretrained"].get(a, 0) > drops["a_no_pretraining"].get(a, 0)
                                    for a in ("1.5", "3") if a in drops["b_pretrained"]}
    return out


if __name__ == "__main__":
    sys.exit(main())
