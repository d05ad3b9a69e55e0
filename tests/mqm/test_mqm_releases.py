"""``mqm-tsv`` on the shapes of Google's other MQM releases, built from the two real shared files.

google/wmt-mqm-human-evaluation (README, and each release's header) differs by release:

* TED zh-en (``ted/zhen/mqm_ted_zhen.tsv``) and newstest2020 have the TED en-de header without its
  ``comment`` column: ``system doc doc_id seg_id rater source target category severity``;
* the WMT23 side-by-side files name the segment ``globalSegId``/``docSegId`` and add ``metadata``;
  MQM Viewer's format spec (google-research ``mqm_viewer/README.md``) also writes them
  ``global_seg_id``/``doc_seg_id``, allows a constant ``globalSegId`` and rows with an empty rater that
  carry only metadata;
* the human translations are named ``ref``/``refB`` (TED zh-en), ``ref-A``..``ref-D`` (newstest2021,
  averages files), ``ref.A`` (README), ``Human-A.0``/``Human-B.0``/``Human-P.0`` (newstest2020), ``refA``
  (WMT23 en-de), and the WMT23 zh-en side-by-side release rates none.

Each shape is the real TED en-de or WMT23 en-de file, rewritten in ``tmp_path``. The oracle is the
original file's parse: a change that only renames, reorders, drops an unread column or a reference
must leave every stored number as it was.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.config import load_settings
from assay.datasets import formats
from assay.datasets.parsed import ParsedDataset
from assay.datasets.rater_agreement import rater_agreement
from assay.errors import InputError, UsageError
from assay.jobs.ingest import ingest_path
from assay.jobs.scoring import finish_scoring, plan_scoring, score_shard
from assay.metrics.registry import MetricSpec
from assay.provenance import table_digest
from tests.mqm.conftest import TED, TED_AVG, WMT23
from tests.test_ingest import store_snapshot

Cells = list[list[str]]


@pytest.fixture(scope="module")
def ted(shared_data: Path) -> ParsedDataset:
    return formats.parse(shared_data / TED.parent)


@pytest.fixture(scope="module")
def wmt23(shared_data: Path) -> ParsedDataset:
    return formats.parse(shared_data / WMT23.parent)


def rewrite(source: Path, folder: Path, change: Callable[[Cells], Cells], *, name: str | None = None,
            averages: Path | None = None) -> Path:
    """A folder holding ``source`` with its cells changed (header first), named ``name``."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = source.read_text(encoding="utf-8").split("\n")
    if lines[-1] == "":
        lines.pop()
    table = change([line.split("\t") for line in lines])
    target = folder / (name or source.name)
    target.write_text("\n".join("\t".join(cells) for cells in table) + "\n", encoding="utf-8")
    if averages is not None:
        shutil.copy(averages, folder / target.name.replace(".tsv", ".avg_seg_scores.tsv"))
    return folder


def without_columns(*names: str) -> Callable[[Cells], Cells]:
    def change(table: Cells) -> Cells:
        drop = {table[0].index(name) for name in names}
        return [[cell for i, cell in enumerate(row) if i not in drop] for row in table]
    return change


def renamed_systems(names: dict[str, str]) -> Callable[[Cells], Cells]:
    def change(table: Cells) -> Cells:
        return [table[0], *([names.get(row[0], row[0]), *row[1:]] for row in table[1:])]
    return change


def without_link(table: Cells) -> Cells:
    """The WMT23 header ends in a documentation link that is not a column (PROVENANCE.md)."""
    return [table[0][:-1], *table[1:]]


def digest(parsed: ParsedDataset) -> str:
    return table_digest(parsed.tables)


# --- columns by name ---------------------------------------------------------------------------------

def test_ted_without_its_comment_column_is_the_zh_en_header_and_reads_the_same(
        tmp_path: Path, shared_data: Path, ted: ParsedDataset) -> None:
    folder = rewrite(shared_data / TED, tmp_path / "ted", without_columns("comment"), averages=shared_data / TED_AVG)
    header = (folder / TED.name).read_text(encoding="utf-8").split("\n", 1)[0]
    # the header of ted/zhen/mqm_ted_zhen.tsv in google/wmt-mqm-human-evaluation
    assert header == "system\tdoc\tdoc_id\tseg_id\trater\tsource\ttarget\tcategory\tseverity"
    parsed = formats.parse(folder)
    assert parsed.format == "mqm-tsv"
    assert digest(parsed) == digest(ted)  # the comment column holds nothing a score needs
    assert parsed.warnings == ted.warnings
    assert parsed.metadata["published_averages"] == ted.metadata["published_averages"]


