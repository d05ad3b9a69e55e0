"""``assay evaluate``, ``assay leaderboard`` and ``assay rerun``."""

from __future__ import annotations

import csv
import sys
from datetime import datetime
from typing import Any

import click

from assay.cli.output import emit_json, print_rows
from assay.config import DEFAULT_RESAMPLES, DEFAULT_SEED
from assay.datasets.names import VersionRef

STAT_HELP = ("--level seg: pearson, spearman, kendall (tau-b), kendall_c, kendall_like (WMT DARR), tau23, acc23, "
             "acc_t (tie-calibrated acc23); --level sys: pearson, spearman, kendall, pairwise_accuracy; "
             "--protocol wmt24 (all of them, whatever --stat says): spa (sys, soft pairwise accuracy), acc_t_item "
             "(seg, acc-t grouped by item), wmt24 (avg, their mean); --protocol wmt23: pearson (sys and seg), "
             "acc_t_item (seg), pairwise_accuracy (sys, pooled over language pairs), wmt23 (avg, the WMT23 "
             "weighted average)")
PROTOCOL_HELP = ("WMT protocol, e.g. wmt17 or wmt18 (default: from the dataset's year). wmt24: the WMT24 protocol on "
                 "MQM or ESA judgments (system-level SPA, item-grouped acc-t, their mean). wmt23: the WMT23 protocol "
                 "as mt-metrics-eval defines it (system and segment Pearson, item-grouped acc-t, pooled pairwise "
                 "accuracy, the weighted average), the official submissions beside the metrics Assay scored.")


@click.command("evaluate")
@click.option("--dataset", required=True, metavar="NAME[@VERSION]", help="Dataset version (latest unless pinned).")
@click.option("--level", type=click.Choice(["seg", "sys"]), default="seg", show_default=True)
@click.option("--metric", "metrics", multiple=True, help="Metric name or signature (default: every scored one).")
@click.option("--stat", "statistics", multiple=True, help=f"Statistic (repeatable): {STAT_HELP}.")
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True, help="Bootstrap and permutation seed.")
@click.option("--resamples", type=int, default=DEFAULT_RESAMPLES, show_default=True,
              help="Bootstrap/permutation resamples.")
@click.option("--protocol", help=PROTOCOL_HELP)
@click.option("--permutations", "n_permutations", type=int, default=1000, show_default=True,
              help="wmt24: permutations of SPA's pairwise system p-values.")
@click.option("--permutation-seed", type=int, default=None,
              help="wmt24: seed of SPA's permutations [default: mt-metrics-eval's, 4; independent of --seed].")
@click.option("--all-submissions", is_flag=True,
              help="wmt23: evaluate the contrastive submissions too, not only the primary ones.")
@click.option("--include-human/--exclude-human", "include_human", default=None,
              help="Evaluate human translations (is_human) as candidates too (default: the release's rule; "
                   "MQM releases leave them out, as mt-metrics-eval does without --include_human).")
@click.option("--rater", help="MQM or ESA: correlate with this rater's scores instead of the mean over raters.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of rows.")
def evaluate_command(dataset: str, level: str, metrics: tuple[str, ...], statistics: tuple[str, ...], seed: int,
                     resamples: int, protocol: str | None, n_permutations: int, permutation_seed: int | None,
                     all_submissions: bool, include_human: bool | None, rater: str | None, as_json: bool) -> None:
    """Correlate every metric scored on a dataset version with the human scores, per group and overall,
    with bootstrap confidence intervals and significance clusters."""
    from assay.cli.runner import run_evaluate_flow
    from assay.jobs.evaluation import check_request

    # before any flow starts: an unknown dataset, statistic or rater is refused without a run
    check_request(dataset, level=level, statistics=list(statistics) or None, protocol=protocol, rater=rater)
    result = run_evaluate_flow(dataset, level=level, metrics=list(metrics) or None,
                               statistics=list(statistics) or None, seed=seed, n_resamples=resamples,
                               protocol=protocol, include_human=include_human, rater=rater,
                               n_permutations=n_permutations, permutation_seed=permutation_seed,
                               all_submissions=all_submissions)
    if as_json:
        emit_json(result["rows"])
        return
    click.echo(f"{result['dataset']} level {result['level']} ({result['protocol']}), run {result['run_id']}")
    click.echo(f"  protocol signature: {result['protocol_signature']}")
    if result.get("side"):
        click.echo(f"  side evaluation: {result['side']} (not the headline; `assay leaderboard --side "
                   f"{result['side']!r}` shows it)")
    rows = result["rows"]
    _print_by_slot(rows)
    _degenerate_notes(rows)
    for note in result["skipped"]:
        click.echo(f"  skipped (incomplete scores): {note}")
    for note in result.get("notes", []):
        click.echo(f"  note: {note}")


