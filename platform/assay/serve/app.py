"""``assay serve``: the team's leaderboard as a read-only web app (Starlette, Jinja2).

Pages, each with a JSON twin (the same route ending in ``.json``, or ``Accept: application/json``)
whose numbers are the CLI's ``--json``:

* ``/`` (``/index.json``): every evaluated dataset and level with its current leaders
  (:func:`assay.serve.views.overview`);
* ``/health``: ``ok``, without sign-in, for probes;
* ``/leaderboard`` (``/leaderboard.json``): one leaderboard, with filters for dataset, version,
  level, statistic, group, aspect and evaluation (the headline or one side evaluation), sortable
  columns, each number's signature on hover, and a permalink that pins the dataset version;
* ``/compare`` (``/compare.json``): two metrics or checkpoints in every group, with the stored paired
  test (:func:`assay.query.compare.compare`, ``assay compare --json``);
* ``/checkpoint`` (``/checkpoint.json``): one checkpoint's lineage, nightly history (a plot with the
  recorded regressions marked) and error analyses against its parent
  (:func:`assay.checkpoints.record.checkpoint_record`, ``assay checkpoints show --json``);
* ``/dataset`` (``/dataset.json``): one dataset version's sources with sha256, warnings, systems,
  rater agreement and recorded facts (:func:`assay.catalog.version_detail.describe_version`,
  ``assay datasets show --json``);
* ``/versions`` (``/versions.json``): one metric or checkpoint on every version of a dataset
  (:func:`assay.query.versions.across_versions`, ``assay leaderboard --across-versions --json``);
* ``/errors`` (``/errors.json``): an MQM or ESA dataset's error matrix and worst disagreements with
  the raters' spans (:func:`assay.query.error_matrix.error_matrix`, ``assay errors --matrix --json``).

Why Starlette with Jinja2: both are already installed with Prefect (no new dependency), the app is
a few GET routes over Assay's own read functions (:mod:`assay.query.leaderboard`), so the numbers
are the CLI's by construction, and it starts in well under a second. Datasette would serve the
Parquet and SQL tables themselves, not Assay's rules (headline vs side evaluations, clusters,
degenerate values) and its SQL box is exactly what must be unreachable here; Streamlit and Gradio
re-run a script per interaction over a websocket, have no stable permalinks or JSON twins, and add
a large dependency each.

Safety: every route is GET (or HEAD); nothing writes, and the catalog is opened read-only, so a
write would fail in the database itself. Sign-in is :class:`assay.serve.access.Access`
(401 without it). A query string over :data:`MAX_QUERY_BYTES` or a parameter over
:data:`MAX_PARAMETER_CHARS` is refused (414, 400); user input reaches DuckDB only as bound
parameters (the leaderboard's own rule) and never names a file: static files are a fixed set read
at start-up. Jinja2 escapes every string from data. Errors are a 4xx page (or JSON) with one line,
never a traceback; an unexpected failure is a 500 page with no detail, its traceback logged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from assay.catalog.engine import get_engine
from assay.config import Settings
from assay.errors import AssayError, NotFoundError
from assay.query.leaderboard import LeaderboardQuery
from assay.results.correlations import MEAN_GROUP
from assay.serve.access import Access
from assay.serve.freshness import Answer, PageCache, state_token
from assay.serve.pages import (
    Page,
    checkpoint_page,
    compare_page,
    dataset_page,
    environment,
    errors_page,
    leaderboard_page,
    overview_page,
    versions_page,
)
from assay.serve.views import report_css

__all__ = ["HEALTH_PATH", "MAX_PARAMETER_CHARS", "MAX_QUERY_BYTES", "create_app", "startup_line"]

MAX_QUERY_BYTES = 2048
"""The longest query string served (a longer one is refused with 414)."""
MAX_PARAMETER_CHARS = 200
"""The longest value of one parameter (a longer one is refused with 400)."""
LEVELS = ("seg", "sys", "avg")
HEALTH_PATH = "/health"
"""The one route that answers without sign-in (``ok``), for probes."""
_STATIC = {"sort.js": "text/javascript; charset=utf-8", "assay.css": "text/css; charset=utf-8",
           "favicon.svg": "image/svg+xml"}
BY_LEVELS = ("category", "category+severity")
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                               "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
_TITLES = {400: "bad request", 401: "sign-in required", 404: "not found", 405: "method not allowed",
           414: "query too long", 500: "internal error"}

log = logging.getLogger("assay.serve")


def _wants_json(request: Request) -> bool:
    if request.url.path.endswith(".json"):
        return True
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


def _json(payload: Any, status: int = 200) -> Response:
    body = json.dumps(payload, indent=2, ensure_ascii=False, default=str)  # as `assay ... --json` prints it
    return Response(body, status_code=status, media_type="application/json")


def _parameter(request: Request, name: str, default: str | None = None) -> str | None:
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    if len(value) > MAX_PARAMETER_CHARS:
        raise HTTPException(400, f"parameter {name!r} is longer than {MAX_PARAMETER_CHARS} characters")
    return value


def create_app(settings: Settings, access: Access) -> Starlette:
    """The app over ``settings``' catalog and stores, behind ``access``. The catalog is opened
    read-only (:attr:`assay.config.Settings.catalog_read_only`); an embedded one is first created and
    migrated as by any command, so ``assay serve`` on a new home needs no set-up.

    The page handlers are plain functions: Starlette runs them in its thread pool, so a slow query
    does not hold up the other requests (DuckDB and the database drivers release the GIL)."""
    if settings.catalog_is_embedded and not settings.catalog_read_only:
        get_engine(settings)
    settings = replace(settings, catalog_read_only=True)
    templates = environment()
    static = {name: (resources.files("assay.serve").joinpath("static", name).read_bytes(), kind)
              for name, kind in _STATIC.items()}
    # the report's stylesheet (charts, heat maps, error spans): one home for how they look
    static["report.css"] = (report_css().encode(), "text/css; charset=utf-8")

    cache = PageCache()

    def fresh(handler: Callable[[Request], Response]) -> Callable[[Request], Response]:
        """``handler``, its 200 answers reused while the catalog and stores are unchanged
        (:mod:`assay.serve.freshness`)."""
        def answer(request: Request) -> Response:
            key = (request.url.path, request.url.query, _wants_json(request))
            token = state_token(settings)
            hit = cache.get(key, token)
            if hit is not None:
                return Response(hit.body, media_type=hit.media_type)
            response = handler(request)
            if response.status_code == 200 and response.media_type is not None:
                cache.put(key, token, Answer(bytes(response.body), response.media_type))
            return response

        return answer

    def respond(request: Request, shown: Page) -> Response:
        if _wants_json(request):
            return _json(shown.payload)
        path = request.url.path
        json_path = (path.rstrip("/") or "/index") + ".json" if path != "/" else "/index.json"
        json_link = json_path + (f"?{request.url.query}" if request.url.query else "")
        return HTMLResponse(templates.get_template(shown.template).render(json_link=json_link, **shown.context))

    def error(request: Request, status: int, message: str) -> Response:
        headers = {"WWW-Authenticate": access.challenge} if status == 401 else None
        if _wants_json(request):
            response = _json({"error": message, "status": status}, status)
        else:
            html = templates.get_template("error.html").render(
                status=status, title=_TITLES.get(status, "error"), message=message, json_link="/index.json")
            response = HTMLResponse(html, status_code=status)
        for key, value in (headers or {}).items():
            response.headers[key] = value
        return response

    def required(request: Request, name: str, what: str) -> str:
        value = _parameter(request, name)
        if value is None:
            raise HTTPException(400, f"parameter {name!r} is required ({what})")
        return value

    def level_of(request: Request) -> str | None:
        level = _parameter(request, "level")
        if level is not None and level not in LEVELS:
            raise HTTPException(400, f"level {level!r} is not one of {', '.join(LEVELS)}")
        return level

    def home(request: Request) -> Response:
        return respond(request, overview_page(settings))

    def board(request: Request) -> Response:
        dataset = required(request, "dataset", "NAME or NAME@VERSION")
        query = LeaderboardQuery(dataset, level_of(request), _parameter(request, "stat"),
                                 _parameter(request, "group", MEAN_GROUP) or MEAN_GROUP, _parameter(request, "aspect"),
                                 protocol=_parameter(request, "protocol"), side=_parameter(request, "side"))
        return respond(request, leaderboard_page(settings, query))

    def compared(request: Request) -> Response:
        dataset = required(request, "dataset", "NAME or NAME@VERSION")
        first, second = required(request, "first", "a metric, signature or checkpoint"), required(
            request, "second", "a metric, signature or checkpoint")
        query = LeaderboardQuery(dataset, level_of(request), _parameter(request, "stat"),
                                 aspect=_parameter(request, "aspect"), protocol=_parameter(request, "protocol"),
                                 side=_parameter(request, "side"))
        return respond(request, compare_page(settings, query, first, second))

    def checkpoint(request: Request) -> Response:
        return respond(request, checkpoint_page(settings, required(request, "ref",
                                                                   "a checkpoint's name or digest prefix")))

    def dataset(request: Request) -> Response:
        return respond(request, dataset_page(settings, required(request, "ref", "NAME or NAME@VERSION")))

    def versions(request: Request) -> Response:
        dataset = required(request, "dataset", "NAME")
        metric = required(request, "metric", "a metric, signature or checkpoint")
        query = LeaderboardQuery(dataset, level_of(request), _parameter(request, "stat"),
                                 _parameter(request, "group", MEAN_GROUP) or MEAN_GROUP, _parameter(request, "aspect"),
                                 protocol=_parameter(request, "protocol"), side=_parameter(request, "side"))
        return respond(request, versions_page(settings, query, metric))

    def errors(request: Request) -> Response:
        dataset = required(request, "dataset", "an MQM or ESA dataset, NAME or NAME@VERSION")
        by = _parameter(request, "by")
        if by is not None and by not in BY_LEVELS:
            raise HTTPException(400, f"by {by!r} is not one of {', '.join(BY_LEVELS)}")
        return respond(request, errors_page(settings, dataset, by))

    async def health(request: Request) -> Response:
        """For a load balancer or a Kubernetes probe: answers without sign-in and says nothing else."""
        return Response("ok\n", media_type="text/plain")

    async def static_file(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in static:
            raise HTTPException(404, "no such file")
        body, kind = static[name]
        return Response(body, media_type=kind)

    async def on_assay_error(request: Request, exc: Exception) -> Response:
        return error(request, 404 if isinstance(exc, NotFoundError) else 400, str(exc))

    async def on_http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return error(request, exc.status_code, str(exc.detail) if exc.detail else _TITLES.get(exc.status_code, ""))

    async def on_crash(request: Request, exc: Exception) -> Response:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return error(request, 500, "the request failed; the server's log has the details")

    routes = [
        Route("/", fresh(home), methods=["GET", "HEAD"]),
        Route("/index.json", fresh(home), methods=["GET", "HEAD"]),
        Route("/leaderboard", fresh(board), methods=["GET", "HEAD"]),
        Route("/leaderboard.json", fresh(board), methods=["GET", "HEAD"]),
        Route("/compare", fresh(compared), methods=["GET", "HEAD"]),
        Route("/compare.json", fresh(compared), methods=["GET", "HEAD"]),
        Route("/checkpoint", fresh(checkpoint), methods=["GET", "HEAD"]),
        Route("/checkpoint.json", fresh(checkpoint), methods=["GET", "HEAD"]),
        Route("/dataset", fresh(dataset), methods=["GET", "HEAD"]),
        Route("/dataset.json", fresh(dataset), methods=["GET", "HEAD"]),
        Route("/versions", fresh(versions), methods=["GET", "HEAD"]),
        Route("/versions.json", fresh(versions), methods=["GET", "HEAD"]),
        Route("/errors", fresh(errors), methods=["GET", "HEAD"]),
        Route("/errors.json", fresh(errors), methods=["GET", "HEAD"]),
        Route("/static/{name}", static_file, methods=["GET", "HEAD"]),
        Route(HEALTH_PATH, health, methods=["GET", "HEAD"]),
    ]

    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if len(request.scope.get("query_string", b"")) > MAX_QUERY_BYTES:
            response = error(request, 414, f"the query string is longer than {MAX_QUERY_BYTES} bytes")
        elif request.url.path != HEALTH_PATH and not access.allows(request.headers.get("authorization")):
            response = error(request, 401, "sign in: " + access.describe())
        else:
            response = await call_next(request)
        for key, value in _HEADERS.items():
            response.headers.setdefault(key, value)
        return response

    return Starlette(routes=routes, middleware=[Middleware(BaseHTTPMiddleware, dispatch=guard)],
                     exception_handlers={AssayError: on_assay_error, HTTPException: on_http_error, Exception: on_crash})


def startup_line(url: str, access: Access) -> str:
    """What ``assay serve`` prints when it starts: where, and which sign-in (never a secret)."""
    return f"Assay leaderboard at {url} (read-only; sign-in: {access.describe()})"
