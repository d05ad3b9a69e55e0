"""``assay robustness drift|webnlg``: BLEURT's robustness experiments with training (Sellam et al.,
2020, §5.2 quality drift, §5.3 WebNLG)."""

from __future__ import annotations

from typing import Any

import click

from assay.cli.output import emit_json
from assay.config import DEFAULT_RESAMPLES, DEFAULT_SEED
from assay.errors import UsageError


def parse_numbers(text: str | None, option: str) -> list[float] | None:
    """``0,0.5,1`` -> ``[0.0, 0.5, 1.0]``; None when not given."""
    if text is None:
        return None
    try:
        return [float(part) for part in text.split(",")]
    except ValueError:
        raise UsageError(f"{option} {text!r}: expected comma-separated numbers, e.g. 0,0.5,1") from None


def experiment_options(function: Any) -> Any:
    """Options both experiments share: variants, baselines, training, resamples, output."""
    from assay.cli.training_options import training_options

    function = click.option("--json", "as_json", is_flag=True,
                            help="Print the run's summary and rows as JSON.")(function)
    function = click.option("--resamples", type=int, default=DEFAULT_RESAMPLES, show_default=True,
                            help="Bootstrap resamples for the confidence intervals.")(function)
    function = training_options(function)
    options = [
        click.option("--variant", "variants", multiple=True, metavar="NAME=INIT",
                     help="A learned metric to train (repeatable): INIT is 'encoder' (the embedded encoder, the "
                          "paper's no pre-training) or a checkpoint name or folder (e.g. a pre-trained one); "
                          "default: no-pretraining=encoder."),
        click.option("--baseline", "baselines", multiple=True, metavar="METRIC[:KEY=VALUE,...]",
                     help="A fixed segment-level metric evaluated on the same test data (repeatable; "
                          "default: sentbleu and bertscore, the paper's)."),
        click.option("--no-baselines", is_flag=True, help="Evaluate the learned metrics only."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _common(variants: tuple[str, ...], baselines: tuple[str, ...], no_baselines: bool,
            options: dict[str, Any]) -> dict[str, Any]:
    from assay.cli.options import parse_metric
    from assay.cli.training_options import config_from_options
    from assay.metrics.registry import MetricSpec
    from assay.training.robustness import parse_variant

    if no_baselines and baselines:
        raise UsageError("give --baseline or --no-baselines, not both")
    specs = [] if no_baselines else [MetricSpec.from_dict(parse_metric(b)) for b in baselines] or None
    seed = options.get("seed")
    return {"variants": [parse_variant(v) for v in variants] or None, "baselines": specs,
            "config": config_from_options(options, "finetune"), "seed": DEFAULT_SEED if seed is None else seed}


def _run(flow_name: str, experiment: Any, kwargs: dict[str, Any], as_json: bool) -> None:
    """Answer a finished experiment from the store (no Prefect); run the flow otherwise."""
    from assay.cli.runner import run_flow
    from assay.config import load_settings
    from assay.training import robustness as rb

    settings = load_settings()
    stored = rb.stored_rows(settings, experiment)
    result = rb.record_reuse(settings, experiment, stored) if stored else run_flow(flow_name, **kwargs)
    if as_json:
        emit_json(result)
        return
    print_result(result)


def _flow_kwargs(common: dict[str, Any], resamples: int) -> dict[str, Any]:
    return {"variants": [v.as_dict() for v in common["variants"]] if common["variants"] else None,
            "baselines": [b.as_dict() for b in common["baselines"]] if common["baselines"] is not None else None,
            "config": common["config"], "seed": common["seed"], "n_resamples": resamples}


@click.group("robustness")
def robustness_group() -> None:
    """BLEURT's robustness experiments with training (Sellam et al., 2020, §5.2 and §5.3)."""


@robustness_group.command("drift")
@click.option("--dataset", required=True, metavar="NAME[@VERSION]", help="Rated dataset version to sample (WMT17).")
@click.option("--alphas", metavar="A,B,...", help="Skew factors (default 0,0.5,1,1.5,2,2.5,3).")
@click.option("--aspect", help="The rated aspect (needed when the version rates several).")
@click.option("--test-fraction", type=float, default=0.5, show_default=True,
              help="Share of each group's items in the test pool (train and test pools are disjoint).")
@click.option("--binning", type=click.Choice(["quantile", "width"]), default="quantile", show_default=True,
              help="10 bins of equal size (the paper's) or of equal width.")
@experiment_options
def drift_command(dataset: str, alphas: str | None, aspect: str | None, test_fraction: float, binning: str,
                  variants: tuple[str, ...], baselines: tuple[str, ...], no_baselines: bool, resamples: int,
                  as_json: bool, **options: Any) -> None:
    """Robustness to quality drift (§5.2, B.3): for each skew factor alpha, fine-tune every variant on
    a train sample skewed to low human ratings and correlate it (Kendall tau, Pearson r) with the
    humans on a test sample skewed to high ones, beside the baselines; stores one row per
    (variant, alpha, statistic) under results/robustness/experiment=drift/. --seed also seeds the
    sampling and the bootstrap."""
    from assay.workers.training.robustness_runs import prepare_drift

    common = _common(variants, baselines, no_baselines, options)
    points = parse_numbers(alphas, "--alphas")
    experiment = prepare_drift(dataset, alphas=points, aspect=aspect, test_fraction=test_fraction, binning=binning,
                               n_resamples=resamples, **common)
    kwargs = {"dataset": dataset, "alphas": points, "aspect": aspect, "test_fraction": test_fraction,
              "binning": binning, **_flow_kwargs(common, resamples)}
    _run("robustness-drift", experiment, kwargs, as_json)


@robustness_group.command("webnlg")
@click.option("--dataset", default="webnlg2017", show_default=True, metavar="NAME[@VERSION]",
              help="The WebNLG 2017 human evaluation (or another version rated per system and input).")
@click.option("--shares", metavar="S,T,...", help="Shares of the units given to training (default 0,0.1,...,0.5).")
@click.option("--by", "by", multiple=True, type=click.Choice(["system", "input"]),
              help="Split by the evaluated systems or by the inputs (repeatable; default both).")
@click.option("--aspect", "aspects", multiple=True,
              help="A rated aspect, trained and evaluated as its own task (repeatable; default every aspect).")
@click.option("--include-human", is_flag=True, help="Keep the human-written texts among the rated outputs.")
@experiment_options
def webnlg_command(dataset: str, shares: str | None, by: tuple[str, ...], aspects: tuple[str, ...],
                   include_human: bool, variants: tuple[str, ...], baselines: tuple[str, ...], no_baselines: bool,
                   resamples: int, as_json: bool, **options: Any) -> None:
    """WebNLG with little training data (§5.3): split the systems or the inputs, give a share of
    them to training, fine-tune every variant per aspect and correlate it with the humans on the
    rest, beside the baselines. At share 0 nothing is trained: checkpoint variants are scored as
    they are, encoder variants are skipped. Rows go to results/robustness/experiment=webnlg/.
    --seed also seeds the split and the bootstrap."""
    from assay.workers.training.robustness_runs import prepare_webnlg

    common = _common(variants, baselines, no_baselines, options)
    points = parse_numbers(shares, "--shares")
    experiment = prepare_webnlg(dataset, shares=points, by=list(by) or ["system", "input"],
                                aspects=list(aspects) or None, include_human=include_human, n_resamples=resamples,
                                **common)
    kwargs = {"dataset": dataset, "shares": points, "by": list(by) or None, "aspects": list(aspects) or None,
              "include_human": include_human, **_flow_kwargs(common, resamples)}
    _run("robustness-webnlg", experiment, kwargs, as_json)


def print_result(result: dict[str, Any]) -> None:
    from assay.cli.output import print_rows

    trained = result["trained"]
    reused = f", results of run {result['reused_run']} reused" if result.get("reused_run") else ""
    click.echo(f"robustness {result['experiment']} {result['experiment_id']}: run {result['run_id']}, "
               f"{len(result['checkpoints'])} checkpoints ({trained} trained now){reused}")
    for note in result.get("skipped", []):
        click.echo(f"  skipped: {note}")
    point = ["alpha"] if result["experiment"] == "drift" else ["split_by", "share"]
    rows = sorted(result["rows"], key=lambda r: (r["statistic"], r["aspect"], *(str(r[p]) for p in point),
                                                r["kind"], r["variant"]))
    print_rows(rows, ["statistic", "aspect", *point, "variant", "value", "ci", "n", "unit", "n_train", "checkpoint"])


def register(cli: click.Group) -> None:
    cli.add_command(robustness_group)
