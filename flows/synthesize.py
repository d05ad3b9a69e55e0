"""The ``synthesize`` flow: BLEURT's synthetic pre-training pairs (Sellam et al., 2020, §4) from
stored dataset versions, stored as a versioned dataset (:mod:`assay.synthetic`). A spec whose
pairs are already stored (same sources, plugins and signatures) returns that version."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger, task

from assay.config import load_settings
from assay.flows.hooks import install_flow_hooks


@task(name="synthesize-pairs", task_run_name="synthesize {name}")
def synthesize_task(spec: dict[str, Any], name: str | None, reuse: bool) -> dict[str, Any]:
    from assay.progress import SynthesisProgress
    from assay.synthetic.spec import SynthesisSpec
    from assay.synthetic.versions import store_synthetic

    # a bar at a terminal, else a line every ASSAY_PROGRESS_EVERY seconds in the run's log
    progress = SynthesisProgress(f"synthesizing {name or 'pairs'}", fallback_sink=get_run_logger().info)
    try:
        return store_synthetic(SynthesisSpec.from_dict(spec), name=name, settings=load_settings(),
                               progress=progress, reuse=reuse).as_dict()
    finally:
        progress.close()


@flow(name="synthesize", on_running=[install_flow_hooks])
def synthesize_flow(spec: dict[str, Any], name: str | None = None, reuse: bool = True) -> dict[str, Any]:
    """Synthesize and store the pairs of ``spec`` (a :class:`~assay.synthetic.spec.SynthesisSpec` dict)."""
    return synthesize_task(spec, name, reuse)
