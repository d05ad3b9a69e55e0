"""The ``mtme`` format on mt-metrics-eval's WMT23 en-de folder (``../shared/data/mtme-wmt23``).

Expected counts come from ``mtme-wmt23/PROVENANCE.md`` (557 segments, 14 outputs, 12 MT systems + refA +
synthetic_ref) and from the files themselves (line counts, as ``wc -l`` gives them); the correlations from
``design/REFERENCE_NUMBERS.md`` ("WMT23 metrics task, en-de, from mt-metrics-eval's own code"). Bad inputs
are planted in a copy of a few real files in ``tmp_path``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pytest

from assay.config import load_settings
from assay.datasets import formats
from assay.datasets.parsed import ParsedDataset
from assay.errors import UsageError
from assay.jobs.ingest import discover, find_unchanged_versions, ingest_path, ingest_versions
from assay.provenance import table_digest
from assay.results import segment_scores
from assay.results.external_scores import parse_external

LP = "en-de"
SEGMENTS = 557  # PROVENANCE.md: 557 source segments
SYSTEMS = 14  # 12 MT systems + refA + synthetic_ref
MQM_RATED = 460  # segments with an MQM score per system (557 - 97 None lines per system in en-de.mqm.seg.score)
SOME_METRICS = ("BLEU-refA", "CometKiwi-src", "XCOMET-Ensemble-refA", "MetricX-23-QE-src")


@pytest.fixture(scope="module")
def wmt23(shared_data: Path) -> Path:
    return shared_data / "mtme-wmt23" / "wmt23"


@pytest.fixture(scope="module")
def parsed(wmt23: Path) -> ParsedDataset:
    return formats.parse(wmt23)


@pytest.fixture
def mtme_copy(tmp_path: Path, wmt23: Path) -> Callable[..., Path]:
    """A copy of the en-de folder with only ``metrics`` (base-reference names) among the metric files;
    ``name`` is the test-set folder's name; ``pairs`` copies en-de under other pair names too."""

    def make(metrics: Iterable[str] = SOME_METRICS, name: str = "wmt23", pairs: Iterable[str] = (LP,)) -> Path:
        root = tmp_path / "mtme" / name
        for lp in pairs:
            for folder in ("sources", "references", "documents", "human-scores"):
                for file in (wmt23 / folder).glob(f"{LP}.*"):
                    _copy(file, root / folder / file.name.replace(LP, lp, 1))
            shutil.copytree(wmt23 / "system-outputs" / LP, root / "system-outputs" / lp)
            for metric in metrics:
                for file in (wmt23 / "metric-scores" / LP).glob(f"{metric}.*.score"):
                    _copy(file, root / "metric-scores" / lp / file.name)
        return root

    return make


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, target)


def _column(parsed: ParsedDataset, table: str, *columns: str) -> list[tuple]:
    data = parsed.tables[table]
    return list(zip(*(data.column(c).to_pylist() for c in columns), strict=True))


# -- the real folder ------------------------------------------------------------------------------

def test_detects_the_layout_and_stores_one_pair(wmt23: Path, parsed: ParsedDataset) -> None:
    assert formats.detect_format(wmt23) == "mtme"
    assert formats.splits(wmt23, "mtme") == [{"language_pair": LP}]
    counts = parsed.row_counts()
    assert counts["outputs"] == SYSTEMS * SEGMENTS
    assert counts["documents"] == SEGMENTS
    assert counts["reference_texts"] == 2 * SEGMENTS
    # every system's every line, refA and synthetic_ref included; segment ids are 0-based line numbers
    outputs = parsed.tables["outputs"]
    assert sorted(set(outputs.column("segment_id").to_pylist()), key=int) == [str(i) for i in range(SEGMENTS)]
    assert len(set(outputs.column("system").to_pylist())) == SYSTEMS
    info = parsed.metadata
    assert info["default_name"] == "mtme-wmt23-en-de" and info["year"] == 2023
    # mt-metrics-eval meta_info.DATA['wmt23']['en-de']
    assert info["reference_system"] == "refA"
    assert info["primary_human"] == {"seg": "mqm", "sys": "mqm", "domain": "mqm"}
    assert info["outlier_systems"] == ["synthetic_ref"]
    assert info["human_systems"] == ["refA", "synthetic_ref"]
    assert len(info["primary_metrics"]) == 32 and "XCOMET-Ensemble" in info["primary_metrics"]


