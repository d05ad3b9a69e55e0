"""One exception tree for everything Assay reports to a user.

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
"""

from __future__ import annotations

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


class CatalogError(AssayError):
    """The catalog cannot be used as it is."""


class CatalogOutOfDate(CatalogError):
    """The catalog's schema is older (or newer) than this code expects."""


class NotFoundError(AssayError):
    """A named dataset, version, run or metric does not exist."""


class UsageError(AssayError):
    """A command was called with arguments that cannot work together."""


class PluginError(AssayError, TypeError):
    """A dataset format or metric plugin broke its contract with Assay (a bug in the plugin)."""


class MetricOutputError(AssayError):
    """A metric produced numbers that cannot be stored (NaN or infinite scores, wrong lengths).
    Raised before anything is written; the message names the metric's signature."""


class UndigestedModelError(AssayError):
    """A model's weights cannot be digested, so its scores cannot be cached under a signature.
    The message names the model, the reason and the opt-out (score without caching)."""


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
