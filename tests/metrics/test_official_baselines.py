"""Assay's lexical baselines equal the official WMT ones, and BLEU tokenizes by target language.

Oracles and tolerances:
* mt-metrics-eval's WMT23 en-de files (``../shared/data/mtme-wmt23/wmt23``, copied unchanged from
  the organisers' release, PROVENANCE.md): ``metric-scores/en-de/BLEU-refA.seg.score`` and
  ``chrF-refA.seg.score`` (13 systems: 12 MT systems and ``synthetic_ref``, 557 segments each,
  7,241 scores) and ``BLEU-refA.sys.score``. The files print Python's shortest round-trip repr
  (about 16 significant digits); measured here, Assay's values are bit-identical (max abs
  difference 0.0 for both segment files and the system file, sacrebleu 2.6.0; the organisers ran
  2.2.1/2.3.1). Tolerance: absolute 1e-9 on the 0-100 scale, far below the printed precision's
  meaning and above any libm difference between platforms.
* The tokenizer the WMT23 organisers' BLEU used per target language: ``tok:13a`` for en-de,
  ``tok:zh`` for en-zh, ``tok:ja-mecab-0.996-IPA`` for en-ja (the signatures in
  wmt-conference/wmt23-news-systems ``scores/autoWMT23.tex``, whose en-de corpus BLEU equals the
  ``BLEU-refA.sys.score`` above to the last digit; on en-zh, sacrebleu's ``BLEU(trg_lang="zh")``
  reproduces their 15 printed corpus BLEUs, e.g. ONLINE-Y 54.177323532655414, where ``13a`` gives
  24.13). Those files are not in the shared data, so the Chinese checks below use WMT24's en-zh
  texts (``../shared/data/esa-wmt24/txt``) with sacrebleu's own language choice as the oracle:
  absolute 1e-9.
* chrF-refA.sys.score is sacrebleu's *corpus* chrF, Assay's ``corpus-chrf`` (``chrf``'s system
  score is the mean of segment chrF): it is checked in ``test_corpus_chrf.py``.
"""

from __future__ import annotations

import importlib.util
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from sacrebleu.metrics import BLEU

from assay.errors import UsageError
from assay.metrics.base import ScoringContext
from assay.metrics.lexical import ChrF, CorpusBLEU, SentenceBLEU
from assay.metrics.signature import parse_signature
from tests.conftest import SHARED_DATA

WMT23 = SHARED_DATA / "mtme-wmt23" / "wmt23"
ESA_TXT = SHARED_DATA / "esa-wmt24" / "txt"
PAIR = "en-de"
TOLERANCE = 1e-9


def read_text(path: Path) -> list[str]:
    """A line-aligned text file as mt-metrics-eval reads it (``data._ReadTextFile``: each line
    right-stripped)."""
    with path.open(encoding="utf-8") as f:
        return [line.rstrip() for line in f]


def read_scores(path: Path) -> dict[str, list[float]]:
    """An MTME score file, ``[DOMAIN] SYSTEM SCORE`` per line (README, "metric-scores"); a
    system's segment scores follow its lines in segment order (``data.ReadScoreFile``)."""
    scores: dict[str, list[float]] = defaultdict(list)
    with path.open(encoding="utf-8") as f:
        for line in f:
            *_, system, score = line.split()
            scores[system].append(float(score))
    return dict(scores)


@pytest.fixture(scope="module")
def wmt23_ende() -> tuple[list[str], dict[str, list[str]]]:
    references = read_text(WMT23 / "references" / f"{PAIR}.refA.txt")
    outputs = {path.stem: read_text(path) for path in sorted((WMT23 / "system-outputs" / PAIR).glob("*.txt"))}
    return references, outputs


def _target_context(n: int, language: str) -> ScoringContext:
    return ScoringContext(target_languages=[language] * n)


