"""Who may read the served leaderboard: HTTP basic auth, bearer tokens, or nobody but this machine.

A team's ``assay serve`` signs people in one of two ways (the HTTP authentication schemes of RFC 7617
and RFC 6750):

* **basic auth** from the environment: ``ASSAY_SERVE_AUTH=user:password``, the same ``user:password``
  form Prefect's ``PREFECT_SERVER_API_AUTH_STRING`` takes (docs/TEAM.md);
* **bearer tokens** listed in a file (``--tokens-file``): one token per line, blank lines and lines
  starting with ``#`` ignored; each person or service gets its own line, and removing it revokes it.

With neither, the app serves only on a loopback address (``assay serve`` on one's own machine needs
no set-up); binding another address without sign-in is refused. Credentials are compared in
constant time, and never appear in a page, a log line or JSON: :meth:`Access.describe` names the
mode and the file, never a secret.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path

from assay.errors import InputError, UsageError

__all__ = ["AUTH_VARIABLE", "Access", "is_loopback"]

AUTH_VARIABLE = "ASSAY_SERVE_AUTH"
"""The environment variable holding ``user:password`` for HTTP basic auth."""


def is_loopback(host: str) -> bool:
    """``host`` is a loopback address (or ``localhost``): only this machine can reach it."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Access:
    """The sign-in the app requires: ``basic`` (``user:password``), ``tokens``, or neither."""

    basic: str | None = None
    tokens: tuple[str, ...] = field(default=(), repr=False)
    tokens_file: Path | None = None

    def __repr__(self) -> str:  # never the secrets
        return f"Access({self.describe()!r})"

    @classmethod
    def configured(cls, tokens_file: Path | None = None, environ: dict[str, str] | None = None) -> Access:
        """The sign-in from ``ASSAY_SERVE_AUTH`` and ``tokens_file``. A malformed setting is refused
        with the variable or the file and line named."""
        environ = dict(os.environ if environ is None else environ)
        basic = environ.get(AUTH_VARIABLE) or None
        if basic is not None and (":" not in basic or not basic.split(":", 1)[0] or not basic.split(":", 1)[1]):
            raise UsageError(f"{AUTH_VARIABLE} must be user:password (both non-empty)")
        if basic is not None and tokens_file is not None:
            raise UsageError(f"choose one sign-in: {AUTH_VARIABLE} (basic auth) or --tokens-file (bearer tokens)")
        tokens: list[str] = []
        if tokens_file is not None:
            try:
                lines = tokens_file.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(tokens_file, f"cannot read the tokens file ({exc.__class__.__name__})") from None
            for number, line in enumerate(lines, start=1):
                token = line.strip()
                if not token or token.startswith("#"):
                    continue
                if len(token) < 16 or any(c.isspace() for c in token):
                    raise InputError(tokens_file, "not a token", line=number,
                                     expected="one token of at least 16 characters, without spaces")
                tokens.append(token)
            if not tokens:
                raise InputError(tokens_file, "no tokens", expected="at least one token, one per line")
        return cls(basic, tuple(tokens), tokens_file)

    @property
    def required(self) -> bool:
        return self.basic is not None or bool(self.tokens)

    def describe(self) -> str:
        """The sign-in in words, for the start-up line and ``--help``: never a secret."""
        if self.basic is not None:
            return f"HTTP basic auth ({AUTH_VARIABLE}, user {self.basic.split(':', 1)[0]!r})"
        if self.tokens:
            return f"bearer tokens from {self.tokens_file} ({len(self.tokens)} token(s))"
        return "none (loopback only)"

    def check_host(self, host: str) -> None:
        """Refuse to serve a non-loopback address without sign-in."""
        if not self.required and not is_loopback(host):
            raise UsageError(f"serving {host} would let anyone on the network read the leaderboard: set "
                             f"{AUTH_VARIABLE}=user:password or pass --tokens-file, or serve 127.0.0.1")

    def allows(self, authorization: str | None) -> bool:
        """Whether a request's ``Authorization`` header signs it in."""
        if not self.required:
            return True
        if not authorization:
            return False
        scheme, _, credentials = authorization.partition(" ")
        credentials = credentials.strip()
        if self.basic is not None and scheme.lower() == "basic":
            try:
                given = base64.b64decode(credentials, validate=True)
            except (binascii.Error, ValueError):
                return False
            return hmac.compare_digest(given, self.basic.encode("utf-8"))
        if self.tokens and scheme.lower() == "bearer":
            given_bytes = credentials.encode("utf-8")
            return any(hmac.compare_digest(given_bytes, t.encode("utf-8")) for t in self.tokens)
        return False

    @property
    def challenge(self) -> str:
        """The ``WWW-Authenticate`` header of a 401."""
        return 'Basic realm="assay", charset="UTF-8"' if self.basic is not None else 'Bearer realm="assay"'
