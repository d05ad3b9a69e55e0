"""Headless Chromium for the report tests, driven by Playwright's Python package.

The browser is Debian's ``chromium`` (Playwright's own browser download is never used), started
with the flags this project's machines need: no sandbox (root), no GPU, and no background network
traffic (the machines have no internet), with a fresh profile folder. When Chromium or Playwright
is missing the test skips on a developer's machine and fails in CI (``ASSAY_REQUIRE_SERVICES``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import services_required

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def chromium_path() -> str | None:
    found = os.environ.get("ASSAY_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    return found if Path(found).is_file() else None


def require_browser() -> str:
    """The Chromium executable, or skip (fail under ``ASSAY_REQUIRE_SERVICES``) with the reason."""
    problems = []
    executable = chromium_path()
    if executable is None:
        problems.append("Debian's chromium is not installed (apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        problems.append("the playwright package is not installed (pip install playwright; no `playwright install`)")
    if problems:
        message = "report browser test needs " + "; ".join(problems)
        if services_required():
            pytest.fail(message)
        pytest.skip(message)
    assert executable is not None
    return executable


@dataclass
class PageLog:
    """Everything the page reported: console messages (type, text) and uncaught errors."""

    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)

    @property
    def console_errors(self) -> list[str]:
        return [text for kind, text in self.console if kind in ("error", "assert")]


@contextmanager
def open_page(url: str, executable: str, width: int = 1280, height: int = 900,
              extra_headers: dict[str, str] | None = None) -> Iterator[tuple[Any, PageLog]]:
    """A loaded page in headless Chromium, and the log of what it reported while loading
    (``extra_headers`` go with every request, e.g. a sign-in)."""
    from playwright.sync_api import sync_playwright

    log = PageLog()
    with tempfile.TemporaryDirectory(prefix="assay-chromium-") as profile, sync_playwright() as p:
        # Playwright adds --headless itself and wants the profile as an argument, not a flag
        context = p.chromium.launch_persistent_context(
            profile, executable_path=executable, headless=True,
            args=[f for f in CHROMIUM_FLAGS if f != "--headless"], viewport={"width": width, "height": height},
            extra_http_headers=extra_headers or {},
        )
        try:
            page = context.new_page()
            page.on("console", lambda m: log.console.append((m.type, m.text)))
            page.on("pageerror", lambda e: log.errors.append(str(e)))
            page.on("requestfailed", lambda r: log.failed_requests.append(r.url))
            page.goto(url, wait_until="load")
            yield page, log
        finally:
            context.close()


def start_serve(env: dict[str, str], *args: str) -> tuple[subprocess.Popen[str], str]:
    """A real ``assay serve`` on a free loopback port with ``env`` (its ``ASSAY_HOME``), and its start-up
    line; the caller terminates it."""
    process = subprocess.Popen([str(Path(sys.executable).parent / "assay"), "serve", "--port", "0", *args],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    line = process.stderr.readline()
    found = re.search(r"at (http://127\.0\.0\.1:\d+/)", line)
    if found is None:
        process.kill()
        raise AssertionError(f"no start-up line: {line!r} {process.communicate()[1]}")
    return process, line


@contextmanager
def served(home: Path) -> Iterator[str]:
    """A real ``assay serve`` (no sign-in, loopback) over ``home``; yields its base URL, and stops it."""
    env = {**os.environ, "ASSAY_HOME": str(home)}
    env.pop("ASSAY_SERVE_AUTH", None)
    process, line = start_serve(env)
    try:
        found = re.search(r"(http://\S+/)", line)
        assert found is not None, line
        yield found.group(1)
    finally:
        process.terminate()
        process.communicate(timeout=20)


def screenshots_folder(fallback: Path) -> Path:
    """Where a browser test saves its screenshots: ``ASSAY_SCREENSHOTS`` when set (to be looked at),
    else ``fallback``."""
    shots = Path(os.environ.get("ASSAY_SCREENSHOTS") or fallback)
    shots.mkdir(parents=True, exist_ok=True)
    return shots
