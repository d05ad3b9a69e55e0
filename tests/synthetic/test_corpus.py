"""The sentence corpus (assay.synthetic.corpus) on the real WMT16 and WMT18 data, ingested."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from assay.config import load_settings
from assay.errors import UsageError
from assay.jobs.ingest import derive_version
from assay.synthetic import KINDS, build_corpus
from assay.synthetic.corpus import english_sides, excluded_texts


def test_wmt18_counts_of_the_issue(wmt_home: Path) -> None:
    """The issue's numbers are those of WMT18 alone, before length filtering:

    * 12,407 unique English references: the 7 to-English reference files hold 20,962 lines, but
      the English-original half of newstest2018 is shared by the language pairs, so many lines
      repeat (whitespace-normalised, still 12,407 distinct texts);
    * 212,617 to-English system outputs: *rows* of the ``outputs`` table (71 system files, e.g.
      16 de-en systems x 2,998 lines), of which 189,394 are distinct texts.
    """
    corpus = build_corpus(["wmt18"])
    counts = corpus.counts
    assert counts["references"]["unique"] == 12_407
    assert counts["outputs"]["rows"] == 212_617
    assert counts["outputs"]["unique"] == 189_394
    assert counts["sources"]["unique"] == 0  # WMT18 here is to-English only: no English source side
    assert counts["removed_excluded"] == 0
    # with min_tokens=1 and no upper bound only empty texts could be dropped; there are none
    assert counts["references"]["kept"] == 12_407
    assert len(corpus.indices(["references"])) == 12_407
    assert [s.label for s in corpus.sources] == ["wmt18@1"]


def test_wmt16_and_wmt18_without_wmt17(wmt_home: Path) -> None:
    corpus = build_corpus(["wmt18", "wmt16@1"], exclude=["wmt17"], min_tokens=3, max_tokens=64)
    counts = corpus.counts
    # before filtering: WMT16 adds 2,564 distinct references (560 lines x 6 to-English pairs,
    # repeated across pairs), its en-ru side 522 distinct English sources, and 3,360 judged MT
    # outputs (WMT16 has no outputs table: its segments' machine candidates are used)
    assert counts["by_source"]["wmt16@1"]["references"]["unique"] == 2_564
    assert counts["references"]["unique"] == 14_971
    assert counts["sources"]["unique"] == 522
    assert counts["outputs"]["rows"] == 212_617 + 3_360
    assert counts["removed_excluded"] > 0  # sentences WMT17 shares with them ("Thank you.")
    assert [s.label for s in corpus.sources] == ["wmt16@1", "wmt18@1"]
    assert all(len(s.version.digest) == 64 for s in corpus.sources)
    lengths = np.array([s.count(" ") + 1 for s in corpus.sentences])
    assert lengths.min() >= 3 and lengths.max() <= 64
    assert len(set(corpus.sentences)) == len(corpus)
    wmt17 = excluded_texts(load_settings(), ["wmt17"])
    assert not set(corpus.sentences) & wmt17
    for kind in KINDS:
        assert 0 < counts[kind]["kept"] <= counts[kind]["unique"]
    refs, outs = corpus.output_pairs[:, 0], corpus.output_pairs[:, 1]
    assert (corpus.kinds[refs] & 1).all() and (corpus.kinds[outs] & 4).all()


def test_excluded_datasets_are_refused_as_sources(wmt_home: Path) -> None:
    with pytest.raises(UsageError, match=r"sources: 'wmt17@1' is excluded"):
        build_corpus(["wmt16", "wmt17@1"], exclude=["wmt17"])
    segments = pa.table({"group": ["de-en"], "aspect": ["da"], "item_id": ["1"], "segment_id": ["1"],
                         "system": ["x"], "is_human": [False], "source": ["Hallo"], "references": [["Hello"]],
                         "candidate": ["Hi"], "human_z": [0.1], "human_raw": [None], "rating_count": [None],
                         "ratings": [None]})
    derive_version("wmt17", "wmt17-sample", {"segments": segments}, {"kind": "sample"})
    with pytest.raises(UsageError, match="derived from the excluded dataset 'wmt17'"):
        build_corpus(["wmt17-sample"], exclude=["wmt17"])
    with pytest.raises(UsageError, match="name at least one dataset"):
        build_corpus([])
    with pytest.raises(UsageError, match="min_tokens"):
        build_corpus(["wmt16"], min_tokens=5, max_tokens=4)


def test_language_sides() -> None:
    assert english_sides("de-en", "wmt-da") == (True, False)
    assert english_sides("en-ru", "wmt16-daseg") == (False, True)
    assert english_sides("webnlg2017", "webnlg2017") == (True, False)
    assert english_sides("captions", "generic") == (False, False)
