"""The results store: immutable, hive-partitioned Parquet files written by tasks."""
