"""Ingest service: versions are content-addressed, re-ingest is a no-op, bad input writes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sqlalchemy import func, select

from assay.catalog.engine import session_scope
from assay.catalog.models import Dataset, DatasetVersion, Run, System
from assay.config import load_settings
from assay.errors import AssayError, InputError, UsageError
from assay.fixtures import fixtures_dir
from assay.jobs.ingest import discover, find_unchanged, ingest_path
from assay.jobs.runs import inputs_version

DEMO_WMT = fixtures_dir() / "demo-wmt"


def store_snapshot() -> tuple[list[str], dict[str, int]]:
    """Every path under the dataset store, and the row count of every catalog table."""
    settings = load_settings()
    files = sorted(str(p.relative_to(settings.home)) for p in settings.datasets_dir.rglob("*")) \
        if settings.datasets_dir.exists() else []
    with session_scope(settings) as session:
        counts = {
            "datasets": session.scalar(select(func.count()).select_from(Dataset)) or 0,
            "versions": session.scalar(select(func.count()).select_from(DatasetVersion)) or 0,
            "systems": session.scalar(select(func.count()).select_from(System)) or 0,
        }
    return files, counts


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    target = tmp_path / "demo-wmt"
    shutil.copytree(DEMO_WMT, target)
    return target


def test_bundled_fixtures_are_discovered_and_ingest() -> None:
    paths = discover(fixtures_dir())
    assert {p.name for p in paths} == {"demo-wmt", "demo-captions.tsv"}
    results = {p.name: ingest_path(p) for p in paths}
    wmt = results["demo-wmt"]
    assert (wmt.version.name, wmt.version.number, wmt.created) == ("wmt99", 1, True)
    # 2 language pairs x 3 systems x 6 segments, and 2 x 3 system-level judgments
    assert wmt.row_counts["segments"] == 36
    assert wmt.row_counts["systems"] == 6
    assert wmt.row_counts["outputs"] == 36
    captions = results["demo-captions.tsv"]
    assert captions.version.name == "demo-captions"
    assert captions.row_counts["segments"] == 6


def test_store_holds_canonical_parquet_with_version_columns() -> None:
    result = ingest_path(DEMO_WMT)
    settings = load_settings()
    folder = settings.home / "datasets" / "wmt99" / result.version.digest
    assert sorted(p.name for p in folder.iterdir()) == [
        "manifest.json", "outputs.parquet", "rankings.parquet", "segments.parquet", "systems.parquet",
    ]
    segments = pq.read_table(folder / "segments.parquet")
    assert set(segments.column("dataset").to_pylist()) == {"wmt99"}
    assert set(segments.column("version_digest").to_pylist()) == {result.version.digest[:12]}
    row = next(r for r in segments.to_pylist()
               if (r["group"], r["system"], r["segment_id"]) == ("de-en", "beta.102", "4"))
    # read straight from the fixture files: line 4 of each
    assert row["candidate"] == (DEMO_WMT / "system-outputs/newstest2099/de-en/newstest2099.beta.102.de-en"
                                ).read_text().splitlines()[3]
    assert row["references"] == [(DEMO_WMT / "references/newstest2099-deen-ref.en").read_text().splitlines()[3]]
    assert row["human_z"] == pytest.approx(-0.31)
    # no temporary folders are left behind
    assert not [p for p in (settings.home / "datasets" / "wmt99").iterdir() if p.name.startswith(".tmp")]


def test_reingest_identical_input_is_a_noop() -> None:
    first = ingest_path(DEMO_WMT)
    before = store_snapshot()
    second = ingest_path(DEMO_WMT)
    assert not second.created
    assert second.version == first.version
    assert store_snapshot() == before


def test_changed_input_creates_a_new_version_and_keeps_the_old(demo_copy: Path) -> None:
    first = ingest_path(demo_copy)
    seg = demo_copy / "DA-seglevel.csv"
    lines = seg.read_text().splitlines()
    lp, data, system, sid, _ = lines[1].split(" ")
    lines[1] = " ".join([lp, data, system, sid, "0.999"])
    seg.write_text("\n".join(lines) + "\n")

    second = ingest_path(demo_copy)
    assert second.created and second.version.number == 2 and second.version.digest != first.version.digest
    settings = load_settings()
    old = pq.read_table(settings.home / "datasets" / "wmt99" / first.version.digest / "segments.parquet")
    new = pq.read_table(settings.home / "datasets" / "wmt99" / second.version.digest / "segments.parquet")
    assert old.num_rows == new.num_rows
    assert 0.999 not in old.column("human_z").to_pylist()
    assert 0.999 in new.column("human_z").to_pylist()


def _bad_score(root: Path) -> None:
    seg = root / "DA-seglevel.csv"
    seg.write_text(seg.read_text().replace("0.620", "zero-point-six", 1))


def _missing_output(root: Path) -> None:
    (root / "system-outputs/newstest2099/fr-en/newstest2099.gamma.103.fr-en").unlink()


def _sid_out_of_range(root: Path) -> None:
    seg = root / "DA-seglevel.csv"
    seg.write_text(seg.read_text() + "de-en newstest2099 alpha.101 7 0.1\n")


def _not_utf8(root: Path) -> None:
    ref = root / "references/newstest2099-deen-ref.en"
    ref.write_bytes(ref.read_bytes().replace(b"river", b"riv\xe9r"))


def _wrong_delimiter(root: Path) -> None:
    seg = root / "DA-seglevel.csv"
    seg.write_text(seg.read_text().replace(" ", "\t"))


def _unequal_length(root: Path) -> None:
    src = root / "sources/newstest2099-fren-src.fr"
    src.write_text("\n".join(src.read_text().splitlines()[:-1]) + "\n")


def _duplicate_key(root: Path) -> None:
    seg = root / "DA-seglevel.csv"
    seg.write_text(seg.read_text() + seg.read_text().splitlines()[1] + "\n")


def _empty(root: Path) -> None:
    (root / "DA-syslevel.csv").write_text("")


@pytest.mark.parametrize("corrupt", [
    _bad_score, _missing_output, _sid_out_of_range, _not_utf8, _wrong_delimiter, _unequal_length,
    _duplicate_key, _empty,
])
def test_bad_input_is_rejected_and_nothing_is_written(demo_copy: Path, corrupt) -> None:
    ingest_path(DEMO_WMT)  # the catalog and store already hold something
    before = store_snapshot()
    corrupt(demo_copy)
    with pytest.raises(InputError) as excinfo:
        ingest_path(demo_copy, name="wmt99-corrupt")
    message = str(excinfo.value)
    assert str(demo_copy) in message  # names the file
    assert store_snapshot() == before


@pytest.mark.parametrize("name", ["../evil", "a/b", "..", ".hidden", "UPPER", "x@1", "", "a" * 65])
def test_dataset_names_are_validated(name: str) -> None:
    before = store_snapshot()
    with pytest.raises(UsageError, match="invalid dataset name"):
        ingest_path(DEMO_WMT, name=name)
    assert store_snapshot() == before


def test_catalog_failure_removes_the_new_store_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    import assay.datasets.versions

    def fail(*_args: object, **_kwargs: object) -> None:
        raise AssayError("simulated catalog failure")

    before = store_snapshot()
    monkeypatch.setattr(assay.datasets.versions, "record_version", fail)
    with pytest.raises(AssayError, match="simulated"):
        ingest_path(DEMO_WMT)
    settings = load_settings()
    leftovers = list((settings.home / "datasets").rglob("*.parquet")) if settings.datasets_dir.exists() else []
    assert leftovers == [] and store_snapshot()[1] == before[1]  # no parquet file, no catalog row


def test_catalog_on_postgresql(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.catalog.engine import reset_engines, upgrade

    upgrade(postgres_url)
    monkeypatch.setenv("ASSAY_CATALOG_URL", postgres_url)
    reset_engines()
    first = ingest_path(DEMO_WMT)
    again = ingest_path(DEMO_WMT)
    assert first.created and not again.created and again.version.number == first.version.number
    reset_engines()


# --- the fast no-op: an unchanged source is answered without parsing ----------------------------


def _parse_must_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    import assay.jobs.ingest

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the source was parsed again")

    monkeypatch.setattr(assay.jobs.ingest.formats, "parse", refuse)


def _runs(kind: str) -> list[Run]:
    with session_scope(load_settings()) as session:
        runs = list(session.scalars(select(Run).where(Run.kind == kind)))
        session.expunge_all()
    return runs


def test_unchanged_source_is_a_noop_without_parsing(demo_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = ingest_path(demo_copy)
    before = store_snapshot()
    _parse_must_not_run(monkeypatch)
    again = ingest_path(demo_copy)
    assert not again.created and not again.parsed and again.run_id is None
    assert (again.version, again.format) == (first.version, first.format)
    assert again.row_counts == first.row_counts and again.warnings == first.warnings
    assert find_unchanged(demo_copy) == again
    assert store_snapshot() == before


def test_the_ingest_run_is_recorded_once(demo_copy: Path) -> None:
    """Only the ingest that creates a version records a run; a no-op records nothing (by design)."""
    first = ingest_path(demo_copy)
    ingest_path(demo_copy)
    runs = _runs("ingest")
    assert [r.id for r in runs] == [first.run_id]
    run = runs[0]
    assert run.status == "completed" and inputs_version(run.inputs) == first.version
    settings = load_settings()
    with session_scope(settings) as session:
        version = session.scalars(select(DatasetVersion).where(DatasetVersion.digest == first.version.digest)).one()
        recorded = {f["path"]: f["sha256"] for f in version.source_files}
    assert {f["path"]: f["sha256"] for f in run.inputs["source_files"]} == recorded


@pytest.mark.parametrize("change", ["edit a file it read", "add a file", "other options", "other name"])
def test_a_changed_source_is_parsed_again(demo_copy: Path, change: str) -> None:
    first = ingest_path(demo_copy)
    kwargs: dict[str, object] = {}
    if change == "edit a file it read":
        seg = demo_copy / "DA-seglevel.csv"
        seg.write_text(seg.read_text().replace("0.620", "0.625", 1))
    elif change == "add a file":
        (demo_copy / "NOTES.txt").write_text("a file the parser may or may not read\n")
    elif change == "other options":
        kwargs["options"] = {"unused": "x"}
    else:
        kwargs["name"] = "wmt99-copy"
    assert find_unchanged(demo_copy, **kwargs) is None  # type: ignore[arg-type]
    result = ingest_path(demo_copy, **kwargs)  # type: ignore[arg-type]
    assert result.parsed
    assert result.created == (change in ("edit a file it read", "other name"))
    if change == "add a file":
        assert result.version.digest == first.version.digest and result.version.number == first.version.number
        # identical content is a no-op, and a no-op records nothing: the next ingest parses again
        assert find_unchanged(demo_copy) is None


def test_reparse_parses_an_unchanged_source(demo_copy: Path) -> None:
    first = ingest_path(demo_copy)
    again = ingest_path(demo_copy, reparse=True)
    assert again.parsed and not again.created and again.version.digest == first.version.digest


def test_a_single_file_source_is_a_noop_too(monkeypatch: pytest.MonkeyPatch) -> None:
    captions = fixtures_dir() / "demo-captions.tsv"
    first = ingest_path(captions)
    _parse_must_not_run(monkeypatch)
    again = ingest_path(captions)
    assert not again.parsed and again.version == first.version
