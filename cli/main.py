"""The ``assay`` command line: one group, a subcommand per job.

Heavy modules (Prefect, DuckDB, pyarrow) are imported inside the commands so that
``assay --help`` stays fast. Every :class:`assay.errors.AssayError` is printed as one line on
stderr, ``error: ...``, and nothing else. Exit statuses:

0  done;
2  the input or the arguments are wrong (an :class:`~assay.errors.AssayError`; fix the command);
3  a service is unreachable or refused us: the catalog's database or the Prefect API (a
   :class:`~assay.errors.ServiceError`, or a failure deep in psycopg, SQLAlchemy, httpx or Prefect
   that :func:`assay.cli.service_failures.classify` recognises; fix the setup). The line names the
   service, its URL with the password masked, what went wrong and the setting to check;
1  anything else: a bug, shown with its traceback.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from typing import Any

import click

from assay.errors import AssayError, ServiceError

#: exit statuses (see the module doc)
EXIT_USAGE = 2
EXIT_SERVICE = 3


class AssayGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ServiceError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(EXIT_SERVICE)
        except AssayError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(EXIT_USAGE)
        except Exception as exc:
            from assay.cli.service_failures import classify

            failure = classify(exc)
            if failure is None:
                raise
            click.echo(f"error: {failure}", err=True)
            ctx.exit(EXIT_SERVICE)


@click.group(cls=AssayGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="assay")
def cli() -> None:
    """Assay: evaluate text-generation metrics against human judgments.

    State lives in ASSAY_HOME (default ~/.assay); ASSAY_CATALOG_URL points the catalog at
    PostgreSQL for a team; ASSAY_DATA_DIR is where `assay run` finds source datasets. Flows run on
    a local Prefect server that the first command starts in the background (`assay server`), or on
    the one PREFECT_API_URL names.
    """
    from assay.flows.engine import opt_out_of_prefect_telemetry

    opt_out_of_prefect_telemetry()  # before any command imports Prefect: no notices of Prefect's own


def _register_commands() -> None:
    from assay.cli import (
        catalog_commands,
        checkpoint_commands,
        dataset_commands,
        deploy_commands,
        drift_commands,
        error_commands,
        eval_commands,
        format_commands,
        job_commands,
        report_commands,
        robustness_commands,
        score_commands,
        serve_commands,
        server_commands,
        suite_commands,
        sweep_commands,
        synth_commands,
        train_commands,
        worker_commands,
    )

    modules = (catalog_commands, checkpoint_commands, dataset_commands, job_commands, score_commands,
               eval_commands, drift_commands, report_commands, server_commands, synth_commands, worker_commands,
               train_commands, robustness_commands, deploy_commands,
               suite_commands, sweep_commands, error_commands, format_commands, serve_commands)
    for module in modules:
        module.register(cli)


_register_commands()


#: the exit status of the command this process ran (set when it ends with ``SystemExit``)
_exit_status: list[int] = []


def main() -> None:
    """The ``assay`` entry point. A flow command is handed to this home's command preloader when one
    serves (:func:`assay.cli.command_preloader.run_preloaded`); anything else runs here.

    Either way the process ends with :func:`os._exit` once the command is done and every exit
    handler has run (Prefect's flush its events there): the interpreter's teardown of every imported
    module, a few tenths of a second once Prefect is imported, does nothing a command needs.
    """
    from assay.cli.command_preloader import remember_entry_environment, run_preloaded

    status = run_preloaded(sys.argv[1:])
    if status is not None:
        _exit_now(status)
    remember_entry_environment()
    atexit.register(_exit_without_teardown)  # registered first, so it runs after every other exit handler
    try:
        cli(prog_name="assay")
    except SystemExit as exc:
        code = exc.code
        _exit_status[:] = [code if isinstance(code, int) else 0 if code is None else 1]
        raise


def _exit_without_teardown() -> None:
    """The last exit handler: end the process with the command's status, skipping the teardown
    (only after a ``SystemExit``; an uncaught exception ends the usual way)."""
    if _exit_status:
        if "logging" in sys.modules:  # its handlers' own exit handler may be registered before this one
            sys.modules["logging"].shutdown()
        _exit_now(_exit_status[0])


def _exit_now(status: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


if __name__ == "__main__":  # pragma: no cover
    main()
