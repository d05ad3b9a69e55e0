"""Hash once per host (issue 29, build 6): verification stamps (``assay.checkpoints.stamps``).

A checkpoint folder hashed on a host is not hashed again there while every file keeps its size,
modification time and inode: the scorer (``BleurtScorer``, once per process on a GPU pool) and the
watched-folder scan read the digest from the stamp. A changed file still fails: its stamp no
longer matches and the full hash refuses it.

Hashes are counted by wrapping ``assay.workers.checkpoint._file_sha256`` (every file read of a
hash goes through it). The stamp is on disk only (no in-process cache), so a second call in this
process reads exactly what the next process on the host would. The checkpoints are real Assay
checkpoint folders of a tiny *randomly initialised* BERT with MiniLM's real tokenizer (their scores
mean nothing); their files are dated an hour back, as a settled folder's are.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from pathlib import Path

import pytest

from assay.checkpoints import stamps
from assay.config import load_settings
from assay.errors import CheckpointError
from assay.nightly.watched_folders import watch
from tests.robustness_support import save_tiny_encoder

HOUR_AGO = time.time() - 3600


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from assay.workers.checkpoint import create_from_encoder

    root = tmp_path_factory.mktemp("stamped")
    return create_from_encoder(save_tiny_encoder(root / "tiny-random-bert"), root / "tiny", seed=3)


def _settled_copy(source: Path, target: Path, when: float = HOUR_AGO) -> Path:
    shutil.copytree(source, target)
    for path in [*target.iterdir(), target]:
        os.utime(path, (when, when))
    return target


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the files hashed during the test, in order."""
    import assay.checkpoints.folder as checkpoint  # where a checkpoint's files are hashed

    hashed: list[str] = []
    real = checkpoint._file_sha256

    def counting(path: Path) -> str:
        hashed.append(path.name)
        return real(path)

    monkeypatch.setattr(checkpoint, "_file_sha256", counting)
    return hashed


def test_a_verified_folder_is_not_hashed_again_on_this_host(tiny_folder: Path, tmp_path: Path,
                                                             hashes: list[str]) -> None:
    from assay.workers.bleurt import BleurtScorer
    from assay.workers.checkpoint import checkpoint_digest, checkpoint_files, stamped_digest, verified_digest

    folder = _settled_copy(tiny_folder, tmp_path / "ckpt")
    settings = load_settings()
    files = checkpoint_files(folder)
    expected = checkpoint_digest(folder)
    assert hashes == files
    hashes.clear()

    assert verified_digest(folder, expected, "tiny") == expected
    assert hashes == files  # no stamp yet: hashed in full, then stamped
    stamp = stamps.stamp_file(settings, folder)
    assert stamp.parent == settings.home / "checkpoint-stamps" / stamps.this_host()
    data = json.loads(stamp.read_text())
    assert data["digest"] == expected and data["folder"] == str(folder.resolve())
    assert [f[0] for f in data["files"]] == files
    hashes.clear()

    # the next process: the digest comes from the stamp
    assert verified_digest(folder, expected, "tiny") == expected
    assert stamped_digest(folder) == expected
    assert BleurtScorer(folder, device="cpu", expected_digest=expected, name="tiny").digest == expected
    assert BleurtScorer(folder, device="cpu").digest == expected  # an unregistered folder too
    assert hashes == []
    # however the folder is named (a link to it), it is one stamp
    link = tmp_path / "link"
    link.symlink_to(folder)
    assert verified_digest(link, expected, "tiny") == expected and hashes == []


def test_a_changed_byte_of_the_same_size_still_fails(tiny_folder: Path, tmp_path: Path, hashes: list[str]) -> None:
    """Rewriting one byte of the weights keeps the size; the modification time moves, so the stamp
    no longer matches and the full hash refuses the folder."""
    from assay.workers.checkpoint import WEIGHTS_FILE, checkpoint_digest, verified_digest

    folder = _settled_copy(tiny_folder, tmp_path / "ckpt")
    expected = checkpoint_digest(folder)
    verified_digest(folder, expected, "tiny")  # stamped
    weights = folder / WEIGHTS_FILE
    size = weights.stat().st_size
    with weights.open("r+b") as f:
        f.seek(size - 1)
        last = f.read(1)
        f.seek(size - 1)
        f.write(bytes([last[0] ^ 0x01]))
    os.utime(weights, ns=(weights.stat().st_mtime_ns + 1_000_000, weights.stat().st_mtime_ns + 1_000_000))
    assert weights.stat().st_size == size
    hashes.clear()

    with pytest.raises(CheckpointError, match="changed since checkpoint 'tiny' was registered") as refused:
        verified_digest(folder, expected, "tiny")
    assert WEIGHTS_FILE in hashes  # hashed in full, not read from the stamp
    assert checkpoint_digest(folder) in str(refused.value)


