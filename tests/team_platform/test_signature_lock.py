"""The signature lock (assay.jobs.signature_lock) on both catalog backends: SQLite (a lock file under
ASSAY_HOME/locks, fcntl.flock) and the real PostgreSQL server (a session-level advisory lock).

The other holder is a real process, so "cross-process" and "released when its process dies" are
what is tested: the holder prints ``held`` once it holds the lock and releases it when its
standard input closes; SIGKILL gives it no chance to release anything itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from assay.config import Settings
from assay.errors import LockTimeout
from assay.jobs.signature_lock import lock_file, signature_lock, uses_postgres

HOLDER = """
import sys
from assay.config import load_settings
from assay.jobs.signature_lock import signature_lock
with signature_lock(load_settings(), sys.argv[1], sys.argv[2]):
    print("held", flush=True)
    sys.stdin.read()
print("released", flush=True)
"""
SIGNATURE = "chrF2|nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0"


@pytest.fixture
def holder(catalog: Settings) -> Iterator[subprocess.Popen[str]]:
    """A process holding the lock of ("chrf", SIGNATURE) on the test's catalog."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, "chrf", SIGNATURE], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "held"
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()


def test_the_backend_follows_the_catalog(catalog: Settings) -> None:
    postgres = catalog.catalog_url.startswith("postgresql")
    assert uses_postgres(catalog) is postgres
    with signature_lock(catalog, "chrf", SIGNATURE):
        assert lock_file(catalog, "chrf", SIGNATURE).exists() is not postgres


def test_a_second_holder_waits_until_the_first_releases(catalog: Settings, holder: subprocess.Popen[str]) -> None:
    with pytest.raises(LockTimeout, match="still holds the lock of chrf"), \
            signature_lock(catalog, "chrf", SIGNATURE, timeout_s=0.3):
        pass
    # another signature, or the same signature under another metric, is another lock
    with signature_lock(catalog, "chrf", SIGNATURE + "|other", timeout_s=0), \
            signature_lock(catalog, "ter", SIGNATURE, timeout_s=0):
        pass

    acquired: list[float] = []

    def wait_for_it() -> None:
        with signature_lock(catalog, "chrf", SIGNATURE):  # no timeout: waits as long as it takes
            acquired.append(time.monotonic())

    waiter = threading.Thread(target=wait_for_it)
    waiter.start()
    time.sleep(0.5)
    assert not acquired  # still waiting while the holder holds it
    released_at = time.monotonic()
    assert holder.stdin is not None
    holder.stdin.close()  # the holder leaves its `with` block
    waiter.join(timeout=20)
    assert not waiter.is_alive() and acquired and acquired[0] >= released_at
    assert holder.wait(timeout=20) == 0


def test_a_killed_holder_releases_the_lock(catalog: Settings, holder: subprocess.Popen[str]) -> None:
    with pytest.raises(LockTimeout), signature_lock(catalog, "chrf", SIGNATURE, timeout_s=0.2):
        pass
    os.kill(holder.pid, signal.SIGKILL)
    assert holder.wait(timeout=20) == -signal.SIGKILL
    started = time.monotonic()
    with signature_lock(catalog, "chrf", SIGNATURE, timeout_s=15):
        waited = time.monotonic() - started
    assert waited < 15  # released by the kernel (flock) or the server (session ended), not by the holder


def test_the_lock_is_not_reentrant_in_one_thread(catalog: Settings) -> None:
    with signature_lock(catalog, "chrf", SIGNATURE), pytest.raises(RuntimeError, match="already holds"), \
            signature_lock(catalog, "chrf", SIGNATURE):
        pass
    with signature_lock(catalog, "chrf", SIGNATURE, timeout_s=0):  # released after the refusal
        pass


def test_lock_file_names_stay_inside_the_locks_folder(catalog: Settings) -> None:
    path = lock_file(catalog, "../../etc/passwd", SIGNATURE)
    assert path.parent == catalog.home / "locks" and "/" not in path.name and ".." not in path.name
