"""Alembic environment and versions for the catalog (batch mode: SQLite and PostgreSQL share them)."""