def test_columns_are_read_by_name_in_any_order_and_spelling(tmp_path: Path, shared_data: Path,
                                                            wmt23: ParsedDataset) -> None:
    # MQM Viewer's spelling of the WMT23 names, the columns in reverse order
    spelled = {"globalSegId": "global_seg_id", "docSegId": "doc_seg_id", "rater": "Rater"}

    def change(table: Cells) -> Cells:
        table = without_link(table)
        table[0] = [spelled.get(name, name) for name in table[0]]
        return [row[::-1] for row in table]

    parsed = formats.parse(rewrite(shared_data / WMT23, tmp_path / "wmt23", change))
    assert digest(parsed) == digest(wmt23)
    assert parsed.metadata["segment_id_column"] == "global_seg_id"


def test_extra_columns_are_ignored_with_one_warning_naming_them(tmp_path: Path, shared_data: Path,
                                                                ted: ParsedDataset) -> None:
    def change(table: Cells) -> Cells:
        return [[*table[0], "timestamp", "batch"], *([*row, "1725456558197", "b7"] for row in table[1:])]

    parsed = formats.parse(rewrite(shared_data / TED, tmp_path / "ted", change))
    assert digest(parsed) == digest(ted)
    extra = [w for w in parsed.warnings if "timestamp" in w]
    assert extra == ["mqm_ted_ende.tsv: 2 columns that an MQM release does not have (timestamp, batch) were "
                     "ignored."]


@pytest.mark.parametrize(("dropped", "named"), [
    (("system",), "no system column"),
    (("rater",), "no rater column"),
    (("source",), "no source column"),
    (("target",), "no target column"),
    (("category",), "no category column"),
    (("severity",), "no severity column"),
    (("source", "severity"), "no source column, no severity column"),
    (("seg_id", "doc_id"), "no seg_id or globalSegId column, nor a doc_id or docSegId column to go with doc"),
    (("seg_id", "doc"), "no seg_id or globalSegId column, nor a doc column for doc_id"),
    (("seg_id", "doc", "doc_id"), "no seg_id or globalSegId column"),
])
def test_a_missing_required_column_is_one_error_naming_it(tmp_path: Path, shared_data: Path,
                                                          dropped: tuple[str, ...], named: str) -> None:
    folder = rewrite(shared_data / TED, tmp_path / "ted", without_columns(*dropped))
    before = store_snapshot()
    with pytest.raises(InputError) as excinfo:
        ingest_path(folder, format_name="mqm-tsv")
    err = excinfo.value
    assert err.path.endswith("mqm_ted_ende.tsv") and err.line == 1
    assert named in err.problem, str(err)
    assert err.expected is not None and "seg_id or globalSegId" in err.expected
    assert store_snapshot() == before


def test_a_header_that_lacks_a_column_is_still_recognised_as_mqm(tmp_path: Path, shared_data: Path) -> None:
    # detection (no --format) reads the file, so the error names the column instead of "unknown format"
    for column in ("rater", "category", "severity"):
        folder = rewrite(shared_data / TED, tmp_path / column, without_columns(column))
        with pytest.raises(InputError, match=rf"mqm_ted_ende.tsv:1: .* has no {column} column"):
            formats.parse(folder)


def test_a_column_named_twice_is_refused(tmp_path: Path, shared_data: Path) -> None:
    def change(table: Cells) -> Cells:
        return [[*table[0], "Seg_ID"], *([*row, row[3]] for row in table[1:])]

    with pytest.raises(InputError, match=r"mqm_ted_ende.tsv:1: the header names column\(s\) Seg_ID, seg_id more than"):
        formats.parse(rewrite(shared_data / TED, tmp_path / "ted", change))


def test_without_a_global_id_segments_are_named_by_document_position(tmp_path: Path, shared_data: Path,
                                                                     ted: ParsedDataset) -> None:
    # mt-metrics-eval's score_mqm.py keys a segment by (doc, doc_id); the TED rows agree with seg_id
    table = [line.split("\t") for line in (shared_data / TED).read_text(encoding="utf-8").split("\n")[1:] if line]
    position = {row[3]: f"{row[1]}:{row[2]}" for row in table}
    parsed = formats.parse(rewrite(shared_data / TED, tmp_path / "ted", without_columns("seg_id")))
    assert parsed.metadata["segment_id_column"] == "doc:doc_id"
    original = {(r["system"], position[r["segment_id"]]): r["human_raw"] for r in ted.tables["segments"].to_pylist()}
    assert {(r["system"], r["segment_id"]): r["human_raw"] for r in parsed.tables["segments"].to_pylist()} == original


