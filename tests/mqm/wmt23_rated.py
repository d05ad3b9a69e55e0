"""The real WMT23 en-de MQM release (``../shared/data/mqm-wmt23-ende``) as rated outputs, read as its
PROVENANCE.md says and independently of the ``mqm-tsv`` ingest.

One row per error; ``No-error`` rows mark a clean rating and ``HOTW-test`` rows are attention checks
(both count their rater, neither is an error); spans are parsed with :func:`assay.mqm.parse_span`
(source-side spans, such as omissions, keep side ``source``); the item is ``globalSegId``; ``refA``
is the reference and not an output. A span that marked a final space the segment's other rows lack
is cut at the text's end (5 rows). sentence chrF is sacrebleu's ``CHRF().sentence_score``.
"""

from __future__ import annotations

from sacrebleu.metrics import CHRF

from assay.mqm import ErrorRow, RatedOutputs, parse_span, segment_scores

from .conftest import WMT23

REFERENCE = "refA"
NOT_ERRORS = ("No-error", "HOTW-test")


def wmt23_rated_outputs(table: list[list[str]], *, with_categories: bool = True) -> RatedOutputs:
    """The 9 candidate systems x 104 items, scored by sentence chrF against refA.

    ``with_categories=False`` drops every category, as ESA's severity-only spans have none."""
    header = table[0]
    col = {name: header.index(name) for name in ("system", "globalSegId", "rater", "source", "target", "category",
                                                 "severity")}
    texts: dict[tuple[str, str], tuple[str, str]] = {}
    raters: dict[tuple[str, str], set[str]] = {}
    errors: dict[tuple[str, str], list[tuple[str, str, str, str, int | None, int | None]]] = {}
    references: dict[str, str] = {}
    rows = []
    for line, r in enumerate(table[1:], start=2):
        system, seg, rater, severity = r[col["system"]], r[col["globalSegId"]], r[col["rater"]], r[col["severity"]]
        target = parse_span(r[col["target"]], path=WMT23, line=line, column="target", close_at_end=True)
        source = parse_span(r[col["source"]], path=WMT23, line=line, column="source", close_at_end=True)
        if system == REFERENCE:
            references.setdefault(seg, target.text.rstrip())
            continue
        key = (system, seg)
        rows.append(ErrorRow(system, seg, rater, severity, r[col["category"]], line))
        seen = texts.setdefault(key, (target.text, source.text))
        texts[key] = (min(seen[0], target.text, key=len), min(seen[1], source.text, key=len))
        raters.setdefault(key, set()).add(rater)
        found = errors.setdefault(key, [])
        if severity in NOT_ERRORS:
            continue
        span = source if source.has_span else target
        side = "source" if source.has_span else "target"
        found.append((r[col["category"]] if with_categories else "", severity, rater, side, span.start, span.end))
    mqm = segment_scores(rows).scores()
    keys = list(texts)
    clipped = [[(c, s, r, side, _cut(start, texts[k], side), _cut(end, texts[k], side))
                for c, s, r, side, start, end in errors[k]] for k in keys]
    chrf = CHRF()
    candidates = [texts[k][0] for k in keys]
    metric = [chrf.sentence_score(c, [references[k[1]]]).score for c, k in zip(candidates, keys, strict=True)]
    return RatedOutputs([k[1] for k in keys], [k[0] for k in keys], [mqm[k] for k in keys], metric, clipped,
                        [len(raters[k]) for k in keys], candidates, [texts[k][1] for k in keys],
                        [[references[k[1]]] for k in keys])


def _cut(offset: int | None, texts: tuple[str, str], side: str) -> int | None:
    return None if offset is None else min(offset, len(texts[0] if side == "target" else texts[1]))
