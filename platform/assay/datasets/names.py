"""Dataset names, the ``NAME[@VERSION]`` references users write, and :class:`VersionRef`, the
reference to one stored version."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Self

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


#: a version given after ``@`` with fewer digits than this and only digits is a number, otherwise a digest prefix
_NUMBER_DIGITS = 6


def split_reference(text: str) -> tuple[str, str | None]:
    """``NAME[@VERSION]`` split at its ``@``: ``(NAME, VERSION)``, VERSION None when there is no ``@``
    (``""`` when nothing follows it). The one reader of the grammar that dataset references
    (:meth:`DatasetRef.parse`) and versioned suites (:func:`assay.nightly.suites.get_suite`) share."""
    name, at, version = text.partition("@")
    return name, version if at else None


@dataclass(frozen=True)
class DatasetRef:
    """What a user writes to name a dataset version, before the catalog resolves it:
    ``wmt17`` (the latest version), ``wmt17@2`` (``version_number`` 2) or ``wmt17@3f2a9c``
    (``version_digest``: a prefix of the content digest, lower-case hex)."""

    name: str
    version_number: int | None = None
    version_digest: str | None = None

    @classmethod
    def parse(cls, text: str) -> DatasetRef:
        """``NAME``, ``NAME@NUMBER`` (up to five digits) or ``NAME@DIGEST`` (a digest prefix)."""
        name, version = split_reference(text)
        if version == "":
            raise UsageError(f"{text!r}: nothing after '@' (expected NAME@NUMBER or NAME@DIGEST)")
        validate_name(name)
        if version is None:
            return cls(name)
        if version.isdigit() and len(version) < _NUMBER_DIGITS:
            return cls(name, version_number=int(version))
        return cls(name, version_digest=version.lower())

    def __str__(self) -> str:
        if self.version_number is not None:
            return f"{self.name}@{self.version_number}"
        return self.name if self.version_digest is None else f"{self.name}@{self.version_digest}"


@dataclass(frozen=True, order=True)
class VersionRef:
    """One stored dataset version: its dataset ``name``, its ``number`` (1, 2, ... per dataset, in
    the order the versions were stored) and its content ``digest`` (sha256 hex of the canonical
    tables, :func:`assay.provenance.table_digest`). The one way a resolved version is named in plans,
    ledger items, suites, samples and synthetic versions; ``label`` (``name@N``) is how people read it."""

    name: str
    number: int
    digest: str

    @property
    def label(self) -> str:
        return f"{self.name}@{self.number}"

    @property
    def pinned(self) -> str:
        """``name@DIGEST``: a :class:`DatasetRef` that resolves to exactly this content."""
        return f"{self.name}@{self.digest}"

    def __str__(self) -> str:
        return self.label

    @classmethod
    def parse(cls, label: str, digest: str) -> VersionRef:
        """The version ``label`` (``name@N``) names, whose content ``digest`` is known (stored beside
        the label, as suites and ledger items store it). A bare name or ``name@DIGEST`` names no
        number: that is a :class:`DatasetRef` for the catalog to resolve, and is refused here."""
        ref = DatasetRef.parse(label)
        if ref.version_number is None:
            raise UsageError(f"{label!r} is not a version label NAME@NUMBER (resolve NAME or NAME@DIGEST in the "
                             "catalog first)")
        return cls(ref.name, ref.version_number, digest)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON (for flow parameters): ``{"name", "number", "digest", "label"}`` (``label`` for
        readers of the JSON; :meth:`from_dict` reads the other three)."""
        return {"name": self.name, "number": self.number, "digest": self.digest, "label": self.label}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VersionRef:
        return cls(str(data["name"]), int(data["number"]), str(data["digest"]))

    def columns(self) -> dict[str, Any]:
        """The version as a results-store row names it (``docs/STORAGE.md``, "Results schemas"):
        ``dataset`` (the name), ``version_number`` and ``version_digest``; read back by
        :meth:`from_columns`."""
        return {"dataset": self.name, "version_number": self.number, "version_digest": self.digest}

    @classmethod
    def from_columns(cls, row: Mapping[str, Any]) -> VersionRef:
        return cls(str(row["dataset"]), int(row["version_number"]), str(row["version_digest"]))


class VersionedRecord:
    """A mixin for a frozen dataclass that describes one stored dataset version (a drift sample, a
    side of a split) in its ``version`` field: its ``label``, and plain JSON for flow parameters."""

    version: VersionRef

    @property
    def label(self) -> str:
        return self.version.label

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON (a flow parameter): the fields, ``version`` as :meth:`VersionRef.as_dict`, and ``label``."""
        return {**asdict(self), "label": self.label}  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        fields = {k: v for k, v in data.items() if k != "label"}
        return cls(**{**fields, "version": VersionRef.from_dict(fields["version"])})