@click.command("leaderboard")
@click.option("--dataset", required=True, metavar="NAME[@VERSION]")
@click.option("--level", type=click.Choice(["seg", "sys", "avg"]), default=None,
              help="avg: a protocol's average of its statistics (--stat wmt24 or wmt23) [default: avg with "
                   "--protocol wmt23/wmt24, else seg].")
@click.option("--stat", "statistic", default=None,
              help=f"[default: the protocol's average with --protocol wmt23/wmt24, else kendall] {STAT_HELP}.")
@click.option("--protocol", help="Only rows evaluated under this protocol (e.g. wmt23: the official submissions of "
                                 "WMT23 beside the metrics you scored, ranked by the WMT23 average).")
@click.option("--group", default="all", show_default=True, help="Language pair / task, or 'all' (mean).")
@click.option("--aspect", help="Aspect (e.g. WebNLG fluency); default: every aspect.")
@click.option("--metric", "metrics", multiple=True, help="Only these metric names or signatures.")
@click.option("--since", type=click.DateTime(), help="Only correlations computed on or after this date.")
@click.option("--allow-mixed", is_flag=True, help="Rank rows from different item sets or dataset versions.")
@click.option("--side", metavar="LABEL",
              help="A side evaluation by its label, e.g. 'rater rater3' or 'human translations included' "
                   "(an evaluation with a choice other than the protocol's defaults: --rater, --include-human/"
                   "--exclude-human, WMT24's --permutations or --permutation-seed); default: the headline "
                   "evaluations.")
@click.option("--across-versions", "across", is_flag=True,
              help="One --metric on every version of the dataset: its value and rank on each version's leaderboard.")
@click.option("--json", "as_json", is_flag=True)
@click.option("--csv", "as_csv", is_flag=True)
def leaderboard_command(dataset: str, level: str | None, statistic: str | None, protocol: str | None, group: str,
                        aspect: str | None, metrics: tuple[str, ...], since: datetime | None, allow_mixed: bool,
                        side: str | None, across: bool, as_json: bool, as_csv: bool) -> None:
    """Rank metrics (and checkpoints) by agreement with humans, with significance clusters. Official
    submissions (a shared task's scores, e.g. ingested from mt-metrics-eval's data) are marked as such;
    a degenerate value (one that cannot separate metrics) is listed without a rank."""
    from assay.query.leaderboard import LeaderboardQuery, leaderboard

    if across:
        _print_across_versions(LeaderboardQuery(dataset, level, statistic, group, aspect, protocol=protocol,
                                                side=side), metrics, as_json)
        return

    if since is not None and since.tzinfo is None:
        from datetime import UTC

        since = since.replace(tzinfo=UTC)
    query = LeaderboardQuery(dataset, level, statistic, group, aspect, metrics, since, allow_mixed,
                             protocol=protocol, side=side).resolved()
    rows = leaderboard(query)
    if as_json:
        emit_json(rows)
    elif as_csv:
        writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    else:
        first = rows[0]
        click.echo(f"{VersionRef.from_columns(first).label}  level {query.level}  {query.statistic}  "
                   f"group {group}" + (f"  protocol {protocol}" if protocol else "")
                   + (f"  side evaluation: {side}" if side else ""))
        columns = ["rank", "cluster", "metric", "value", "ci", "n", "unit", "aspect", "signature"]
        if any(row.get("checkpoint") for row in rows):
            columns.insert(3, "checkpoint")
        print_rows(_shown(rows), _with_optional(columns, rows))
        _degenerate_notes(rows)


def _print_across_versions(query: Any, metrics: tuple[str, ...], as_json: bool) -> None:
    from assay.config import load_settings
    from assay.query.versions import across_versions

    if len(metrics) != 1:
        raise click.UsageError("--across-versions needs exactly one --metric")
    result = across_versions(query, metrics[0], load_settings())
    if as_json:
        emit_json(result)
        return
    click.echo(f"{metrics[0]} on every version of {result['dataset']}  level {result['level']}  "
               f"{result['statistic']}  group {result['group']}")
    rows = []
    for v in result["versions"]:
        row = v["row"] or {}
        rank = "" if not row else ("-" if row["rank"] is None else f"{row['rank']} of {v['ranked_among']}")
        rows.append({"version": v["label"], "digest": v["version_digest"][:12],
                     "value": None if not row else row["value"], "ci_low": row.get("ci_low"),
                     "ci_high": row.get("ci_high"), "rank": rank,
                     "n": row.get("n"), "unit": row.get("unit"), "note": v["note"] or ""})
    print_rows(rows, ["version", "digest", "value", "ci", "rank", "n", "unit", "note"])


def _print_by_slot(rows: list[dict[str, Any]]) -> None:
    """Evaluation rows as one table per (level, group, aspect, statistic), in the rows' order, each
    under a heading line: ranks and clusters are within a slot, so a slot is what a table compares."""
    slots: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for row in rows:
        slots.setdefault((str(row.get("level") or ""), row["group"], row["aspect"], row["statistic"]), []).append(row)
    for (level, group, aspect, statistic), slot in slots.items():
        click.echo(f"\n{level + '  ' if level else ''}{statistic}  group {group}  aspect {aspect}")
        print_rows(_shown(slot), _with_optional(["rank", "cluster", "metric", "value", "ci", "n", "unit"], slot))


