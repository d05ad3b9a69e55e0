"""One exception tree for everything Assay reports to a user; every exception class of Assay is
defined here (``tests/test_exported_members.py`` checks it), so this is the one place to read it.

The hierarchy, indented under its base (a second base, in brackets, lets a caller catch it the
usual way too)::

    AssayError                      the CLI prints the message, exit status 2
        InputError                  a defective input file
            CheckpointError         a checkpoint folder that cannot be used
        CatalogError
            CatalogOutOfDate
        NotFoundError
            SuiteNotFound           (and UsageError)
        UsageError
            SuiteNotFound
            DeployRefused
        PluginError                 (and TypeError)
        MetricOutputError
        UndigestedModelError
        StatsInputError             (and ValueError)
        LockTimeout                 (and TimeoutError)
        ServerError                 the background Prefect server
        ServiceError                exit status 3

Warning categories (``warnings.warn``) are not errors: they live beside the code that warns.

``AssayError``
    Base class. The CLI prints the message and exits with status 2; nothing else is shown.
``ServiceError``
    A service Assay depends on (the catalog's database, the Prefect API) is unreachable or refused
    us: the input may be fine, the setup is not. The CLI exits with status 3 instead of 2; the message
    names the service, its URL (password masked), what went wrong and the setting to check.
``InputError``
    A defective input file: names the file, the line where there is one, what was found and
    what was expected. Raised before anything is written.
``CatalogError``
    The catalog cannot be used as it is (for example ``CatalogOutOfDate``).
``NotFoundError``
    A dataset, version, run or metric that the user named does not exist.
``UsageError``
    A command was called with arguments that cannot work together, or with bad parameters.
``MetricOutputError``
    A metric produced numbers that cannot be stored (NaN or infinite scores, wrong lengths). Raised
    before anything is written; the message names the metric's signature and how many segments.
``UndigestedModelError``
    A model's weights cannot be digested, so its scores cannot be cached under a signature. The
    message names the model, the reason and the opt-out (score without caching).
``PluginError``
    A dataset format or a metric (built in, or added by another package through an entry point)
    broke its contract with Assay, e.g. a parser returned a table with the wrong schema. Not the
    user's input: the message names the plugin, so its author can fix it.
``CheckpointError``
    A learned metric's checkpoint folder that cannot be used (``assay.workers.checkpoint``): an
    ``InputError`` naming the file and, where there is one, the JSON key.
``SuiteNotFound``
    A suite reference names no stored suite, or no such version of it (``assay.nightly.suites``).
``DeployRefused``
    ``assay deploy`` found problems before writing anything; ``problems`` holds one line each.
``StatsInputError``
    Scores handed to a statistic (``assay.stats``) cannot be used as they are: wrong length,
    missing values, a bad parameter. The message says what was found and what was expected.
``LockTimeout``
    Another request still held a signature's exactly-once lock when the timeout ran out
    (``assay.jobs.signature_lock``).
``ServerError``
    The background Prefect server the CLI starts (``assay.cli.background_server``) could not be
    started; the message points at its log.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class AssayError(Exception):
    """Base class of every error Assay reports to its user."""


class InputError(AssayError):
    """A defective input file.

    The message reads ``FILE:LINE: PROBLEM (expected EXPECTED)`` so that editors and terminals
    can jump to the spot, and the user knows what to fix.
    """

    def __init__(
        self,
        path: str | Path,
        problem: str,
        *,
        line: int | None = None,
        expected: str | None = None,
    ) -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        self.expected = expected
        where = self.path if line is None else f"{self.path}:{line}"
        message = f"{where}: {problem}"
        if expected:
            message += f" (expected {expected})"
        super().__init__(message)


class CheckpointError(InputError):
    """A checkpoint folder that cannot be used; the message names the file and, where there is
    one, the JSON key."""


class CatalogError(AssayError):
    """The catalog cannot be used as it is."""


class CatalogOutOfDate(CatalogError):
    """The catalog's schema is older (or newer) than this code expects."""


class NotFoundError(AssayError):
    """A named dataset, version, run or metric does not exist."""


class UsageError(AssayError):
    """A command was called with arguments that cannot work together."""


class SuiteNotFound(NotFoundError, UsageError):
    """A suite reference names no stored suite (or no such version of it)."""


class DeployRefused(UsageError):
    """``assay deploy`` found problems before writing anything; ``problems`` has one line each."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        if len(self.problems) == 1:
            message = f"{self.problems[0]}; nothing was changed"
        else:
            message = (f"{len(self.problems)} problems, nothing was changed:\n"
                       + "\n".join(f"  {p}" for p in self.problems))
        super().__init__(message)


class PluginError(AssayError, TypeError):
    """A dataset format or metric plugin broke its contract with Assay (a bug in the plugin)."""


class MetricOutputError(AssayError):
    """A metric produced numbers that cannot be stored (NaN or infinite scores, wrong lengths).
    Raised before anything is written; the message names the metric's signature."""


class UndigestedModelError(AssayError):
    """A model's weights cannot be digested, so its scores cannot be cached under a signature.
    The message names the model, the reason and the opt-out (score without caching)."""


class StatsInputError(AssayError, ValueError):
    """Scores handed to a statistic cannot be used as they are (wrong length, missing values...).

    The message says what was found and what was expected. It is a ``ValueError`` too, so numeric
    callers can catch it the usual way.
    """


class LockTimeout(AssayError, TimeoutError):
    """The lock was still held by another request when the timeout ran out."""


class ServerError(AssayError):
    """The background Prefect server could not be started (the message points at its log)."""


class ServiceError(AssayError):
    """A service is unreachable or refused us: the catalog's database or the Prefect API.

    Not the user's input (exit status 2) but their setup: the CLI exits with status 3. The message
    reads ``cannot use the SERVICE at URL: PROBLEM; CHECK``, e.g. ``cannot use the catalog at
    postgresql+psycopg://assay:***@db:5432/assay: connection refused; check ASSAY_CATALOG_URL and
    that PostgreSQL is running``. ``url`` must come with its password already masked; no auth string
    or password belongs in any field.
    """

    def __init__(self, service: str, url: str, problem: str, check: str) -> None:
        self.service = service
        self.url = url
        self.problem = problem
        self.check = check
        super().__init__(f"cannot use the {service} at {url}: {problem}; {check}")
