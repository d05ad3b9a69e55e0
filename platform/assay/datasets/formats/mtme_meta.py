"""What mt-metrics-eval's metadata says about each test set it ships: facts, not code.

google-research/mt-metrics-eval (MTME) decides four things about a test set and language pair that
its data directory does not say (``mt_metrics_eval/meta_info.py``, ``MetaInfo`` and ``DATA``):

* ``std_ref``: the standard reference, the one reference-based metrics are evaluated with (and the
  human output left out of the candidates);
* ``std_gold``: the primary human score per level (``seg``, ``sys``, ``domain``), e.g. ``mqm``;
* ``outlier_systems``: systems left out of the official correlations (``use_outliers=False``);
* ``primary_metrics`` and ``baseline_metrics``: the base names of the primary submissions and of the
  organisers' baselines.

:data:`KNOWN` transcribes them for every test set of MTME @ 68a481a. For a test set or pair it does
not list, :func:`facts_for` returns None and the ``mtme`` format falls back to a documented rule
(the first reference in alphabetical order; ``mqm`` where present, else the first human score in
alphabetical order); both are recorded on the version and can be overridden with options.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

Levels = Mapping[str, str]


@dataclass(frozen=True)
class TestSetFacts:
    """MTME's ``MetaInfo`` for one test set and language pair."""

    std_ref: str
    std_gold: Levels
    outlier_systems: frozenset[str] = frozenset()
    primary_metrics: frozenset[str] = frozenset()
    baseline_metrics: frozenset[str] | None = None
    #: not a test-time setting of MTME: the key under which the facts were found
    source: str = field(default="", compare=False)


def _gold(name: str, levels: tuple[str, ...] = ("sys", "domain", "seg")) -> dict[str, str]:
    return dict.fromkeys(levels, name)


_WMT19 = TestSetFacts("ref", {"sys": "wmt-z", "seg": "wmt-raw"})
_WMT20 = TestSetFacts("ref", {"sys": "wmt-z", "doc": "wmt-raw", "seg": "wmt-raw"})

_WMT21_PRIMARIES = frozenset({
    "bleurt-20", "COMET-MQM_2021", "COMET-QE-MQM_2021", "C-SPECpn", "MEE2", "MTEQA", "OpenKiwi-MQM", "regEMT",
    "YiSi-1", "YiSi-2", "BERTScore", "sentBLEU", "BLEU", "chrF", "Prism", "TER"})
_WMT21 = TestSetFacts("refA", {"sys": "wmt-z", "seg": "wmt-raw"}, primary_metrics=_WMT21_PRIMARIES)
_WMT21_MQM = _gold("mqm", ("sys", "seg"))

_WMT22_PRIMARIES = frozenset({
    "BERTScore", "BLEURT-20", "BLEU", "chrF", "COMET-20", "COMET-22", "COMETKiwi", "COMET-QE", "f200spBLEU",
    "HuaweiTSC_EE_BERTScore_0.3_With_Human", "HWTSC-Teacher-Sim", "MATESE-QE", "MATESE", "MEE4",
    "metricx_xxl_MQM_2020", "MS-COMET-22", "MS-COMET-QE-22", "REUSE", "SEScore", "UniTE", "UniTE-src", "YiSi-1"})
_WMT22 = TestSetFacts("refA", _gold("mqm"), primary_metrics=_WMT22_PRIMARIES)
_WMT22_DA = TestSetFacts("refA", _gold("wmt"), primary_metrics=_WMT22_PRIMARIES)
_WMT22_DA_NODOMAIN = TestSetFacts("refA", _gold("wmt", ("sys", "seg")), primary_metrics=_WMT22_PRIMARIES)
_WMT22_APPRAISE = TestSetFacts("refA", _gold("wmt-appraise"), primary_metrics=_WMT22_PRIMARIES)
_WMT22_NODOMAIN = TestSetFacts("refA", _gold("wmt-appraise", ("sys", "seg")), primary_metrics=_WMT22_PRIMARIES)

_WMT23_BASELINES = frozenset({
    "BERTscore", "BLEU", "BLEURT-20", "chrF", "COMET", "CometKiwi", "docWMT22CometDA", "docWMT22CometKiwiDA",
    "f200spBLEU", "MS-COMET-QE-22", "prismRef", "prismSrc", "Random-sysname", "YiSi-1"})
_WMT23_PRIMARIES = _WMT23_BASELINES | {
    "Calibri-COMET22", "Calibri-COMET22-QE", "cometoid22-wmt22", "eBLEU", "embed_llama", "GEMBA-MQM",
    "KG-BERTScore", "MaTESe", "MEE4", "MetricX-23", "MetricX-23-QE", "mre-score-labse-regular", "mbr-metricx-qe",
    "sescoreX", "tokengram_F", "XCOMET-Ensemble", "XCOMET-QE-Ensemble", "XLsim"}
_WMT23 = TestSetFacts("refA", _gold("mqm"), frozenset(), _WMT23_PRIMARIES, _WMT23_BASELINES)
_WMT23_DA = TestSetFacts("refA", _gold("da-sqm"), frozenset(), _WMT23_PRIMARIES, _WMT23_BASELINES)