def test_segments_hold_every_human_score_kind(wmt23: Path, parsed: ParsedDataset) -> None:
    rows = _column(parsed, "segments", "aspect", "system", "is_human", "segment_id", "item_id")
    mqm = [r for r in rows if r[0] == "mqm"]
    # 13 systems have MQM (synthetic_ref has none), each on 460 segments
    assert len(mqm) == 13 * MQM_RATED
    assert len({r[1] for r in mqm if not r[2]}) == 12  # PROVENANCE.md: 12 MT systems
    assert {r[1] for r in mqm if r[2]} == {"refA"}
    assert all(r[3] == r[4] for r in rows)
    none_lines = (wmt23 / "human-scores/en-de.da-sqm.seg.score").read_text().count("\tNone")
    assert sum(r[0] == "da-sqm" for r in rows) == 13 * SEGMENTS - none_lines
    # the standard reference's text is every row's reference
    segments = parsed.tables["segments"].slice(0, 50).to_pylist()
    ref_a = (wmt23 / "references/en-de.refA.txt").read_text(encoding="utf-8").split("\n")
    assert all(row["references"] == [ref_a[int(row["segment_id"])].rstrip()] for row in segments)


def test_system_scores_are_the_means_of_the_segment_scores(parsed: ParsedDataset) -> None:
    # MTME's WMT23 MQM system score is the mean over the rated segments (checked here on the released files)
    seg: dict[tuple[str, str], list[float]] = {}
    for aspect, system, value in _column(parsed, "segments", "aspect", "system", "human_raw"):
        seg.setdefault((aspect, system), []).append(value)
    systems = _column(parsed, "systems", "aspect", "system", "human_raw", "rating_count")
    assert len(systems) == 26  # 13 systems x (mqm, da-sqm)
    for aspect, system, value, rated in systems:
        assert rated == len(seg[(aspect, system)])
        assert value == pytest.approx(float(np.mean(seg[(aspect, system)])), abs=1e-9)


def test_ratings_sum_to_the_released_segment_scores(parsed: ParsedDataset) -> None:
    """Oracle: en-de.mqm.seg.score, which MTME's score_mqm computed from the same errors."""
    mqm = {(s, i): v for a, s, i, v in _column(parsed, "segments", "aspect", "system", "segment_id", "human_raw")
           if a == "mqm"}
    ratings = _column(parsed, "ratings", "system", "segment_id", "rater", "scheme", "penalty", "errors")
    assert len(ratings) == len(mqm) == 13 * MQM_RATED
    assert {r[2] for r in ratings} == {"mqm.merged"} and {r[3] for r in ratings} == {"mqm-weights:released"}
    assert max(abs(-penalty - mqm[(s, i)]) for s, i, _, _, penalty, _ in ratings) < 1e-9
    errors = parsed.tables["errors"]
    assert errors.num_rows == sum(r[5] for r in ratings)
    assert set(errors.column("side").to_pylist()) == {"source", "target"}


def test_metric_scores_hold_every_file_line(wmt23: Path, parsed: ParsedDataset) -> None:
    files = sorted((wmt23 / "metric-scores" / LP).glob("*.score"))
    lines = sum(len(f.read_text().splitlines()) for f in files)
    scores = parsed.tables["metric_scores"]
    assert scores.num_rows == lines
    variants = parsed.metadata["external_metrics"]
    assert len(variants) == 71  # 71 NAME-REF prefixes among the 210 files
    assert sum("seg" in v["levels"] for v in variants) == 68
    for row in scores.take([0, 1000, 500_000]).to_pylist():  # each row names its file and line
        assert float((wmt23 / row["file"]).read_text().splitlines()[row["line"] - 1].split()[-1]) == row["score"]
    for variant in variants:
        metric = parse_external(variant["signature"])
        assert metric is not None and (metric.name, metric.reference, metric.task) == \
            (variant["metric"], variant["reference"], "wmt23")


