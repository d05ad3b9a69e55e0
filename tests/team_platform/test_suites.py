"""Evaluation suites (``assay.nightly.suites``, ``assay suite ...``): canonical definitions and their
signature, idempotent versioned definition (also under concurrency, on SQLite and PostgreSQL),
pinning by version, validation that writes nothing, and the command line.

Datasets are the real WMT16 and WMT17 DA releases from the shared data.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.catalog.models import Suite as SuiteRow
from assay.config import Settings, load_settings
from assay.errors import AssayError, NotFoundError, SuiteNotFound, UsageError
from assay.jobs.evaluation import _check_request
from assay.nightly.suites import (
    default_entries,
    define_suite,
    get_suite,
    list_suites,
    validate_suite_name,
)

SEG_ENTRY = {"dataset": "wmt16", "levels": ["seg"], "statistics": ["kendall", "pearson"]}


def _digest(settings: Settings, ref: str) -> str:
    with session_scope(settings) as session:
        return resolve(session, ref).digest


def _suite_rows(settings: Settings) -> int:
    with session_scope(settings) as session:
        return int(session.scalar(select(func.count()).select_from(SuiteRow)) or 0)


def _groups_in_store(settings: Settings, ref: str) -> set[str]:
    from assay.datasets import store

    with session_scope(settings) as session:
        path = resolve(session, ref).store_path
    return {g for table in ("segments", "systems", "outputs")
            for g in store.read_table(settings, path, table).column("group").to_pylist()}


def test_definition_is_canonical_idempotent_and_versioned(catalog: Settings, wmt16: str) -> None:
    suite, created = define_suite(catalog, "nightly", [SEG_ENTRY])
    assert created and (suite.name, suite.version) == ("nightly", 1)
    assert wmt16 == "wmt16@1"
    # the signature is sha256 of the canonical JSON written out here (docstring of assay.nightly.suites):
    # a bare name pinned to its version, statistics in assay.jobs.evaluation's order
    expected = {"entries": [{"dataset": "wmt16@1", "digest": _digest(catalog, "wmt16"), "groups": None,
                             "levels": ["seg"], "statistics": ["pearson", "kendall"]}],
                "format": "assay-suite", "format_version": 1}
    text = json.dumps(expected, sort_keys=True, separators=(",", ":"))
    assert suite.signature == hashlib.sha256(text.encode()).hexdigest()
    assert len(suite.signature) == 64
    assert suite.definition() == expected

    # the same definition (listed differently) is a no-op; another name gets the same signature
    again, created = define_suite(catalog, "nightly", [{**SEG_ENTRY, "statistics": "pearson,kendall",
                                                        "dataset": "wmt16@1"}])
    assert not created and again.id == suite.id and again.signature == suite.signature
    other, created = define_suite(catalog, "other", [SEG_ENTRY])
    assert created and other.version == 1 and other.signature == suite.signature

    # a new dataset version: the old suite stays pinned, a bare name now pins the new one
    from tests.robustness_support import subset

    assert subset("wmt16", "wmt16", groups=["de-en", "cs-en"]) == "wmt16@2"
    assert get_suite(catalog, "nightly").entries[0].version.label == "wmt16@1"
    second, created = define_suite(catalog, "nightly", [SEG_ENTRY])
    assert created and second.version == 2 and second.entries[0].version.label == "wmt16@2"
    assert second.signature != suite.signature
    assert get_suite(catalog, "nightly").version == 2
    assert get_suite(catalog, "nightly@1").signature == suite.signature
    listed = [(r["ref"], r["latest"]) for r in list_suites(catalog)]
    assert listed == [("nightly@1", False), ("nightly@2", True), ("other@1", True)]
    with pytest.raises(SuiteNotFound, match=r"no version 3 of suite 'nightly'.*nightly \(versions 1-2\)"):
        get_suite(catalog, "nightly@3")
    with pytest.raises(UsageError, match=r"no suite named 'nope' \(known suites: nightly .*other"):
        get_suite(catalog, "nope")


def test_levels_statistics_and_groups_are_what_evaluate_accepts(shared_data: Path) -> None:
    from assay.jobs.ingest import ingest_path

    settings = load_settings()
    ingest_path(shared_data / "wmt17-da")
    ingest_path(shared_data / "wmt16-da-seg")
    suite, _ = define_suite(settings, "mixed", [
        {"dataset": "wmt17", "levels": ["sys", "seg"], "statistics": ["pairwise_accuracy", "acc_t", "pearson"],
         "groups": ["fi-en", "de-en"]},
        {"dataset": "wmt16@1", "levels": "seg"},
    ])
    wmt16, wmt17 = suite.entries  # sorted by dataset name
    assert wmt17.version.label == "wmt17@1" and wmt17.levels == ("seg", "sys")
    assert wmt17.statistics_for("seg") == ("pearson", "acc_t")
    assert wmt17.statistics_for("sys") == ("pearson", "pairwise_accuracy")
    assert wmt16.statistics == ("pearson", "kendall") and wmt16.groups is None and wmt16.exclude_groups == ()
    # evaluate's own request check accepts every (level, statistics) of the suite
    for entry in suite.entries:
        for level in entry.levels:
            assert _check_request(level, entry.statistics_for(level)) == list(entry.statistics_for(level))
    # the other groups, as evaluate's exclude_groups, from the stored tables themselves
    assert wmt17.groups == ("de-en", "fi-en")
    assert set(wmt17.exclude_groups) == _groups_in_store(settings, "wmt17") - {"de-en", "fi-en"}
    assert get_suite(settings, "mixed").entries == suite.entries  # read back from the catalog

    # the default suite: every ingested dataset at the levels it has judgments for
    defaults = default_entries(settings)
    assert [(e["dataset"], e["levels"]) for e in defaults] == [("wmt16@1", ["seg"]), ("wmt17@1", ["seg", "sys"])]
    assert define_suite(settings, "nightly", defaults)[1]


BAD_DEFINITIONS: list[tuple[str, Any, type[AssayError], str]] = [
    ("Nightly", [SEG_ENTRY], UsageError, "invalid suite name 'Nightly'"),
    ("a;drop table suites", [SEG_ENTRY], UsageError, "invalid suite name"),
    ("../x", [SEG_ENTRY], UsageError, "invalid suite name"),
    ("x" * 65, [SEG_ENTRY], UsageError, "invalid suite name"),
    ("ok", [], UsageError, "at least one entry"),
    ("ok", [{"dataset": "wmt99", "levels": ["seg"]}], NotFoundError, "no dataset named 'wmt99'"),
    ("ok", [{"dataset": "wmt16@7", "levels": ["seg"]}], NotFoundError, "no such version"),
    ("ok", [{"dataset": "../etc", "levels": ["seg"]}], UsageError, "invalid dataset name"),
    ("ok", [{"dataset": "wmt16", "levels": ["doc"]}], UsageError, r"levels \['doc'\].*seg, sys"),
    ("ok", [{"dataset": "wmt16", "levels": ["seg"], "statistics": ["pairwise_accuracy"]}], UsageError,
     "'pairwise_accuracy' is not available at level"),
    ("ok", [{"dataset": "wmt16", "levels": ["seg"], "statistics": ["kendal"]}], UsageError, "'kendal'"),
    ("ok", [{"dataset": "wmt16", "levels": ["sys"]}], UsageError, "level sys needs system-level judgments"),
    ("ok", [{"dataset": "wmt16", "levels": ["seg"], "groups": ["xx-en"]}], UsageError,
     r"no group\(s\) \['xx-en'\] in wmt16@1 \(its groups: cs-en, de-en"),
    ("ok", [{"dataset": "wmt16", "levels": ["seg"], "groups": ["<script>"]}], UsageError, "invalid group name"),
    ("ok", [SEG_ENTRY, {"dataset": "wmt16@1", "levels": ["seg"]}], UsageError, "wmt16@1 is listed twice"),
    ("ok", [{**SEG_ENTRY, "level": "seg"}], UsageError, r"unknown key\(s\) \['level'\]"),
    ("ok", ["wmt16"], UsageError, "expected an object"),
]


@pytest.mark.parametrize(("name", "entries", "error", "message"), BAD_DEFINITIONS,
                         ids=[f"{i}" for i in range(len(BAD_DEFINITIONS))])
def test_bad_definitions_are_refused_and_write_nothing(wmt16: str, name: str, entries: Any,
                                                       error: type[AssayError], message: str) -> None:
    settings = load_settings()
    with pytest.raises(error, match=message):
        define_suite(settings, name, entries)
    assert _suite_rows(settings) == 0


def test_same_content_under_two_dataset_names_is_refused(wmt16: str) -> None:
    from assay.datasets import store
    from assay.jobs.ingest import derive_version

    settings = load_settings()
    with session_scope(settings) as session:
        path = resolve(session, "wmt16").store_path
    segments = store.read_table(settings, path, "segments")
    derive_version("wmt16", "wmt16-copy", {"segments": segments}, {"kind": "test-copy"})
    with pytest.raises(UsageError, match="has the same content as"):
        define_suite(settings, "ok", [SEG_ENTRY, {"dataset": "wmt16-copy", "levels": ["seg"]}])
    assert _suite_rows(settings) == 0


def test_suite_names() -> None:
    for good in ("nightly", "wmt-seg_2", "a"):
        assert validate_suite_name(good) == good
    for bad in ("", "1abc", "a b", "a@1", "a/b", "naïve"):
        with pytest.raises(UsageError):
            validate_suite_name(bad)


def test_concurrent_definitions_end_with_one_version(catalog: Settings, wmt16: str) -> None:
    """Eight threads (eight connections) define the same suite at once: one version, one creator;
    then eight different definitions at once: eight versions, numbered 1..8 without a gap."""
    from tests.robustness_support import subset

    results: list[tuple[int, int, bool]] = []
    errors: list[BaseException] = []

    def run(name: str, entries: list[dict[str, Any]], barrier: threading.Barrier) -> None:
        try:
            barrier.wait()
            suite, created = define_suite(catalog, name, entries)
            results.append((suite.id, suite.version, created))
        except BaseException as exc:  # reported below
            errors.append(exc)

    barrier = threading.Barrier(8)
    threads = [threading.Thread(target=run, args=("same", [SEG_ENTRY], barrier)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len({r[0] for r in results}) == 1 and sum(r[2] for r in results) == 1 and results[0][1] == 1

    groups = ["cs-en", "de-en", "fi-en", "ro-en", "ru-en", "tr-en", "en-ru"]
    refs = [subset("wmt16", f"wmt16-{g}", groups=[g]) for g in groups] + ["wmt16"]
    results.clear()
    barrier = threading.Barrier(len(refs))
    threads = [threading.Thread(target=run, args=("many", [{"dataset": r, "levels": ["seg"]}], barrier))
               for r in refs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sorted(r[1] for r in results) == list(range(1, len(refs) + 1))
    assert all(r[2] for r in results)


# --- the command line ---------------------------------------------------------------------------------


def _cli(args: list[str]) -> Any:
    from assay.cli.main import cli

    return CliRunner().invoke(cli, args, catch_exceptions=False)


def test_cli_define_list_show(wmt16: str, tmp_path: Path) -> None:
    from tests.robustness_support import subset

    subset("wmt16", "wmt16-de", groups=["de-en"])
    result = _cli(["suite", "define", "nightly", "--entry", "wmt16@1:seg:kendall,pearson",
                   "--entry", "wmt16-de:seg::de-en", "--json"])
    assert result.exit_code == 0, result.output
    defined = json.loads(result.stdout)
    assert defined["created"] and defined["ref"] == "nightly@1"
    assert [(e["dataset"], e["statistics"], e["groups"]) for e in defined["entries"]] == [
        ("wmt16@1", ["pearson", "kendall"], None), ("wmt16-de@1", ["pearson", "kendall"], ["de-en"])]

    # the same suite through --dataset/--level/--stat, and through --file: unchanged
    spec = tmp_path / "suite.json"
    spec.write_text(json.dumps({"entries": [
        {"dataset": "wmt16-de@1", "levels": ["seg"], "groups": ["de-en"]},
        {"dataset": "wmt16", "levels": ["seg"], "statistics": ["pearson", "kendall"]}]}))
    result = _cli(["suite", "define", "nightly", "--file", str(spec)])
    assert result.exit_code == 0, result.output
    assert "nightly@1: unchanged" in result.stdout
    result = _cli(["suite", "define", "seg-only", "--dataset", "wmt16", "--level", "seg", "--stat", "kendall"])
    assert result.exit_code == 0 and "seg-only@1: defined" in result.stdout
    assert "wmt16@1" in result.stdout and "seg: kendall" in result.stdout

    listed = json.loads(_cli(["suite", "list", "--json"]).stdout)
    assert [r["ref"] for r in listed] == ["nightly@1", "seg-only@1"]
    shown = json.loads(_cli(["suite", "show", "nightly@1", "--json"]).stdout)
    assert shown["signature"] == defined["signature"]
    text = _cli(["suite", "show", "nightly"]).stdout
    assert f"nightly@1  signature {defined['signature']}" in text and "groups de-en" in text
    assert "* nightly@1" in _cli(["suite", "list"]).stdout


@pytest.mark.parametrize(("args", "message"), [
    (["Bad", "--entry", "wmt16:seg"], "invalid suite name 'Bad'"),
    (["ok", "--entry", "wmt16"], "--entry 'wmt16': expected DATASET:LEVELS"),
    (["ok", "--entry", "wmt16:seg:kendall:de-en:extra"], "expected DATASET:LEVELS"),
    (["ok", "--entry", "wmt16:sys"], "level sys needs system-level judgments"),
    (["ok", "--entry", "wmt16:seg", "--level", "seg"], "--level, --stat and --group apply to --dataset"),
    (["ok", "--dataset", "wmt16"], "--dataset needs at least one --level"),
    (["ok"], "give the entries one way"),
    (["ok", "--entry", "wmt16:seg", "--all-datasets"], "give the entries one way"),
    (["ok", "--dataset", "wmt16", "--level", "seg", "--stat", "pairwise_accuracy"],
     "'pairwise_accuracy' is not available at level"),
])
def test_cli_bad_input_is_one_error_and_writes_nothing(wmt16: str, args: list[str], message: str) -> None:
    result = _cli(["suite", "define", *args])
    assert result.exit_code == 2
    assert message in result.stderr and result.stderr.count("error:") == 1
    assert _suite_rows(load_settings()) == 0


def test_cli_bad_file_names_the_line(wmt16: str, tmp_path: Path) -> None:
    spec = tmp_path / "suite.json"
    spec.write_text('{"entries": [\n  {"dataset": "wmt16",\n   "levels": ["seg"],,}\n]}\n')
    result = _cli(["suite", "define", "ok", "--file", str(spec)])
    assert result.exit_code == 2 and f"{spec}:3: not valid JSON" in result.stderr
    spec.write_text('{"entries": {"dataset": "wmt16"}}')
    result = _cli(["suite", "define", "ok", "--file", str(spec)])
    assert result.exit_code == 2 and "no list of entries" in result.stderr
    assert _suite_rows(load_settings()) == 0
    result = _cli(["suite", "show", "ok"])
    assert result.exit_code == 2 and "no suite named 'ok' (known suites: none)" in result.stderr

