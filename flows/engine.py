"""Running flows from the CLI with the real Prefect engine.

With no ``PREFECT_API_URL`` configured, Prefect 3 starts a temporary local server for the
process; a team points ``PREFECT_API_URL`` at ``prefect server start`` instead. The defaults set
here keep Prefect's state beside Assay's and its console quiet, so a command prints only its own
results and, on bad input, one clear error.
"""

from __future__ import annotations

import os
from pathlib import Path

from assay.config import load_settings


def configure_prefect_defaults() -> None:
    """Set Prefect settings that the user has not set; call before importing prefect."""
    settings = load_settings()
    defaults = {
        "PREFECT_HOME": str(settings.home / "prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "CRITICAL",
        "PREFECT_LOGGING_TO_API_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    }
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    # Prefect creates its home without parents; a fresh ASSAY_HOME may not exist yet
    Path(os.environ["PREFECT_HOME"]).expanduser().mkdir(parents=True, exist_ok=True)
