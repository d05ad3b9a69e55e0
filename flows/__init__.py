"""Prefect flows: orchestration only. Tasks pass paths, ids and digests, never DataFrames."""
