"""Which failures mean that a service is unreachable or refused us, said in one line.

A command that cannot use the catalog's PostgreSQL or the Prefect API fails deep inside psycopg,
SQLAlchemy, httpx or Prefect, with a traceback of a hundred lines that names neither the setting to
fix nor, in a readable place, the URL. :func:`classify` reads an exception's cause chain (``raise ...
from``, and the members of exception groups) and turns such a failure into one
:class:`~assay.errors.ServiceError`, which :class:`assay.cli.main.AssayGroup` prints as one line with
exit status 3. Anything else gives ``None`` and is re-raised unchanged: a bug keeps its traceback.
Implicit contexts ("during handling of the above exception") are not followed: an unrelated failure
that a handler swallowed must not hide the error raised after it.

**The catalog** (only when ``ASSAY_CATALOG_URL`` names PostgreSQL): a psycopg error, raised by psycopg
or wrapped by SQLAlchemy, that is about the connection rather than a statement. psycopg 3 reports
libpq's failures to connect with no SQLSTATE (refused, unknown host, timeout, and the server's own
refusals at start-up: ``database "x" does not exist``, a failed password, an unknown role), and a
connection dropped later the same way; with a SQLSTATE, the connection classes of the PostgreSQL
docs (Appendix A): 08 connection exception, 28 invalid authorization, 3D000 invalid_catalog_name,
53300 too_many_connections, 57P01-57P03 shutdown or not yet accepting connections. A constraint or a
serialization failure is the statement's, and stays what it is.

**The Prefect API**, for requests to the configured ``PREFECT_API_URL`` only (an httpx failure talking
to a model hub is not Prefect's): nothing answers (httpx's ``ConnectError``, ``ConnectTimeout``), the
credentials were refused (401, 403), something other than a Prefect API answered (404 from a path
where ``GET .../health`` does not answer ``true``: the URL lacks its ``/api``; a 404 that a real
Prefect API gives about a missing object is a bug and keeps its traceback), or a proxy has no server
behind it (502, 503, 504). Prefect's own "Failed to reach API" ``RuntimeError`` carries one of these
as its cause.

Only modules already imported are consulted (``sys.modules``): a command that never imported Prefect
cannot have failed in it, and classifying imports nothing heavy.

No secret is shown: the catalog URL with SQLAlchemy's ``hide_password``, the Prefect URL without user
information, query or fragment; ``PREFECT_API_AUTH_STRING`` is only asked whether it is set.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from assay.errors import ServiceError
from assay.urls import without_credentials

CATALOG = "catalog"
PREFECT = "Prefect API"

#: SQLSTATEs that are about the connection, not a statement (PostgreSQL docs, Appendix A)
CONNECTION_SQLSTATE_CLASSES = ("08", "28")
CONNECTION_SQLSTATES = frozenset({"3D000", "53300", "57P01", "57P02", "57P03"})

CATALOG_CHECK = "check ASSAY_CATALOG_URL and that PostgreSQL is running"
CATALOG_DATABASE_CHECK = "check the database name in ASSAY_CATALOG_URL (create it, then run `assay db upgrade`)"
CATALOG_LOGIN_CHECK = "check the user and password in ASSAY_CATALOG_URL"
PREFECT_CHECK = "check PREFECT_API_URL (it ends in /api) and that the Prefect server is running"
PREFECT_PATH_CHECK = "check PREFECT_API_URL (it ends in /api)"
PREFECT_AUTH_CHECK = "check PREFECT_API_AUTH_STRING (the server's user:password; PREFECT_API_KEY on Prefect Cloud)"
PREFECT_NO_AUTH_CHECK = ("set PREFECT_API_AUTH_STRING to the server's user:password (PREFECT_API_KEY on "
                         "Prefect Cloud); none is set")
#: seconds for the one probe of ``GET {PREFECT_API_URL}/health`` that tells a wrong path from a missing object
HEALTH_PROBE_TIMEOUT_S = 5.0


def classify(exc: BaseException) -> ServiceError | None:
    """The :class:`ServiceError` that ``exc`` amounts to, or None when it is not a service failure."""
    for current in _chain(exc):
        if isinstance(current, ServiceError):
            return current
        failure = _catalog_failure(current) or _prefect_failure(current)
        if failure is not None:
            return failure
    return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, then its causes and exception-group members, outermost first, each once."""
    seen: set[int] = set()
    queue: list[BaseException | None] = [exc]
    while queue:
        current = queue.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            queue.extend(current.exceptions)
        orig = getattr(current, "orig", None)  # SQLAlchemy's DBAPIError keeps the driver's error here
        if isinstance(orig, BaseException):
            queue.append(orig)
        queue.append(current.__cause__)


# --- the catalog ----------------------------------------------------------------------------------


def _catalog_failure(exc: BaseException) -> ServiceError | None:
    psycopg = sys.modules.get("psycopg")
    if psycopg is None or not isinstance(exc, psycopg.Error) or not _about_the_connection(psycopg, exc):
        return None
    from assay.config import load_settings

    url = load_settings().catalog_url
    shown, password = _masked_catalog_url(url)
    if shown is None:  # not PostgreSQL: the error is not the catalog's
        return None
    problem, check = _pg_problem(str(exc), exc.sqlstate)
    if password:
        problem = problem.replace(password, "***")
    return ServiceError(CATALOG, shown, problem, check)


