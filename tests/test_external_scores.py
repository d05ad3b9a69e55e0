"""External (official) metric signatures: rendered and parsed in one place, told apart from Assay's own."""

from __future__ import annotations

from assay.metrics.signature import render_signature
from assay.results.external_scores import external_metric, files_digest, is_external, parse_external


def test_signature_round_trip() -> None:
    metric = external_metric("XCOMET-Ensemble", "refA", "wmt23", "3f9a0c2b7d41")
    assert metric.signature == "XCOMET-Ensemble|official:wmt23|ref:refA|files:3f9a0c2b7d41"
    assert parse_external(metric.signature) == metric
    assert not metric.is_reference_free
    qe = external_metric("CometKiwi", "src", "wmt23", "0123456789ab")
    assert qe.is_reference_free and parse_external(qe.signature) == qe


def test_assay_signatures_are_not_external() -> None:
    own = render_signature("sentbleu", {"tok": "13a", "smooth": "exp"}, "1")
    assert parse_external(own) is None and not is_external(own)
    assert not is_external("BLEU|official:wmt23|ref:refA")  # a field missing
    assert is_external("BLEU|official:wmt23|ref:refA|files:abc")


def test_files_digest_names_the_files_not_their_order() -> None:
    files = [("metric-scores/en-de/BLEU-refA.seg.score", "a" * 64),
             ("metric-scores/en-de/BLEU-refA.sys.score", "b" * 64)]
    assert files_digest(files) == files_digest(reversed(files))
    assert len(files_digest(files)) == 12
    assert files_digest(files) != files_digest([(files[0][0], "c" * 64), files[1]])