@pytest.mark.parametrize(("metric", "official"), [(SentenceBLEU, "BLEU-refA"), (ChrF, "chrF-refA")])
def test_segment_scores_equal_the_official_wmt23_baselines(
        wmt23_ende: tuple[list[str], dict[str, list[str]]], metric: type, official: str) -> None:
    references, outputs = wmt23_ende
    expected = read_scores(WMT23 / "metric-scores" / PAIR / f"{official}.seg.score")
    assert len(expected) == 13 and "refA" not in expected  # 12 MT systems and synthetic_ref
    scorer = metric()
    worst = 0.0
    for system, scores in expected.items():
        hyps = outputs[system]
        assert len(hyps) == len(references) == len(scores) == 557
        got = scorer.score(hyps, [[ref] for ref in references],
                           context=_target_context(len(hyps), "de")).score
        worst = max(worst, float(np.max(np.abs(got - np.array(scores)))))
    assert worst <= TOLERANCE, f"{official}: max abs difference {worst}"


def test_corpus_bleu_equals_the_official_wmt23_system_scores(
        wmt23_ende: tuple[list[str], dict[str, list[str]]]) -> None:
    references, outputs = wmt23_ende
    expected = read_scores(WMT23 / "metric-scores" / PAIR / "BLEU-refA.sys.score")
    assert len(expected) == 13
    bleu = CorpusBLEU()
    for system, (score,) in expected.items():
        stats = bleu.score(outputs[system], [[ref] for ref in references],
                           context=_target_context(len(references), "de")).stats
        assert stats is not None
        assert bleu.corpus_score(stats) == pytest.approx(score, abs=TOLERANCE), system


def test_signatures_of_the_official_settings_are_unchanged_where_the_tokenizer_is_13a() -> None:
    for metric in (SentenceBLEU(), CorpusBLEU()):
        plain = metric.signature()
        assert parse_signature(plain)["tok"] == "13a"
        # a to-English or to-German set (WMT17, MQM en-de, MTME en-de) signs as before
        assert metric.signature(metric.target_language_fields(["en", "de", None])) == plain
    sentbleu = parse_signature(SentenceBLEU().signature())
    assert (sentbleu["smooth"], sentbleu["case"], sentbleu["eff"]) == ("exp", "mixed", "yes")
    chrf = parse_signature(ChrF().signature())
    assert (chrf["nc"], chrf["nw"], chrf["beta"], chrf["case"]) == ("6", "0", "2", "mixed")


def _esa_en_zh(systems: int = 2) -> tuple[list[str], list[list[str]]]:
    """WMT24 en-zh outputs of ``systems`` systems against refA, without the canary line 1."""
    references = read_text(ESA_TXT / "references" / "en-zh.refA.txt")[1:]
    hyps: list[str] = []
    for path in sorted((ESA_TXT / "system-outputs" / "en-zh").glob("*.txt"))[:systems]:
        lines = read_text(path)[1:]
        assert len(lines) == len(references)
        hyps += lines
    return hyps, [[ref] for ref in references] * systems


def test_chinese_targets_are_tokenized_as_sacrebleu_and_wmt_do() -> None:
    hyps, refs = _esa_en_zh()
    chinese = _target_context(len(hyps), "zh")
    official = BLEU(trg_lang="zh", effective_order=True)  # the organisers' tok:zh
    assert official.tokenizer_signature == "zh"
    expected = [official.sentence_score(h, r).score for h, r in zip(hyps, refs, strict=True)]
    sentbleu = SentenceBLEU()
    got = sentbleu.score(hyps, refs, context=chinese).score
    np.testing.assert_allclose(got, expected, rtol=0, atol=TOLERANCE)
    # 13a sees a Chinese sentence as one or two "words": the scores are another metric's
    untokenized = sentbleu.score(hyps, refs).score
    assert float(np.mean(got)) > float(np.mean(untokenized)) + 10
    assert parse_signature(sentbleu.signature(sentbleu.target_language_fields(["zh"] * len(hyps))))["tok"] == "zh"

    bleu = CorpusBLEU()
    stats = bleu.score(hyps, refs, context=chinese).stats
    assert stats is not None
    corpus = BLEU(trg_lang="zh").corpus_score(hyps, [[r[0] for r in refs]]).score
    assert bleu.corpus_score(stats) == pytest.approx(corpus, abs=TOLERANCE)


