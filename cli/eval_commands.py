"""``assay evaluate``, ``assay leaderboard`` and ``assay rerun``."""

from __future__ import annotations

import csv
import sys
from datetime import datetime

import click

from assay.cli.output import emit_json, print_rows
from assay.config import DEFAULT_RESAMPLES, DEFAULT_SEED

STAT_HELP = ("pearson, spearman, kendall (tau-b), kendall_c, kendall_like (DARR), tau23, acc23, acc_t "
             "(tie-calibrated acc23) (seg), pairwise_accuracy (sys)")


@click.command("evaluate")
@click.option("--dataset", required=True, metavar="NAME[@VERSION]", help="Dataset version (latest unless pinned).")
@click.option("--level", type=click.Choice(["seg", "sys"]), default="seg", show_default=True)
@click.option("--metric", "metrics", multiple=True, help="Metric name or signature (default: every scored one).")
@click.option("--stat", "statistics", multiple=True, help=f"Statistic (repeatable): {STAT_HELP}.")
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True, help="Bootstrap and permutation seed.")
@click.option("--resamples", type=int, default=DEFAULT_RESAMPLES, show_default=True,
              help="Bootstrap/permutation resamples.")
@click.option("--protocol", help="WMT protocol, e.g. wmt17 or wmt18 (default: from the dataset's year); wmt24 "
              "evaluates the WMT24 protocol on MQM data: system-level SPA, item-grouped acc-t and their mean.")
@click.option("--permutations", "n_permutations", type=int, default=1000, show_default=True,
              help="wmt24: permutations of SPA's pairwise system p-values.")
@click.option("--include-human/--exclude-human", "include_human", default=None,
              help="Evaluate human translations (is_human) as candidates too (default: the release's rule; "
                   "MQM releases leave them out, as mt-metrics-eval does without --include_human).")
@click.option("--rater", help="MQM: correlate with this rater's scores instead of the mean over raters.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of rows.")
def evaluate_command(dataset: str, level: str, metrics: tuple[str, ...], statistics: tuple[str, ...], seed: int,
                     resamples: int, protocol: str | None, n_permutations: int, include_human: bool | None,
                     rater: str | None, as_json: bool) -> None:
    """Correlate every metric scored on a dataset version with the human scores, per group and overall,
    with bootstrap confidence intervals and significance clusters."""
    from assay.cli.runner import run_evaluate_flow

    result = run_evaluate_flow(dataset, level=level, metrics=list(metrics) or None,
                               statistics=list(statistics) or None, seed=seed, n_resamples=resamples,
                               protocol=protocol, include_human=include_human, rater=rater,
                               n_permutations=n_permutations)
    if as_json:
        emit_json(result["rows"])
        return
    click.echo(f"{result['dataset']} level {result['level']} ({result['protocol']}), run {result['run_id']}")
    columns = ["group", "aspect", "statistic", "rank", "cluster", "metric", "value", "ci", "n"]
    print_rows(result["rows"], ["level", *columns] if result["level"] == "wmt24" else columns)
    for note in result["skipped"]:
        click.echo(f"  skipped (incomplete scores): {note}")
    for note in result.get("notes", []):
        click.echo(f"  note: {note}")


@click.command("leaderboard")
@click.option("--dataset", required=True, metavar="NAME[@VERSION]")
@click.option("--level", type=click.Choice(["seg", "sys", "avg"]), default="seg", show_default=True,
              help="avg: the mean of a protocol's statistics (--protocol wmt24 stores it as --stat wmt24).")
