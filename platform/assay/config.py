"""Where Assay keeps its state, read from the environment once per call.

``ASSAY_HOME`` (default ``~/.assay``)
    Holds the embedded SQLite catalog (``catalog.sqlite``), the dataset store (``datasets/``)
    and the results store (``results/``).
``ASSAY_CATALOG_URL``
    Any SQLAlchemy URL for the catalog; PostgreSQL for a team
    (``postgresql+psycopg://user@host/db``). Default: the SQLite file in ``ASSAY_HOME``.
``ASSAY_DATA_DIR``
    Where ``assay run`` looks for source datasets. Default: the bundled fixture set, which Assay
    writes into ``ASSAY_HOME/fixtures`` on first use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


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

    @property
    def datasets_dir(self) -> Path:
        return self.home / "datasets"

    @property
    def results_dir(self) -> Path:
        return self.home / "results"

    @property
    def fixtures_dir(self) -> Path:
        return self.home / "fixtures"


def load_settings() -> Settings:
    """Read the settings from the environment (never cached: tests change it)."""
    home = Path(os.environ.get("ASSAY_HOME") or Path.home() / ".assay").expanduser()
    url = os.environ.get("ASSAY_CATALOG_URL", "").strip()
    embedded = not url
    if embedded:
        url = f"sqlite:///{home / 'catalog.sqlite'}"
    data_dir = os.environ.get("ASSAY_DATA_DIR", "").strip()
    return Settings(
        home=home,
        catalog_url=url,
        catalog_is_embedded=embedded,
        data_dir=Path(data_dir).expanduser() if data_dir else None,
    )
