"""Published and independently computed numbers the reproduction tables are compared against.

Copied from the project's ``design/REFERENCE_NUMBERS.md`` (``tests/test_report.py`` checks that
the copy still matches the file). "paper" rows are printed in the seed papers; "independent" rows
were computed outside this project on the same data with public libraries (sacrebleu 2.6
defaults, scipy 1.17, bert_score 0.3.13).

* BLEURT (Sellam et al., 2020), Table 2: WMT17 to-English, segment level, Kendall τ / Pearson r
  ×100 against DA z, per language pair and the plain mean ("avg").
* BERTScore (Zhang et al., 2020), Table 1: WMT18 to-English, system level, Pearson |r| (the paper
  prints absolute values).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReferenceRow:
    label: str
    source: str  # "paper" | "independent"
    cells: dict[str, tuple[float, ...]]  # column -> values (τ, r) x100 or (r,)
    note: str


WMT17_SEG_COLUMNS = ("cs-en", "de-en", "fi-en", "lv-en", "ru-en", "tr-en", "zh-en", "avg")
WMT18_SYS_COLUMNS = ("cs-en", "de-en", "et-en", "fi-en", "ru-en", "tr-en", "zh-en")


def _pairs(text: str) -> dict[str, tuple[float, ...]]:
    values = [tuple(float(v) for v in cell.split("/")) for cell in text.split()]
    return dict(zip(WMT17_SEG_COLUMNS, values, strict=True))


BLEURT_TABLE2: tuple[ReferenceRow, ...] = (
    ReferenceRow("sentBLEU (Moses sentence-bleu)", "paper",
                 _pairs("29.6/43.2 28.9/42.2 38.6/56.0 23.9/38.2 34.3/47.7 34.3/54.0 37.4/51.3 32.4/47.5"),
                 "BLEURT paper, Table 2"),
    ReferenceRow("sentBLEU (sacrebleu sentence_bleu defaults)", "independent",
                 _pairs("29.2/42.6 28.6/41.6 39.7/56.5 23.3/38.6 33.1/46.5 36.0/54.9 36.2/50.5 32.3/47.3"),
                 "computed with sacrebleu 2.6 and scipy 1.17 (REFERENCE_NUMBERS.md)"),
    ReferenceRow("BERTScore F, MiniLM layer 4 (bert_score, no idf)", "independent",
                 _pairs("40.4/59.6 44.4/63.4 58.7/77.5 45.0/65.8 47.4/67.4 48.2/66.0 44.8/66.3 47.0/66.6"),
                 "computed with bert_score 0.3.13 (REFERENCE_NUMBERS.md)"),
    ReferenceRow("BERTScore w/ BERT-large", "paper",
                 _pairs("48.0/66.6 50.3/70.1 61.4/81.4 51.6/72.3 53.7/73.0 55.6/76.0 52.2/73.1 53.3/73.2"),
                 "BLEURT paper, Table 2"),
    ReferenceRow("BERTScore w/ RoBERTa-large", "paper",
                 _pairs("54.2/72.6 56.9/76.0 64.8/83.2 56.2/75.7 57.2/75.2 57.9/76.1 58.8/78.9 58.0/76.8"),
                 "BLEURT paper, Table 2"),
    ReferenceRow("BLEURT-base without pre-training", "paper",
                 _pairs("51.5/68.2 52.0/70.7 66.6/85.1 60.8/80.5 57.5/77.7 56.9/76.0 52.1/72.1 56.8/75.8"),
                 "BLEURT paper, Table 2"),
    ReferenceRow("BLEURT-base", "paper",
                 _pairs("55.7/73.4 56.3/75.7 68.0/86.8 64.7/83.3 60.1/80.1 62.4/81.7 59.5/80.5 61.0/80.2"),
                 "BLEURT paper, Table 2"),
    ReferenceRow("BLEURT (large)", "paper",
                 _pairs("59.3/77.3 59.9/79.2 69.5/87.8 64.4/83.5 61.3/81.1 62.9/82.4 60.2/81.4 62.5/81.8"),
                 "BLEURT paper, Table 2"),
)

BERTSCORE_TABLE1: tuple[ReferenceRow, ...] = (
    ReferenceRow("BLEU (corpus, sacrebleu defaults)", "independent",
                 {"cs-en": (0.955,), "de-en": (0.967,), "et-en": (0.987,), "fi-en": (0.962,), "ru-en": (0.966,),
                  "tr-en": (-0.944,), "zh-en": (0.985,)},
                 "computed with sacrebleu 2.6 and scipy 1.17 (REFERENCE_NUMBERS.md); signed r"),
    ReferenceRow("BLEU", "paper",
                 {"cs-en": (0.970,), "de-en": (0.971,), "et-en": (0.986,), "fi-en": (0.973,), "ru-en": (0.979,),
                  "tr-en": (0.657,), "zh-en": (0.978,)},
                 "BERTScore paper, Table 1 (absolute values of r)"),
)