def _about_the_connection(psycopg: Any, exc: Any) -> bool:
    sqlstate = exc.sqlstate
    if sqlstate is None:  # libpq's own failure: no server answered the way a statement is answered
        return isinstance(exc, psycopg.OperationalError)
    return bool(sqlstate[:2] in CONNECTION_SQLSTATE_CLASSES or sqlstate in CONNECTION_SQLSTATES)


def _masked_catalog_url(url: str) -> tuple[str | None, str | None]:
    """(the URL with its password as ``***``, the password), or (None, None) unless PostgreSQL."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return None, None
    if parsed.get_backend_name() != "postgresql":
        return None, None
    return parsed.render_as_string(hide_password=True), parsed.password


def _pg_problem(message: str, sqlstate: str | None) -> tuple[str, str]:
    """(what went wrong in a few words, what to check) from libpq's message, e.g. ``connection
    failed: connection to server at "127.0.0.1", port 5999 failed: Connection refused``."""
    first = message.strip().splitlines()[0] if message.strip() else "connection failed"
    lowered = first.lower()
    if "resolve host" in lowered or "translate host name" in lowered:
        return "unknown host", CATALOG_CHECK
    if "timeout expired" in lowered or "timed out" in lowered:
        return "connection timed out", CATALOG_CHECK
    problem = _sentence(re.split(r"failed:\s*", first)[-1])
    if sqlstate == "3D000" or re.match(r'database ".*" does not exist', problem):
        return problem, CATALOG_DATABASE_CHECK
    if (sqlstate or "")[:2] == "28" or "authentication failed" in problem or "pg_hba.conf" in problem \
            or re.match(r'role ".*" does not exist', problem):
        return problem, CATALOG_LOGIN_CHECK
    return problem, CATALOG_CHECK


def _sentence(text: str) -> str:
    """``FATAL:  Connection refused`` -> ``connection refused``; ``[Errno 111] ...`` loses its number."""
    text = re.sub(r"^(FATAL|ERROR):\s*", "", text.strip())
    text = re.sub(r"^\[Errno -?\d+\]\s*", "", text)
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        text = text[0].lower() + text[1:]
    return text or "connection failed"


# --- the Prefect API ------------------------------------------------------------------------------


def _prefect_failure(exc: BaseException) -> ServiceError | None:
    httpx = sys.modules.get("httpx")
    if httpx is None or not isinstance(exc, httpx.HTTPStatusError | httpx.ConnectError | httpx.ConnectTimeout):
        return None
    api_url = _configured_api_url()
    try:
        request_url = str(exc.request.url)
    except RuntimeError:  # an error built without its request
        return None
    if api_url is None or not _under(request_url, api_url):
        return None
    shown = without_credentials(api_url)
    if isinstance(exc, httpx.ConnectTimeout):
        return ServiceError(PREFECT, shown, "connection timed out", PREFECT_CHECK)
    if isinstance(exc, httpx.ConnectError):
        lowered = str(exc).lower()
        problem = "unknown host" if "name or service not known" in lowered or "nodename nor servname" in lowered \
            else _sentence(str(exc).splitlines()[0] if str(exc) else "connection failed")
        return ServiceError(PREFECT, shown, problem, PREFECT_CHECK)
    status = exc.response.status_code
    reason = (exc.response.reason_phrase or "").lower()
    if status in (401, 403):
        return ServiceError(PREFECT, shown, f"{status} {reason}", PREFECT_AUTH_CHECK if _auth_configured()
                            else PREFECT_NO_AUTH_CHECK)
    if status == 404 and not _answers_as_prefect(exc.response, api_url):
        return ServiceError(PREFECT, shown, "404 not found (not a Prefect API at that path)", PREFECT_PATH_CHECK)
    if status in (502, 503, 504):
        return ServiceError(PREFECT, shown, f"{status} {reason}", PREFECT_CHECK)
    return None


def _configured_api_url() -> str | None:
    from assay.config import load_settings
    from assay.flows.engine import configured_api_url

    return configured_api_url(load_settings())


def _auth_configured() -> bool:
    """Whether an auth string or API key is set (never what it is)."""
    if os.environ.get("PREFECT_API_AUTH_STRING") or os.environ.get("PREFECT_API_KEY"):
        return True
    if "prefect" not in sys.modules:
        return False
    from prefect.settings import get_current_settings

    api = get_current_settings().api
    return bool(api.auth_string or api.key)


def _under(request_url: str, api_url: str) -> bool:
    """Whether ``request_url`` is a request to the API at ``api_url`` (same origin, path below it)."""
    request, api = urlsplit(request_url), urlsplit(api_url)
    try:
        same_origin = (request.scheme, request.hostname, request.port) == (api.scheme, api.hostname, api.port)
    except ValueError:  # a malformed port
        return False
    return same_origin and request.path.startswith(api.path.rstrip("/"))


def _answers_as_prefect(response: Any, api_url: str) -> bool:
    """Whether the 404 came from a Prefect API: one that names the missing object (``Work pool "x" not
    found.``) did; otherwise a Prefect API answers ``GET .../health`` with ``true`` (open even with
    basic auth), and anything else at that path is not one."""
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    if isinstance(detail, str) and detail.strip().lower() not in ("", "not found"):
        return True
    import httpx

    try:
        health = httpx.get(api_url.rstrip("/") + "/health", timeout=HEALTH_PROBE_TIMEOUT_S)
    except httpx.HTTPError:
        return False
    return health.status_code == 200 and health.text.strip() == "true"