@click.option("--stat", "statistic", default="kendall", show_default=True, help=STAT_HELP)
@click.option("--group", default="all", show_default=True, help="Language pair / task, or 'all' (mean).")
@click.option("--aspect", help="Aspect (e.g. WebNLG fluency); default: every aspect.")
@click.option("--metric", "metrics", multiple=True, help="Only these metric names or signatures.")
@click.option("--since", type=click.DateTime(), help="Only correlations computed on or after this date.")
@click.option("--allow-mixed", is_flag=True, help="Rank rows from different item sets or dataset versions.")
@click.option("--json", "as_json", is_flag=True)
@click.option("--csv", "as_csv", is_flag=True)
def leaderboard_command(dataset: str, level: str, statistic: str, group: str, aspect: str | None,
                        metrics: tuple[str, ...], since: datetime | None, allow_mixed: bool, as_json: bool,
                        as_csv: bool) -> None:
    """Rank metrics (and checkpoints) by agreement with humans, with significance clusters."""
    from assay.query.leaderboard import LeaderboardQuery, leaderboard

    if since is not None and since.tzinfo is None:
        from datetime import UTC

        since = since.replace(tzinfo=UTC)
    rows = leaderboard(LeaderboardQuery(dataset, level, statistic, group, aspect, metrics, since, allow_mixed))
    if as_json:
        emit_json(rows)
    elif as_csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    else:
        first = rows[0]
        click.echo(f"{first['dataset']}@{first['version_number']}  level {level}  {statistic}  group {group}")
        columns = ["rank", "cluster", "metric", "value", "ci", "n", "aspect", "signature"]
        if any(row.get("checkpoint") for row in rows):
            columns.insert(3, "checkpoint")
        print_rows(rows, columns)


@click.command("rerun")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True)
def rerun_command(run_id: str, as_json: bool) -> None:
    """Recompute a past score or evaluate run exactly: same dataset version, same metric signature,
    same parameters. Cached segment scores are reused; a new run is written and the old one kept."""
    from assay.cli.runner import run_flow

    result = run_flow("rerun", run_id)
    if as_json:
        emit_json(result)
        return
    click.echo(f"rerun of {run_id} ({result['kind']}) recorded as run {result['rerun_id']}"
               + (f"; recomputed by run {result['run_id']}" if result.get("run_id") else "; nothing to recompute"))
    for key in ("dataset", "signature", "computed", "cached"):
        if key in result:
            click.echo(f"  {key}: {result[key]}")
    if result["kind"] == "evaluate":
        print_rows(result["rows"], ["group", "aspect", "statistic", "rank", "cluster", "metric", "value", "ci", "n"])


@click.command("select")
@click.option("--dataset", required=True, metavar="NAME[@VERSION]", help="Dataset version (latest unless pinned).")
@click.option("--metric", "metrics", multiple=True, help="Metric name or signature (default: every scored one).")
@click.option("--hybrids", "n_hybrid", type=int, default=10_000, show_default=True,
              help="Hybrid systems super-sampled per group.")
@click.option("--candidates", "n_candidates", type=int, default=100, show_default=True,
              help="Hybrids the metric chooses among in each draw.")
@click.option("--draws", "n_trials", type=int, default=100_000, show_default=True, help="Model-selection draws.")
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True, help="Seed of the hybrids and the draws.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of rows.")
def select_command(dataset: str, metrics: tuple[str, ...], n_hybrid: int, n_candidates: int, n_trials: int,
                   seed: int, as_json: bool) -> None:
    """Model selection with hybrid systems (BERTScore, Zhang et al. 2020, §4 and appendix F.2):
    how often each metric's pick is the humans' best (Hits@1), MRR, and the human-score gap."""
    from assay.cli.runner import run_flow

    result = run_flow("select", dataset, metrics=list(metrics) or None, n_hybrid=n_hybrid,
                      n_candidates=n_candidates, n_trials=n_trials, seed=seed)
    if as_json:
        emit_json(result["rows"])
        return
    click.echo(f"{result['dataset']}: {n_hybrid:,} hybrids, {n_candidates} candidates, {n_trials:,} draws, "
               f"seed {seed}; run {result['run_id']}")
    rows = [{**r, "hits@1": f"{r['hits_at_1']:.3f}", "MRR": f"{r['mrr']:.3f}",
             "diff": f"{r['mean_abs_human_diff']:.4f}"} for r in result["rows"]]
    print_rows(rows, ["group", "aspect", "metric", "hits@1", "MRR", "diff", "n_systems", "n_items"])
    for note in result["skipped"]:
        click.echo(f"  skipped: {note}")


@click.command("errors")
@click.option("--dataset", required=True, metavar="NAME[@VERSION]",
              help="An MQM dataset version (latest unless pinned).")
@click.option("--metric", required=True, help="Metric name or signature scored on the dataset.")
@click.option("--against", "parent", metavar="METRIC",
              help="A parent checkpoint's metric name or signature: which error cells got better or worse.")
