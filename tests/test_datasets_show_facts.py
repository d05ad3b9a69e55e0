"""``assay datasets show`` names what a format recorded about the human scores and references as
fields, in text and JSON (issue 28): an MQM version's weighting scheme and reference system; a
format that records none of them shows none (null in JSON)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from assay.catalog.version_detail import version_fact_lines
from assay.cli.main import cli
from assay.jobs.ingest import ingest_path

#: the weighting MTME's score_mqm.py applies by default (docs/STORAGE.md, MQM versions)
MTME_WEIGHTS = "Major:5 Minor:1 Neutral:0 Major/Non-translation!:25 Minor/Fluency/Punctuation:0.1"


def test_an_mqm_version_shows_its_weighting_scheme_and_reference(shared_data: Path) -> None:
    ingest_path(shared_data / "mqm-ted-ende")
    ingest_path(shared_data / "wmt16-da-seg")
    runner = CliRunner()
    shown = json.loads(runner.invoke(cli, ["datasets", "show", "mqm-ted-ende", "--json"],
                                     catch_exceptions=False).output)
    assert shown["weighting_scheme"] == {"signature": "mqm-weights:mtme", "rules": MTME_WEIGHTS}
    # the release names its human reference `ref` (mqm-ted-ende/PROVENANCE.md); no other human system
    assert shown["reference_system"] == "ref" and shown["human_systems"] == []
    assert shown["primary_human"] is None  # not a fact this format records
    lines = runner.invoke(cli, ["datasets", "show", "mqm-ted-ende"], catch_exceptions=False).output.splitlines()
    assert f"  weighting scheme: mqm-weights:mtme ({MTME_WEIGHTS})" in lines
    assert "  reference system: ref" in lines and "  human systems: none" in lines

    plain = json.loads(runner.invoke(cli, ["datasets", "show", "wmt16", "--json"], catch_exceptions=False).output)
    assert plain["weighting_scheme"] is None and plain["reference_system"] is None
    text = runner.invoke(cli, ["datasets", "show", "wmt16"], catch_exceptions=False).output
    assert "weighting scheme" not in text and "reference system" not in text


def test_recorded_facts_of_any_shape_read_as_fields() -> None:
    """The shapes formats record: one name, one per language pair, level -> kind, kind -> levels."""
    lines = version_fact_lines({
        "reference_system": {"en-cs": "refA", "en-ja": "refA"},
        "primary_human": {"sys": "mqm", "seg": "mqm"},
        "human_scores": {"da-sqm": ["seg", "sys"], "mqm": ["seg"]},
        "outlier_systems": ["synthetic_ref"],
        "segments": 557,  # not a fact about scores or references: not shown as one
    })
    assert lines == ["reference system: en-cs: refA; en-ja: refA", "primary human score: sys: mqm; seg: mqm",
                     "human scores: da-sqm: seg, sys; mqm: seg", "outlier systems: synthetic_ref"]
