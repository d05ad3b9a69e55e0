"""BLEURT's robustness experiments with training (Sellam et al., 2020, §5.2 quality drift, §5.3
WebNLG) on the real WMT16/WMT17 DA and WebNLG 2017 data (subsets, see tests/robustness_support.py).

The module's state is built once: a "pre-trained" checkpoint (a tiny random BERT fine-tuned two
steps on WMT16 de-en), a drift experiment on WMT17 de-en (α ∈ {0, 1.5}) and a WebNLG experiment
on 30 inputs (shares {0, 0.3}, split by system and by input, semantics), each variant trained two
steps with batch 8, baselines sentBLEU (and BERTScore on drift).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.catalog.models import Checkpoint, DatasetVersion, ResultFile, Run
from assay.cli.training_options import config_from_options
from assay.config import load_settings
from assay.datasets import store
from assay.errors import UsageError
from assay.jobs.quality_drift import drift_name
from assay.metrics.registry import MetricSpec
from assay.training import robustness as rb
from assay.training.plan import plan_finetune
from assay.workers.training.robustness_runs import prepare_drift, prepare_webnlg, run_experiment
from assay.workers.training.stage_runs import run_stage
from tests.ingested_homes import copy_ingested
from tests.robustness_support import TINY_CONFIG, save_tiny_encoder, subset, use_home

SENTBLEU, BERTSCORE = MetricSpec("sentbleu"), MetricSpec("bertscore")


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Iterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("robustness_home")
    with pytest.MonkeyPatch.context() as mp:
        use_home(mp, home)
        settings = load_settings()
        encoder = save_tiny_encoder(tmp_path_factory.mktemp("encoder") / "tiny-random-bert")
        copy_ingested(home, tmp_path_factory, shared_data, "wmt16-da-seg", "wmt17-da", "webnlg2017-human-eval")
        wmt16 = subset("wmt16", "wmt16-de", groups=["de-en"])
        wmt17 = subset("wmt17", "wmt17-de", groups=["de-en"])
        webnlg = subset("webnlg2017", "webnlg-30", n_items=30)
        # BLEURT's WMT stage before WebNLG (§5.3), in miniature: the "pre-trained" variant's init
        pretrained = run_stage(settings, plan_finetune(settings, [wmt16], init=str(encoder), init_digest=None,
                                                       config=TINY_CONFIG, name="tiny-wmt16"))
        variants = [rb.Variant("no-pretraining", str(encoder)), rb.Variant("pretrained", "tiny-wmt16")]
        drift = prepare_drift(wmt17, alphas=[0, 1.5], variants=variants, baselines=[SENTBLEU, BERTSCORE],
                              config=TINY_CONFIG, n_resamples=100)
        # the config `assay robustness webnlg --steps 2 --batch-size 8 --eval-every 2 --save-every 2` trains
        # with (the recipe's fine-tuning settings under those options), so the command finds this experiment
        command_config = config_from_options({"steps": 2, "batch_size": 8, "eval_every": 2, "save_every": 2},
                                             "finetune")
        webnlg_exp = prepare_webnlg(webnlg, shares=[0, 0.3], by=["system", "input"], aspects=["semantics"],
                                    variants=variants, baselines=[SENTBLEU], config=command_config, n_resamples=100)
        yield {"home": home, "encoder": encoder, "pretrained": pretrained["registered"], "variants": variants,
               "drift": drift, "drift_result": run_experiment(drift), "webnlg": webnlg_exp,
               "webnlg_result": run_experiment(webnlg_exp), "wmt17": wmt17, "webnlg_label": webnlg}


@pytest.fixture
def home(state: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Path:
    use_home(monkeypatch, state["home"])
    return Path(state["home"])


def _segments(label: str) -> Any:
    settings = load_settings()
    with session_scope(settings) as session:
        path = resolve(session, label).store_path
    return store.read_table(settings, path, "segments")


def _counts() -> dict[str, int]:
    with session_scope(load_settings()) as session:
        return {"runs": session.scalar(select(func.count()).select_from(Run)) or 0,
                "finetune": session.scalar(select(func.count()).select_from(Run).where(Run.kind == "finetune")) or 0,
                "checkpoints": session.scalar(select(func.count()).select_from(Checkpoint)) or 0,
                "versions": session.scalar(select(func.count()).select_from(DatasetVersion)) or 0,
                "files": session.scalar(select(func.count()).select_from(ResultFile)) or 0}


def _parts(home: Path) -> list[Path]:
    return sorted((home / rb.ROOT).glob("experiment=*/part-*.parquet"))


# --- the WebNLG split (pure platform code) ---------------------------------------------------------------


def test_webnlg_splits_are_disjoint_nested_and_deterministic(ingested: Callable[..., Path]) -> None:
    ingested("webnlg2017-human-eval")
    settings = load_settings()
    shares = [0.0, 0.1, 0.3, 0.5]
    for by, column, n_units, expected in (("system", "system", 9, [0, 1, 3, 5]),
                                          ("input", "item_id", 223, [0, 22, 67, 112])):
        samples = rb.draw_splits("webnlg2017", by=by, shares=shares, seed=7, settings=settings)
        assert [s.share for s in samples if s.side == "test"] == shares
        assert [s.units for s in samples if s.side == "train"] == expected[1:]  # no train side at share 0
        train_units: list[set[str]] = []
        for share, k in zip(shares, expected, strict=True):
            test = next(s for s in samples if s.share == share and s.side == "test")
            assert test.n_units == n_units and test.share_actual == k / n_units
            test_seg = _segments(test.label)
            assert not any(test_seg.column("is_human").to_pylist())  # the paper's 9 systems, no references
            units = {"test": set(test_seg.column(column).to_pylist())}
            if k:
                train = next(s for s in samples if s.share == share and s.side == "train")
                train_seg = _segments(train.label)
                units["train"] = set(train_seg.column(column).to_pylist())
                assert len(units["train"]) == k and not units["train"] & units["test"]  # disjoint units
                assert train.rows + test.rows == 3 * 9 * 223  # every rated system output, 3 aspects
                assert set(train_seg.column("aspect").to_pylist()) == {"fluency", "grammar", "semantics"}
                train_units.append(units["train"])
            assert len(units.get("train", set()) | units["test"]) == n_units
        assert train_units[0] < train_units[1] < train_units[2]  # one permutation: nested train sides
        with session_scope(settings) as session:
            derivation = resolve(session, samples[-1].label).derivation or {}
        assert derivation["kind"] == "webnlg-split" and derivation["by"] == by and derivation["share"] == 0.5
        assert derivation["seed"] == 7 and derivation["side"] == samples[-1].side
        assert derivation["parent"] == "webnlg2017@1" and derivation["train_units"] == expected[-1]
        if by == "system":
            assert len(derivation["train_systems"]) == 5 and "webnlg" not in derivation["train_systems"]
        # determinism: the same seed stores nothing new; another seed splits otherwise
        again = rb.draw_splits("webnlg2017", by=by, shares=shares, seed=7, settings=settings)
        assert [(s.version.digest, s.created) for s in again] == [(s.version.digest, False) for s in samples]
        other = rb.draw_splits("webnlg2017", by=by, shares=[0.5], seed=8, settings=settings)
        assert other[0].version.digest != samples[-2].version.digest
    with pytest.raises(UsageError, match="no system"):
        rb.draw_splits("webnlg2017", by="system", shares=[0.05], seed=7, settings=settings)
    with pytest.raises(UsageError, match="none to test"):
        rb.draw_splits("webnlg2017", by="system", shares=[0.95], seed=7, settings=settings)


# --- the experiments ---------------------------------------------------------------------------------------


def _registered(digest: str) -> dict[str, Any]:
    with session_scope(load_settings()) as session:
        row = session.scalar(select(Checkpoint).where(Checkpoint.digest == digest))
        assert row is not None
        return {"name": row.name, "lineage": dict(row.lineage or {}), "run_id": row.run_id, "path": row.path}


def test_drift_experiment_trains_per_alpha_and_stores_rows(state: dict[str, Any], home: Path) -> None:
    result, experiment = state["drift_result"], state["drift"]
    assert result["trained"] == 4 and result["reused_run"] is None  # 2 variants x 2 alphas
    rows = result["rows"]
    # one row per (variant or baseline, alpha, statistic), on the mean over groups' headline group
    keys = sorted((r["variant"], r["alpha"], r["statistic"]) for r in rows)
    assert keys == sorted((v, a, s) for v in ("no-pretraining", "pretrained", "sentbleu", "bertscore")
                          for a in (0.0, 1.5) for s in ("kendall", "pearson"))
    assert all(r["group"] == "de-en" and r["aspect"] == "da" and r["experiment_id"] == experiment.id for r in rows)
    # the stored part is the rows, with the schema; the run records it with its sha256
    (part,) = [p for p in _parts(home) if "experiment=drift" in str(p)]
    table = pq.read_table(part)
    assert table.schema.equals(rb.RESULTS, check_metadata=False) and table.num_rows == len(rows)
    with session_scope(load_settings()) as session:
        run = session.get(Run, result["run_id"])
        assert run is not None and run.kind == "robustness" and run.status == "completed"
        files = session.scalars(select(ResultFile).where(ResultFile.run_id == run.id)).all()
        assert [f.path for f in files] == [str(part.relative_to(home))] and files[0].rows == len(rows)
        summary_digests = {c["digest"] for c in (run.summary or {})["checkpoints"]}
        children = session.scalars(select(Run).where(Run.parent_run_id == run.id)).all()
        assert sorted(c.kind for c in children) == ["finetune"] * 4
    # every learned row: its checkpoint trained on the train sample of its alpha, from the variant's init
    pretrained_digest = state["pretrained"]["digest"]
    for r in (r for r in rows if r["kind"] == "learned"):
        ckpt = _registered(r["checkpoint_digest"])
        assert ckpt["name"] == r["checkpoint"] and r["checkpoint_digest"] in summary_digests
        assert f"checkpoint:{r['checkpoint_digest'][:12]}" in r["signature"]
        assert r["train_dataset"] == f"{drift_name('wmt17-de', r['alpha'], 'train')}@1"
        data = ckpt["lineage"]["datasets"]
        assert [d["digest"] for d in data] == [r["train_digest"]] and data[0]["rows"] == r["n_train"]
        assert ckpt["lineage"]["parent_digest"] == (pretrained_digest if r["variant"] == "pretrained" else None)
        assert r["init_digest"] == ckpt["lineage"]["parent_digest"]
        assert not (Path(load_settings().work_dir) / "training" / r["checkpoint"]).exists()  # state removed
        # no source sentence on both sides (B.2's "no leak")
        train_items = set(_segments(r["train_dataset"]).column("item_id").to_pylist())
        assert not train_items & set(_segments(r["test_dataset"]).column("item_id").to_pylist())
    for r in rows:
        assert r["test_dataset"] == f"{drift_name('wmt17-de', r['alpha'], 'test')}@1"
        assert r["n"] == _segments(r["test_dataset"]).num_rows
        assert r["value"] is not None and r["ci_low"] <= r["value"] <= r["ci_high"]
    baseline = [r for r in rows if r["kind"] == "baseline"]
    assert all(r["checkpoint"] is None and r["train_dataset"] is None for r in baseline)
    assert {r["signature"].split("|")[0] for r in baseline} == {"sentbleu", "bertscore"}


def test_webnlg_experiment_trains_per_aspect_and_scores_checkpoints_at_share_zero(
        state: dict[str, Any], home: Path) -> None:
    result = state["webnlg_result"]
    # share 0.3: 2 variants x 2 split kinds trained on semantics; share 0: the checkpoint as it is
    assert result["trained"] == 4
    assert len(result["skipped"]) == 1 and "no-pretraining" in result["skipped"][0]
    rows = result["rows"]
    assert {r["aspect"] for r in rows} == {"semantics"}
    zero = [r for r in rows if r["share"] == 0.0]
    assert {(r["variant"], r["split_by"]) for r in zero} == {(v, b) for v in ("pretrained", "sentbleu")
                                                             for b in ("system", "input")}
    for r in zero:
        assert r["share_actual"] == 0.0 and r["n"] == 9 * 30  # every system output of the 30 inputs
        if r["kind"] == "learned":  # scored as it is: the init checkpoint itself, nothing trained
            assert r["checkpoint_digest"] == state["pretrained"]["digest"] and r["checkpoint"] == "tiny-wmt16"
            assert r["train_dataset"] is None and r["n_train"] == 0
    trained = [r for r in rows if r["share"] == 0.3 and r["kind"] == "learned"]
    assert len(trained) == 2 * 2 * 2  # variants x split kinds x statistics
    for r in trained:
        assert r["share_actual"] == (3 / 9 if r["split_by"] == "system" else 9 / 30)
        ckpt = _registered(r["checkpoint_digest"])
        assert ckpt["lineage"]["datasets"][0]["aspect"] == "semantics"
        assert r["train_dataset"] == f"webnlg-30-split-{r['split_by']}-s0.3-train@1"
        column = "system" if r["split_by"] == "system" else "item_id"
        train_units = set(_segments(r["train_dataset"]).column(column).to_pylist())
        test = _segments(r["test_dataset"])
        assert not train_units & set(test.column(column).to_pylist())
        assert r["n"] == test.num_rows // 3 and r["n_train"] == _segments(r["train_dataset"]).num_rows // 3


def test_rerun_trains_nothing_new(state: dict[str, Any], home: Path) -> None:
    before, parts = _counts(), _parts(home)
    for key in ("drift", "webnlg"):
        again = run_experiment(state[key])
        first = state[f"{key}_result"]
        assert again["reused_run"] == first["run_id"] and again["trained"] == 0
        assert again["experiment_id"] == first["experiment_id"]
        assert {c["digest"] for c in again["checkpoints"]} == {c["digest"] for c in first["checkpoints"]}
        assert [r["value"] for r in again["rows"]] == [r["value"] for r in first["rows"]]
    after = _counts()
    assert after == {**before, "runs": before["runs"] + 2}  # one robustness run row each, nothing else
    assert _parts(home) == parts
    # another bootstrap size is another experiment: evaluated again, but every checkpoint is found
    wider = prepare_drift(state["wmt17"], alphas=[0, 1.5], variants=state["variants"], baselines=[SENTBLEU],
                          config=TINY_CONFIG, n_resamples=50)
    assert wider.id != state["drift"].id
    result = run_experiment(wider)
    assert result["trained"] == 0 and result["reused_run"] is None
    assert _counts()["finetune"] == before["finetune"] and _counts()["checkpoints"] == before["checkpoints"]
    learned = {r["checkpoint_digest"] for r in result["rows"] if r["kind"] == "learned"}
    assert learned == {r["checkpoint_digest"] for r in state["drift_result"]["rows"] if r["kind"] == "learned"}


def test_command_answers_a_finished_experiment_from_the_store(state: dict[str, Any], home: Path) -> None:
    """The same request through the CLI has the same experiment id and needs no flow run."""
    from assay.cli.main import cli

    encoder = state["encoder"]
    args = ["robustness", "webnlg", "--dataset", state["webnlg_label"], "--shares", "0,0.3", "--by", "system",
            "--by", "input", "--aspect", "semantics", "--variant", f"no-pretraining={encoder}",
            "--variant", "pretrained=tiny-wmt16", "--baseline", "sentbleu", "--steps", "2", "--batch-size", "8",
            "--eval-every", "2", "--save-every", "2", "--resamples", "100"]
    result = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["experiment_id"] == state["webnlg"].id and answer["reused_run"] == state["webnlg_result"]["run_id"]
    table = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert table.exit_code == 0 and "tiny-wmt16" in table.stdout and "skipped: share 0" in table.stdout


BAD_INPUTS = [
    (["drift", "--dataset", "wmt17", "--alphas", "0,x"], "--alphas '0,x': expected comma-separated numbers"),
    (["drift", "--dataset", "wmt17", "--alphas", "-1"], "--alphas: -1.0 is not a number >= 0"),
    (["drift", "--dataset", "wmt17", "--variant", "pretrained"], "--variant 'pretrained': expected NAME=INIT"),
    (["drift", "--dataset", "wmt17", "--variant", "a=encoder", "--variant", "a=encoder"], "given more than once"),
    (["drift", "--dataset", "wmt17", "--variant", "p=no-such-checkpoint"], "--variant p=no-such-checkpoint"),
    (["drift", "--dataset", "wmt17", "--baseline", "bleu"], "--baseline 'bleu' is a corpus-level metric"),
    (["drift", "--dataset", "wmt17", "--baseline", "nometric"], "--baseline 'nometric': unknown metric"),
    (["drift", "--dataset", "wmt17", "--steps", "0"], "TrainConfig.max_steps is 0"),
    (["drift", "--dataset", "webnlg2017"], "choose one with --aspect"),
    (["webnlg", "--shares", "0,1.5"], "--shares: 1.5 is not a number in [0, 1)"),
    (["webnlg", "--shares", "0.05", "--by", "system"], "--shares 0.05 gives no system"),
    (["webnlg", "--aspect", "typicality"], "--aspect typicality: webnlg2017@1 rates no such aspect"),
    (["webnlg", "--shares", "0"], "--shares 0 alone trains nothing"),
    (["webnlg", "--dataset", "nosuchdata"], "nosuchdata"),
]


def test_bad_input_is_one_clear_error_and_writes_nothing(ingested: Callable[..., Path]) -> None:
    from assay.cli.main import cli

    ingested("wmt17-da", "webnlg2017-human-eval")
    before = _counts()
    home = load_settings().home
    for args, message in BAD_INPUTS:
        result = CliRunner().invoke(cli, ["robustness", *args])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr, (args, result.stderr)
        assert result.stderr.count("error:") == 1
    by = CliRunner().invoke(cli, ["robustness", "webnlg", "--by", "rows"])
    assert by.exit_code == 2 and "'rows' is not one of 'system', 'input'" in by.stderr
    assert _counts() == before and not (home / rb.ROOT).exists()
    assert not (home / "checkpoints").exists() or not any((home / "checkpoints").iterdir())


@pytest.mark.prefect
def test_commands_run_the_flows(ingested: Callable[..., Path], prefect_engine: None, tmp_path: Path) -> None:
    """``assay robustness drift|webnlg`` through the real Prefect engine; the run rows carry the
    flow-run id and the fine-tuning runs name the robustness run as their parent."""
    from assay.cli.main import cli

    encoder = save_tiny_encoder(tmp_path / "tiny-random-bert")
    ingested("wmt17-da", "webnlg2017-human-eval")
    wmt17 = subset("wmt17", "wmt17-de", groups=["de-en"])
    webnlg = subset("webnlg2017", "webnlg-12", n_items=12)
    tiny = ["--steps", "2", "--batch-size", "8", "--eval-every", "2", "--save-every", "2", "--resamples", "50"]
    drift = CliRunner().invoke(cli, ["robustness", "drift", "--dataset", wmt17, "--alphas", "1", "--variant",
                                     f"tiny={encoder}", "--baseline", "sentbleu", *tiny, "--json"])
    assert drift.exit_code == 0, drift.output
    drift_result = json.loads(drift.stdout)
    (made,) = drift_result["checkpoints"]
    assert made["trained"] and drift_result["trained"] == 1
    webnlg_run = CliRunner().invoke(cli, ["robustness", "webnlg", "--dataset", webnlg, "--shares", "0,0.5", "--by",
                                          "input", "--aspect", "fluency", "--variant", f"drift={made['name']}",
                                          "--no-baselines", *tiny, "--json"])
    assert webnlg_run.exit_code == 0, webnlg_run.output
    result = json.loads(webnlg_run.stdout)
    assert result["trained"] == 1 and {r["share"] for r in result["rows"]} == {0.0, 0.5}
    assert {r["kind"] for r in result["rows"]} == {"learned"}
    with session_scope(load_settings()) as session:
        for answer in (drift_result, result):
            run = session.get(Run, answer["run_id"])
            assert run is not None and run.flow_run_id and run.status == "completed"
            children = session.scalars(select(Run).where(Run.parent_run_id == run.id)).all()
            assert [c.kind for c in children] == ["finetune"] and children[0].flow_run_id == run.flow_run_id