@click.option("--by", "level", type=click.Choice(["category", "category+severity"]), default="category",
              show_default=True, help="Error cells: category paths, or category and severity.")
@click.option("--resamples", type=int, default=1000, show_default=True, help="Bootstrap resamples of the items.")
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True)
@click.option("--top", type=int, default=10, show_default=True, help="Worst disagreements to show.")
@click.option("--include-human/--exclude-human", "include_human", default=None,
              help="Analyse human translations as candidates too (default: the release's rule).")
@click.option("--json", "as_json", is_flag=True, help="Print the whole analysis as JSON.")
def errors_command(dataset: str, metric: str, parent: str | None, level: str, resamples: int, seed: int, top: int,
                   include_human: bool | None, as_json: bool) -> None:
    """What a metric misses: per MQM error category, how much the metric's score drops for an error
    against how much the humans' drops (with bootstrap intervals over source segments), the blind
    spots ranked, and the segments the metric ranks most unlike the raters, with their error spans."""
    from assay.jobs.error_analysis import analyse_errors

    result = analyse_errors(dataset, metric, parent=parent, level=level, n_resamples=resamples, seed=seed, top=top,
                            include_human=include_human)
    if as_json:
        emit_json(result)
        return
    report = result["sensitivity"]
    click.echo(f"{result['dataset']} ({result['aspect']}): {result['signature']}; {report['outputs']:,} outputs, "
               f"{report['items']:,} items, {resamples} resamples; run {result['run_id']}")
    click.echo("drop per error (standardised: in within-item SDs); ratio = metric / humans")
    rows = []
    for cell in sorted(report["cells"], key=lambda c: -(c["outputs"])):
        rows.append({"cell": cell["name"], "outputs": cell["outputs"],
                     "humans": _estimate_text(cell["human_drop_std"]),
                     "metric": _estimate_text(cell["metric_drop_std"]),
                     "ratio": _estimate_text(cell["ratio"])})
    print_rows(rows, ["cell", "outputs", "humans", "metric", "ratio"])
    spots = report["blind_spots"]
    click.echo("blind spots (humans penalise, metric least): " + (", ".join(spots[:5]) if spots else "none"))
    if result["comparison"]:
        changed = [c for c in result["comparison"]["cells"] if c["verdict"] != "unchanged"]
        click.echo(f"against {result['parent_signature']}: "
                   + (", ".join(f"{c['name']} {c['verdict']}" for c in changed) if changed else "no cell changed"))
    pairs = result["disagreements"]
    click.echo(f"worst disagreements ({pairs['reversed_pairs']:,} of {pairs['clear_pairs']:,} clear human "
               "preferences reversed):")
    for i, pair in enumerate(pairs["pairs"], start=1):
        better, worse = pair["preferred"], pair["other"]
        click.echo(f" {i}. item {pair['item']}: humans prefer {better['system']} ({better['human']:.2f} vs "
                   f"{worse['human']:.2f}), the metric {worse['system']} ({worse['metric']:.3f} vs "
                   f"{better['metric']:.3f})")
        for label, side in (("  +", better), ("  -", worse)):
            click.echo(f"{label} {_marked(side['candidate'], side['errors'])}")


def _estimate_text(estimate: dict[str, float | None]) -> str:
    value, low, high = estimate["value"], estimate["low"], estimate["high"]
    if value is None:
        return "-"
    return f"{value:.2f} [{low:.2f}, {high:.2f}]" if low is not None and high is not None else f"{value:.2f}"


def _marked(text: str, errors: list[dict[str, object]]) -> str:
    """The text with each target-side error span in [[...]] and its severity initial."""
    spans = sorted({(int(e["start"]), int(e["end"]), str(e["severity"])[:1])  # type: ignore[call-overload]
                    for e in errors if e.get("side") == "target" and e.get("start") is not None}, reverse=True)
    for start, end, severity in spans:
        if 0 <= start <= end <= len(text):
            text = f"{text[:start]}[[{text[start:end]}]]{severity}{text[end:]}"
    return text


def register(cli: click.Group) -> None:
    cli.add_command(errors_command)
    cli.add_command(select_command)
    cli.add_command(evaluate_command)
    cli.add_command(leaderboard_command)
    cli.add_command(rerun_command)
