"""The nightly ledger (``assay.nightly.ledger``) on SQLite and on the real PostgreSQL server:
what is pending, atomic claims (also with many threads, each on its own connection, racing for
the same item), completion and failure by the claim holder only, crash recovery with an attempt
limit, and the history the report reads.

Checkpoint rows are written from facts (``assay.checkpoints.registry.register``; no model is loaded: the
ledger only reads their digests, names and lineage). The datasets are the real WMT16 DA release and
a derived subset of it.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from sqlalchemy import select

from assay.catalog.engine import session_scope
from assay.catalog.models import SuiteEvaluation
from assay.checkpoints.registry import CheckpointFacts, register
from assay.config import Settings
from assay.errors import UsageError
from assay.nightly.ledger import (
    Claim,
    WorkItem,
    attempts_by_key,
    claim,
    complete,
    counts,
    fail,
    history,
    mark_crashed,
    pending_items,
    running_items,
)
from assay.nightly.suites import Suite, define_suite
from tests.robustness_support import subset


def _checkpoint(settings: Settings, tmp_path: Path, name: str, digest_char: str) -> str:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"x")
    facts = CheckpointFacts(digest=digest_char * 64, path=str(folder), base_model="tiny", config={},
                            heads=[{"name": "rating"}], size_bytes=1,
                            lineage={"operation": "finetune", "parent_digest": None, "seed": 1},
                            files=("model.safetensors",))
    return register(settings, facts, name=name).digest


@pytest.fixture
def nightly(catalog: Settings, wmt16: str, tmp_path: Path) -> Suite:
    """Suite ``nightly`` (WMT16 and its de-en subset) and two registered checkpoints, a then b."""
    subset("wmt16", "wmt16-de", groups=["de-en"])
    suite, _ = define_suite(catalog, "nightly", [{"dataset": "wmt16", "levels": ["seg"]},
                                                 {"dataset": "wmt16-de", "levels": ["seg"]}])
    _checkpoint(catalog, tmp_path, "ckpt-a", "a")
    _checkpoint(catalog, tmp_path, "ckpt-b", "b")
    return suite


def _status(settings: Settings, ledger_id: int) -> tuple[str, int]:
    with session_scope(settings) as session:
        row = session.get(SuiteEvaluation, ledger_id)
        assert row is not None
        return row.status, row.attempts


def test_pending_claim_complete_fail(catalog: Settings, nightly: Suite) -> None:
    items = pending_items(catalog, nightly)
    assert [(i.checkpoint.name, i.version.label) for i in items] == [
        ("ckpt-a", "wmt16@1"), ("ckpt-a", "wmt16-de@1"), ("ckpt-b", "wmt16@1"), ("ckpt-b", "wmt16-de@1")]
    assert {i.suite_signature for i in items} == {nightly.signature}
    first, second = items[0], items[1]

    held = claim(catalog, first, flow_run_id="run-1")
    assert held is not None and held.attempts == 1 and held.item == first
    assert claim(catalog, first, flow_run_id="run-2") is None  # running: someone has it
    assert [r["flow_run_id"] for r in running_items(catalog)] == ["run-1"]
    assert first not in pending_items(catalog, nightly)

    summary = {"seg": {"kendall": 0.1}}
    assert complete(catalog, held, score_run_id="s1", evaluate_run_id="e1", summary=summary)
    assert not complete(catalog, held, score_run_id="s2", evaluate_run_id="e2", summary={})  # once only
    assert claim(catalog, first, flow_run_id="run-3") is None  # completed is never redone

    held2 = claim(catalog, second, flow_run_id=None)
    assert held2 is not None
    assert fail(catalog, held2, "checkpoint folder vanished")
    assert claim(catalog, second, flow_run_id=None) is None  # failed (bad input) is not retried
    assert pending_items(catalog, nightly) == items[2:]
    assert counts(catalog) == {"running": 0, "completed": 1, "failed": 1, "crashed": 0}
    assert counts(catalog, "other") == {"running": 0, "completed": 0, "failed": 0, "crashed": 0}

    rows = history(catalog)
    assert len(rows) == 1
    row = rows[0]
    assert (row["checkpoint_name"], row["operation"], row["dataset"], row["suite_name"], row["suite_version"]) == (
        "ckpt-a", "finetune", "wmt16@1", "nightly", 1)
    assert (row["score_run_id"], row["evaluate_run_id"], row["summary"]) == ("s1", "e1", summary)
    assert row["finished_at"] is not None and row["attempts"] == 1


def test_crash_recovery_and_the_attempt_limit(catalog: Settings, nightly: Suite) -> None:
    item = pending_items(catalog, nightly)[0]
    held = claim(catalog, item, flow_run_id="run-1")
    assert held is not None
    [running] = running_items(catalog)
    assert running["id"] == held.ledger_id and running["attempts"] == 1
    assert mark_crashed(catalog, held.ledger_id, "flow run run-1 is Crashed", attempts=1)
    assert not mark_crashed(catalog, held.ledger_id, "again")  # no longer running
    assert running_items(catalog) == []
    assert item in pending_items(catalog, nightly)

    assert attempts_by_key(catalog, [item.key, pending_items(catalog, nightly)[-1].key]) == {item.key: 1}
    retry = claim(catalog, item, flow_run_id="run-2")
    assert retry is not None and retry.ledger_id == held.ledger_id and retry.attempts == 2
    assert claim(catalog, item, flow_run_id="run-x") is None
    # a reconciler that looked before the re-claim must not crash the new holder
    assert not mark_crashed(catalog, held.ledger_id, "stale look", attempts=1)
    # the first holder lost its claim: it cannot write over the second attempt
    assert not complete(catalog, held, score_run_id="s1", evaluate_run_id="e1", summary={"by": 1})
    assert not fail(catalog, held, "late failure")
    assert _status(catalog, held.ledger_id) == ("running", 2)

    assert mark_crashed(catalog, retry.ledger_id, "crashed again", attempts=2)
    third = claim(catalog, item, flow_run_id="run-3")
    assert third is not None and third.attempts == 3
    assert mark_crashed(catalog, third.ledger_id, "crashed a third time")
    # three attempts used up: no longer pending, and no claim
    assert item not in pending_items(catalog, nightly)
    assert attempts_by_key(catalog, [item.key]) == {item.key: 3}
    assert claim(catalog, item, flow_run_id="run-4") is None
    assert item in pending_items(catalog, nightly, max_attempts=4)
    fourth = claim(catalog, item, flow_run_id="run-4", max_attempts=4)
    assert fourth is not None and fourth.attempts == 4
    assert complete(catalog, fourth, score_run_id="s4", evaluate_run_id="e4", summary={"by": 4})
    assert history(catalog)[0]["summary"] == {"by": 4}


def test_a_wrong_crash_verdict_does_not_lose_the_work(catalog: Settings, nightly: Suite) -> None:
    """A holder marked crashed that was alive after all, and finishes before anyone re-claims,
    records its result (its attempt still holds the row)."""
    item = pending_items(catalog, nightly)[0]
    held = claim(catalog, item, flow_run_id="run-1")
    assert held is not None and mark_crashed(catalog, held.ledger_id, "looked dead")
    assert complete(catalog, held, score_run_id="s", evaluate_run_id="e", summary={})
    assert _status(catalog, held.ledger_id) == ("completed", 1)
    assert claim(catalog, item, flow_run_id="run-2") is None


def test_the_same_definition_under_another_name_shares_the_work(catalog: Settings, nightly: Suite) -> None:
    twin, _ = define_suite(catalog, "twin", [{"dataset": "wmt16-de@1", "levels": "seg"},
                                             {"dataset": "wmt16@1", "levels": "seg"}])
    assert twin.signature == nightly.signature
    item = pending_items(catalog, nightly)[0]
    held = claim(catalog, item, flow_run_id=None)
    assert held is not None and complete(catalog, held, score_run_id=None, evaluate_run_id=None, summary={})
    assert [i.key for i in pending_items(catalog, twin)] == [i.key for i in pending_items(catalog, nightly)]
    assert len(pending_items(catalog, twin)) == 3
    assert [(r["suite_name"], r["suite_version"]) for r in history(catalog, "twin")] == [("twin", 1)]
    assert [(r["suite_name"], r["suite_version"]) for r in history(catalog, "nightly")] == [("nightly", 1)]
    assert history(catalog, "unknown") == []

    # a changed suite (a new version with a new signature) has its own work
    changed, created = define_suite(catalog, "nightly", [{"dataset": "wmt16", "levels": ["seg"],
                                                          "statistics": ["kendall"]}])
    assert created and changed.version == 2
    assert len(pending_items(catalog, changed)) == 2  # two checkpoints x one entry


def test_work_items_and_claims_travel_as_json(catalog: Settings, nightly: Suite) -> None:
    item = pending_items(catalog, nightly)[0]
    assert WorkItem.from_dict(json.loads(json.dumps(item.as_dict()))) == item
    held = claim(catalog, item, flow_run_id="run-1")
    assert held is not None
    assert Claim.from_dict(json.loads(json.dumps(held.as_dict()))) == held
    with pytest.raises(UsageError, match=r"needs the field\(s\) \['checkpoint'\]"):
        WorkItem.from_dict({k: v for k, v in item.as_dict().items() if k != "checkpoint"})
    # extra fields (a planner's annotations) are ignored
    assert WorkItem.from_dict({**item.as_dict(), "attempts": 2}) == item
    # an item naming a dataset version that is not in the catalog is an error, not "someone has it"
    stray_version = {**item.version.as_dict(), "digest": "f" * 64}
    stray = WorkItem.from_dict({**item.as_dict(), "version_id": 999_999, "version": stray_version})
    with pytest.raises(UsageError, match="names a dataset version or suite that is not in this catalog"):
        claim(catalog, stray, flow_run_id=None)


def _claim_race(catalog: Settings, item: WorkItem, n_threads: int) -> list[Claim]:
    """``n_threads`` threads released at once by a barrier claim ``item``; the claims they won."""
    wins: list[Claim] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(n_threads)

    def contender() -> None:
        try:
            barrier.wait()
            won = claim(catalog, item, flow_run_id=threading.current_thread().name)
            if won is not None:
                wins.append(won)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=contender) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return wins


@pytest.mark.parametrize("n_threads", [8])
def test_concurrent_claims_have_one_winner(catalog: Settings, nightly: Suite, n_threads: int) -> None:
    """Threads, each with its own database connection, released at once by a barrier, claim the
    same item: exactly one wins, for the first claim (INSERT) and for the re-claim of a crashed
    row (conditional UPDATE). Repeated over every item of the suite."""
    for item in pending_items(catalog, nightly):
        wins = _claim_race(catalog, item, n_threads)
        assert len(wins) == 1 and wins[0].attempts == 1, wins
        assert mark_crashed(catalog, wins[0].ledger_id, "test crash", attempts=1)
        wins = _claim_race(catalog, item, n_threads)
        assert len(wins) == 1 and wins[0].attempts == 2, wins
    with session_scope(catalog) as session:
        rows = list(session.execute(select(SuiteEvaluation.status, SuiteEvaluation.attempts)))
    assert sorted(rows) == [("running", 2)] * 4
