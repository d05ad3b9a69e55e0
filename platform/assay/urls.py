"""URLs as Assay shows them: never with the secrets they may carry."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["without_credentials"]


def without_credentials(url: str) -> str:
    """``url`` without user information, query or fragment (where a secret could be)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host + (f":{port}" if port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
