"""Read-only DuckDB queries over the Parquet stores."""
