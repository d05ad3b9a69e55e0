"""BLEURT-style synthetic pre-training pairs (Sellam et al., 2020, §4 and appendix A).

English sentences from stored dataset versions (:mod:`~assay.synthetic.corpus`) are perturbed
into candidates (§4.1: mask filling, backtranslation or system outputs, word dropping), each pair
is labelled with pre-training signals (§4.2: BLEU, ROUGE, BERTScore, backtranslation likelihood,
entailment, backtranslation flag), and the table is stored as a dataset version of format
``synthetic`` with its lineage (:mod:`~assay.synthetic.versions`). Perturbations and signals are
plugins (entry-point groups ``assay.perturbations`` and ``assay.signals``); the model-based ones
live in the worker layer.

    from assay.synthetic import default_spec, store_synthetic, load_pairs, signal_tasks
    version = store_synthetic(default_spec(n_pairs=40_000))
    pairs = load_pairs(settings, version.label)        # pyarrow table
    tasks = signal_tasks(settings, version.label)      # columns, kind and γ of each signal

``__all__`` names the package's public modules and the names re-exported here.
"""

from assay.synthetic.base import PairBatch, Perturbation, Signal
from assay.synthetic.corpus import KINDS, Corpus, SourceVersion, build_corpus, sentence_id
from assay.synthetic.registry import create_perturbation, create_signal, perturbation_names, signal_names
from assay.synthetic.spec import PerturbationSpec, SignalSpec, SynthesisSpec, default_spec
from assay.synthetic.synthesize import Progress, ProgressCallback, SignalTask, description_of, synthesize
from assay.synthetic.versions import (
    SyntheticVersion,
    find_synthesized,
    load_pairs,
    signal_tasks,
    signal_weights,
    store_pairs,
    store_synthetic,
)

__all__ = [
    "KINDS",
    "Corpus",
    "PairBatch",
    "Perturbation",
    "PerturbationSpec",
    "Progress",
    "ProgressCallback",
    "Signal",
    "SignalSpec",
    "SignalTask",
    "SourceVersion",
    "SynthesisSpec",
    "SyntheticVersion",
    "base",
    "build_corpus",
    "corpus",
    "create_perturbation",
    "create_signal",
    "default_spec",
    "description_of",
    "find_synthesized",
    "load_pairs",
    "masking",
    "ngram",
    "perturbation_names",
    "perturbations",
    "registry",
    "sentence_id",
    "signal_names",
    "signal_tasks",
    "signal_weights",
    "signals",
    "spec",
    "store_pairs",
    "store_synthetic",
    "synthesize",
    "versions",
]
