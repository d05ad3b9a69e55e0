"""Dataset names and ``NAME[@VERSION]`` references."""

from __future__ import annotations

import re
from dataclasses import dataclass

from assay import slugs
from assay.errors import UsageError

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def validate_name(name: str) -> str:
    """A dataset name is a folder name in the store: lowercase letters, digits, ``. _ -``.

    Path separators, ``..``, ``@`` (the version separator), spaces and leading dots are refused,
    so a name can never escape the store folder.
    """
    if not _NAME.fullmatch(name) or ".." in name:
        raise UsageError(
            f"invalid dataset name {name!r}: use 1-64 lowercase letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (no path separators, no '..', no '@')"
        )
    return name


def slug(text: str) -> str:
    """A valid dataset name derived from free text (a folder or file name)."""
    return validate_name(slugs.slug(text, keep="._-", max_length=64, default="dataset"))


@dataclass(frozen=True)
class DatasetRef:
    """``wmt17`` (latest version), ``wmt17@2`` (version number) or ``wmt17@3f2a9c`` (digest prefix)."""

    name: str
    version: str | None = None

    @classmethod
    def parse(cls, text: str) -> DatasetRef:
        name, _, version = text.partition("@")
        if _ and not version:
            raise UsageError(f"{text!r}: nothing after '@' (expected NAME@NUMBER or NAME@DIGEST)")
        return cls(validate_name(name), version or None)

    def __str__(self) -> str:
        return self.name if self.version is None else f"{self.name}@{self.version}"
