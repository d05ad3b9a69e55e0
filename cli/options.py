"""Parsing option values shared by the commands: ``KEY=VALUE`` pairs, typed values, metric specs."""

from __future__ import annotations

from typing import Any

from assay.errors import UsageError


def parse_options(pairs: tuple[str, ...]) -> dict[str, str]:
    """``("k=v", ...)`` (repeated ``--option``/``-p`` values) -> ``{"k": "v", ...}``."""
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--option {pair!r}: expected KEY=VALUE")
        options[key.strip()] = value.strip()
    return options


def typed_value(value: str) -> Any:
    """``3`` -> 3, ``0.1`` -> 0.1, ``true``/``yes`` -> True, ``false``/``no`` -> False; other text stays text."""
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    if value.lower() in ("true", "yes"):
        return True
    if value.lower() in ("false", "no"):
        return False
    return value


def parse_metric(text: str) -> dict[str, Any]:
    """``sentbleu`` or ``bertscore:layer=9,idf=true`` -> a metric spec dict."""
    name, _, rest = text.partition(":")
    params: dict[str, Any] = {}
    for pair in filter(None, rest.split(",")):
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise UsageError(f"--metric {text!r}: expected NAME or NAME:KEY=VALUE[,KEY=VALUE]")
        params[key.strip()] = typed_value(value.strip())
    return {"name": name.strip(), "params": params}


def quiet_option(function: Any) -> Any:
    """``--quiet``: no progress display. Without it, progress goes to stderr: bars with ETA at a
    terminal, a line every ASSAY_PROGRESS_EVERY seconds otherwise (:mod:`assay.progress`)."""
    import click

    def configure(ctx: click.Context, _param: click.Parameter, quiet: bool) -> bool:
        import sys

        from assay import progress

        progress.configure("quiet" if quiet else None, sink=lambda line: print(line, file=sys.stderr, flush=True))
        return quiet

    return click.option("--quiet", is_flag=True, expose_value=False, callback=configure, is_eager=True,
                        help="No progress display (bars at a terminal, periodic lines otherwise).")(function)