_WMT24_BASELINES = frozenset({
    "BERTScore", "BLEU", "BLEURT-20", "chrF", "COMET-22", "CometKiwi", "PrismRefMedium", "PrismRefSmall", "spBLEU",
    "YiSi-1", "sentinel-cand-mqm", "sentinel-ref-mqm", "sentinel-src-mqm"})
_WMT24_PRIMARIES = _WMT24_BASELINES | {
    "BLCOM_1", "bright-qe", "chrfS", "damonmonli", "gemba_esa", "MEE4", "metametrics_mt_mqm_hybrid_kendall",
    "metametrics_mt_mqm_qe_kendall.seg.s", "MetricX-24-Hybrid", "MetricX-24-Hybrid-QE", "XCOMET", "XCOMET-QE",
    "XLsimMqm"}
_WMT24 = TestSetFacts("refA", _gold("mqm"), frozenset({"MSLC"}), _WMT24_PRIMARIES, _WMT24_BASELINES)
_WMT24_ESA = TestSetFacts("refA", _gold("esa"), frozenset(), _WMT24_PRIMARIES, _WMT24_BASELINES)

_WMT24PP = TestSetFacts("posteditA", {}, frozenset(), frozenset({
    "BLEU", "ChrF", "MetricX-24", "MetricX-24-QE", "XCOMET", "XCOMET-QE", "COMETKiwi-23", "Gemini-DA",
    "Gemini-DA-QE"}), None)
_WMT24PP_PAIRS = (
    "en-ar_EG", "en-ar_SA", "en-bg_BG", "en-bn_IN", "en-ca_ES", "en-cs_CZ", "en-da_DK", "en-de_DE", "en-el_GR",
    "en-es_MX", "en-et_EE", "en-fa_IR", "en-fi_FI", "en-fil_PH", "en-fr_CA", "en-fr_FR", "en-gu_IN", "en-he_IL",
    "en-hi_IN", "en-hr_HR", "en-hu_HU", "en-id_ID", "en-is_IS", "en-it_IT", "en-ja_JP", "en-kn_IN", "en-ko_KR",
    "en-lt_LT", "en-lv_LV", "en-ml_IN", "en-mr_IN", "en-nl_NL", "en-no_NO", "en-pa_IN", "en-pl_PL", "en-pt_BR",
    "en-pt_PT", "en-ro_RO", "en-ru_RU", "en-sk_SK", "en-sl_SI", "en-sr_RS", "en-sv_SE", "en-sw_KE", "en-sw_TZ",
    "en-ta_IN", "en-te_IN", "en-th_TH", "en-tr_TR", "en-uk_UA", "en-ur_PK", "en-vi_VN", "en-zh_CN", "en-zh_TW",
    "en-zu_ZA",
)

_WMT25_BASELINES = frozenset({"BERTScore", "BLEU", "COMET22", "COMETKiwi22", "YiSi-1", "chrF", "sentinel-cand",
                              "spBLEU"})
_WMT25_PRIMARIES = frozenset({
    "EnsembleSlick", "GEMBA-v2", "MetricX-25", "Polycand-2", "Q_Relative-MQM", "SEGALE-QE", "TASER-No-Ref", "UvA-MT",
    "comet-multi", "hw-tsc", "mr7_2_1", "rankedCOMET"})
_WMT25 = TestSetFacts("refA", _gold("mqm"), frozenset(), _WMT25_PRIMARIES, _WMT25_BASELINES)
_WMT25_ESA = TestSetFacts("refA", _gold("esa-human1"), frozenset(), _WMT25_PRIMARIES, _WMT25_BASELINES)


def _same(facts: TestSetFacts, pairs: str) -> dict[str, TestSetFacts]:
    return dict.fromkeys(pairs.split(), facts)


_WMT20_OUTLIERS = {
    "cs-en": {"zlabs-nlp.1149", "CUNI-DocTransformer.1457"},
    "de-en": {"yolo.1052", "zlabs-nlp.1153", "WMTBiomedBaseline.387"},
    "en-cs": {"zlabs-nlp.1151", "Online-G.1555"},
    "en-de": {"zlabs-nlp.179", "WMTBiomedBaseline.388", "Online-G.1556"},
    "en-iu": {"UEDIN.1281", "OPPO.722", "UQAM_TanLe.521"},
    "en-ja": {"Online-G.1557", "SJTU-NICT.370"},
    "en-pl": {"Online-Z.1634", "zlabs-nlp.180", "Online-A.1576"},
    "en-ru": set(),
    "en-ta": {"TALP_UPC.1049", "SJTU-NICT.386", "Online-G.1561"},
    "en-zh": set(),
    "iu-en": {"NiuTrans.1206", "Facebook_AI.729"},
    "ja-en": {"Online-G.1564", "zlabs-nlp.66", "Online-Z.1640"},
    "km-en": set(),
    "pl-en": {"zlabs-nlp.1162"},
    "ps-en": set(),
    "ru-en": {"zlabs-nlp.1164"},
    "ta-en": {"Online-G.1568", "TALP_UPC.192"},
    "zh-en": {"WMTBiomedBaseline.183"},
}

