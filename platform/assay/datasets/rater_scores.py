"""The per-rater scores of a dataset version, whichever table holds them.

Two kinds of release keep each rater's own score of each rated output, in two tables
(``docs/STORAGE.md``):

* MQM (format ``mqm-tsv``; ``mtme``'s ``.seg.rating`` files): ``ratings``, one row per (system,
  segment, rater) with the rater's ``penalty``, the sum of the weights of the errors they marked under
  the weighting scheme ``scheme`` (``mqm-weights:mtme``, ``mqm-weights:released``). The rater's score is
  **minus** the penalty, as the segment MQM of ``segments`` is minus the mean penalty (higher is better);
* ESA (format ``esa``, Kocmi et al. 2024): ``rater_scores``, one row per rating with the annotator's
  ``score`` on the scale of its ``aspect`` (ESA: 0-100).

:func:`read_rater_scores` reads either (or both) into one shape, so rater agreement
(:mod:`assay.datasets.rater_agreement`) and one rater's judgments (``assay evaluate --rater``,
:class:`assay.jobs.judgments.JudgmentFilter`) read every format alike. Each score carries the
**kind** of human score it is (``mqm``, ``esa``): the kind of the ``segments`` aspects it stands
beside (:func:`score_kind`), so a rater's MQM scores replace only MQM judgments in a version that also
holds other kinds (an ``mtme`` version's ``da-sqm``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from assay.config import Settings
from assay.datasets import store

#: the tables that hold per-rater scores, in the order they are read
TABLES = ("ratings", "rater_scores")
#: what a score of each table is
MEANINGS = {"ratings": "minus the rater's MQM penalty (the sum of their error weights), higher is better",
            "rater_scores": "the annotator's own score on the aspect's scale (ESA: 0-100), higher is better"}

#: one rated output of one kind of human score: (kind, group, system, segment_id)
Unit = tuple[str, str, str, str]


def score_kind(aspect: str) -> str:
    """The kind of human score an aspect (or a rater table's ``aspect``) holds: ``mqm:mtme`` -> ``mqm``,
    ``esa`` -> ``esa``, ``mqm:mtme:rater=r1`` -> ``mqm``."""
    return aspect.split(":", 1)[0]


def human_score_name(aspect: str) -> str:
    """What a correlation's human scores are, named from its aspect for a reader: ``da`` -> ``DA z``
    (WMT's system and segment DA are z-scored per rater), ``mqm:mtme`` -> ``MQM (mtme weights)``,
    ``mqm:mtme:rater=r1`` -> ``MQM (mtme weights), rater r1``, ``esa`` -> ``ESA``; any other aspect
    (WebNLG's ``fluency``, ...) is named as it is."""
    kind, _, rest = aspect.partition(":")
    scheme, _, rater = rest.partition(":rater=")
    if rest.startswith("rater="):
        scheme, rater = "", rest.removeprefix("rater=")
    names = {"da": "DA z", "mqm": "MQM", "esa": "ESA"}
    if kind not in names:
        return aspect
    name = names[kind] + (f" ({scheme} weights)" if scheme else "")
    return name + (f", rater {rater}" if rater else "")


def scheme_kind(scheme: str) -> str:
    """The kind of human score a ``ratings.scheme`` weighs: ``mqm-weights:mtme`` -> ``mqm``,
    ``esa-weights:released`` -> ``esa`` (``mtme`` names a rating set's scheme ``<kind>-weights:...``)."""
    return scheme.split(":", 1)[0].removesuffix("-weights")


@dataclass(frozen=True)
class RaterScores:
    """Every per-rater score of a version, one entry per (rater, rated output), in table order."""

    tables: tuple[str, ...]
    """The stored tables they came from (:data:`TABLES`)."""
    kind: tuple[str, ...]
    group: tuple[str, ...]
    system: tuple[str, ...]
    segment_id: tuple[str, ...]
    rater: tuple[str, ...]
    score: tuple[float, ...]
    """Higher is better in every table (:data:`MEANINGS`)."""

    @property
    def meaning(self) -> str:
        return "; ".join(f"{table}: {MEANINGS[table]}" for table in self.tables)

    @property
    def kinds(self) -> list[str]:
        return sorted(set(self.kind))

    def raters(self) -> list[str]:
        return sorted(set(self.rater))

    def rows(self) -> Iterator[tuple[str, Unit, float]]:
        """``(rater, unit, score)``, the long form :mod:`assay.stats.agreement` reads."""
        for k, g, s, seg, r, v in zip(self.kind, self.group, self.system, self.segment_id, self.rater, self.score,
                                      strict=True):
            yield r, (k, g, s, seg), v

    def of_rater(self, rater: str) -> dict[Unit, float]:
        """One rater's score of each output they rated."""
        return {unit: value for r, unit, value in self.rows() if r == rater}


def read_rater_scores(settings: Settings, store_path: str) -> RaterScores | None:
    """The per-rater scores of a stored version; None when it has none (every format but MQM and ESA)."""
    found = tuple(table for table in TABLES if store.has_table(settings, store_path, table))
    if not found:
        return None
    kind: list[str] = []
    score: list[float] = []
    keys: dict[str, list[str]] = {name: [] for name in ("group", "system", "segment_id", "rater")}
    for table in found:
        data = store.read_table(settings, store_path, table).to_pydict()
        if table == "ratings":
            kind.extend(scheme_kind(s) for s in data["scheme"])
            score.extend(-p for p in data["penalty"])
        else:
            kind.extend(score_kind(a) for a in data["aspect"])
            score.extend(data["score"])
        for name, values in keys.items():
            values.extend(data[name])
    return RaterScores(found, tuple(kind), tuple(keys["group"]), tuple(keys["system"]), tuple(keys["segment_id"]),
                       tuple(keys["rater"]), tuple(score))
