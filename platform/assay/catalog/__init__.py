"""The SQL catalog (SQLAlchemy 2 + Alembic): datasets, versions, systems, runs, checkpoints, result files.

``__all__`` names its public modules; the package imports none of them itself.
"""

__all__ = ["dataset_versions", "engine", "models", "version_detail"]