def test_official_correlations_follow_from_the_stored_scores(parsed: ParsedDataset) -> None:
    """REFERENCE_NUMBERS.md, WMT23 en-de from MTME: XCOMET-Ensemble sys Pearson 0.980235 and seg Pearson
    (no grouping, 12 MT systems x 460 segments) 0.695323, printed to 6 decimals."""
    mqm = {(s, i): v for a, s, i, v, h in _column(parsed, "segments", "aspect", "system", "segment_id", "human_raw",
                                                   "is_human") if a == "mqm" and not h}
    human_sys = {s: v for a, s, v, h in _column(parsed, "systems", "aspect", "system", "human_raw", "is_human")
                 if a == "mqm" and not h}
    table = parsed.tables["metric_scores"]
    mine = table.filter(pc.and_(pc.equal(table["metric"], "XCOMET-Ensemble"), pc.equal(table["reference"], "refA")))
    columns = ("level", "system", "segment_id", "score")
    seg = {(s, i): v for lvl, s, i, v in zip(*(mine.column(c).to_pylist() for c in columns), strict=True)
           if lvl == "seg"}
    sys = {s: v for lvl, s, v in zip(*(mine.column(c).to_pylist() for c in ("level", "system", "score")), strict=True)
           if lvl == "sys"}
    keys = sorted(mqm)
    assert len(keys) == 12 * MQM_RATED
    assert np.corrcoef([mqm[k] for k in keys], [seg[k] for k in keys])[0, 1] == pytest.approx(0.695323, abs=5e-7)
    systems = sorted(human_sys)
    assert np.corrcoef([human_sys[s] for s in systems], [sys[s] for s in systems])[0, 1] == \
        pytest.approx(0.980235, abs=5e-7)


# -- the rating file's other forms ----------------------------------------------------------------

def test_per_rater_and_rater_column_forms_read_alike(mtme_copy: Callable[..., Path], parsed: ParsedDataset) -> None:
    """MTME ships merged files (2 columns), merged files with a rater column, and one file per rater
    (``<lp>.mqm.raterN.seg.rating``); built here from the real merged file."""
    root = mtme_copy(metrics=())
    merged = root / "human-scores" / "en-de.mqm.merged.seg.rating"
    lines = merged.read_text(encoding="utf-8").splitlines()
    merged.unlink()
    position: dict[str, int] = {}
    per_rater: dict[str, list[str]] = {"rater1": [], "rater2": []}
    with_column = []
    for line in lines:
        system, rating = line.split("\t")
        index = position[system] = position.get(system, -1) + 1
        rater = f"rater{index % 2 + 1}"
        for name, rows in per_rater.items():
            rows.append(line if name == rater else f"{system}\tNone")
        with_column.append(line if rating == "None" else f"{line}\t{rater}")
    for name, rows in per_rater.items():
        (root / "human-scores" / f"en-de.mqm.{name}.seg.rating").write_text("\n".join(rows) + "\n", encoding="utf-8")
    split = formats.parse(root)
    (root / "human-scores" / "en-de.mqm.rater1.seg.rating").unlink()
    (root / "human-scores" / "en-de.mqm.rater2.seg.rating").unlink()
    (root / "human-scores" / "en-de.mqm.columns.seg.rating").write_text("\n".join(with_column) + "\n",
                                                                          encoding="utf-8")
    column = formats.parse(root)

    def by_segment(found: ParsedDataset) -> dict[tuple[str, str], tuple[str, float]]:
        return {(s, i): (r, p) for s, i, r, p in _column(found, "ratings", "system", "segment_id", "rater", "penalty")}

    reference = {k: p for k, (_, p) in by_segment(parsed).items()}
    for found, raters in ((split, {"mqm.rater1", "mqm.rater2"}), (column, {"rater1", "rater2"})):
        rated = by_segment(found)
        assert {k: p for k, (_, p) in rated.items()} == reference
        assert {r for r, _ in rated.values()} == raters
        assert found.tables["errors"].num_rows == parsed.tables["errors"].num_rows
    assert column.metadata["rating_sets"]["mqm.columns"]["form"] == "rater column"


# -- choices and options ----------------------------------------------------------------------------

def test_unknown_test_set_falls_back_and_options_override(mtme_copy: Callable[..., Path]) -> None:
    root = mtme_copy(metrics=("BLEU-refA",), name="wmt99")
    fallback = formats.parse(root)
    assert fallback.metadata["reference_system"] == "refA"  # first in alphabetical order of refA, synthetic_ref
    assert fallback.metadata["primary_human"] == {"seg": "mqm", "sys": "mqm", "domain": "mqm"}
    assert any("not in mt-metrics-eval's metadata" in w for w in fallback.warnings)
    chosen = formats.parse(root, options={"reference": "synthetic_ref", "primary_human": "da-sqm"})
    assert chosen.metadata["reference_source"] == "option"
    assert chosen.metadata["primary_human"] == {"seg": "da-sqm", "sys": "da-sqm", "domain": "da-sqm"}
    synthetic = (root / "references/en-de.synthetic_ref.txt").read_text(encoding="utf-8").split("\n")
    first = chosen.tables["outputs"].slice(0, 1).to_pylist()[0]
    assert first["references"] == [synthetic[0].rstrip()]


