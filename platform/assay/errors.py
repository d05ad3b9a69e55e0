"""One exception tree for everything Assay reports to a user.

``AssayError``
    Base class. The CLI prints the message and exits with status 2; nothing else is shown.
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
