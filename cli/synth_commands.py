"""``assay synth``: BLEURT-style synthetic pre-training pairs (Sellam et al., 2020, §4) from stored
dataset versions, stored as a versioned dataset with their lineage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from assay.cli.options import quiet_option
from assay.cli.output import emit_json
from assay.errors import UsageError
from assay.provenance import short


def _signal(text: str) -> dict[str, Any]:
    name, sep, weight = text.partition("=")
    if not name:
        raise UsageError(f"--signal {text!r}: expected NAME or NAME=WEIGHT")
    try:
        return {"name": name, "weight": float(weight) if sep else 1.0}
    except ValueError:
        raise UsageError(f"--signal {text!r}: the weight must be a number (e.g. bleu=0.5)") from None


def spec_from_options(spec_file: Path | None, sources: tuple[str, ...], exclude: tuple[str, ...], pairs: int | None,
                      seed: int | None, signals: tuple[str, ...], masked_lm: str | None,
                      backtranslation: str | None, nli_model: str | None) -> dict[str, Any]:
    """The synthesis spec the options describe (checked), starting from ``--spec FILE`` or the
    default recipe (WMT16 + WMT18, excluding WMT17; n-gram mask filling, system outputs, word
    dropping; BLEU, ROUGE, chrF, BERTScore and the backtranslation flag)."""
    from assay.synthetic.spec import SynthesisSpec
    from assay.training.recipes import BleurtRecipe

    if spec_file is not None:
        try:
            data = json.loads(spec_file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UsageError(f"--spec {spec_file}: not a readable JSON file ({exc})") from exc
    else:
        data = BleurtRecipe().synthesis_spec().as_dict()
        if masked_lm:
            data["perturbations"][0] = {"name": "mask_filling_mlm", "share": data["perturbations"][0]["share"],
                                        "params": {"model": masked_lm}}
    if sources:
        data["sources"] = list(sources)
    if exclude:
        data["exclude"] = list(exclude)
    if pairs is not None:
        data["n_pairs"] = pairs
    if seed is not None:
        data["seed"] = seed
    if signals:
        data["signals"] = [_signal(s) for s in signals]
    if backtranslation:
        forward, sep, backward = backtranslation.partition(",")
        if not sep or not forward or not backward:
            raise UsageError(f"--backtranslation {backtranslation!r}: expected EN_TO_X_MODEL,X_TO_EN_MODEL")
        models = {"forward_model": forward, "backward_model": backward}
        share = next((p["share"] for p in data["perturbations"] if p["name"] == "system_outputs"), 0.5)
        data["perturbations"] = [p for p in data["perturbations"] if p["name"] != "system_outputs"]
        data["perturbations"].append({"name": "backtranslation", "share": share, "params": models})
        data["signals"].append({"name": "backtrans_likelihood", "weight": 1.0, "params": models})
    if nli_model:
        data["signals"].append({"name": "entailment", "weight": 1.0, "params": {"model": nli_model}})
    return SynthesisSpec.from_dict(data).as_dict()


@click.command("synth")
@click.option("--from", "sources", multiple=True, metavar="NAME[@VERSION]",
              help="Datasets to draw English sentences from (default wmt16, wmt18).")
@click.option("--exclude", multiple=True, metavar="NAME", help="Datasets never drawn from (default wmt17).")
@click.option("--pairs", type=int, help="Pairs to make (default 40,000).")
@click.option("--seed", type=int, help="Seed of every random draw.")
@click.option("--signal", "signals", multiple=True, metavar="NAME[=WEIGHT]",
              help="Signals to compute, with their loss weight gamma (repeatable; default: bleu, rouge, chrf, "
                   "bertscore, backtrans_flag).")
@click.option("--masked-lm", metavar="MODEL", help="Fill masks with this Hugging Face masked LM (folder or hub id).")
@click.option("--backtranslation", metavar="EN_X,X_EN",
              help="Two Hugging Face translation models: backtranslation replaces the system outputs, and "
                   "adds the backtranslation likelihood signal.")
@click.option("--nli-model", metavar="MODEL", help="An NLI classifier: adds the entailment signal.")
@click.option("--spec", "spec_file", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="A JSON synthesis spec (options given as well override it).")
@click.option("--name", help="Dataset name (default synth-<sources>).")
@quiet_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def synth_command(sources: tuple[str, ...], exclude: tuple[str, ...], pairs: int | None, seed: int | None,
                  signals: tuple[str, ...], masked_lm: str | None, backtranslation: str | None,
                  nli_model: str | None, spec_file: Path | None, name: str | None, as_json: bool) -> None:
    """Make synthetic sentence pairs with signal targets for pre-training, as a versioned dataset.

    Sentences come from the stored versions named (references, sources and system outputs in
    English), deduplicated and filtered by length; perturbed by mask filling, word dropping and
    real system outputs (or backtranslation); labelled with every signal. The same spec on the
    same data returns the stored version.
    """
    from assay.cli.runner import run_flow

    spec = spec_from_options(spec_file, sources, exclude, pairs, seed, signals, masked_lm, backtranslation, nli_model)
    result = run_flow("synthesize", spec, name)
    if as_json:
        emit_json(result)
        return
    state = "new version" if result["created"] else "already stored"
    click.echo(f"{result['label']} ({short(result['version_digest'])}, synthetic): {state}; {result['rows']:,} pairs")


def register(cli: click.Group) -> None:
    cli.add_command(synth_command)