# -- ingest: several versions, external scores, no-op ---------------------------------------------

def test_a_test_set_with_two_pairs_is_two_versions(mtme_copy: Callable[..., Path]) -> None:
    root = mtme_copy(metrics=("BLEU-refA",), pairs=(LP, "de-en"))
    with pytest.raises(UsageError, match="holds 2 dataset versions"):
        ingest_path(root)
    results = ingest_versions(root)
    assert [r.label for r in results] == ["mtme-wmt23-de-en@1", "mtme-wmt23-en-de@1"]
    # wmt23 de-en is a DA pair in MTME's metadata (meta_info.WMT23_DA): its primary human score is da-sqm
    assert formats.parse(root, options={"language_pair": "de-en"}).metadata["primary_human"]["seg"] == "da-sqm"
    again = find_unchanged_versions(root)
    assert again is not None and [r.label for r in again] == [r.label for r in results]
    named = ingest_versions(root, name="mine", options={"language_pair": "de-en"})
    assert [r.label for r in named] == ["mine@1"]


def test_ingest_writes_the_official_segment_scores_once(mtme_copy: Callable[..., Path]) -> None:
    root = mtme_copy()
    settings = load_settings()
    (first,) = ingest_versions(root)
    assert first.created and first.external_scores is not None
    assert first.external_scores["variants"] == first.external_scores["written"] == len(SOME_METRICS)
    found = {s.signature: s for s in segment_scores.scored_signatures(settings)}
    assert {parse_external(sig).name for sig in found} == {m.rsplit("-", 1)[0] for m in SOME_METRICS}  # type: ignore[union-attr]
    # every output row of a scored system has a stored score under the variant's signature
    from assay.catalog.dataset_versions import resolve
    from assay.catalog.engine import session_scope
    from assay.datasets import store

    with session_scope(settings) as session:
        store_path = resolve(session, first.label).store_path
    outputs = store.read_table(settings, store_path, "outputs").to_pydict()
    keys = {(s, i): segment_scores.segment_key(src, refs, c) for s, i, src, refs, c in zip(
        outputs["system"], outputs["segment_id"], outputs["source"], outputs["references"], outputs["candidate"],
        strict=True)}
    scores = store.read_table(settings, store_path, "metric_scores").to_pydict()
    bleu = [sig for sig in found if sig.startswith("BLEU|official:wmt23|ref:refA|files:")]
    assert len(bleu) == 1
    stored = {r["key"]: r["score"] for r in segment_scores.read_scores(settings, "BLEU", bleu[0]).to_pylist()}
    rows = [(s, i, v) for m, lvl, s, i, v in zip(scores["metric"], scores["level"], scores["system"],
                                                  scores["segment_id"], scores["score"], strict=True)
            if m == "BLEU" and lvl == "seg"]
    assert len(rows) == 13 * SEGMENTS  # every system but refA, the reference BLEU-refA uses
    assert set(stored) == {keys[(s, i)] for s, i, _ in rows}
    # sentence BLEU of identical outputs is identical: no conflict, every stored score is the file's
    assert all(stored[keys[(s, i)]] == v for s, i, v in rows)
    assert first.external_scores["conflicting_keys"] > 0  # MetricX-23-QE-src scores equal outputs differently
    assert any("their mean" in w for w in first.warnings)

    (again,) = ingest_versions(root)
    assert (again.created, again.parsed, again.label) == (False, False, first.label)
    # an identical version without its official scores (the results store removed) gets them back
    shutil.rmtree(settings.home / "results" / "segment_scores")
    assert find_unchanged_versions(root) is None
    (restored,) = ingest_versions(root)
    assert not restored.created and restored.external_scores is not None
    assert restored.external_scores["written"] == len(SOME_METRICS)
    assert {s.signature for s in segment_scores.scored_signatures(settings)} == set(found)


# -- mt-metrics-eval's data root: a folder of test sets -------------------------------------------------