def test_a_constant_global_id_falls_back_to_document_positions(tmp_path: Path, shared_data: Path,
                                                               wmt23: ParsedDataset) -> None:
    # MQM Viewer's format: "If you do not have such numbering available, set this to a constant value"
    def change(table: Cells) -> Cells:
        table = without_link(table)
        at = table[0].index("globalSegId")
        return [table[0], *([*row[:at], "0", *row[at + 1:]] for row in table[1:])]

    parsed = formats.parse(rewrite(shared_data / WMT23, tmp_path / "wmt23", change))
    assert "sxs_mqm_generalMT2023_ende.3ratingsPerSegment.tsv: globalSegId does not tell segments apart ('0' " \
        "names 104 document positions); segments are named doc:docSegId instead." in parsed.warnings
    assert parsed.row_counts()["segments"] == 9 * 104
    assert sorted(parsed.tables["systems"].column("human_raw").to_pylist()) == \
        sorted(wmt23.tables["systems"].column("human_raw").to_pylist())


def test_rows_that_carry_only_metadata_are_skipped_with_a_count(tmp_path: Path, shared_data: Path,
                                                                ted: ParsedDataset) -> None:
    # MQM Viewer's format: a row with an empty rater, category and severity only carries metadata
    # (appended, so that the errors keep their line numbers)
    def change(table: Cells) -> Cells:
        meta = [*table[1][:4], "", table[1][5], table[1][6].replace("<v>", "").replace("</v>", ""), "", "", "{}"]
        return [*table, meta, meta]

    parsed = formats.parse(rewrite(shared_data / TED, tmp_path / "ted", change))
    assert digest(parsed) == digest(ted)
    assert "2 rows with no rater, category or severity carry only segment metadata and were skipped." \
        in parsed.warnings


# --- references --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["refA", "ref-A", "ref.A", "Human-A", "Human-A.0", "human"])
def test_references_follow_the_release_naming(tmp_path: Path, shared_data: Path, ted: ParsedDataset,
                                              name: str) -> None:
    parsed = formats.parse(rewrite(shared_data / TED, tmp_path / "ted", renamed_systems({"ref": name})))
    assert parsed.metadata["reference_system"] == name
    # the candidates' rows, their references included, are those of the original release
    assert parsed.tables["segments"].equals(ted.tables["segments"])
    systems = {r["system"]: r for r in parsed.tables["systems"].to_pylist()}
    assert systems[name]["is_human"] and systems[name]["output_system"] is None


@pytest.mark.parametrize(("file_name", "names", "reference", "humans"), [
    # mt-metrics-eval meta_info.py: wmt21.tedtalks en-de std_ref refA, zh-en refB
    ("mqm_ted_ende.tsv", {"Facebook-AI": "refB"}, "ref", ["refB"]),
    ("mqm_ted_zhen.tsv", {"Facebook-AI": "refB"}, "refB", ["ref"]),
    # wmt21.news en-de std_ref refC (names as in mqm_newstest2021_ende.avg_seg_scores.tsv)
    ("mqm_newstest2021_ende.tsv", {"ref": "ref-A", "Online-W": "ref-B", "Facebook-AI": "ref-C"}, "ref-C",
     ["ref-A", "ref-B"]),
    # wmt20 en-de std_ref ref, the A translation (names as in mqm_newstest2020_ende.avg_seg_scores.tsv)
    ("mqm_newstest2020_ende.tsv", {"ref": "Human-B.0", "Online-W": "Human-A.0", "Facebook-AI": "Human-P.0"},
     "Human-A.0", ["Human-B.0", "Human-P.0"]),
    # a test set mt-metrics-eval does not list: the first human translation by letter
    ("mqm_toy_ende.tsv", {"ref": "ref-B", "Facebook-AI": "ref-C", "Online-W": "ref-A"}, "ref-A", ["ref-B", "ref-C"]),
])
def test_the_reference_among_several_human_translations_is_mtme_standard_one(
        tmp_path: Path, shared_data: Path, file_name: str, names: dict[str, str], reference: str,
        humans: list[str]) -> None:
    parsed = formats.parse(rewrite(shared_data / TED, tmp_path / "release", renamed_systems(names), name=file_name))
    assert parsed.metadata["reference_system"] == reference
    assert parsed.metadata["human_systems"] == humans
    segments = parsed.tables["segments"].to_pylist()
    assert reference not in {r["system"] for r in segments}
    assert {r["system"] for r in segments if r["is_human"]} == set(humans)
    assert any(f"{reference!r} is the reference system (" in w for w in parsed.warnings)


