"""Watched checkpoint folders (``assay.nightly.watched_folders``) and their scan
(``assay.workers.checkpoint_watch``, ``assay checkpoints watch|unwatch|watched|scan``).

The checkpoints are real Assay checkpoint folders made by ``create_from_encoder`` from a tiny
*randomly initialised* BERT (2 layers, hidden 32; not a trained model) with MiniLM's real
tokenizer: the scan verifies them end to end (the weights load, fixed pairs score finitely), which
is all that is checked here; their scores mean nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from assay.checkpoints.registry import list_checkpoints
from assay.config import Settings, load_settings
from assay.errors import UsageError
from assay.nightly.watched_folders import unwatch, watch, watched
from tests.robustness_support import save_tiny_encoder

SETTLE = 60.0


@pytest.fixture(scope="module")
def tiny_checkpoints(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two checkpoints of a tiny RANDOM BERT (different head seeds, so different digests)."""
    from assay.workers.checkpoint import create_from_encoder

    root = tmp_path_factory.mktemp("tiny-checkpoints")
    encoder = save_tiny_encoder(root / "tiny-random-bert")
    return (create_from_encoder(encoder, root / "one", seed=1),
            create_from_encoder(encoder, root / "two", seed=2))


def test_watch_unwatch_and_list(catalog: Settings, tmp_path: Path) -> None:
    first, second = tmp_path / "drop", tmp_path / "other"
    first.mkdir()
    second.mkdir()
    assert watch(catalog, first) == (str(first.resolve()), True)
    assert watch(catalog, str(first) + "/") == (str(first.resolve()), False)
    link = tmp_path / "link"
    link.symlink_to(first)
    assert watch(catalog, link) == (str(first.resolve()), False)  # stored resolved: one row per folder
    assert watch(catalog, second)[1]
    assert watched(catalog) == [str(first.resolve()), str(second.resolve())]

    with pytest.raises(UsageError, match="does not exist"):
        watch(catalog, tmp_path / "missing")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(UsageError, match="is not a folder"):
        watch(catalog, tmp_path / "file.txt")
    with pytest.raises(UsageError, match="control characters"):
        watch(catalog, f"{first}\n/etc")
    assert len(watched(catalog)) == 2

    shutil.rmtree(second)
    assert unwatch(catalog, second)  # a folder that is gone can still be unwatched
    assert not unwatch(catalog, second)
    assert watched(catalog) == [str(first.resolve())]


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def test_scan_registers_settled_valid_folders_once(tiny_checkpoints: tuple[Path, Path], tmp_path: Path) -> None:
    from assay.workers.checkpoint_watch import scan_watched

    one, two = tiny_checkpoints
    settings = load_settings()
    drop = tmp_path / "drop"
    drop.mkdir()
    watch(settings, drop)
    _copy(one, drop / "ckpt-one")
    _copy(two, drop / ".tmp-1a2b3c-ckpt-two")  # an atomic export still in progress
    _copy(two, drop / "ckpt-two.partial")
    broken = _copy(one, drop / "broken")
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])  # a truncated copy
    (drop / "notes").mkdir()
    (drop / "notes" / "README.txt").write_text("not a checkpoint")

    # just written: everything is still settling (or has a temporary name)
    report = scan_watched(settings, settle_seconds=SETTLE)
    assert report.registered == [] and report.known == []
    reasons = dict(report.skipped)
    assert reasons[str(drop / "ckpt-one")].startswith("still being written")
    assert reasons[str(drop / "broken")].startswith("still being written")
    assert reasons[str(drop / ".tmp-1a2b3c-ckpt-two")].startswith("temporary name")
    assert reasons[str(drop / "ckpt-two.partial")].startswith("temporary name")
    assert str(drop / "notes") not in reasons
    assert list_checkpoints(settings) == []

    # a minute later: the valid one is registered, the broken one is skipped with the reason
    later = time.time() + SETTLE + 1
    report = scan_watched(settings, settle_seconds=SETTLE, now=later)
    assert [(r["name"], r["path"]) for r in report.registered] == [("ckpt-one", str(drop / "ckpt-one"))]
    reasons = dict(report.skipped)
    assert "model.safetensors" in reasons[str(drop / "broken")]
    assert reasons[str(drop / "broken")].startswith("not registered:")
    assert [c["name"] for c in list_checkpoints(settings)] == ["ckpt-one"]

    # the export finishes with its atomic rename; a copy of known content is a no-op
    os.replace(drop / ".tmp-1a2b3c-ckpt-two", drop / "ckpt-two")
    _copy(one, drop / "ckpt-one-copy")
    report = scan_watched(settings, settle_seconds=SETTLE, now=time.time() + SETTLE + 1)
    assert [r["name"] for r in report.registered] == ["ckpt-two"]
    assert report.known == [str(drop / "ckpt-one"), str(drop / "ckpt-one-copy")]

    # and again: nothing new
    report = scan_watched(settings, settle_seconds=SETTLE, now=time.time() + SETTLE + 1)
    assert report.registered == [] and len(report.known) == 3
    assert sorted(c["name"] for c in list_checkpoints(settings)) == ["ckpt-one", "ckpt-two"]

    # a watched folder that disappeared is reported, not fatal
    gone = tmp_path / "gone"
    gone.mkdir()
    watch(settings, gone)
    gone.rmdir()
    report = scan_watched(settings, settle_seconds=0)
    assert (str(gone), "the watched folder does not exist (any more)") in report.skipped
    assert len(report.known) == 3


def test_cli_watch_scan(tiny_checkpoints: tuple[Path, Path], tmp_path: Path) -> None:
    from assay.cli.main import cli

    runner = CliRunner()

    def ok(args: list[str]) -> str:
        result = runner.invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout

    drop = tmp_path / "drop"
    drop.mkdir()
    assert ok(["checkpoints", "watch", str(drop)]) == f"{drop.resolve()}: watched\n"
    assert ok(["checkpoints", "watch", str(drop)]) == f"{drop.resolve()}: already watched\n"
    assert json.loads(ok(["checkpoints", "watched", "--json"])) == [str(drop.resolve())]
    _copy(tiny_checkpoints[0], drop / "nightly-a")
    out = json.loads(ok(["checkpoints", "scan", "--json"]))
    assert out["registered"] == [] and out["skipped"][0]["reason"].startswith("still being written")
    out = json.loads(ok(["checkpoints", "scan", "--settle", "0", "--json"]))
    assert [r["name"] for r in out["registered"]] == ["nightly-a"]
    assert "0 registered, 1 known, 0 skipped" in ok(["checkpoints", "scan", "--settle", "0"])
    assert ok(["checkpoints", "unwatch", str(drop)]).endswith("no longer watched\n")
    assert "no folders watched" in ok(["checkpoints", "watched"])

    result = runner.invoke(cli, ["checkpoints", "unwatch", str(drop)])
    assert result.exit_code == 2 and "is not watched (watched: none)" in result.stderr
    result = runner.invoke(cli, ["checkpoints", "watch", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "does not exist: expected an existing folder" in result.stderr
    result = runner.invoke(cli, ["checkpoints", "scan", "--settle", "-1"])
    assert result.exit_code == 2 and "settle time must be 0 seconds or more" in result.stderr
    assert json.loads(ok(["checkpoints", "watched", "--json"])) == []