@pytest.fixture
def mtme_root(tmp_path: Path, wmt23: Path) -> Path:
    """``mt-metrics-eval-v2/`` as MTME downloads it, with two test sets, ``wmt23`` and ``wmt99`` (a name
    MTME's metadata does not know), each the real en-de folder by symbolic links (the metric files of
    ``SOME_METRICS`` only), and ``txt/``: texts in MTME's layout without scores (as an ESA release has),
    which is not a test set."""
    root = tmp_path / "mt-metrics-eval-v2"
    for name in ("wmt23", "wmt99"):
        folder = root / name
        folder.mkdir(parents=True)
        for sub in ("sources", "references", "documents", "human-scores", "system-outputs"):
            (folder / sub).symlink_to(wmt23 / sub, target_is_directory=True)
        metrics = folder / "metric-scores" / LP
        metrics.mkdir(parents=True)
        for metric in SOME_METRICS:
            for file in (wmt23 / "metric-scores" / LP).glob(f"{metric}.*.score"):
                (metrics / file.name).symlink_to(file)
    (root / "txt").mkdir()
    for sub in ("sources", "system-outputs"):
        (root / "txt" / sub).symlink_to(wmt23 / sub, target_is_directory=True)
    return root


def test_a_data_root_holds_one_version_per_test_set_and_pair(mtme_root: Path) -> None:
    assert formats.detect_format(mtme_root) == "mtme"
    assert formats.splits(mtme_root, "mtme") == [{"test_set": "wmt23", "language_pair": LP},
                                                 {"test_set": "wmt99", "language_pair": LP}]
    assert formats.splits(mtme_root, "mtme", {"test_set": "wmt99", "language_pair": LP}) == [
        {"test_set": "wmt99", "language_pair": LP}]
    results = ingest_versions(mtme_root)
    assert [r.label for r in results] == ["mtme-wmt23-en-de@1", "mtme-wmt99-en-de@1"]
    assert all(r.created for r in results)
    # each version is the one its test-set folder gives alone: the same tables (so the same digest) and
    # official signatures named after its own test set
    alone = formats.parse(mtme_root / "wmt23")
    assert results[0].version.digest == table_digest(alone.tables)
    from assay.catalog.dataset_versions import resolve
    from assay.catalog.engine import session_scope

    with session_scope(load_settings()) as session:
        infos = [dict(resolve(session, r.label).info) for r in results]
        sources = [[f["path"] for f in resolve(session, r.label).source_files] for r in results]
    assert [v["signature"] for v in infos[0]["external_metrics"]] == \
        [v["signature"] for v in alone.metadata["external_metrics"]]
    assert {parse_external(v["signature"]).task for v in infos[1]["external_metrics"]} == {"wmt99"}  # type: ignore[union-attr]
    assert (infos[0]["test_set"], infos[1]["test_set"]) == ("wmt23", "wmt99")
    # the files read are recorded under the root, so a re-ingest of the root finds them
    assert all(path.startswith("wmt23/") for path in sources[0]) and "wmt99/sources/en-de.txt" in sources[1]
    again = ingest_versions(mtme_root)
    assert [(r.label, r.created, r.parsed) for r in again] == [(r.label, False, False) for r in results]
    named = ingest_versions(mtme_root, name="mine", options={"test_set": "wmt99"})
    assert [r.label for r in named] == ["mine@1"]


def test_a_data_root_refuses_what_it_does_not_hold(mtme_root: Path, raises_input_error) -> None:
    with raises_input_error(mtme_root.name, expected="-o test_set= one or more of: wmt23, wmt99",
                            problem="wmt22"):
        formats.splits(mtme_root, "mtme", {"test_set": "wmt22"})
    with raises_input_error(mtme_root.name, expected="wmt23 en-de", problem="de-en"):
        formats.splits(mtme_root, "mtme", {"language_pair": "de-en"})
    with raises_input_error(mtme_root.name, expected="-o test_set=NAME", problem="2 test sets"):
        formats.parse(mtme_root)
    with raises_input_error("wmt23", expected="-o test_set=wmt23", problem="wmt99"):
        formats.splits(mtme_root / "wmt23", "mtme", {"test_set": "wmt99"})
    assert not formats.registry()["mtme"].detect(mtme_root / "txt" / "sources")


def test_discover_finds_the_shared_data_roots(shared_data: Path) -> None:
    """``mtme-wmt23`` holds ``wmt23/`` one level down (a data root); ``esa-wmt24``'s ``txt/`` lays its
    texts out as MTME does but holds no scores, so that folder stays an ESA release."""
    found = {path.name: path for path in discover(shared_data)}
    assert {"mtme-wmt23", "esa-wmt24"} <= set(found)
    assert formats.detect_format(found["mtme-wmt23"]) == "mtme"
    assert formats.splits(found["mtme-wmt23"], "mtme") == [{"test_set": "wmt23", "language_pair": LP}]
    assert formats.detect_format(found["esa-wmt24"]) == "esa"