def reference_free(shared_data: Path, folder: Path) -> Path:
    """The WMT23 en-de side-by-side release without refA's rows: the shape of WMT23 zh-en side by side."""
    return rewrite(shared_data / WMT23, folder, lambda table: [row for row in table if row[0] != "refA"])


def test_a_release_without_a_reference_ingests_with_scores_raters_and_agreement(
        tmp_path: Path, shared_data: Path, wmt23: ParsedDataset) -> None:
    result = ingest_path(reference_free(shared_data, tmp_path / "sxs"), name="sxs-noref")
    assert result.created and result.row_counts["segments"] == 9 * 104
    assert result.row_counts["ratings"] == 9 * 104 * 3 and result.row_counts["systems"] == 9
    assert any(w.startswith("No system is named like a human reference") and "--reference-system NAME" in w
               for w in result.warnings)
    settings = load_settings()
    with session_scope(settings) as session:
        version = resolve(session, result.label)
        info, store_path = version.info, version.store_path
    assert info["reference_system"] is None
    parsed = formats.parse(tmp_path / "sxs")
    segments = parsed.tables["segments"]
    assert set(map(len, segments.column("references").to_pylist())) == {0}
    assert set(map(len, parsed.tables["outputs"].column("references").to_pylist())) == {0}
    # the same human scores as the release with its reference, system by system and segment by segment
    assert sorted(zip(segments.column("system").to_pylist(), segments.column("segment_id").to_pylist(),
                      segments.column("human_raw").to_pylist(), strict=True)) == \
        sorted(zip(wmt23.tables["segments"].column("system").to_pylist(),
                   wmt23.tables["segments"].column("segment_id").to_pylist(),
                   wmt23.tables["segments"].column("human_raw").to_pylist(), strict=True))
    ratings = wmt23.tables["ratings"]
    kept = ratings.filter(pa.array([s != "refA" for s in ratings.column("system").to_pylist()]))
    assert parsed.tables["ratings"].equals(kept)
    assert not any(parsed.tables["systems"].column("is_human").to_pylist())
    agreement = rater_agreement(settings, store_path)
    assert agreement is not None and agreement["raters"] == 10 and agreement["pairable_units"] == 9 * 104
    assert agreement["krippendorff_alpha_interval"] is not None


def test_scoring_it_with_a_reference_based_metric_is_refused_and_says_how_to_add_one(
        tmp_path: Path, shared_data: Path) -> None:
    label = ingest_path(reference_free(shared_data, tmp_path / "sxs"), name="sxs-noref").label
    for metric in ("sentbleu", "chrf"):
        for scope in ("judged", "outputs"):
            with pytest.raises(UsageError) as excinfo:
                plan_scoring(label, MetricSpec(metric), scope=scope)
            message = str(excinfo.value)
            assert f"{metric} needs a reference, but none of its 936 segments has one" in message
            assert "assay ingest PATH --reference-system NAME (-o reference_system=NAME)" in message
    # BLEU Neighbors needs no reference (it predicts from the human scores of the neighbours): it scores
    plan = plan_scoring(label, MetricSpec("bleu-neighbors"))
    summary = finish_scoring(plan, [score_shard(plan, i) for i in range(len(plan.shards))])
    assert summary["rows"] == 936 and summary["computed"] == plan.unique > 0


def test_a_machine_system_promoted_to_reference_is_not_human(tmp_path: Path, shared_data: Path,
                                                             wmt23: ParsedDataset) -> None:
    folder = reference_free(shared_data, tmp_path / "sxs")
    parsed = formats.parse(folder, options={"reference_system": "ONLINE-W"})
    assert parsed.metadata["reference_system"] == "ONLINE-W" and parsed.metadata["human_systems"] == []
    systems = {r["system"]: r for r in parsed.tables["systems"].to_pylist()}
    assert systems["ONLINE-W"]["is_human"] is False and systems["ONLINE-W"]["output_system"] is None
    segments = parsed.tables["segments"].to_pylist()
    assert len(segments) == 8 * 104 and "ONLINE-W" not in {r["system"] for r in segments}
    online_w = {r["segment_id"]: r["candidate"] for r in wmt23.tables["segments"].to_pylist()
                if r["system"] == "ONLINE-W"}
    assert all(r["references"] == [online_w[r["segment_id"]]] for r in segments)
    assert any("'ONLINE-W' is the reference system (named by the reference_system option)" in w
               and "not a human translation" in w for w in parsed.warnings)
    # with its human reference, refA is a human translation
    assert {r["system"]: r["is_human"] for r in wmt23.tables["systems"].to_pylist()}["refA"] is True
