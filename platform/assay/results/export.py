"""Export files: a table of results written where the user asked, as CSV or Parquet."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from assay.errors import UsageError


def write_table(table: pa.Table, out: str) -> None:
    if out.endswith(".parquet"):
        pq.write_table(table, out)
    elif out.endswith(".csv"):
        pacsv.write_csv(table, out)
    else:
        raise UsageError(f"--out {out}: expected a .csv or .parquet file name")
