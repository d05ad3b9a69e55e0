"""Which Prefect API the commands' flows talk to, and Prefect's defaults for them.

Prefect reads its settings once, when it is imported, so :func:`configure_prefect_defaults` runs
before that. The API is chosen in this order:

1. a configured ``PREFECT_API_URL`` (environment, the active profile in Assay's ``PREFECT_HOME``, or
   the settings of a Prefect already imported in this process, e.g. a test harness) is used as it
   is: a team's ``prefect server start`` or Prefect Cloud;
2. ``ASSAY_PREFECT_SERVER=background`` (the default): the one local server that the CLI keeps
   running in the background (:mod:`assay.cli.background_server`, started by the first command that
   runs a flow, in :mod:`assay.cli.runner`, which sets ``PREFECT_API_URL`` to it before calling
   :func:`configure_prefect_defaults`: flows never start processes themselves);
3. ``ASSAY_PREFECT_SERVER=ephemeral``: Prefect's own temporary server inside this process (5-10 s
   per command; kept to compare with in ``benchmarks/cli_latency.py``).

The other defaults keep Prefect's state beside Assay's and its console quiet, so a command prints
only its own results and, on bad input, one clear error.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from assay.config import Settings, load_settings


def configured_api_url(settings: Settings) -> str | None:
    """The Prefect API URL the user configured, or None: then Assay chooses (see the module doc).

    Read without importing Prefect: the environment, then the active profile of the profiles file
    Prefect would read (``PREFECT_PROFILES_PATH``, else ``PREFECT_HOME/profiles.toml``). When
    Prefect is already imported its own settings are the truth, since it will not read them again.
    """
    if os.environ.get("PREFECT_API_URL", "").strip():
        return os.environ["PREFECT_API_URL"].strip()
    if "prefect" in sys.modules:
        from prefect.settings import get_current_settings

        url = get_current_settings().api.url
        return str(url) if url else None
    home = Path(os.environ.get("PREFECT_HOME") or settings.prefect_home).expanduser()
    profiles = Path(os.environ.get("PREFECT_PROFILES_PATH") or home / "profiles.toml").expanduser()
    if not profiles.is_file():
        return None
    import tomllib

    try:
        data = tomllib.loads(profiles.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    active = os.environ.get("PREFECT_PROFILE") or data.get("active") or "ephemeral"
    url = data.get("profiles", {}).get(active, {}).get("PREFECT_API_URL")
    return str(url) if url else None


def wants_background_server(settings: Settings) -> bool:
    """Whether this process should talk to the background local server (choice 2 of the module
    doc): no configured API, ``ASSAY_PREFECT_SERVER=background``, and Prefect not imported yet
    (once imported it has read its settings for good: too late to point it anywhere)."""
    return configured_api_url(settings) is None and settings.prefect_server == "background" \
        and "prefect" not in sys.modules


def point_at_background_server(url: str) -> None:
    """Point Prefect, before it is imported, at the background local server at ``url`` (choice 2
    of the module doc): ``PREFECT_API_URL``, and no API-version handshake per client
    (``PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED``, two ``GET /admin/version`` per flow run),
    since that server runs this very Prefect: :mod:`assay.cli.background_server` replaces a server
    of another version before any command uses it. A user's own setting of the check wins."""
    os.environ["PREFECT_API_URL"] = url
    os.environ.setdefault("PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED", "false")


@contextlib.contextmanager
def background_flow_settings() -> Iterator[None]:
    """Prefect's settings for the flows this process runs on the background server, for the block
    (Prefect is imported here: call it once :func:`point_at_background_server` has run).

    No flow-run heartbeats (``flows.heartbeat_frequency`` None; Prefect 3 docs, "Detect zombie
    flows"): they feed the automation that marks silent runs crashed, which ``assay deploy``
    installs on a team's server only (:mod:`assay.cli.team_deployments`); on the background server
    Assay finds its own crashed runs (a dead holder of a signature lock,
    :func:`assay.jobs.scoring.resume_plan`). Prefect's heartbeat thread sleeps in whole seconds and
    the flow waits for it to end: 0.6-0.7 s of every flow run, measured here (issue 29)."""
    from prefect.settings import temporary_settings

    with temporary_settings(updates={"flows.heartbeat_frequency": None}):
        yield


#: Prefect's documented client-side opt-out of its SDK telemetry
#: (https://docs.prefect.io/v3/concepts/telemetry). ``PREFECT_SERVER_ANALYTICS_ENABLED=false`` covers
#: the server only: without this, importing Prefect at a terminal prints its "anonymous usage data"
#: notice (to a new Prefect home, e.g. each new ``ASSAY_HOME``) and queues its first-use events.
TELEMETRY_OPT_OUT = ("DO_NOT_TRACK", "1")


def opt_out_of_prefect_telemetry() -> None:
    """Set :data:`TELEMETRY_OPT_OUT` unless the user set ``DO_NOT_TRACK``; before Prefect is imported
    (the CLI does it for every command, :func:`configure_prefect_defaults` for every flow)."""
    os.environ.setdefault(*TELEMETRY_OPT_OUT)


def configure_prefect_defaults() -> None:
    """Set the Prefect settings the user has not set; call before importing prefect, and after
    ``PREFECT_API_URL`` is set when the background server is the choice (the CLI does both)."""
    settings = load_settings()
    opt_out_of_prefect_telemetry()
    os.environ.setdefault("PREFECT_HOME", str(settings.prefect_home))
    # Prefect creates its home without parents; a fresh ASSAY_HOME may not exist yet
    Path(os.environ["PREFECT_HOME"]).expanduser().mkdir(parents=True, exist_ok=True)
    defaults = {
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "CRITICAL",
        "PREFECT_LOGGING_TO_API_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    }
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
