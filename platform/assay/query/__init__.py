"""Read-only DuckDB queries over the Parquet stores.

``__all__`` names its public modules; the package imports none of them itself.
"""

__all__ = ["compare", "duck", "error_matrix", "leaderboard", "literals", "versions"]
