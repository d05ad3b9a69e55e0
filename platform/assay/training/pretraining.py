"""Planning synthetic pre-training (BLEURT, Sellam et al. 2020, §4): the stored synthetic
version pinned by digest, one objective per signal column with its weight γ_k (eq. 1,
``ℓ_pre-training = Σ_k γ_k ℓ_k``), and the validation objective.

The pairs and their signal targets come from :mod:`assay.synthetic` (a versioned dataset of
format ``synthetic``); its lineage names the source versions it drew sentences from and the
datasets it excluded, and a plan refuses a synthetic version drawn from a dataset the caller
evaluates on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from assay.catalog.dataset_versions import resolve
from assay.catalog.engine import session_scope
from assay.config import DEFAULT_SEED, Settings
from assay.errors import UsageError
from assay.synthetic.corpus import SYNTHETIC_FORMAT
from assay.synthetic.versions import load_pairs, signal_tasks
from assay.training.plan import DataVersion, StagePlan, check_not_excluded, check_resumable, choose_name

#: the signal objective validation ranks by default (Kendall tau of the held-out pairs): BERTScore
#: F1 is the signal closest to a rating among Table 1's; else the first regression objective
PREFERRED_PRIMARY = ("bertscore_f", "bleu", "rouge_f")


def pretraining_objectives(settings: Settings, ref: str, signals: Sequence[str] | None = None
                           ) -> list[dict[str, Any]]:
    """The objectives of a synthetic version's signals (all, or those whose key is in ``signals``),
    each column an objective with its share of γ_k."""
    tasks = signal_tasks(settings, ref)
    known = [t.key for t in tasks]
    if signals:
        unknown = sorted(set(signals) - set(known))
        if unknown:
            raise UsageError(f"{ref} has no signal {', '.join(unknown)} (signals: {', '.join(known)})")
        tasks = [t for t in tasks if t.key in set(signals)]
    objectives = [o for t in tasks for o in t.objectives()]
    if not objectives:
        raise UsageError(f"{ref} carries no signal to pre-train on")
    return objectives


def primary_objective(objectives: Sequence[dict[str, Any]]) -> str:
    regression = [o["name"] for o in objectives if o["kind"] == "regression"]
    if not regression:
        raise UsageError("pre-training needs at least one regression signal to validate on")
    for name in PREFERRED_PRIMARY:
        if name in regression:
            return name
    return regression[0]


def plan_pretrain(settings: Settings, synthetic: str, *, init: str | None, init_digest: str | None,
                  config: dict[str, Any], name: str | None = None, resume: bool = False,
                  exclude: Sequence[str] = (), signals: Sequence[str] | None = None) -> StagePlan:
    """Pre-training on a stored synthetic version: one head per signal (§4.3)."""
    check_resumable(settings, name, resume)
    with session_scope(settings) as session:
        version = resolve(session, synthetic)
        if version.format != SYNTHETIC_FORMAT:
            raise UsageError(f"{version.label} is a {version.format} dataset, not synthetic pairs; "
                             "make them with `assay synth`")
        ref, label = version.ref, version.label
        rows = int(version.row_counts.get("pairs", 0))
        lineage = dict(version.derivation or {})
    sources = [s["label"] for s in lineage.get("sources", [])]
    check_not_excluded(sources, exclude, f"pre-training on {label} (drawn from {', '.join(sources)})")
    _check_no_evaluation_sentences(settings, ref.pinned, label, [e for e in exclude
                                                                if e not in lineage.get("exclude", [])])
    objectives = pretraining_objectives(settings, ref.pinned, signals)
    data = [DataVersion("pretrain", ref, rows)]
    chosen = choose_name(settings, "pretrain", data, int(config.get("seed", DEFAULT_SEED)), name, resume)
    excluded = sorted({*exclude, *lineage.get("exclude", [])})
    return StagePlan(
        stage="pretrain", name=chosen, init=init, init_digest=init_digest, data=data, objectives=objectives,
        primary=primary_objective(objectives), config=dict(config), excluded=excluded,
        out=str(settings.checkpoints_dir / chosen), work_dir=str(settings.work_dir / "training" / chosen),
    )


def _check_no_evaluation_sentences(settings: Settings, pinned: str, label: str, unchecked: Sequence[str]) -> None:
    """Refuse synthetic pairs whose sentences occur in an evaluation set the synthesis did not
    exclude (a source that contains the evaluation set under another name): the evaluation set is
    never trained on (BLEURT §5.1). Synthesis that excluded it removed such sentences already."""
    from assay.synthetic.corpus import excluded_texts, normalise

    if not unchecked:
        return
    held_out = excluded_texts(settings, unchecked)
    if not held_out:
        return
    table = load_pairs(settings, pinned)
    texts = {t for column in ("reference", "candidate") for t in table.column(column).to_pylist() if t}
    found = sorted(t for t in texts if normalise(t) in held_out)
    if found:
        raise UsageError(f"pre-training on {label}: {len(found)} of its {len(texts)} sentences occur in "
                         f"{', '.join(unchecked)}, which this recipe evaluates on (e.g. {found[0][:80]!r}); "
                         f"synthesize from datasets without them (`assay synth --exclude {unchecked[0]}` removes "
                         "them); the evaluation set is never trained on")


def pretrain_table(settings: Settings, plan: StagePlan) -> pa.Table:
    """The synthetic pairs a pre-training plan pinned (by digest)."""
    (data,) = plan.data
    table = load_pairs(settings, data.version.pinned)
    if table.num_rows != data.rows:
        raise UsageError(f"{data.label}: {table.num_rows} pairs stored, {data.rows} when planned")
    return table
