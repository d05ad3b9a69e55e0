"""Where Assay keeps its state, and every ``ASSAY_*`` variable it reads, in one place.

Settings are read from the environment on every call (never cached: tests change it).

``ASSAY_HOME`` (default ``~/.assay``)
    Root of all local state. Its sub-paths are defined once, as properties of :class:`Settings`:
    ``catalog.sqlite``, ``datasets/``, ``results/``, ``work/``, ``checkpoints/``, ``baselines/``, ``report/``,
    ``fixtures/``, ``cache/``, ``prefect/`` (Prefect's home) and ``server/`` (the background Prefect
    server).
``ASSAY_CATALOG_URL``
    Any SQLAlchemy URL for the catalog; PostgreSQL for a team
    (``postgresql+psycopg://user@host/db``). Default: the SQLite file in ``ASSAY_HOME``.
``ASSAY_DATA_DIR``
    Where ``assay run`` looks for source datasets. Default: the bundled fixture set.
``ASSAY_BASELINE_DIR``
    bert_score's shipped rescaling baselines, used by ``--rescale`` when ``assay
    bertscore-baseline`` has not computed one. Default: ``../shared/data/bertscore-rescale-baseline``
    beside the checkout, when it exists.
``ASSAY_PREFECT_SERVER`` (``background``, the default, or ``ephemeral``)
    With no ``PREFECT_API_URL``: ``background`` starts one local Prefect server that every later
    command reuses; ``ephemeral`` is Prefect's own temporary server per process (slow; kept for
    comparison in ``benchmarks/cli_latency.py``). A configured ``PREFECT_API_URL`` always wins.
``ASSAY_SERVER_IDLE`` (seconds, default 900)
    The background server stops after this long without an API request and without a flow in
    progress; the next command that runs a flow starts a new one. A number greater than 0.
``ASSAY_PRELOAD`` (default on)
    ``0``: every command runs in its own process, never in one forked from the command preloader
    beside the background server. Read by ``assay.cli.command_preloader`` itself (``enabled``),
    before anything else of a command runs.
``ASSAY_REQUIRE_SERVICES``
    Set (``1``) in CI: tests that need PostgreSQL, Prefect or Chromium fail instead of skipping.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

#: the seed of every bootstrap, permutation test and random draw unless a user gives one
DEFAULT_SEED = 12345
#: bootstrap and permutation resamples unless a user gives a number
DEFAULT_RESAMPLES = 1000
PREFECT_SERVER_MODES = ("background", "ephemeral")
CATALOG_FILE = "catalog.sqlite"
#: the background Prefect server stops after this long idle (``ASSAY_SERVER_IDLE``): 15 minutes
DEFAULT_SERVER_IDLE_S = 900.0


@dataclass(frozen=True)
class Settings:
    home: Path
    """Root of all local state."""
    catalog_url: str
    """SQLAlchemy URL of the catalog."""
    catalog_is_embedded: bool
    """True when the catalog is the default SQLite file in ``home`` (migrated implicitly)."""
    data_dir: Path | None
    """Source datasets for ``assay run``; None means the bundled fixtures."""
    baseline_dir: Path | None = None
    """bert_score's shipped rescaling baselines (``ASSAY_BASELINE_DIR``); None: not configured."""
    prefect_server: str = "background"
    """``background`` or ``ephemeral`` (``ASSAY_PREFECT_SERVER``)."""
    server_idle_s: float = DEFAULT_SERVER_IDLE_S
    """Seconds without an API request or a flow in progress after which the background server stops
    (``ASSAY_SERVER_IDLE``)."""
    require_services: bool = False
    """``ASSAY_REQUIRE_SERVICES``: service-backed tests are mandatory (CI)."""
    catalog_read_only: bool = False
    """Open the catalog read-only (``assay serve``): SQLite in ``mode=ro``, PostgreSQL with read-only
    transactions (:func:`assay.catalog.engine.make_engine`); a write fails in the database itself."""

    @property
    def catalog_file(self) -> Path:
        return self.home / CATALOG_FILE

    @property
    def datasets_dir(self) -> Path:
        return self.home / "datasets"

    @property
    def results_dir(self) -> Path:
        return self.home / "results"

    @property
    def work_dir(self) -> Path:
        """Scratch files of runs in progress (removed when a run is recorded)."""
        return self.home / "work"

    @property
    def checkpoints_dir(self) -> Path:
        """Checkpoints that training jobs write (one folder each; registered in the catalog)."""
        return self.home / "checkpoints"

    @property
    def baselines_dir(self) -> Path:
        """Rescaling baselines computed by ``assay bertscore-baseline``."""
        return self.home / "baselines"

    @property
    def report_dir(self) -> Path:
        return self.home / "report"

    @property
    def fixtures_dir(self) -> Path:
        return self.home / "fixtures"

    @property
    def cache_dir(self) -> Path:
        """Small caches that can be rebuilt (e.g. model weight digests by file size and time)."""
        return self.home / "cache"

    @property
    def prefect_home(self) -> Path:
        return self.home / "prefect"

    @property
    def server_dir(self) -> Path:
        """State file, lock and log of the background Prefect server."""
        return self.home / "server"


def _default_baseline_dir() -> Path | None:
    checkout = Path(__file__).resolve().parents[2]
    candidate = checkout.parent / "shared" / "data" / "bertscore-rescale-baseline"
    return candidate if candidate.is_dir() else None


def _server_idle_s(text: str) -> float:
    """``ASSAY_SERVER_IDLE``: seconds, a finite number greater than 0; empty means the default."""
    import math

    from assay.errors import UsageError

    if not text.strip():
        return DEFAULT_SERVER_IDLE_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise UsageError(f"ASSAY_SERVER_IDLE is {text!r} (expected a number of seconds greater than 0, "
                         f"after which the idle background Prefect server stops; default {DEFAULT_SERVER_IDLE_S:.0f})")
    return seconds


def load_settings() -> Settings:
    """Read the settings from the environment (never cached: tests change it)."""
    from assay.errors import UsageError

    home = Path(os.environ.get("ASSAY_HOME") or Path.home() / ".assay").expanduser()
    url = os.environ.get("ASSAY_CATALOG_URL", "").strip()
    embedded = not url
    if embedded:
        url = f"sqlite:///{home / CATALOG_FILE}"
    data_dir = os.environ.get("ASSAY_DATA_DIR", "").strip()
    baseline_dir = os.environ.get("ASSAY_BASELINE_DIR", "").strip()
    server = os.environ.get("ASSAY_PREFECT_SERVER", "").strip() or "background"
    if server not in PREFECT_SERVER_MODES:
        raise UsageError(f"ASSAY_PREFECT_SERVER is {server!r} (expected one of {', '.join(PREFECT_SERVER_MODES)})")
    return Settings(
        home=home,
        catalog_url=url,
        catalog_is_embedded=embedded,
        data_dir=Path(data_dir).expanduser() if data_dir else None,
        baseline_dir=Path(baseline_dir).expanduser() if baseline_dir else _default_baseline_dir(),
        prefect_server=server,
        server_idle_s=_server_idle_s(os.environ.get("ASSAY_SERVER_IDLE", "")),
        require_services=os.environ.get("ASSAY_REQUIRE_SERVICES", "").strip() not in ("", "0"),
    )
