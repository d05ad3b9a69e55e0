"""``assay drift``: the quality-drift benchmark (BLEURT §5.2, appendix B.3) on a dataset version."""

from __future__ import annotations

import click

from assay.cli.options import parse_metric
from assay.cli.output import emit_json, print_rows
from assay.config import DEFAULT_RESAMPLES, DEFAULT_SEED


@click.command("drift")
@click.option("--dataset", required=True, metavar="NAME[@VERSION]", help="Dataset version to sample from.")
@click.option("--metric", "metrics", multiple=True, required=True, metavar="NAME[:KEY=VALUE,...]",
              help="Segment-level metric to evaluate (repeatable), e.g. sentbleu or bertscore:layer=9.")
@click.option("--alpha", "alphas", type=float, multiple=True,
              help="Skew factor (repeatable; default 0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0).")
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True, help="Sampling and bootstrap seed.")
@click.option("--stat", "statistic", type=click.Choice(["kendall", "pearson", "spearman", "kendall_c"]),
              default="kendall", show_default=True)
@click.option("--resamples", type=int, default=DEFAULT_RESAMPLES, show_default=True,
              help="Bootstrap resamples for the CIs.")
@click.option("--test-fraction", type=float, default=0.5, show_default=True,
              help="Share of each group's items in the test pool (train and test pools are disjoint).")
@click.option("--binning", type=click.Choice(["quantile", "width"]), default="quantile", show_default=True,
              help="10 bins of equal size (the paper) or of equal width over the observed range.")
@click.option("--groups", "per_group", is_flag=True, help="Show every group, not only the mean over groups.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of rows (every group).")
def drift_command(dataset: str, metrics: tuple[str, ...], alphas: tuple[float, ...], seed: int, statistic: str,
                  resamples: int, test_fraction: float, binning: str, per_group: bool, as_json: bool) -> None:
    """Robustness to quality drift (BLEURT §5.2): sample a train set skewed to low human ratings
    and a test set skewed to high ones for each skew factor alpha, store both as derived dataset
    versions, and correlate each metric with the humans on the test sets."""
    from assay.cli.runner import run_drift_flow

    rows = run_drift_flow(dataset, [parse_metric(m) for m in metrics], alphas=list(alphas) or None, seed=seed,
                          statistic=statistic, n_resamples=resamples, test_fraction=test_fraction, binning=binning)
    if as_json:
        emit_json(rows)
        return

    from assay.results.correlations import mean_else_each_group

    shown = rows if per_group else mean_else_each_group(rows, ("alpha", "signature", "statistic"))
    click.echo(f"quality drift of {dataset} ({statistic}, seed {seed}), run {rows[0]['drift_run_id'] if rows else '-'}")
    print_rows(shown, ["alpha", "metric", "group", "value", "ci", "n_train", "n_test", "test_dataset"])


def register(cli: click.Group) -> None:
    cli.add_command(drift_command)
