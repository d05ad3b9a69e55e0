"""``assay sql``'s ``scores`` view (issue 28): segment scores joined with the judgments they score,
by signature. A score is stored under its segment key, so each judgment row's key is computed by
the SQL function ``segment_key``, which is the scorer's own Python function (checked here on the
characters a SQL copy of its JSON rule would get wrong), and the join is checked against sacrebleu
itself: each row's chrF equals sacrebleu's ``sentence_chrf`` of that row's candidate and references."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
from click.testing import CliRunner
from sacrebleu.metrics import CHRF

from assay.cli.main import cli
from assay.jobs.ingest import ingest_path
from assay.jobs.scoring import score_dataset
from assay.metrics.registry import MetricSpec
from assay.query.duck import register_functions, run_user_query
from assay.results.segment_scores import segment_key


def test_the_sql_segment_key_is_the_scorers_own() -> None:
    """Control characters (json.dumps writes ``\\u000b``, DuckDB's to_json ``\\u000B``), quotes,
    backslashes, non-ASCII, a missing source, no references and a null reference."""
    rows: list[tuple[Any, Any, Any]] = [
        ("".join(chr(i) for i in range(0x80)), ["\u2028\u2029\ufeff", 'q"uo\\te'], "é中文😀 \x7f"),
        (None, [], "x"),
        ("", [None, "b"], ""),
        ("Der Angriff eines 14-jährigen Mädchens", ["The attack of a 14-year-old girl"], "An attack by a girl, 14"),
    ]
    con = duckdb.connect()
    register_functions(con)
    con.execute("CREATE TABLE t (i INTEGER, source VARCHAR, refs VARCHAR[], candidate VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", [(i, *row) for i, row in enumerate(rows)])
    keys = con.execute("SELECT segment_key(source, refs, candidate) FROM t ORDER BY i").fetchall()
    assert [k for (k,) in keys] == [segment_key(s, r, c) for s, r, c in rows]


def test_scores_joins_each_stored_score_to_the_judgments_it_scored(shared_data: Path) -> None:
    ingest_path(shared_data / "mqm-ted-ende")
    # nothing scored yet: the view exists, with its columns, and is empty
    columns, rows = run_user_query("SELECT * FROM scores")
    assert rows == [] and columns == [
        "metric", "signature", "dataset", "version_digest", "group", "aspect", "item_id", "segment_id", "system",
        "is_human", "score", "extra", "human_z", "human_raw", "rating_count", "ratings", "key", "run_id"]

    chrf = score_dataset("mqm-ted-ende", MetricSpec("chrf", {}))
    sentbleu = score_dataset("mqm-ted-ende", MetricSpec("sentbleu", {}))
    _, counts = run_user_query("SELECT metric, signature, count(*), count(DISTINCT key) FROM scores "
                               "GROUP BY ALL ORDER BY metric")
    _, judged = run_user_query("SELECT count(*) FROM segments")
    # every judgment row once per signature: 6,877 rated outputs besides the reference's
    # (REFERENCE_NUMBERS.md, TED en-de), the rows and distinct contents the scoring summaries count
    assert counts == [("chrf", chrf["signature"], judged[0][0], chrf["unique_segments"]),
                      ("sentbleu", sentbleu["signature"], judged[0][0], sentbleu["unique_segments"])]
    assert judged[0][0] == chrf["rows"] == 6877

    # the score on each row is sacrebleu's chrF of that row's own candidate and references (1e-9)
    _, joined = run_user_query(
        "SELECT s.score, j.candidate, j.\"references\", s.human_raw, j.human_raw FROM scores s "
        "JOIN segments j USING (dataset, \"group\", aspect, system, segment_id) WHERE s.metric = 'chrf'")
    assert len(joined) == 6877
    oracle = CHRF()
    for score, candidate, references, human, judged_human in joined:
        assert abs(score - oracle.sentence_score(candidate, list(references)).score) < 1e-9
        assert human == judged_human

    # the command: by signature, as JSON
    out = CliRunner().invoke(cli, ["sql", "SELECT signature, count(score) AS n FROM scores GROUP BY 1 ORDER BY 1",
                                   "--json"], catch_exceptions=False).output
    assert json.loads(out) == sorted([{"signature": chrf["signature"], "n": 6877},
                                      {"signature": sentbleu["signature"], "n": 6877}], key=lambda r: r["signature"])


def test_an_official_submission_shows_the_score_its_submitters_gave_each_system(shared_data: Path) -> None:
    """Where a submission scored two systems' identical outputs differently (document context;
    MetricX-23-QE does on 825 WMT23 en-de segment keys), the store holds their mean under the one
    key, but the view shows each system's own score, as mt-metrics-eval's ``.seg.score`` file gives it
    (the version's ``metric_scores`` rows, read here straight from the file)."""
    from assay.jobs.ingest import ingest_versions

    ingest_versions(shared_data / "mtme-wmt23" / "wmt23")
    folder = shared_data / "mtme-wmt23" / "wmt23" / "metric-scores" / "en-de"
    submitted: dict[tuple[str, str], float] = {}
    for line in (folder / "MetricX-23-QE-src.seg.score").read_text(encoding="utf-8").splitlines():
        system, score = line.split("\t")
        index = sum(1 for (s, _) in submitted if s == system)  # line-aligned: MTME's 0-based segment ids
        submitted[(system, str(index))] = float(score)
    _, rows = run_user_query("SELECT system, segment_id, score FROM scores WHERE dataset = 'mtme-wmt23-en-de' "
                             "AND signature LIKE 'MetricX-23-QE|official:wmt23|ref:src|%' AND aspect = 'mqm'")
    assert len(rows) == 13 * 460  # every MQM-rated output of the 12 MT systems and refA (PROVENANCE.md)
    assert all(score == submitted[(system, segment)] for system, segment, score in rows)
    _, shared = run_user_query(
        "SELECT count(*) FROM (SELECT key FROM scores WHERE dataset = 'mtme-wmt23-en-de' AND aspect = 'mqm' "
        "AND signature LIKE 'MetricX-23-QE|official:wmt23|ref:src|%' GROUP BY key HAVING count(DISTINCT score) > 1)")
    assert shared[0][0] > 0  # the case the store alone could not show
