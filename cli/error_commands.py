"""``assay errors``: what a metric misses on data with error spans (MQM, ESA), in the terminal and as JSON.

The analysis is :func:`assay.jobs.error_analysis.analyse_errors` (one item:
:func:`assay.jobs.error_analysis.show_item`). Texts are printed with the raters' spans marked on
their original offsets (:mod:`assay.mqm.span_marks`): ``[[words]]MAJ``, nested where spans nest and
split where they cross, ``×N`` where N raters marked the same words with the same severity. An
output's errors on the source (an omission marks the source words left out) are printed on the
source; errors without a span are listed. A legend line names the severities shown. Colour is added
at a terminal only (``click.echo`` strips it in pipes and logs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import click

from assay.cli.output import emit_json, print_rows
from assay.config import DEFAULT_SEED

#: short severity tags (case-insensitive); any other severity is shown as written
TAGS = {"critical": "CRIT", "major": "MAJ", "minor": "MIN", "neutral": "NEU"}
#: colour per severity rank (assay.mqm.span_marks.severity_rank): Critical, Major, Minor, Neutral, other
COLOURS = (("magenta", True), ("red", True), ("yellow", False), ("cyan", False), ("blue", False))
INDENT = "    "


@click.command("errors")
@click.option("--dataset", required=True, metavar="NAME[@VERSION]",
              help="A dataset version with error spans: MQM or ESA (latest unless pinned).")
@click.option("--metric", help="Metric name or signature scored on the dataset (required unless --matrix).")
@click.option("--against", "parent", metavar="METRIC",
              help="A parent checkpoint's metric name or signature: which error cells got better or worse.")
@click.option("--by", "level", type=click.Choice(["category", "category+severity"]), default=None,
              help="Error cells: category paths, or category and severity [default: category; with --matrix, "
                   "the level the most metrics were analysed at].")
@click.option("--resamples", type=int, default=1000, show_default=True, help="Bootstrap resamples of the items.")
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True)
@click.option("--top", type=int, default=10, show_default=True,
              help="Worst disagreements to show: distinct items, each by its worst pair.")
@click.option("--item", metavar="ITEM",
              help="Show this item instead (the source segment id; <group>/<id> with several language pairs): "
                   "its source, references and every output with scores and marked errors. Nothing is stored.")
@click.option("--include-human/--exclude-human", "include_human", default=None,
              help="Analyse human translations as candidates too (default: the release's rule).")
@click.option("--min-human-gap", type=float, default=None, metavar="POINTS",
              help="Points of the human score that make a clear human preference (default: one minor error on "
                   "its scale: 1 for MQM, 10 for ESA's 0-100).")
@click.option("--matrix", is_flag=True,
              help="Show the stored analyses of every metric as one matrix of error cells x metrics (one --by, "
                   "each metric's newest run); nothing is computed.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole analysis (or the item) as JSON.")
def errors_command(dataset: str, metric: str | None, parent: str | None, level: str | None, resamples: int, seed: int,
                   top: int, item: str | None, include_human: bool | None, min_human_gap: float | None, matrix: bool,
                   as_json: bool) -> None:
    """What a metric misses: per error category, how much the metric's score drops for an error
    against how much the humans' drops (with bootstrap intervals over source segments), the blind
    spots ranked where the humans clearly penalise the error, and the items the metric ranks most
    unlike the raters, with their error spans on the output and on the source, and the reference."""
    if matrix:
        _print_matrix(dataset, level, as_json)
        return
    if metric is None:
        raise click.UsageError("--metric is required (or --matrix, to show the stored analyses)")
    if item is not None:
        from assay.jobs.error_analysis import show_item

        shown = show_item(dataset, metric, item, include_human=include_human, min_human_gap=min_human_gap)
        if as_json:
            emit_json(shown)
        else:
            print_item(shown)
        return
    from assay.jobs.error_analysis import analyse_errors

    result = analyse_errors(dataset, metric, parent=parent, level=level or "category", n_resamples=resamples,
                            seed=seed, top=top, include_human=include_human, min_human_gap=min_human_gap)
    if as_json:
        emit_json(result)
        return
    report = result["sensitivity"]
    click.echo(f"{result['dataset']} ({result['aspect']}): {result['signature']}; {report['outputs']:,} outputs, "
               f"{report['items']:,} items, {resamples} resamples; run {result['run_id']}")
    print_sensitivity(report)
    if result["comparison"]:
        changed = [c for c in result["comparison"]["cells"] if c["verdict"] != "unchanged"]
        click.echo(f"against {result['parent_signature']}: "
                   + (", ".join(f"{c['name']} {c['verdict']}" for c in changed) if changed else "no cell changed"))
    print_disagreements(result["disagreements"], result["metric"])


def _print_matrix(dataset: str, level: str | None, as_json: bool) -> None:
    """The stored analyses of ``dataset`` as one matrix (:func:`assay.query.error_matrix.error_matrix`)."""
    from assay.config import load_settings
    from assay.query.error_matrix import error_matrix

    found = error_matrix(load_settings(), dataset, level)
    if as_json:
        emit_json(found)
        return
    click.echo(f"{found['label']} ({found['aspect']}): blind-spot ratio per error {found['by']} (metric drop / "
               "human drop, standardised; * ranked blind spot; +/- better/worse than the parent checkpoint)")
    names = {m["signature"]: f"m{k}" for k, m in enumerate(found["metrics"], start=1)}
    rows = []
    for cell in found["cells"]:
        row = {"cell": cell["cell"], "outputs": cell["outputs"], "humans": estimate_text(
            {"value": cell["human_drop"], "low": cell["human_drop_low"], "high": cell["human_drop_high"]})}
        for signature, short_name in names.items():
            found_row = cell["metrics"].get(signature)
            ratio = None if found_row is None else found_row["ratio"]
            marks = "" if found_row is None else ("*" if found_row["blind_spot_rank"] is not None else "") + {
                "improved": "+", "worse": "-"}.get(found_row["verdict"] or "", "")
            row[short_name] = "-" if ratio is None else f"{ratio:.2f}{marks}"
        rows.append(row)
    print_rows(rows, ["cell", "outputs", "humans", *names.values()])
    for m in found["metrics"]:
        against = f" against {m['parent_signature']}" if m["parent_signature"] else ""
        stale = " (its --against verdicts superseded by a newer analysis)" if m["superseded"] else ""
        click.echo(f"{names[m['signature']]}  {m['signature']}  run {m['run_id']}{against}{stale}")
    if found["elsewhere"]:
        click.echo(f"analysed at another --by only: {', '.join(found['elsewhere'])}")


def print_sensitivity(report: Mapping[str, Any]) -> None:
    """The cells table, the ranked blind spots and the undetermined cells with their reasons."""
    confidence = f"{report['bootstrap']['confidence']:.0%}"
    click.echo(f"drop per error, in within-item SDs, with {confidence} intervals over item resamples; "
               "ratio = metric / humans, shown where the humans clearly penalise the error")
    rows = []
    for cell in sorted(report["cells"], key=lambda c: -c["outputs"]):
        ranked = cell["blind_spot_rank"] is not None
        rows.append({"cell": cell["name"], "outputs": cell["outputs"],
                     "humans": estimate_text(cell["human_drop_std"]),
                     "metric": estimate_text(cell["metric_drop_std"]),
                     "ratio": estimate_text(cell["ratio"]) if ranked else "undetermined",
                     "blind spot": f"#{cell['blind_spot_rank']}" if ranked else ""})
    print_rows(rows, ["cell", "outputs", "humans", "metric", "ratio", "blind spot"])
    spots = report["blind_spots"]
    click.echo("blind spots, the metric's worst first (humans clearly penalise, smallest ratio): "
               + (", ".join(f"#{k} {name}" for k, name in enumerate(spots, start=1)) if spots else "none"))
    if report["undetermined"]:
        click.echo("undetermined (no ratio ranked):")
        for cell in report["undetermined"]:
            click.echo(f"  {cell['name']}: {cell['reason']}")


def print_disagreements(worst: Mapping[str, Any], metric: str) -> None:
    pairs = worst["pairs"]
    click.echo(f"worst disagreements, one per item ({worst['reversed_pairs']:,} of {worst['clear_pairs']:,} clear "
               f"human preferences, a gap of at least {gap_text(worst)}, reversed by {metric} in "
               f"{worst['items_reversed']:,} items):")
    if not pairs:
        return
    click.echo(legend(severities(side["errors"] for pair in pairs for side in (pair["preferred"], pair["other"]))))
    for rank, pair in enumerate(pairs, start=1):
        better, worse = pair["preferred"], pair["other"]
        more = pair["reversed_in_item"] - 1
        click.echo(f"{rank:2}. item {pair['item']}: humans prefer {better['system']} ({better['human']:.2f} vs "
                   f"{worse['human']:.2f}), {metric} prefers {worse['system']} ({worse['metric']:.3f} vs "
                   f"{better['metric']:.3f})" + (f"; {more} more reversed pair{'s' * (more > 1)} in this item"
                                                 if more else ""))
        print_texts(pair["source"], pair["references"], pair["reference_names"])
        for sign, side in (("+", better), ("-", worse)):
            print_output(f"{sign} {side['system']}", side, pair["source"], metric)


def gap_text(found: Mapping[str, Any]) -> str:
    """``10 points (ESA default: ...)``: the clear-preference gap and its basis."""
    gap = found["min_human_gap"]
    basis = found.get("min_human_gap_basis")
    shown = basis and not basis.startswith("given")
    return f"{gap:g} point{'' if gap == 1 else 's'}" + (f" ({basis})" if shown else "")


def print_item(shown: Mapping[str, Any]) -> None:
    outputs = shown["outputs"]
    click.echo(f"{shown['dataset']} ({shown['aspect']}) item {shown['item']}: {len(outputs)} outputs, the humans' "
               f"best first; {shown['signature']}")
    print_texts(shown["source"], shown["references"], shown["reference_names"], indent="")
    click.echo(f"{shown['metric']} reverses {shown['reversed_pairs']} of {shown['clear_pairs']} clear human "
               f"preferences (a gap of at least {gap_text(shown)})"
               + (": " + ", ".join(f"{r['preferred']} over {r['other']}" for r in shown["reversed"])
                  if shown["reversed"] else ""))
    click.echo(legend(severities(o["errors"] for o in outputs)))
    for output in outputs:
        label = (f"{output['system']} (human #{output['human_rank']}, {shown['metric']} "
                 f"#{output['metric_rank']})")
        print_output(label, output, shown["source"], shown["metric"], indent="")


def print_texts(source: str, references: Sequence[str], names: Sequence[str], indent: str = INDENT) -> None:
    click.echo(f"{indent}source     {source}")
    if not references:
        click.echo(f"{indent}reference  (none in this release)")
    for name, reference in zip(names, references, strict=True):
        click.echo(f"{indent}{name:<10} {reference}")


def print_output(label: str, output: Mapping[str, Any], source: str, metric: str, indent: str = INDENT) -> None:
    """One output: its scores, its text with its target-side marks, the source with its source-side
    marks (where it has any), and every error grouped."""
    raters = output.get("raters", 1)
    click.echo(f"{indent}{label}: human {output['human']:.2f} ({raters} rater{'s' * (raters != 1)}), "
               f"{metric} {output['metric']:.3f}")
    click.echo(f"{indent}  output   {marked(output['candidate'], output['errors'], 'target')}")
    if any(e.get("side") == "source" and e.get("start") is not None for e in output["errors"]):
        click.echo(f"{indent}  source   {marked(source, output['errors'], 'source')}")
    click.echo(f"{indent}  errors   {error_summary(output['errors'])}")


def marked(text: str, errors: Sequence[Mapping[str, Any]], side: str) -> str:
    """``text`` with the spans of ``errors`` on ``side`` as ``[[...]]TAG``, properly nested."""
    from assay.mqm.span_marks import MarkEvent, bracketed, span_marks

    def opening(event: MarkEvent) -> str:
        return _styled("[[", event.mark.severity)

    def closing(event: MarkEvent) -> str:
        raters = len(event.mark.errors)
        return _styled(f"]]{tag(event.mark.severity)}" + (f"×{raters}" if raters > 1 else ""), event.mark.severity)

    return bracketed(text, span_marks(errors, side, len(text)), opening, closing)


def error_summary(errors: Sequence[Mapping[str, Any]]) -> str:
    """Every error, grouped by severity, category and where it is marked, most severe first."""
    from assay.mqm.span_marks import severity_rank

    if not errors:
        return "none"
    groups: dict[tuple[str, str, str], int] = {}
    for error in errors:
        where = ("no span" if error.get("start") is None else
                 "on the source" if error.get("side") == "source" else "on the output")
        key = (str(error.get("severity") or ""), str(error.get("category") or "") or "(no category)", where)
        groups[key] = groups.get(key, 0) + 1
    ordered = sorted(groups.items(), key=lambda kv: (severity_rank(kv[0][0]), -kv[1], kv[0][1], kv[0][2]))
    return "; ".join(f"{_styled(tag(severity), severity)} {category}" + (f" ×{n}" if n > 1 else "") + f" ({where})"
                     for (severity, category, where), n in ordered)


def tag(severity: str) -> str:
    """``MAJ`` for Major, ``MIN`` Minor, ``CRIT`` Critical, ``NEU`` Neutral; another severity as written."""
    return TAGS.get(severity.strip().casefold(), severity.strip() or "?")


def severities(error_lists: Iterable[Sequence[Mapping[str, Any]]]) -> list[str]:
    """The severities in ``error_lists``, most severe first, each once."""
    from assay.mqm.span_marks import severity_rank

    found = {str(e.get("severity") or "").strip(): None for errors in error_lists for e in errors}
    return sorted({s for s in found if s}, key=lambda s: (severity_rank(s), s))


def legend(shown: Sequence[str]) -> str:
    names = ", ".join(f"{_styled(tag(s), s)} {s}" for s in shown) or "no errors marked"
    return (f"marks: [[words]]TAG where raters marked an error ({names}); ×N: N raters marked the same words; "
            "marks nest, and a span that crosses another is split where they cross; `source` shows the errors "
            "marked on the source (an omission marks the words left out)")


def estimate_text(estimate: Mapping[str, float | None]) -> str:
    value, low, high = estimate["value"], estimate["low"], estimate["high"]
    if value is None:
        return "-"
    return f"{value:.2f} [{low:.2f}, {high:.2f}]" if low is not None and high is not None else f"{value:.2f}"


def _styled(text: str, severity: str) -> str:
    from assay.mqm.span_marks import severity_rank

    colour, bold = COLOURS[severity_rank(severity)]
    return click.style(text, fg=colour, bold=bold or None)


def register(cli: click.Group) -> None:
    cli.add_command(errors_command)
