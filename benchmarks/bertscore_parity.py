"""BERTScore: Assay against the bert_score library on WMT17 to-English (3,920 pairs).

Scores every segment of WMT17's to-English DA set with all-MiniLM-L6-v2, layer 4, through Assay
(``assay.workers.bertscore.BERTScorer``) and through bert_score 0.3.13 (``bert_score.BERTScorer``
with the same model folder as ``model_type`` and ``num_layers=4``), with and without idf, in one
process. Both models are loaded before anything is timed. Prints one JSON object:

  max_abs_diff              largest |Assay - bert_score| over P, R, F and both idf settings
  assay_pairs_per_s         pairs per second of Assay's ``score`` (no idf; includes tokenization)
  bert_score_pairs_per_s    pairs per second of bert_score's ``score`` (no idf)
  speedup_vs_bert_score     bert_score time / Assay time (no idf); ``*_idf`` keys: the same with idf
                            (idf computation included on both sides)
  floor_ratio               Assay time (no idf) / the floor: a bare forward pass of the same truncated
                            encoder over the same unique sentences without any padding (see FLOOR)
  n_pairs, n_unique_sentences, n_tokens, device, versions, timing details

Timing: the runs are interleaved (bert_score, Assay, floor, ...) ``--repeats`` times and the fastest
run of each is reported, since the 2-core machine is shared and other jobs only ever add time.

Usage: ``.venv/bin/python benchmarks/bertscore_parity.py [--data ../shared/data/wmt17-da] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import json
import os
import platform as stdlib_platform
import sys
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "wmt17-da"
LAYER = 4

FLOOR = (
    "bare forward pass of the truncated encoder (same model object as Assay's, torch.inference_mode) over "
    "the unique sentences, tokenized beforehand: sentences grouped by exact token length and each group cut "
    "into batches of at most token_budget tokens, so no pad token is computed and no attention mask is "
    "passed. This is the fewest FLOPs this encoder can spend on these tokens (a packed row with a "
    "block-diagonal mask computes the same linear layers plus masked-out attention scores; one sequence "
    "at a time computes the same FLOPs with smaller matrix products). Tokenization, idf and matching "
    "are not in the floor."
)


# --------------------------------------------------------------------------------------------------
# Data


def load_pairs_direct(root: Path) -> tuple[list[str], list[str], list[str]]:
    """Candidates, references and language pairs of the to-English rows of ``DA-seglevel.csv``."""
    lines_cache: dict[Path, list[str]] = {}

    def line(path: Path, sid: int) -> str:
        if path not in lines_cache:
            lines_cache[path] = path.read_text(encoding="utf-8-sig").split("\n")
        return lines_cache[path][sid - 1]

    def system_file(lp: str, system: str) -> Path:
        names = [{"CASICT-cons.5144": "CASICT-DCU-NMT.5144"}.get(n, n) for n in system.split("+")]
        for name in names:
            path = root / "system-outputs" / "newstest2017" / lp / f"newstest2017.{name}.{lp}"
            if path.is_file():
                return path
        for name in system.split("+"):  # ROCMT.5167 exists only in the preprocessed package
            path = root / "metrics-package-preprocessed" / "system-outputs" / lp / f"newstest2017.{name}.{lp}"
            if path.is_file():
                return path
        raise FileNotFoundError(f"no output file for system {system!r} of {lp}")

    candidates, references, lps = [], [], []
    rows = (root / "DA-seglevel.csv").read_text(encoding="utf-8").splitlines()
    header = rows[0].split()
    for row in rows[1:]:
        fields = dict(zip(header, row.split(), strict=True))
        lp = fields["LP"]
        src, tgt = lp.split("-")
        if tgt != "en":
            continue
        sid = int(fields["SID"])
        references.append(line(root / "references" / f"newstest2017-{src}{tgt}-ref.en", sid))
        candidates.append(line(system_file(lp, fields["SYSTEM"]), sid))
        lps.append(lp)
    return candidates, references, lps


def load_pairs(root: Path) -> tuple[list[str], list[str], str]:
    """The 3,920 pairs: from Assay's WMT DA parser when it is there and works, else read directly.

    When the parser is used, its pairs are checked against the direct reading (as multisets).
    """
    direct_cands, direct_refs, _ = load_pairs_direct(root)
    try:
        from assay.datasets.formats import parse

        table = parse(root, "wmt-da").tables["segments"]
        groups = table.column("group").to_pylist()
        keep = [i for i, g in enumerate(groups) if str(g).endswith("-en")]
        all_cands = table.column("candidate").to_pylist()
        all_refs = table.column("references").to_pylist()
        cands = [all_cands[i] for i in keep]
        refs = [all_refs[i][0] for i in keep if len(all_refs[i]) == 1]
    except Exception as exc:  # written by another engineer; fall back to reading the files
        return direct_cands, direct_refs, f"read directly (the wmt-da parser failed: {type(exc).__name__})"
    if len(cands) != len(refs) or Counter(zip(cands, refs, strict=True)) != Counter(
        zip(direct_cands, direct_refs, strict=True)
    ):
        return direct_cands, direct_refs, "read directly (the wmt-da parser's pairs differ from the files)"
    return cands, refs, "assay.datasets.formats wmt-da parser (same pairs as reading the files directly)"


# --------------------------------------------------------------------------------------------------
# Timing helpers


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def floor_batches(token_ids: list[list[int]], token_budget: int) -> list[torch.Tensor]:
    """Equal-length batches of at most ``token_budget`` tokens (no padding), built before timing."""
    by_length: dict[int, list[list[int]]] = defaultdict(list)
    for ids in token_ids:
        by_length[len(ids)].append(ids)
    batches = []
    for length in sorted(by_length):
        group = by_length[length]
        size = max(1, token_budget // length)
        for start in range(0, len(group), size):
            batches.append(torch.tensor(group[start : start + size], dtype=torch.long))
    return batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the wmt17-da folder")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved timing repeats (fastest kept)")
    parser.add_argument("--token-budget", type=int, default=None, help="Assay's tokens per forward batch")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    import bert_score
    import transformers

    import assay
    from assay.workers.bertscore import BERTScorer
    from assay.workers.encoder import default_model_path

    candidates, references, source = load_pairs(args.data)
    model_folder = default_model_path()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = BERTScorer(None, LAYER, token_budget=args.token_budget)
        theirs = bert_score.BERTScorer(model_type=str(model_folder), num_layers=LAYER)
    model = ours.encoder.model

    def run_ours(idf: bool) -> tuple[np.ndarray, ...]:
        ours.idf = idf
        return ours.score(candidates, [[r] for r in references])

    def run_theirs(idf: bool) -> tuple[np.ndarray, ...]:
        theirs._idf = idf
        if idf:
            theirs._idf_dict = None
            theirs.compute_idf(references)  # bert_score.score(idf=True) takes idf from the references
        p, r, f = theirs.score(candidates, references)
        return p.numpy(), r.numpy(), f.numpy()

    unique = list(dict.fromkeys(s.strip() for s in [*candidates, *references]))
    token_ids, _ = ours.tokenize(unique)
    blocks = floor_batches(token_ids, ours.token_budget)

    def run_floor() -> None:
        with torch.inference_mode():
            for block in blocks:
                model(input_ids=block)

    # Warm-up (allocator, thread pools, lazy imports) on a slice, then interleaved timed runs.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours.score(candidates[:64], references[:64])
        theirs.score(candidates[:64], references[:64])

    times: dict[str, list[float]] = defaultdict(list)
    diffs: dict[str, float] = {}
    for _ in range(args.repeats):
        for idf in (False, True):
            tag = "_idf" if idf else ""
            t_theirs, out_theirs = timed(functools.partial(run_theirs, idf))
            t_ours, out_ours = timed(functools.partial(run_ours, idf))
            times["bert_score" + tag].append(t_theirs)
            times["assay" + tag].append(t_ours)
            for name, a, b in zip("PRF", out_ours, out_theirs, strict=True):
                diffs[f"{name}{tag}"] = float(np.max(np.abs(a - b)))
            if not idf:
                times["floor"].append(timed(run_floor)[0])

    best = {k: min(v) for k, v in times.items()}
    n = len(candidates)
    result = {
        "max_abs_diff": max(diffs.values()),
        "assay_pairs_per_s": round(n / best["assay"], 1),
        "bert_score_pairs_per_s": round(n / best["bert_score"], 1),
        "speedup_vs_bert_score": round(best["bert_score"] / best["assay"], 3),
        "floor_ratio": round(best["assay"] / best["floor"], 3),
        "speedup_vs_bert_score_idf": round(best["bert_score_idf"] / best["assay_idf"], 3),
        "floor_ratio_idf": round(best["assay_idf"] / best["floor"], 3),
        "n_pairs": n,
        "n_unique_sentences": len(unique),
        "n_tokens": int(sum(len(t) for t in token_ids)),
        "device": f"{ours.device} ({torch.get_num_threads()} torch threads, {os.cpu_count()} cores)",
        "versions": {
            "python": stdlib_platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "bert_score": f"{importlib.metadata.version('bert-score')} (module says {bert_score.__version__})",
            "assay": assay.__version__,
            "numpy": np.__version__,
        },
        "seconds_best": {k: round(v, 3) for k, v in best.items()},
        "seconds_all": {k: [round(x, 3) for x in v] for k, v in times.items()},
        "max_abs_diff_by_score": diffs,
        "model": f"{ours.encoder.name} ({model_folder}), layer {LAYER}",
        "token_budget": ours.token_budget,
        "floor": FLOOR,
        "data": f"{args.data} ({source})",
        "signature": ours.signature(),
    }
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
