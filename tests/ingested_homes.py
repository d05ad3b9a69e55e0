"""Homes with real datasets of ``../shared/data`` already ingested, built once for the whole suite and
copied wherever a test or a module starts from them.

Ingesting a real release is the same work every time: about a second of CPU for WMT16 and WMT17 on
a quiet machine, more under the suite's load, and the modules ingested the same few releases
dozens of times (through ``assay ingest`` and its Prefect flow, too) on a 2-core machine where the
suite is CPU-bound. :func:`copy_ingested` copies a template home instead. The first process that
asks for a set of datasets ingests them into a template (:func:`assay.jobs.ingest.ingest_path`, the
function every ingest runs), under a lock in the folder the xdist workers share; the others wait for
it and copy it. A copy is a home like any other (the catalog stores paths relative to
``ASSAY_HOME``), so each test still gets a store and a catalog of its own. The ingest itself, its
command and its flow are tested in tests/test_ingest.py, tests/test_ingest_real_data.py and
tests/test_flows_and_cli.py.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import pytest

from tests.conftest import assay_home_at


@dataclass(frozen=True)
class Ingest:
    """One ``assay ingest FOLDER [--name NAME] [-o KEY=VALUE ...]`` of a folder of ``../shared/data``."""

    folder: str
    name: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)


def copy_ingested(home: Path, tmp_path_factory: pytest.TempPathFactory, shared_data: Path,
                  *datasets: str | Ingest) -> Path:
    """Fill ``home`` (new or empty) with the catalog and store of a home where ``datasets`` (folder
    names, or :class:`Ingest`) were ingested in that order; returns ``home``. The catalog engines
    are reset, so the next catalog access opens the copy."""
    from assay.catalog.engine import reset_engines

    specs = [Ingest(d) if isinstance(d, str) else d for d in datasets]
    template = _template(_shared_folder(tmp_path_factory), shared_data, specs)
    reset_engines()
    shutil.copytree(template, home, dirs_exist_ok=True)
    return home


def _shared_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's base temporary folder, or under xdist the folder above the workers' own (one
    per run of pytest, shared by its workers)."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "ingested-homes"
    folder.mkdir(exist_ok=True)
    return folder


def _template(folder: Path, shared_data: Path, specs: list[Ingest]) -> Path:
    from assay.jobs.ingest import ingest_path
    from assay.provenance import json_digest, short

    key = short(json_digest({"shared_data": str(shared_data.resolve()),
                             "ingests": [[s.folder, s.name, dict(s.options)] for s in specs]}))
    template = folder / key
    with _locked(folder / f"{key}.lock"):
        if not template.is_dir():
            building = folder / f"{key}.building"
            shutil.rmtree(building, ignore_errors=True)
            # an embedded catalog in the template's home, whatever catalog the caller points at
            with mock.patch.dict(os.environ), assay_home_at(building):
                os.environ.pop("ASSAY_CATALOG_URL", None)
                for spec in specs:
                    ingest_path(shared_data / spec.folder, name=spec.name, options=dict(spec.options) or None)
            building.rename(template)  # complete, or absent
    return template


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
