"""``assay score`` and ``assay scores export``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from assay.cli.output import emit_json
from assay.errors import UsageError


def metric_spec_from_options(metric: str | None, model: str | None, layer: int | None, idf: bool,
                             rescale: bool, checkpoint: str | None, params: tuple[str, ...],
                             no_cache_undigested: bool = False) -> dict[str, Any]:
    """The metric spec the options name, checked by building the metric (cheap: no model is
    loaded), so a bad parameter is one error line before any flow starts. Values are typed here
    (``-p tau=0.1`` is a float); each metric's constructor checks them and names the accepted ones."""
    spec = _spec_from_options(metric, model, layer, idf, rescale, checkpoint, params, no_cache_undigested)
    from assay.metrics.registry import MetricSpec, create_metric

    create_metric(MetricSpec.from_dict(spec))
    return spec


def _spec_from_options(metric: str | None, model: str | None, layer: int | None, idf: bool, rescale: bool,
                       checkpoint: str | None, params: tuple[str, ...], no_cache_undigested: bool) -> dict[str, Any]:
    from assay.cli.options import parse_options, typed_value

    if checkpoint is not None:
        if metric not in (None, "bleurt"):
            raise UsageError("--checkpoint scores with the BLEURT-style metric; leave out --metric or use bleurt")
        if no_cache_undigested:
            raise UsageError("--no-cache-undigested applies to bertscore; a checkpoint is always digested")
        from assay.checkpoints.registry import resolve_checkpoint
        from assay.config import load_settings

        # a registered checkpoint travels by its catalog digest; an unregistered folder by its path
        folder = Path(checkpoint).expanduser()
        reference = str(folder.resolve()) if folder.is_dir() else resolve_checkpoint(load_settings(), checkpoint).digest
        return {"name": "bleurt", "params": {"checkpoint": reference,
                                             **{k: typed_value(v) for k, v in parse_options(params).items()}}}
    if metric is None:
        raise UsageError("give --metric NAME or --checkpoint NAME|PATH")
    values: dict[str, Any] = {}
    if no_cache_undigested:
        values["allow_undigested"] = True
    if model is not None:
        values["model"] = str(Path(model).resolve()) if Path(model).exists() else model
    if layer is not None:
        values["layer"] = layer
    if idf:
        values["idf"] = True
    if rescale:
        values["rescale"] = True
    for key, value in parse_options(params).items():
        values[key] = typed_value(value)
    if metric != "bertscore" and (model or layer is not None or idf or rescale or no_cache_undigested):
        raise UsageError(f"--model/--layer/--idf/--rescale/--no-cache-undigested apply to bertscore, not {metric}")
    return {"name": metric, "params": values}


