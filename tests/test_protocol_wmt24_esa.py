"""``--protocol wmt24`` against ESA judgments (WMT24's human evaluation), on the real wave-2 export.

The oracle is independent of Assay's scoring and tables: the (systems x items) matrices are built
here from the organisers' files (the ESA CSV and its ``txt/`` folder, read as their ``humeval/tools.py``
reads them: ``line_id`` indexes the output's lines, line 0 the canary) and sacrebleu's own chrF,
then given to the SPA and acc-t kernels, which are checked against mt-metrics-eval's functions in
``tests/stats`` (test_spa.py, test_grouped_acc.py).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from sacrebleu.metrics import CHRF

from assay.jobs.evaluation import evaluate
from assay.jobs.ingest import ingest_versions
from assay.jobs.scoring import score_dataset
from assay.metrics.registry import MetricSpec
from assay.stats.pairwise import tie_calibration
from assay.stats.spa import spa
from tests.conftest import assay_home_at

PAIR = "en-hi"  # the smallest wave-2 pair: 11 systems, one of them the reference refA


def _organisers_matrices(esa: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(systems, human, chrF) as (systems x items) matrices over the items every candidate has, from
    the raw CSV: attention checks (BAD) and tutorial items out, one annotator per item in wave 2."""
    texts = esa / "txt"
    reference = (texts / "references" / f"{PAIR}.refA.txt").read_text(encoding="utf-8").split("\n")
    latest: dict[tuple[str, str, str, int], tuple[float, float]] = {}  # (user, system, doc, line) -> (end, score)
    with (esa / "humeval" / "esa_generalMT2024_wave2.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.reader(handle):
            user, system, line_id, kind, src3, tgt3, score, doc = row[:8]
            # the loader's drops: attention checks, tutorials, filler (#incomplete) and duplicate
            # (#dup) documents, the canary; and the reference, which is not a candidate
            if (kind != "TGT" or "tutorial" in system or "#incomplete" in doc or "#dup" in doc or doc == "canary"
                    or system == "refA" or (src3, tgt3) != ("eng", "hin")):
                continue
            key, end = (user, system, doc, int(line_id)), float(row[11])
            if key not in latest or end > latest[key][0]:  # a user's repeat rating: the latest counts
                latest[key] = (end, float(score))
    by_output: dict[tuple[str, int], list[float]] = {}
    for (_, system, _, line), (_, score) in latest.items():
        by_output.setdefault((system, line), []).append(score)
    scores = {output: sum(values) / len(values) for output, values in by_output.items()}
    systems = sorted({s for s, _ in scores})
    items = sorted(set.intersection(*({i for s2, i in scores if s2 == s} for s in systems)))
    outputs = {s: (texts / "system-outputs" / PAIR / f"{s}.txt").read_text(encoding="utf-8").split("\n")
               for s in systems}
    chrf = CHRF()
    human = np.array([[scores[(s, i)] for i in items] for s in systems])
    metric = np.array([[chrf.sentence_score(outputs[s][i], [reference[i]]).score for i in items] for s in systems])
    return systems, human, metric


@pytest.fixture(scope="module")
def esa_rows(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    with assay_home_at(tmp_path_factory.mktemp("esa_wmt24")):
        [result] = ingest_versions(shared_data / "esa-wmt24", options={"language_pair": PAIR})
        score_dataset(result.version.name, MetricSpec("chrf"))
        return evaluate(result.version.name, protocol="wmt24", n_resamples=50)["rows"]


def test_wmt24_on_esa_equals_the_kernels_on_the_organisers_matrices(shared_data: Path,
                                                                    esa_rows: list[dict]) -> None:
    systems, human, metric = _organisers_matrices(shared_data / "esa-wmt24")
    rows = {(r["statistic"], r["group"]): r for r in esa_rows if r["metric"] == "chrf"}
    spa_row, acc_row = rows[("spa", PAIR)], rows[("acc_t_item", PAIR)]
    assert spa_row["aspect"] == acc_row["aspect"] == "esa"
    # SPA with mt-metrics-eval's default permutation seed (4), as a default run prints it
    assert spa_row["value"] == pytest.approx(spa(human, metric).value, abs=1e-12)
    assert (spa_row["n"], spa_row["unit"]) == (len(systems), "systems")
    # item-grouped acc-t, epsilon calibrated as mt-metrics-eval's KendallWithTiesOpt (acc23) does
    calibrated = tie_calibration(human.ravel(), metric.ravel(), statistic="acc_23", num_systems=len(systems),
                                 grouping="item")
    assert acc_row["value"] == pytest.approx(calibrated.value, abs=1e-12)
    assert acc_row["epsilon"] == pytest.approx(calibrated.epsilon, abs=1e-9)
    assert (acc_row["n"], acc_row["unit"]) == (human.shape[1], "items")
    assert not acc_row["degenerate"] and not spa_row["degenerate"]
