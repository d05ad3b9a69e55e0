"""Error analysis of sentence chrF on the real WMT21 TED en-de MQM release (../shared/data).

The rated outputs are read as an ingest would: one row per error, ``No-error`` rows mark a clean
rating (the rater still counts), spans parsed with :func:`assay.mqm.parse_span`, the item is
``seg_id``, the system ``ref`` is the reference (chrF's, sacrebleu's ``sentence_chrf``) and not an
output. 13 systems x 529 segments = 6,877 outputs, one rater each.
"""

from __future__ import annotations

import json
import time

import pytest
from sacrebleu.metrics import CHRF

from assay.mqm import (
    ErrorRow,
    RatedOutputs,
    SensitivityReport,
    error_sensitivity,
    parse_span,
    segment_scores,
    worst_disagreements,
)

from .conftest import TED

REFERENCE = "ref"
# mt-metrics-eval's default weights (assay.mqm.weights.MTME_SPEC): what the humans' drop must be
MAJOR, MINOR, MINOR_PUNCTUATION = 5.0, 1.0, 0.1


def _rated_outputs(table: list[list[str]]) -> RatedOutputs:
    header = table[0]
    col = {name: header.index(name) for name in header}
    texts: dict[tuple[str, str], tuple[str, str]] = {}
    raters: dict[tuple[str, str], set[str]] = {}
    errors: dict[tuple[str, str], list[tuple[str, str, str, str, int | None, int | None]]] = {}
    references: dict[str, str] = {}
    rows = []
    for line, r in enumerate(table[1:], start=2):
        system, seg, rater, severity = r[col["system"]], r[col["seg_id"]], r[col["rater"]], r[col["severity"]]
        target = parse_span(r[col["target"]], path=TED, line=line, column="target", close_at_end=True)
        source = parse_span(r[col["source"]], path=TED, line=line, column="source", close_at_end=True)
        if system == REFERENCE:
            references.setdefault(seg, target.text)
            continue
        key = (system, seg)
        rows.append(ErrorRow(system, seg, rater, severity, r[col["category"]], line))
        texts.setdefault(key, (target.text, source.text))
        raters.setdefault(key, set()).add(rater)
        found = errors.setdefault(key, [])
        if severity == "No-error":
            continue
        span = target if target.has_span or not source.has_span else source
        found.append((r[col["category"]], severity, rater, "target" if span is target else "source",
                      span.start, span.end))
    mqm = segment_scores(rows).scores()
    keys = list(texts)
    chrf = CHRF()
    candidates = [texts[k][0] for k in keys]
    metric = [chrf.sentence_score(c, [references[k[1]]]).score for c, k in zip(candidates, keys, strict=True)]
    return RatedOutputs([k[1] for k in keys], [k[0] for k in keys], [mqm[k] for k in keys], metric,
                        [tuple(errors[k]) for k in keys], [len(raters[k]) for k in keys], candidates,
                        [texts[k][1] for k in keys])


@pytest.fixture(scope="module")
def ted_outputs(ted_table: list[list[str]]) -> RatedOutputs:
    return _rated_outputs(ted_table)


@pytest.fixture(scope="module")
def by_severity(ted_outputs: RatedOutputs) -> SensitivityReport:
    return error_sensitivity(ted_outputs, level="category+severity", n_resamples=200)


def test_the_release_as_rated_outputs(ted_outputs: RatedOutputs) -> None:
    assert (ted_outputs.size, len(ted_outputs.item_ids), len(set(ted_outputs.system))) == (6877, 529, 13)
    spans = [e for errors in ted_outputs.errors for e in errors if e.start is not None]
    assert spans and all(e.side in ("target", "source") for e in spans)


def test_human_drops_are_the_mtme_weights(by_severity: SensitivityReport) -> None:
    """The human MQM score is exactly minus the weighted rater-averaged error count, so within items
    the fit recovers each cell's weight exactly: Major 5, Minor 1, Minor Fluency/Punctuation 0.1 (TED
    has no Non-translation! and no Neutral errors). The (rare) buckets pool one severity each."""
    for cell in by_severity.cells:
        expected = (MINOR_PUNCTUATION if cell.name == "Fluency/Punctuation (Minor)"
                    else MAJOR if cell.cell.severity == "Major" else MINOR)
        assert cell.human_drop.value == pytest.approx(expected, abs=1e-9), cell.name


def test_sane_properties_of_chrf(ted_outputs: RatedOutputs, by_severity: SensitivityReport) -> None:
    by_category = error_sensitivity(ted_outputs, n_resamples=200)
    # the humans' yardstick: every well-supported cell is clearly penalised
    for cell in by_category.cells:
        if cell.outputs >= 50:
            assert cell.human_drop_std.low > 0, cell.name
    # chrF reacts to mistranslations, but less than the humans do (standardised)
    mistranslation = by_severity.cell("Accuracy/Mistranslation (Major)")
    assert mistranslation.metric_drop_std.low > 0
    assert 0 < mistranslation.ratio.value < 1
    # blind spots: humans clearly penalise them, well supported, sorted by ratio ascending
    spots = by_category.blind_spots()
    assert spots and all(c.human_penalises and c.outputs >= 20 for c in spots)
    ratios = [c.ratio.value for c in spots]
    assert ratios == sorted(ratios)
    json.dumps(by_category.as_dict(), allow_nan=False)


def test_worst_disagreements_of_chrf(ted_outputs: RatedOutputs) -> None:
    worst = worst_disagreements(ted_outputs)
    assert len(worst.pairs) == 10 and 0 < worst.reversed_pairs < worst.clear_pairs
    for pair in worst.pairs:
        assert pair.preferred.human - pair.other.human >= 1.0 and pair.other.metric > pair.preferred.metric
        assert pair.other.errors  # the humans found something wrong with the output chrF preferred
    severities = [p.severity for p in worst.pairs]
    assert severities == sorted(severities, reverse=True)


def test_a_thousand_resamples_are_fast(ted_outputs: RatedOutputs) -> None:
    """The product's target: one metric on TED with 1,000 resamples well under 2 s (about 0.1 s)."""
    started = time.perf_counter()
    error_sensitivity(ted_outputs, n_resamples=1000)
    assert time.perf_counter() - started < 2.0