def metric_options(func: Any) -> Any:
    options = [
        click.option("--metric", help="Metric name: sentbleu, bleu, chrf, corpus-chrf, ter, rouge1, rouge2, rougeL, "
                     "bertscore, bleurt, bleu-neighbors, or any metric an installed package registers "
                     "(entry-point group assay.metrics)."),
        click.option("--model", help="BERTScore encoder: a local folder or a Hugging Face hub id "
                     "(default: the bundled all-MiniLM-L6-v2)."),
        click.option("--layer", type=int, help="BERTScore: encoder layer whose embeddings are matched."),
        click.option("--idf", is_flag=True, help="BERTScore: idf weighting from the dataset's references."),
        click.option("--rescale", is_flag=True, help="BERTScore: rescale with the baseline for model and layer."),
        click.option("--checkpoint", metavar="NAME|PATH",
                     help="Score with a BLEURT-style checkpoint: a registered name, a digest prefix or a folder."),
        click.option("--param", "-p", "params", multiple=True, metavar="KEY=VALUE",
                     help="Any other metric parameter (repeatable), e.g. -p tau=0.1 for bleu-neighbors."),
        click.option("--no-cache-undigested", is_flag=True,
                     help="BERTScore: score a model whose weights cannot be digested; the scores are "
                     "printed (--json) but never stored."),
        click.option("--any-language", is_flag=True,
                     help="Score every language pair, also those whose target language the metric's model "
                     "does not cover (the embedded MiniLM covers English only)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@click.command("score")
@click.option("--dataset", required=True, metavar="NAME[@VERSION]", help="Dataset version to score.")
@metric_options
@click.option("--scope", type=click.Choice(["judged", "outputs", "all"]), default="judged", show_default=True,
              help="judged: segments with human judgments; outputs: every system output (system level).")
@click.option("--shard-size", type=int, default=4000, show_default=True, help="Segments per scoring task.")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON.")
def score_command(dataset: str, metric: str | None, model: str | None, layer: int | None, idf: bool,
                  rescale: bool, checkpoint: str | None, params: tuple[str, ...], no_cache_undigested: bool,
                  any_language: bool, scope: str, shard_size: int, as_json: bool) -> None:
    """Score a dataset version with a metric; already-scored segments are never recomputed.

    The request is planned in this process first: when every segment is cached the answer comes
    from the plan, without starting the Prefect flow (nothing is computed, so no run is recorded);
    otherwise the flow computes that plan.
    """
    from assay.cli.runner import run_score_flow
    from assay.jobs import scoring
    from assay.metrics.registry import MetricSpec

    spec = metric_spec_from_options(metric, model, layer, idf, rescale, checkpoint, params, no_cache_undigested)
    plan = scoring.plan_scoring(dataset, MetricSpec.from_dict(spec), scope=scope, shard_size=shard_size,
                                allow_languages=any_language)
    if plan.to_compute == 0:
        summary = scoring.finish_scoring(plan, [])
    else:  # the flow computes this plan (brought up to date under the signature lock), never plans again
        try:
            summary = run_score_flow(dataset, spec, scope=scope, shard_size=shard_size, progress=not as_json,
                                     allow_languages=any_language, plan=plan.as_dict())
        except BaseException:
            scoring.discard(plan)  # a flow that never started leaves no work files either
            raise
    if as_json:
        emit_json(summary)
        return
    click.echo(f"{summary['dataset']}  {summary['signature']}")
    click.echo(f"  {summary['rows']:,} segments ({summary['unique_segments']:,} unique): "
               f"{summary['cached']:,} cached, {summary['computed']:,} computed")
    if summary["run_id"] is None:
        click.echo("  nothing to compute: every segment is cached (no run recorded)")
    else:
        click.echo(f"  scoring {summary['scoring_seconds']:.2f} s; run {summary['seconds']:.2f} s "
                   f"(from plan to record, excluding process start-up); run {summary['run_id']}")
    if summary.get("note"):
        click.echo(f"  note: {summary['note']}")
    for warning in summary["warnings"]:
        click.echo(f"  warning: {warning}")


@click.group("scores")
def scores() -> None:
    """Export stored segment scores."""


@scores.command("export")
@click.option("--dataset", required=True, metavar="NAME[@VERSION]")
@metric_options
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="FILE.csv or FILE.parquet")
def export_command(dataset: str, metric: str | None, model: str | None, layer: int | None, idf: bool,
                   rescale: bool, checkpoint: str | None, params: tuple[str, ...], no_cache_undigested: bool,
                   any_language: bool, out: str) -> None:
    """One row per judged segment: group, system, segment_id, aspect, human, score (+P/R/F), signature."""
    from assay.jobs.score_export import scored_segments
    from assay.metrics.registry import MetricSpec, create_metric
    from assay.results.export import write_table

    if no_cache_undigested or any_language:
        raise UsageError("--no-cache-undigested and --any-language change what `assay score` computes; "
                         "export reads stored scores only")
    spec = metric_spec_from_options(metric, model, layer, idf, rescale, checkpoint, params)
    metric_obj = create_metric(MetricSpec.from_dict(spec))
    table = scored_segments(dataset, metric_obj)
    write_table(table, out)
    click.echo(f"wrote {table.num_rows:,} rows to {out}")


@click.command("bertscore-baseline")
@click.option("--dataset", required=True, metavar="NAME[@VERSION]",
              help="Dataset version whose references and system outputs are paired at random.")
@click.option("--model", help="Encoder folder or hub id (default: the bundled all-MiniLM-L6-v2).")
@click.option("--layer", "layers", type=int, multiple=True,
              help="Layer(s) to compute (repeatable; default for the bundled model: 4).")
@click.option("--pairs", "n_pairs", type=int, default=10_000, show_default=True, help="Random sentence pairs.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the pair sampler.")
@click.option("--lang", default="en", show_default=True, help="Language folder of the baseline file.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def baseline_command(dataset: str, model: str | None, layers: tuple[int, ...], n_pairs: int, seed: int, lang: str,
                     as_json: bool) -> None:
    """Compute a BERTScore rescaling baseline (Zhang et al., 2020, §3) for any model and layer.

    The mean P, R and F of random sentence pairs from a stored dataset are written, with their
    signature, to ASSAY_HOME/baselines/<lang>/<model>.tsv; `assay score --metric bertscore --rescale`
    then uses them.
    """
    from assay.cli.runner import run_flow

    if model is not None and Path(model).exists():
        model = str(Path(model).resolve())
    result = run_flow("bertscore-baseline", dataset, model=model, layers=list(layers), n_pairs=n_pairs, seed=seed,
                      lang=lang)
    if as_json:
        emit_json(result)
        return
    click.echo(f"wrote {result['file']} ({result['seconds']:.1f} s, run {result['run_id']})")
    for layer, values in result["layers"].items():
        click.echo(f"  layer {layer}: P {values['P']:.6f}  R {values['R']:.6f}  F {values['F']:.6f}")
        click.echo(f"    {values['signature']}")


def register(cli: click.Group) -> None:
    cli.add_command(score_command)
    cli.add_command(scores)
    cli.add_command(baseline_command)
