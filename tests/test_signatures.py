"""Signatures: one renderer, one format, specified once (docs/SIGNATURES.md).

The documentation's examples are rendered with :func:`render_signature` and compared with the
documentation text (doctest, exact string equality). The examples document the format, not a
release, so they are rendered as Assay 0.1.0. Real metrics are checked against the same format:
their signatures must parse field by field and end in ``v:<metric version>|assay:<version>``.
"""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

import assay
from assay.metrics import create_metric, metric_names, parse_signature
from assay.metrics.signature import model_field, package_version, release, render_signature

DOC = Path(__file__).resolve().parents[1] / "docs" / "SIGNATURES.md"
FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*:[^|]*$")


def test_every_documented_example_renders_as_documented(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(assay, "__version__", "0.1.0")
    result = doctest.testfile(str(DOC), module_relative=False, optionflags=doctest.NORMALIZE_WHITESPACE,
                              raise_on_error=False, verbose=False)
    assert result.attempted >= 8, "the documentation lost its examples"
    assert result.failed == 0


def test_documented_sentbleu_example_is_what_the_metric_renders() -> None:
    """The page's first example is SentenceBLEU() with sacrebleu 2.6.0; with the installed
    sacrebleu the metric renders exactly that line."""
    expected = render_signature("sentbleu", {"tok": "13a", "smooth": "exp", "case": "mixed", "eff": True,
                                             "sacrebleu": package_version("sacrebleu")}, "1")
    assert create_metric("sentbleu").signature() == expected


@pytest.mark.parametrize("name", [n for n in ("sentbleu", "bleu", "chrf", "corpus-chrf", "ter", "rouge1", "rouge2",
                                              "rougeL", "bleu-neighbors")])
def test_builtin_signatures_follow_the_format(name: str) -> None:
    metric = create_metric(name)
    signature = metric.signature({"set": "0123456789ab"})
    head, *fields = signature.split("|")
    assert head == name
    assert all(FIELD.match(f) for f in fields), signature
    assert fields[-3:] == ["set:0123456789ab", f"v:{metric.version}", f"assay:{assay.__version__}"]
    assert parse_signature(signature)["metric"] == name


def test_values_render_one_way() -> None:
    rendered = render_signature("m", {"flag": False, "nothing": None, "text": "a b|c", "x": 0.5}, "2")
    assert rendered == f"m|flag:no|nothing:none|text:a_b/c|x:0.5|v:2|assay:{assay.__version__}"
    assert parse_signature(rendered) == {"metric": "m", "flag": "no", "nothing": "none", "text": "a_b/c", "x": "0.5",
                                         "v": "2", "assay": assay.__version__}


def test_local_build_suffixes_are_dropped_everywhere() -> None:
    assert release("2.13.0+cpu") == release("2.13.0+cu121") == release("2.13.0") == "2.13.0"
    assert "+" not in package_version("torch")
    assert package_version("no-such-distribution-here") == "none"
    assert model_field("/models/org/encoder/", "f" * 64) == "encoder@ffffffffffff"
    assert model_field("encoder", None) == "encoder@undigested"


def test_every_registered_metric_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert all(f"`{name}`" in text for name in metric_names())
