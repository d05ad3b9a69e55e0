"""The checkpoint registry (``assay.checkpoints.registry``): one entry per content digest, unique names,
references by name or digest prefix, lineage chains, and names that cannot inject anything.

These tests write registry rows from facts directly (no model is loaded); registering real folders
end to end, with their verification, is tested in ``tests/training/test_checkpoint_commands.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.catalog.engine import session_scope
from assay.catalog.models import Checkpoint
from assay.checkpoints.labels import lineage_text
from assay.checkpoints.ref import CheckpointRef
from assay.checkpoints.registry import (
    CheckpointFacts,
    describe,
    find,
    folder_of_digest,
    labels_by_digest,
    list_checkpoints,
    name_from_folder,
    register,
    resolve_checkpoint,
    resolve_folder,
    validate_checkpoint_name,
)
from assay.config import load_settings
from assay.errors import NotFoundError, UsageError


def _facts(tmp_path: Path, folder: str, digest: str, parent: str | None = None,
           operation: str = "finetune") -> CheckpointFacts:
    path = tmp_path / folder
    path.mkdir(exist_ok=True)
    (path / "model.safetensors").write_bytes(digest.encode())
    (path / "assay_checkpoint.json").write_text("{}")
    return CheckpointFacts(
        digest=digest, path=str(path), base_model="all-MiniLM-L6-v2", config={"max_length": 512},
        heads=[{"name": "rating"}],
        lineage={"operation": operation, "parent_digest": parent, "seed": 7,
                 "datasets": [{"role": "finetune", "label": "wmt16@1", "digest": "ab" * 32}]},
        size_bytes=123, files=("assay_checkpoint.json", "model.safetensors"),
    )


def test_same_content_twice_is_a_no_op(tmp_path: Path) -> None:
    settings = load_settings()
    first = register(settings, _facts(tmp_path, "My Ckpt", "a" * 64))
    assert first.created and first.name == "my-ckpt"
    again = register(settings, _facts(tmp_path, "elsewhere", "a" * 64), name="other")
    assert not again.created and again.name == "my-ckpt"
    assert "already registered as 'my-ckpt'" in again.notes[0]
    assert len(list_checkpoints(settings)) == 1


def test_names_are_unique_and_a_default_name_clash_gets_the_digest(tmp_path: Path) -> None:
    settings = load_settings()
    register(settings, _facts(tmp_path, "ckpt", "a" * 64))
    second = register(settings, _facts(tmp_path, "ckpt", "b" * 64))
    assert second.name == "ckpt-bbbbbbbb"
    with pytest.raises(UsageError, match="name 'ckpt' is taken"):
        register(settings, _facts(tmp_path, "x", "c" * 64), name="ckpt")


def test_references_by_name_and_digest_prefix(tmp_path: Path) -> None:
    settings = load_settings()
    register(settings, _facts(tmp_path, "one", "abcdef3" + "0" * 57))
    register(settings, _facts(tmp_path, "two", "abcdef4" + "0" * 57))
    with session_scope(settings) as session:
        assert find(session, "one").digest.startswith("abcdef3")
        assert find(session, "abcdef40").name == "two"
        with pytest.raises(UsageError, match="matches 2 checkpoints"):
            find(session, "abcdef")
        with pytest.raises(NotFoundError, match="no checkpoint named 'three'"):
            find(session, "three")
        # the event resource a deployment trigger passes (CheckpointRef.resource) names it too
        two = find(session, "abcdef40").ref
        assert find(session, two.resource).ref == two == resolve_checkpoint(settings, "two")
    assert (two.short, two.label, two.resource) == ("abcdef400000", "two", "assay.checkpoint.abcdef4" + "0" * 57)
    assert CheckpointRef(two.digest).label == "abcdef400000"  # unregistered: its short digest
    assert CheckpointRef.from_dict(json.loads(json.dumps(two.as_dict()))) == two
    assert two.matches(two.digest) and two.matches(two.short) and not two.matches("abcdef300000")
    assert not two.matches(None)
    with pytest.raises(UsageError, match="not a sha256 hex digest"):
        CheckpointRef("abcdef40")
    # a registered checkpoint lives in the shared store under its digest
    assert resolve_folder(settings, "two") == settings.home / "checkpoints" / ("abcdef4" + "0" * 57)
    # an existing folder is taken as it is
    assert resolve_folder(settings, tmp_path / "one") == (tmp_path / "one").resolve()


def test_registration_places_the_files_in_the_store_with_a_relative_catalog_path(tmp_path: Path) -> None:
    settings = load_settings()
    digest = "d" * 64
    facts = _facts(tmp_path, "local", digest)
    registered = register(settings, facts, name="local")
    store = settings.home / "checkpoints" / digest
    assert Path(registered.path) == store
    assert sorted(p.name for p in store.iterdir()) == ["assay_checkpoint.json", "model.safetensors"]
    assert (store / "model.safetensors").read_bytes() == digest.encode()
    with session_scope(settings) as session:
        row = find(session, "local")
        assert row.path == f"checkpoints/{digest}"  # relative to ASSAY_HOME: every host reads it
    assert folder_of_digest(settings, digest) == ("local", store)
    # the source folder may go: the store's copy is what the catalog names
    for file in Path(facts.path).iterdir():
        file.unlink()
    assert resolve_folder(settings, "local") == store


def test_rows_registered_with_absolute_paths_still_resolve(tmp_path: Path) -> None:
    """Rows written before the shared store hold absolute paths: read as they are (no migration)."""
    settings = load_settings()
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    with session_scope(settings) as session:
        session.add(Checkpoint(name="legacy", path=str(legacy), digest="e" * 64, config={}, lineage={}, heads=[],
                               size_bytes=0))
    assert resolve_folder(settings, "legacy") == legacy
    assert folder_of_digest(settings, "e" * 64) == ("legacy", legacy)
    assert list_checkpoints(settings)[0]["path"] == str(legacy)
    with pytest.raises(NotFoundError, match="no checkpoint with digest ffffffffffff"):
        folder_of_digest(settings, "f" * 64)


def test_lineage_links_parent_and_ancestors(tmp_path: Path) -> None:
    settings = load_settings()
    register(settings, _facts(tmp_path, "base", "1" * 64, operation="create_from_encoder"))
    register(settings, _facts(tmp_path, "pre", "2" * 64, parent="1" * 64, operation="pretrain"))
    register(settings, _facts(tmp_path, "fine", "3" * 64, parent="2" * 64, operation="finetune"))
    info = describe(settings, "fine")
    assert info["parent"] == "pre"
    assert [a["name"] for a in info["ancestors"]] == ["pre", "base"]
    assert info["lineage"]["datasets"][0]["label"] == "wmt16@1"
    labels = labels_by_digest(settings)
    assert lineage_text(labels["3" * 12]) == "fine (finetune of pre)"


@pytest.mark.parametrize("bad", ["../etc", "a/b", "x'; DROP TABLE checkpoints; --", "<script>", "", "A B", ".hidden"])
def test_names_that_could_inject_are_refused(bad: str) -> None:
    with pytest.raises(UsageError, match="invalid checkpoint name"):
        validate_checkpoint_name(bad)


def test_folder_names_become_valid_names() -> None:
    assert name_from_folder("/x/BLEURT MiniLM (final)") == "bleurt-minilm-final"
    assert name_from_folder("/x/...") == "checkpoint"


def test_report_labels_a_checkpoint_with_its_name_and_lineage() -> None:
    from assay.report.palette import MetricPalette

    signature = "bleurt|checkpoint:333333333333|base_encoder:x|v:1|assay:0.1.0"
    palette = MetricPalette.of([signature, "sentbleu|tok:13a|v:1|assay:0.1.0"],
                               {"3" * 12: {"name": "fine", "operation": "finetune", "parent": "pre"}})
    assert palette.label(signature) == "bleurt · fine (finetune of pre)"
    assert palette.label("sentbleu|tok:13a|v:1|assay:0.1.0") == "sentbleu"
