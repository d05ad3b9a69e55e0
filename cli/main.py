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
               suite_commands, sweep_commands, error_commands, format_commands)
    for module in modules:
        module.register(cli)


_register_commands()


def main() -> None:
    cli(prog_name="assay")


if __name__ == "__main__":  # pragma: no cover
    main()