#: MTME's ``meta_info.DATA``: test set (the data folder's name) -> language pair -> facts
KNOWN: dict[str, dict[str, TestSetFacts]] = {
    "wmt25": {
        **_same(_WMT25, "ja-zh_CN en-ko_KR"),
        **_same(_WMT25_ESA, "cs-de_DE cs-uk_UA en-ar_EG en-bho_IN en-zh_CN en-cs_CZ en-et_EE en-is_IS en-it_IT "
                            "en-ja_JP en-mas_KE en-ru_RU en-sr_Cyrl_RS en-uk_UA"),
    },
    "wmt24pp": {
        **dict.fromkeys(_WMT24PP_PAIRS, _WMT24PP),
        "en-de_DE": replace(_WMT24PP, std_ref="posteditB"),
        "en-is_IS": replace(_WMT24PP, std_ref="refA"),
    },
    "wmt24": {
        "en-de": replace(_WMT24, std_ref="refB"),
        **_same(_WMT24, "en-es ja-zh"),
        **_same(_WMT24_ESA, "cs-uk en-cs en-hi en-is en-ja en-ru en-uk en-zh"),
    },
    "wmt23.sent": {"en-de": _WMT23},
    "wmt23": {
        "en-de": replace(_WMT23, outlier_systems=frozenset({"synthetic_ref"})),
        "he-en": replace(_WMT23, std_ref="refB"),
        "zh-en": replace(_WMT23, outlier_systems=frozenset({"synthetic_ref"})),
        **_same(_WMT23_DA, "cs-uk de-en en-cs en-ja en-zh ja-en"),
        "en-he": replace(_WMT23_DA, std_gold={}, std_ref="refB"),
        **_same(replace(_WMT23_DA, std_gold={}), "en-ru en-uk ru-en uk-en"),
    },
    "wmt22": {
        "en-de": replace(_WMT22, outlier_systems=frozenset({"M2M100_1.2B-B4"})),
        **_same(_WMT22, "en-ru zh-en"),
        "cs-en": replace(_WMT22_DA, std_ref="refB"),
        **_same(_WMT22_NODOMAIN, "cs-uk en-liv liv-en sah-ru uk-cs"),
        **_same(_WMT22_DA, "de-en ja-en ru-en"),
        **_same(replace(_WMT22_APPRAISE, std_gold={}), "de-fr fr-de ru-sah"),
        "en-cs": replace(_WMT22_APPRAISE, std_ref="refB"),
        **_same(_WMT22_APPRAISE, "en-hr en-ja en-uk en-zh"),
        "uk-en": _WMT22_DA_NODOMAIN,
    },
    "wmt21.news": {
        **_same(_WMT21, "en-cs en-ha en-is en-ja en-zh cs-en de-en de-fr fr-de ha-en is-en ja-en ru-en"),
        "en-de": replace(_WMT21, std_ref="refC", std_gold=_WMT21_MQM,
                         primary_metrics=_WMT21_PRIMARIES | {"cushLEPOR(LM)"}),
        "en-ru": replace(_WMT21, std_ref="refA", std_gold=_WMT21_MQM, primary_metrics=_WMT21_PRIMARIES | {"hLEPOR"}),
        "zh-en": replace(_WMT21, std_ref="refB", std_gold=_WMT21_MQM,
                         primary_metrics=_WMT21_PRIMARIES | {"cushLEPOR(LM)", "RoBLEURT"}),
    },
    "wmt21.tedtalks": {
        "en-de": replace(_WMT21, std_ref="refA", std_gold=_WMT21_MQM,
                         primary_metrics=_WMT21_PRIMARIES | {"cushLEPOR(LM)"}),
        "en-ru": replace(_WMT21, std_ref="refA", std_gold=_WMT21_MQM, primary_metrics=_WMT21_PRIMARIES | {"hLEPOR"}),
        "zh-en": replace(_WMT21, std_ref="refB", std_gold=_WMT21_MQM,
                         primary_metrics=_WMT21_PRIMARIES | {"cushLEPOR(LM)", "RoBLEURT"}),
    },
    "wmt21.flores": _same(_WMT21, "bn-hi hi-bn xh-zu zu-xh"),
    "wmt20": {lp: replace(_WMT20, outlier_systems=frozenset(out)) for lp, out in _WMT20_OUTLIERS.items()},
    "wmt19": _same(_WMT19, "de-cs de-en de-fr en-cs en-de en-fi en-gu en-kk en-lt en-ru en-zh fi-en fr-de gu-en "
                           "kk-en lt-en ru-en zh-en"),
}


def facts_for(test_set: str, language_pair: str) -> TestSetFacts | None:
    """MTME's metadata for ``test_set`` (the data folder's name, ``wmt23``) and ``language_pair``;
    None when MTME does not list the pair."""
    found = KNOWN.get(test_set, {}).get(language_pair)
    return None if found is None else replace(found, source=f"mt-metrics-eval meta_info.DATA[{test_set!r}]"
                                                            f"[{language_pair!r}]")
