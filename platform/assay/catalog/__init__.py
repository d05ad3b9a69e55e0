"""The SQL catalog (SQLAlchemy 2 + Alembic): datasets, versions, systems, runs, checkpoints, result files."""