def _shown(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows as the terminal shows them: a degenerate value's rank reads ``-`` (the reason is printed
    under the table, :func:`_degenerate_notes`); an official
    submission is marked (``origin``) and a reference-free one named as mt-metrics-eval names it
    (``[noref]``); epsilon in 6 significant digits."""
    from assay.results.external_scores import parse_external

    shown = []
    for row in rows:
        variant = parse_external(row["signature"])
        shown.append({**row, "rank": "-" if row.get("degenerate") else row.get("rank"),
                      "origin": "official" if variant else "assay",
                      # rich reads "[noref]" as markup: escaped, it prints as written
                      "metric": row["metric"] + (r"\[noref]" if variant and variant.is_reference_free else ""),
                      "epsilon": None if row.get("epsilon") is None else f"{row['epsilon']:.6g}"})
    return shown


def _with_optional(columns: list[str], rows: list[dict[str, Any]]) -> list[str]:
    """``columns``, with ``origin`` after the metric where official submissions are among the rows and
    ``epsilon`` where a row has a calibrated tie threshold."""
    columns = list(columns)
    if any(row.get("official") for row in rows):
        columns.insert(columns.index("metric") + 1, "origin")
    if any(row.get("epsilon") is not None for row in rows):
        columns.insert(columns.index("unit") + 1, "epsilon")
    return columns


def _degenerate_notes(rows: list[dict[str, Any]]) -> None:
    """Why each degenerate value means nothing (once per metric, statistic and group; a mean over
    groups that is degenerate because a group is, only where that group is not shown)."""
    shown_groups = {(r.get("level"), r["statistic"], r["signature"]) for r in rows if r["group"] != "all"
                    and r.get("degenerate")}
    seen = set()
    for row in rows:
        reason = row.get("degenerate")
        key = (row.get("level"), row["group"], row["statistic"], row["signature"])
        if row["group"] == "all" and key[:1] + key[2:] in shown_groups:
            continue
        if reason and key not in seen:
            seen.add(key)
            click.echo(f"  degenerate, not ranked: {row['metric']} {row['statistic']} ({row['group']}): {reason}")


@click.command("compare")
@click.argument("first")
@click.argument("second")
@click.option("--dataset", required=True, metavar="NAME[@VERSION]")
@click.option("--level", type=click.Choice(["seg", "sys", "avg"]), default=None,
              help="[default: as `assay leaderboard`: avg with --protocol wmt23/wmt24, else seg]")
@click.option("--stat", "statistic", default=None, help=f"[default: as `assay leaderboard`] {STAT_HELP}.")
@click.option("--protocol", help="Only rows evaluated under this protocol.")
@click.option("--aspect", help="Aspect (e.g. WebNLG fluency); default: every aspect.")
@click.option("--side", metavar="LABEL", help="A side evaluation by its label (as `assay leaderboard --side`).")
@click.option("--json", "as_json", is_flag=True)
def compare_command(first: str, second: str, dataset: str, level: str | None, statistic: str | None,
                    protocol: str | None, aspect: str | None, side: str | None, as_json: bool) -> None:
    """Compare FIRST with SECOND (metric names, signatures or checkpoint names) in every group: both
    values, the difference, and the paired significance test the evaluation stored (one-sided p that
    the better one truly correlates better)."""
    from assay.config import load_settings
    from assay.query.compare import compare
    from assay.query.leaderboard import LeaderboardQuery

    query = LeaderboardQuery(dataset, level, statistic, aspect=aspect, protocol=protocol, side=side)
    result = compare(query, first, second, load_settings())
    if as_json:
        emit_json(result)
        return
    click.echo(f"{result['dataset']}  level {result['level']}  {result['statistic']}"
               + (f"  side evaluation: {side}" if side else "") + f"  first = {first}, second = {second}")
    rows = []
    for g in result["groups"]:
        rows.append({"group": g["group"], "first": _value_text(g["first"]["value"]),
                     "second": _value_text(g["second"]["value"]),
                     "difference": "" if g["difference"] is None else f"{g['difference']:+.4f}",
                     "p": "" if g["p_value"] is None else f"{g['p_value']:.3g}", "test": g["test"] or "",
                     "significant": {True: "yes", False: "no", None: ""}[g["significant"]]})
    print_rows(rows, ["group", "first", "second", "difference", "p", "test", "significant"])
    for g in result["groups"]:
        if g["note"]:
            click.echo(f"  {g['group']}: {g['note']}")


def _value_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


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
        _print_by_slot(result["rows"])


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


def register(cli: click.Group) -> None:
    cli.add_command(select_command)
    cli.add_command(evaluate_command)
    cli.add_command(leaderboard_command)
    cli.add_command(compare_command)
    cli.add_command(rerun_command)
