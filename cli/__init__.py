"""The ``assay`` command line.

``__all__`` names its public modules; the package imports none of them itself, so that
``assay --help`` loads only what :mod:`assay.cli.main` needs.
"""

__all__ = [
    "background_server", "background_server_process", "catalog_commands", "checkpoint_commands", "command_preloader",
    "dataset_commands", "deploy_commands", "drift_commands", "error_commands", "eval_commands", "format_commands",
    "job_commands", "main", "options", "output", "report_commands", "robustness_commands", "runner", "score_commands",
    "serve_commands", "server_commands", "service_failures", "suite_commands", "sweep_commands", "synth_commands",
    "team_deployments", "train_commands", "training_options", "worker_commands",
]
