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
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from click.testing import CliRunner

from assay.checkpoints.registry import list_checkpoints
from assay.config import Settings, load_settings
from assay.errors import UsageError
from assay.nightly.watched_folders import unwatch, watch, watched
from tests.robustness_support import save_tiny_encoder

if TYPE_CHECKING:
    from assay.workers.checkpoint_watch import ScanReport

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


def _set_mtimes(folder: Path, when: float) -> Path:
    """Set the modification time of ``folder``, and of every file and folder inside it, to ``when``."""
    for root, dirs, files in os.walk(folder):
        for name in [*files, *dirs]:
            os.utime(Path(root) / name, (when, when))
    os.utime(folder, (when, when))
    return folder


def test_scan_registers_settled_valid_folders_once(tiny_checkpoints: tuple[Path, Path], tmp_path: Path) -> None:
    from assay.workers.checkpoint_watch import scan_watched

    one, two = tiny_checkpoints
    settings = load_settings()
    drop = tmp_path / "drop"
    drop.mkdir()
    watch(settings, drop)
    _set_mtimes(_copy(one, drop / "ckpt-one"), time.time())  # copytree keeps the source's times
    _copy(two, drop / ".tmp-1a2b3c-ckpt-two")  # an atomic export still in progress
    _copy(two, drop / "ckpt-two.partial")
    broken = _copy(one, drop / "broken")
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])  # a truncated copy
    _set_mtimes(broken, time.time())
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
    assert reasons[str(drop / "notes")] == "not a checkpoint (no assay_checkpoint.json)"
    assert list_checkpoints(settings) == []

    # a minute later: the valid one is registered, the broken one is skipped with the reason
    later = time.time() + SETTLE + 1
    report = scan_watched(settings, settle_seconds=SETTLE, now=later)
    assert [(r["name"], r["path"]) for r in report.registered] == [("ckpt-one", str(drop / "ckpt-one"))]
    reasons = dict(report.skipped)
    assert "model.safetensors" in reasons[str(drop / "broken")]
    assert reasons[str(drop / "broken")].startswith("damaged (model.safetensors: ")
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
    _set_mtimes(_copy(tiny_checkpoints[0], drop / "nightly-a"), time.time())
    out = json.loads(ok(["checkpoints", "scan", "--json"]))
    assert out["registered"] == [] and out["skipped"][0]["reason"].startswith("still being written")
    out = json.loads(ok(["checkpoints", "scan", "--settle", "0", "--json"]))
    assert [r["name"] for r in out["registered"]] == ["nightly-a"]
    assert "0 registered, 1 already registered, 0 skipped" in ok(["checkpoints", "scan", "--settle", "0"])
    # a scan with nothing new to register reads files, stamps and the catalog: it never imports torch
    # (assay.checkpoints.folder), so the command starts without the model stack
    code = ("import sys\nfrom assay.cli.main import cli\n"
            "cli(['checkpoints', 'scan', '--settle', '0'], prog_name='assay', standalone_mode=False)\n"
            "print('torch' in sys.modules, 'transformers' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "1 already registered" in done.stdout and done.stdout.splitlines()[-1] == "False False", done.stdout
    assert ok(["checkpoints", "unwatch", str(drop)]).endswith("no longer watched\n")
    assert "no folders watched" in ok(["checkpoints", "watched"])

    result = runner.invoke(cli, ["checkpoints", "unwatch", str(drop)])
    assert result.exit_code == 2 and "is not watched (watched: none)" in result.stderr
    result = runner.invoke(cli, ["checkpoints", "watch", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "does not exist: expected an existing folder" in result.stderr
    result = runner.invoke(cli, ["checkpoints", "scan", "--settle", "-1"])
    assert result.exit_code == 2 and "settle time must be 0 seconds or more" in result.stderr
    assert json.loads(ok(["checkpoints", "watched", "--json"])) == []


# --- what a scan reports about every entry (issue 17, finding 5) --------------------------------
#
# Modification times are set explicitly (os.utime) so that the ages are exact; os.utime sets the
# status-change time (ctime) of what it touches to now, which is the point of the settle-rule test.

NOT_A_CHECKPOINT = "not a checkpoint (no assay_checkpoint.json)"


def _damaged(source: Path, target: Path) -> Path:
    _copy(source, target)
    weights = target / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])  # a truncated copy
    return target


def _reasons(report: ScanReport) -> dict[str, str]:
    return dict(report.skipped)


def test_a_folder_without_the_manifest_is_listed_as_not_a_checkpoint(tmp_path: Path) -> None:
    from assay.workers.checkpoint_watch import scan_watched

    settings = load_settings()
    drop = tmp_path / "drop"
    (drop / "notes").mkdir(parents=True)
    (drop / "notes" / "README.txt").write_text("not a checkpoint")
    (drop / "hub-model").mkdir()
    (drop / "hub-model" / "config.json").write_text("{}")  # a model folder, but not an Assay checkpoint
    watch(settings, drop)

    for now in (None, time.time() + 3600):  # as soon as it appears, and long after
        reasons = _reasons(scan_watched(settings, settle_seconds=SETTLE, now=now))
        assert reasons == {str(drop / "notes"): NOT_A_CHECKPOINT, str(drop / "hub-model"): NOT_A_CHECKPOINT}


def test_a_folder_being_written_is_listed_with_the_time_left(tiny_checkpoints: tuple[Path, Path],
                                                            tmp_path: Path) -> None:
    from assay.workers.checkpoint_watch import scan_watched

    settings = load_settings()
    drop = tmp_path / "drop"
    drop.mkdir()
    watch(settings, drop)
    written = round(time.time())
    copy = _set_mtimes(_copy(tiny_checkpoints[0], drop / "ckpt"), written)

    report = scan_watched(settings, settle_seconds=SETTLE, now=written + 20.4)
    assert _reasons(report) == {str(copy): "still being written (newest change 20 s ago; complete in 40 s)"}
    assert report.registered == []
    [entry] = report.as_dict()["skipped"]
    assert entry["kind"] == "being-written" and entry["seconds_left"] == pytest.approx(39.6)

    # one file inside, written later, is the newest change of the folder
    os.utime(copy / "tokenizer.json", (written + 50, written + 50))
    report = scan_watched(settings, settle_seconds=SETTLE, now=written + 61)
    assert _reasons(report) == {str(copy): "still being written (newest change 11 s ago; complete in 49 s)"}
    # and a subfolder made later is too
    os.utime(copy / "tokenizer.json", (written, written))
    (copy / "extra").mkdir()
    os.utime(copy / "extra", (written + 55, written + 55))
    os.utime(copy, (written, written))
    report = scan_watched(settings, settle_seconds=SETTLE, now=written + 61)
    assert _reasons(report) == {str(copy): "still being written (newest change 6 s ago; complete in 54 s)"}

    report = scan_watched(settings, settle_seconds=SETTLE, now=written + 55 + SETTLE)
    assert [r["path"] for r in report.registered] == [str(copy)] and report.skipped == []


def test_modification_times_set_back_count_even_though_the_status_change_time_is_now(
        tiny_checkpoints: tuple[Path, Path], tmp_path: Path) -> None:
    """``touch -d`` / ``os.utime`` (and ``cp -a``, ``rsync -t``) set the modification time back and
    the status-change time to now: the settle rule reads modification times only."""
    from assay.workers.checkpoint_watch import scan_watched

    settings = load_settings()
    drop = tmp_path / "drop"
    drop.mkdir()
    watch(settings, drop)
    copy = _set_mtimes(_copy(tiny_checkpoints[0], drop / "ckpt"), time.time() - 5 * 60)
    assert time.time() - os.stat(copy / "model.safetensors").st_ctime < SETTLE  # changed just now

    report = scan_watched(settings, settle_seconds=SETTLE)
    assert report.skipped == []
    assert [(r["name"], r["path"]) for r in report.registered] == [("ckpt", str(copy))]


def test_a_damaged_checkpoint_is_listed_with_the_reason(tiny_checkpoints: tuple[Path, Path], tmp_path: Path) -> None:
    from assay.workers.checkpoint_watch import scan_watched

    settings = load_settings()
    drop = tmp_path / "drop"
    drop.mkdir()
    watch(settings, drop)
    long_ago = time.time() - 3600
    truncated = _set_mtimes(_damaged(tiny_checkpoints[0], drop / "truncated"), long_ago)
    bad_json = _copy(tiny_checkpoints[1], drop / "bad-json")
    (bad_json / "assay_checkpoint.json").write_text('{"format": ', encoding="utf-8")
    no_tokenizer = _copy(tiny_checkpoints[1], drop / "no-tokenizer")
    (no_tokenizer / "tokenizer.json").unlink()
    for folder in (bad_json, no_tokenizer):
        _set_mtimes(folder, long_ago)

    report = scan_watched(settings, settle_seconds=SETTLE)
    assert report.registered == [] and list_checkpoints(settings) == []
    reasons = _reasons(report)
    assert set(reasons) == {str(truncated), str(bad_json), str(no_tokenizer)}
    assert reasons[str(truncated)].startswith("damaged (model.safetensors: ")
    assert reasons[str(bad_json)].startswith("damaged (assay_checkpoint.json:1: not valid JSON")
    assert reasons[str(no_tokenizer)].startswith("damaged (") and "tokenizer.json" in reasons[str(no_tokenizer)]
    assert {e["kind"] for e in report.as_dict()["skipped"]} == {"damaged"}


def _a_drop_of_every_kind(tiny_checkpoints: tuple[Path, Path], drop: Path) -> dict[str, Path]:
    """A watched folder holding one entry of each kind a scan reports."""
    one, two = tiny_checkpoints
    long_ago = time.time() - 3600
    drop.mkdir()
    entries = {
        "registered": _set_mtimes(_copy(one, drop / "ckpt-a"), long_ago),
        "already": _set_mtimes(_copy(one, drop / "ckpt-b"), long_ago),  # ckpt-a's content
        "damaged": _set_mtimes(_damaged(two, drop / "broken"), long_ago),
        "writing": _set_mtimes(_copy(two, drop / "ckpt-new"), time.time() - 20),
        "temporary": _copy(two, drop / ".tmp-1a2b3c-ckpt"),
        "notes": drop / "notes",
        "file": drop / "weights.tar",
    }
    (drop / "notes").mkdir()
    (drop / "weights.tar").write_bytes(b"\0" * 16)
    return entries


def test_cli_scan_lists_every_entry_with_its_reason(tiny_checkpoints: tuple[Path, Path], tmp_path: Path) -> None:
    import re

    from assay.cli.main import cli

    drop = tmp_path / "drop"
    entries = _a_drop_of_every_kind(tiny_checkpoints, drop)
    runner = CliRunner()
    assert runner.invoke(cli, ["checkpoints", "watch", str(drop)]).exit_code == 0

    result = runner.invoke(cli, ["checkpoints", "scan"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()

    def line_of(path: Path) -> str:
        [line] = [ln for ln in lines if f"{path}:" in ln]
        return line

    assert re.fullmatch(r"registered +.*ckpt-a: as ckpt-a \([0-9a-f]{12}\)", line_of(entries["registered"]))
    assert re.fullmatch(r"already registered +.*ckpt-b: as ckpt-a \([0-9a-f]{12}\)", line_of(entries["already"]))
    assert re.fullmatch(r"skipped +.*broken: damaged \(model\.safetensors: .+\)", line_of(entries["damaged"]))
    writing = re.fullmatch(r"skipped +.*ckpt-new: still being written "
                           r"\(newest change (\d+) s ago; complete in (\d+) s\)", line_of(entries["writing"]))
    assert writing and int(writing[1]) >= 20 and int(writing[1]) + int(writing[2]) == SETTLE
    assert re.fullmatch(r"skipped +.*\.tmp-1a2b3c-ckpt: temporary name \(.+\)", line_of(entries["temporary"]))
    assert line_of(entries["notes"]).endswith(f"{entries['notes']}: {NOT_A_CHECKPOINT}")
    assert line_of(entries["file"]).endswith(f"{entries['file']}: not a checkpoint (not a folder)")
    assert lines[-1] == "1 registered, 1 already registered, 5 skipped"

    out = json.loads(runner.invoke(cli, ["checkpoints", "scan", "--json"], catch_exceptions=False).stdout)
    assert out["registered"] == []  # registered by the scan above
    assert out["known"] == [str(entries["registered"]), str(entries["already"])]
    skipped = {e["path"]: e for e in out["skipped"]}
    assert {path: e["kind"] for path, e in skipped.items()} == {
        str(entries["damaged"]): "damaged", str(entries["writing"]): "being-written",
        str(entries["temporary"]): "temporary-name", str(entries["notes"]): "not-a-checkpoint",
        str(entries["file"]): "not-a-checkpoint"}
    assert skipped[str(entries["notes"])]["reason"] == NOT_A_CHECKPOINT
    assert skipped[str(entries["damaged"])]["reason"].startswith("damaged (model.safetensors: ")
    assert skipped[str(entries["writing"])]["reason"].startswith("still being written (newest change ")
    assert 0 < skipped[str(entries["writing"])]["seconds_left"] <= SETTLE - 20
    assert all(e["seconds_left"] is None for path, e in skipped.items() if path != str(entries["writing"]))


def test_the_sweeps_flow_run_logs_carry_every_entry_and_its_reason(
        prefect_engine: None, tiny_checkpoints: tuple[Path, Path], tmp_path: Path) -> None:
    """The scan task run inside a real flow on the session's Prefect server: its log lines are
    stored with the flow run (what ``prefect flow-run logs`` and the UI show), read back here."""
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.logging.handlers import APILogHandler
    from prefect.settings import PREFECT_LOGGING_TO_API_ENABLED, temporary_settings

    from assay.flows.nightly import scan_task

    drop = tmp_path / "drop"
    entries = _a_drop_of_every_kind(tiny_checkpoints, drop)
    watch(load_settings(), drop)

    @flow(name="scan-in-a-sweep")
    def sweep(settle_seconds: float) -> dict[str, Any]:
        return scan_task(settle_seconds)

    with temporary_settings(updates={PREFECT_LOGGING_TO_API_ENABLED: True}):
        state = sweep(SETTLE, return_state=True)
        APILogHandler().flush()
    assert state.is_completed()
    flow_run_id = state.state_details.flow_run_id
    with get_client(sync_client=True) as client:
        logs = client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))
    messages = [log.message for log in logs]
    text = "\n".join(messages)

    def logged(path: Path, start: str) -> str:
        found = [m for m in messages if f"{path}:" in m]
        assert found, f"nothing logged about {path}:\n{text}"
        assert found[0].startswith(start), found[0]
        return found[0]

    logged(entries["registered"], "registered ")
    logged(entries["already"], "already registered ")
    assert "damaged (model.safetensors: " in logged(entries["damaged"], "skipped ")
    assert "still being written (newest change " in logged(entries["writing"], "skipped ")
    assert "temporary name (" in logged(entries["temporary"], "skipped ")
    assert NOT_A_CHECKPOINT in logged(entries["notes"], "skipped ")
    assert "not a checkpoint (not a folder)" in logged(entries["file"], "skipped ")
    assert any(log.level == 30 and str(entries["damaged"]) in log.message for log in logs)  # a warning
    assert "1 registered, 1 already registered, 5 skipped" in text