def test_each_segment_gets_its_own_languages_tokenizer_and_the_signature_names_them() -> None:
    hyps, refs = _esa_en_zh(systems=1)
    hyps, refs = hyps[:40], refs[:40]
    german = ["Das Haus ist klein.", "Die Katze schläft."]
    german_refs = [["Das Haus ist winzig."], ["Die Katze schläft gerade."]]
    languages = ["zh"] * len(hyps) + ["de"] * 2
    sentbleu = SentenceBLEU()
    mixed = sentbleu.score(hyps + german, refs + german_refs,
                           context=ScoringContext(target_languages=languages)).score
    np.testing.assert_allclose(mixed[:-2], sentbleu.score(hyps, refs, context=_target_context(40, "zh")).score,
                               rtol=0, atol=TOLERANCE)
    np.testing.assert_allclose(mixed[-2:], sentbleu.score(german, german_refs).score, rtol=0, atol=TOLERANCE)
    assert sentbleu.target_language_fields(languages) == {"tok": "13a,zh=zh"}
    # a tokenizer given by the user is used for every language, and the signature is the user's
    fixed = SentenceBLEU(tokenize="13a")
    assert not fixed.depends_on_target_language and sentbleu.depends_on_target_language
    assert fixed.signature() == sentbleu.signature()
    np.testing.assert_allclose(fixed.score(hyps, refs, context=_target_context(40, "zh")).score,
                               sentbleu.score(hyps, refs).score, rtol=0, atol=TOLERANCE)
    assert not ChrF().depends_on_target_language


def test_japanese_targets_need_mecab_or_an_explicit_tokenizer() -> None:
    metric = SentenceBLEU()
    if importlib.util.find_spec("MeCab") is None:
        with pytest.raises(UsageError, match=r"target language 'ja' .*ja-mecab.*-p tokenize=") as err:
            metric.target_language_fields(["ja"])
        assert "\n" not in str(err.value)
    else:
        assert str(metric.target_language_fields(["ja"])["tok"]).startswith("ja-mecab")
    assert SentenceBLEU(tokenize="char").target_language_fields(["ja"]) == {"tok": "char"}


def test_scoring_a_dataset_passes_each_groups_target_language(tmp_path: Path) -> None:
    """Through the scoring job: the plan's signature names the tokenizers of the set's languages,
    every stored score is the one of its group's language, and the export finds them."""
    from assay.jobs.ingest import ingest_path
    from assay.jobs.score_export import scored_segments
    from assay.jobs.scoring import finish_scoring, plan_scoring, score_shard
    from assay.metrics.registry import MetricSpec

    hyps, refs = _esa_en_zh(systems=1)
    rows = [("en-zh", h, r[0]) for h, r in zip(hyps[:6], refs[:6], strict=True)]
    rows += [("en-de", "das Haus ist klein", "das Haus ist winzig"),
             ("en-de", "eine Katze schläft", "die Katze schläft")]
    lines = ["id\tlp\tsys\tcand\tref\tz"] + [f"{i}\t{lp}\ts1\t{c}\t{r}\t{0.1 * i}" for i, (lp, c, r) in enumerate(rows)]
    data = tmp_path / "zh-de.tsv"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "zh-de.columns.json").write_text(
        '{"group": "lp", "system": "sys", "segment_id": "id", "candidate": "cand", "references": "ref", '
        '"human_z": "z"}', encoding="utf-8")
    ingest_path(data, name="zhde")
    plan = plan_scoring("zhde", MetricSpec("sentbleu"), shard_size=3)
    assert parse_signature(plan.signature)["tok"] == "13a,zh=zh"
    finish_scoring(plan, [score_shard(plan, i) for i in range(len(plan.shards))])
    table = scored_segments("zhde", SentenceBLEU()).to_pydict()
    got = dict(zip(table["segment_id"], table["score"], strict=True))
    by_language = {"en-zh": BLEU(trg_lang="zh", effective_order=True), "en-de": BLEU(effective_order=True)}
    for i, (lp, cand, ref) in enumerate(rows):
        assert got[str(i)] == pytest.approx(by_language[lp].sentence_score(cand, [ref]).score, abs=TOLERANCE)
    assert set(table["signature"]) == {plan.signature}