def test_a_file_replaced_with_its_size_and_time_kept_still_fails(tiny_folder: Path, tmp_path: Path) -> None:
    """``rsync -t`` writes a new file and renames it over the old one, keeping size and modification
    time: the inode differs, so the stamp does not match."""
    from assay.workers.checkpoint import WEIGHTS_FILE, checkpoint_digest, verified_digest

    folder = _settled_copy(tiny_folder, tmp_path / "ckpt")
    expected = checkpoint_digest(folder)
    verified_digest(folder, expected, "tiny")  # stamped
    weights = folder / WEIGHTS_FILE
    before = weights.stat()
    content = bytearray(weights.read_bytes())
    content[-1] ^= 0x01
    replacement = folder / ".incoming"
    replacement.write_bytes(bytes(content))
    os.utime(replacement, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(replacement, weights)
    after = weights.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)

    with pytest.raises(CheckpointError, match="changed since"):
        verified_digest(folder, expected, "tiny")


def test_a_stamp_is_per_host_and_never_refuses(tiny_folder: Path, tmp_path: Path, hashes: list[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.workers.checkpoint import checkpoint_digest, verified_digest

    folder = _settled_copy(tiny_folder, tmp_path / "ckpt")
    settings = load_settings()
    expected = checkpoint_digest(folder)
    verified_digest(folder, expected)
    hashes.clear()

    # another host sharing ASSAY_HOME hashes for itself, and stamps for itself
    with monkeypatch.context() as other_host:
        other_host.setattr(socket, "gethostname", lambda: "GPU-07.example.org")
        assert stamps.this_host() == "gpu-07.example.org"
        assert verified_digest(folder, expected) == expected and hashes
        assert stamps.stamp_file(settings, folder).parent.name == "gpu-07.example.org"
        hashes.clear()
        assert verified_digest(folder, expected) == expected and hashes == []
    assert stamps.stamp_file(settings, folder).parent.name == stamps.this_host() != "gpu-07.example.org"

    # a stamp that holds another digest (damaged, or written by hand) is checked by a full hash
    stamp = stamps.stamp_file(settings, folder)
    data = json.loads(stamp.read_text())
    stamp.write_text(json.dumps({**data, "digest": "0" * 64}))
    assert verified_digest(folder, expected) == expected and hashes
    assert json.loads(stamp.read_text())["digest"] == expected  # and stamped again
    hashes.clear()
    # an unreadable stamp is no stamp
    stamp.write_text('{"format": ')
    assert verified_digest(folder, expected) == expected and hashes


def test_a_folder_modified_just_now_is_not_stamped(tiny_folder: Path, tmp_path: Path, hashes: list[str]) -> None:
    """git's racily clean rule: a file modified less than RACY_SECONDS before its hash could be
    written again within the same timestamp tick, unseen by its stat."""
    from assay.workers.checkpoint import stamped_digest

    folder = _settled_copy(tiny_folder, tmp_path / "ckpt", when=time.time())
    settings = load_settings()
    digest = stamped_digest(folder)
    assert not stamps.stamp_file(settings, folder).exists()
    hashes.clear()
    assert stamped_digest(folder) == digest and hashes  # hashed again


def test_a_scan_does_not_hash_registered_unchanged_folders(tiny_folder: Path, tmp_path: Path,
                                                            hashes: list[str]) -> None:
    from assay.workers.checkpoint import WEIGHTS_FILE, checkpoint_files
    from assay.workers.checkpoint_watch import scan_watched

    settings = load_settings()
    drop = tmp_path / "drop"
    drop.mkdir()
    watch(settings, drop)
    first = _settled_copy(tiny_folder, drop / "ckpt-a")
    _settled_copy(tiny_folder, drop / "ckpt-b")  # the same content under another name
    n_files = len(checkpoint_files(first))

    report = scan_watched(settings, settle_seconds=60)
    assert [r["name"] for r in report.registered] == ["ckpt-a"]
    assert report.known == [str(drop / "ckpt-b")]
    assert len(hashes) == 2 * n_files  # each folder hashed once
    hashes.clear()

    report = scan_watched(settings, settle_seconds=60)
    assert report.known == [str(drop / "ckpt-a"), str(drop / "ckpt-b")]
    assert hashes == []  # registered and unchanged: not hashed

    # a changed folder is hashed again (and is new content: registered under its own digest)
    weights = first / WEIGHTS_FILE
    with weights.open("r+b") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 0x01]))
    for path in (weights, first):
        os.utime(path, (HOUR_AGO + 60, HOUR_AGO + 60))
    report = scan_watched(settings, settle_seconds=60)
    assert hashes == checkpoint_files(first)  # only the changed folder, once
    [changed] = report.registered
    assert changed["path"] == str(first) and changed["digest"] != report.entries[1].digest
    assert report.known == [str(drop / "ckpt-b")]