# -- bad input: one error naming the file, the line and what was expected; nothing written -----------

def _edit_line(path: Path, index: int, edit: Callable[[str], str | None]) -> int:
    """Replace (or with None, delete) line ``index`` (0-based) of ``path``; returns its 1-based number."""
    lines = path.read_text(encoding="utf-8").split("\n")
    new = edit(lines[index])
    lines[index: index + 1] = [] if new is None else [new]
    path.write_text("\n".join(lines), encoding="utf-8")
    return index + 1


def _first_line_of(path: Path, system: str, with_errors: bool = False) -> int:
    """The 0-based index of ``system``'s first line (with ``with_errors``: its first rating with an error)."""
    for i, line in enumerate(path.read_text(encoding="utf-8").split("\n")):
        if line.startswith(system + "\t") and (not with_errors or '"errors": [{' in line):
            return i
    raise AssertionError(system)


def _nothing_stored() -> bool:
    settings = load_settings()
    return not (settings.home / "datasets").exists() and not (settings.home / "results").exists()


def test_a_score_file_with_a_line_missing(mtme_copy: Callable[..., Path], raises_input_error) -> None:
    root = mtme_copy()
    path = root / "human-scores" / "en-de.mqm.seg.score"
    first = _first_line_of(path, "ONLINE-W")
    _edit_line(path, first, lambda line: None)
    # the system's last line: 557 lines per system, one fewer now
    with raises_input_error(path.name, line=first + SEGMENTS - 1, expected="557 lines"):
        ingest_versions(root)
    assert _nothing_stored()


def test_a_human_score_of_a_system_without_output(mtme_copy: Callable[..., Path], raises_input_error) -> None:
    root = mtme_copy()
    path = root / "human-scores" / "en-de.mqm.sys.score"
    number = _edit_line(path, 2, lambda line: "ONLINE-Z\t" + line.split("\t")[1])
    with raises_input_error(path.name, line=number, expected="system-outputs", problem="ONLINE-Z"):
        ingest_versions(root)
    assert _nothing_stored()


def test_a_metric_file_without_a_system(mtme_copy: Callable[..., Path], raises_input_error) -> None:
    root = mtme_copy()
    path = root / "metric-scores" / LP / "CometKiwi-src.sys.score"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(line for line in lines if not line.startswith("ONLINE-A\t")) + "\n")
    with raises_input_error(path.name, expected="missing_metric_scores=zero", problem="ONLINE-A"):
        formats.parse(root)
    # mt-metrics-eval's repair on request: the missing system gets 0, with a warning
    repaired = formats.parse(root, options={"missing_metric_scores": "zero"})
    assert any("CometKiwi-src.sys.score has no scores for ONLINE-A" in w for w in repaired.warnings)


def test_a_metric_file_with_an_unknown_system(mtme_copy: Callable[..., Path], raises_input_error) -> None:
    root = mtme_copy()
    path = root / "metric-scores" / LP / "BLEU-refA.seg.score"
    number = _edit_line(path, 5, lambda line: "NoSuchSystem\t" + line.split("\t")[1])
    with raises_input_error(path.name, line=number, problem="NoSuchSystem"):
        ingest_versions(root)
    assert _nothing_stored()


def test_a_rating_that_is_neither_json_nor_none(mtme_copy: Callable[..., Path], raises_input_error) -> None:
    root = mtme_copy()
    path = root / "human-scores" / "en-de.mqm.merged.seg.rating"
    number = _edit_line(path, 10, lambda line: line.split("\t")[0] + '\t{"errors": [')
    with raises_input_error(path.name, line=number, expected="None, or a JSON object", problem="neither JSON"):
        ingest_versions(root)
    assert _nothing_stored()


def test_a_span_outside_its_text(mtme_copy: Callable[..., Path], raises_input_error) -> None:
    root = mtme_copy()
    path = root / "human-scores" / "en-de.mqm.merged.seg.rating"
    index = _first_line_of(path, "ONLINE-B", with_errors=True)

    def stretch(line: str) -> str:
        system, rating = line.split("\t")
        data = json.loads(rating)
        data["errors"][0]["end"] = 100_000
        return f"{system}\t{json.dumps(data)}"

    number = _edit_line(path, index, stretch)
    with raises_input_error(path.name, line=number, expected="<=", problem="outside"):
        ingest_versions(root)
    assert _nothing_stored()
