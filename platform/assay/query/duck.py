"""Read-only DuckDB over the Parquet stores, for ``assay sql`` and the leaderboard.

DuckDB runs in-process. Views are created in a throw-away database file which is then reopened
read-only, and only reading statements (SELECT, WITH ... SELECT, DESCRIBE, SHOW, SUMMARIZE,
EXPLAIN) are accepted, so a query can neither change a view nor write a file.

The ``scores`` view (:func:`scores_view`) joins the segment-score store with the judgments. A score
is stored under its segment key, a sha256 of the segment's content
(:func:`assay.results.segment_scores.segment_key`), not under a dataset's ids, so the key of each
judgment row must be computed. It is computed by that very function, registered in every connection
as the SQL function ``segment_key(source, references, candidate)`` (an Arrow-batched UDF), not by a
copy of the rule in SQL: DuckDB's ``to_json`` escapes control characters in upper-case hex
(``\\u000B``) where Python's ``json.dumps`` writes lower case, so a SQL copy would silently miss
such segments. The UDF runs only when a query reads the view, and only on the judgment rows the
query's filters leave (0.7 s per 100,000 rows on this project's 2-core host).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow as pa

from assay.catalog.dataset_versions import list_versions, resolve
from assay.catalog.engine import session_scope
from assay.config import Settings, load_settings
from assay.datasets import store
from assay.datasets.names import DatasetRef
from assay.datasets.schema import OPTIONAL_TABLES, TABLES
from assay.errors import UsageError
from assay.query.literals import sql_literal
from assay.results import segment_scores
from assay.results.external_scores import OFFICIAL

READING_STATEMENTS = {"SELECT", "EXPLAIN"}


def view_name(dataset: str, table: str) -> str:
    base = re.sub(r"[^a-z0-9_]", "_", dataset.lower())
    return base if table == "segments" else f"{base}_{table}"


def dataset_views(settings: Settings, pins: list[str] | None = None) -> dict[str, Path]:
    """View name -> Parquet file, for the latest version of each dataset unless pinned."""
    pinned = {DatasetRef.parse(p).name: p for p in pins or []}
    views: dict[str, Path] = {}
    with session_scope(settings) as session:
        versions = list_versions(session)
        chosen = [resolve(session, pinned[v.dataset.name]) if v.dataset.name in pinned else v for v in versions]
        missing = set(pinned) - {v.dataset.name for v in versions}
        if missing:
            resolve(session, pinned[sorted(missing)[0]])  # raises NotFoundError with the known names
        for version in chosen:
            for table in TABLES:
                views[view_name(version.dataset.name, table)] = store.table_path(settings, version.store_path, table)
            for table in OPTIONAL_TABLES:
                if store.has_table(settings, version.store_path, table):
                    views[view_name(version.dataset.name, table)] = store.table_path(settings, version.store_path,
                                                                                     table)
    return views


#: the SQL name of :func:`assay.results.segment_scores.segment_key` in every connection
SEGMENT_KEY_FUNCTION = "segment_key"

#: the name of the view of segment scores joined with the judgments (:func:`scores_view`)
SCORES_VIEW = "scores"


def _segment_keys(source: pa.Array, references: pa.Array, candidate: pa.Array) -> pa.Array:
    """:func:`~assay.results.segment_scores.segment_key` of each row of a batch (DuckDB's Arrow UDF)."""
    columns = {"source": source.to_pylist(), "references": references.to_pylist(), "candidate": candidate.to_pylist()}
    return pa.array(segment_scores.segment_keys(columns), pa.string())


def register_functions(con: duckdb.DuckDBPyConnection) -> None:
    """Make Assay's SQL functions callable on ``con``: ``segment_key(source, references, candidate)``."""
    from duckdb.func import FunctionNullHandling, PythonUDFType
    from duckdb.sqltypes import VARCHAR

    # SPECIAL: a null source (a reference-free segment) is passed on, as segment_key takes it
    con.create_function(SEGMENT_KEY_FUNCTION, _segment_keys, [VARCHAR, duckdb.list_type(VARCHAR), VARCHAR], VARCHAR,
                        type=PythonUDFType.ARROW, null_handling=FunctionNullHandling.SPECIAL, side_effects=False)


def scores_view(settings: Settings, judgments: str = "segments", official: str | None = None) -> str:
    """The ``scores`` view's query: every stored segment score joined with every judgment row of
    ``judgments`` (a view of segment judgments) whose segment key it was stored under; one row per
    (signature, judgment row). A key stored twice under one signature (two concurrent runs;
    identical scores) counts once, the earlier row.

    An official submission's score is the one its submitters gave that system's segment, read from
    ``official`` (the versions' ``metric_scores``, :mod:`assay.jobs.official_scores`): the store holds
    one score per segment content, the mean where a submission scored two systems' identical
    outputs differently."""
    source = segment_scores.sql_source(settings)
    stored = (f"SELECT metric, signature, key, score, extra, run_id FROM {source} "
              "QUALIFY row_number() OVER (PARTITION BY metric, signature, key ORDER BY created_at, run_id) = 1"
              if source is not None else
              "SELECT NULL::VARCHAR AS metric, NULL::VARCHAR AS signature, NULL::VARCHAR AS key, "
              "NULL::DOUBLE AS score, NULL::MAP(VARCHAR, DOUBLE) AS extra, NULL::VARCHAR AS run_id WHERE false")
    score, submitted = "s.score", ""
    if official is not None:
        score = "CASE WHEN o.metric IS NOT NULL THEN o.score ELSE s.score END"
        submitted = (
            f' LEFT JOIN (SELECT * FROM "{official}" WHERE level = \'seg\') AS o '
            'ON o.dataset = j.dataset AND o.version_digest = j.version_digest AND o."group" = j."group" '
            "AND o.system = j.system AND o.segment_id = j.segment_id AND o.metric = s.metric "
            f"AND s.signature LIKE '%|{OFFICIAL}:%' "
            "AND o.reference = regexp_extract(s.signature, '\\|ref:([^|]+)', 1)"
        )
    return (
        'SELECT s.metric, s.signature, j.dataset, j.version_digest, j."group", j.aspect, j.item_id, j.segment_id, '
        f"j.system, j.is_human, {score} AS score, s.extra, j.human_z, j.human_raw, j.rating_count, j.ratings, key, "
        "s.run_id "
        f'FROM (SELECT *, {SEGMENT_KEY_FUNCTION}(source, "references", candidate) AS key FROM "{judgments}") AS j '
        f"JOIN ({stored}) AS s USING (key){submitted}"
    )


@contextmanager
def readonly_connection(
    views: dict[str, Path], extra: dict[str, str] | None = None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only DuckDB connection with one view per Parquet file (and any ``extra`` views,
    given as trusted SQL built by Assay itself). A file written before a store column was renamed
    shows it under its current name (:func:`assay.datasets.store.sql_columns`). Assay's SQL
    functions (:func:`register_functions`) are callable in the views and the queries."""
    with tempfile.TemporaryDirectory(prefix="assay-duckdb-") as tmp:
        db_path = str(Path(tmp) / "views.duckdb")
        with duckdb.connect(db_path) as con:
            register_functions(con)
            for name, path in views.items():
                con.execute(f'CREATE VIEW "{name}" AS SELECT {store.sql_columns(path)} '
                            f'FROM read_parquet({sql_literal(str(path))})')
            for name, sql in (extra or {}).items():
                con.execute(f'CREATE VIEW "{name}" AS {sql}')
        con = duckdb.connect(db_path, read_only=True)
        try:
            register_functions(con)
            yield con
        finally:
            con.close()


def run_user_query(
    query: str, pins: list[str] | None = None, settings: Settings | None = None
) -> tuple[list[str], list[tuple]]:
    """Execute a user's reading query; returns (column names, rows)."""
    settings = settings or load_settings()
    statements = duckdb.extract_statements(query)
    if not statements:
        raise UsageError("empty query")
    for statement in statements:
        kind = statement.type.name
        if kind not in READING_STATEMENTS:
            raise UsageError(f"`assay sql` is read-only: {kind} statements are not allowed")
    views = dataset_views(settings, pins)
    union: dict[str, str] = {}
    for table in [*TABLES, *OPTIONAL_TABLES]:
        parts = [f'SELECT * FROM "{v}"' for v in views if _table_of(v, views) == table]
        if parts and table not in views:
            union[table] = " UNION ALL BY NAME ".join(parts)
    if "segments" in union and SCORES_VIEW not in views:  # a dataset named like a view keeps its name
        union[SCORES_VIEW] = scores_view(settings, official="metric_scores" if "metric_scores" in union else None)
    with readonly_connection(views, union) as con:
        try:
            result = con.execute(query)
        except duckdb.Error as exc:
            raise UsageError(f"query failed: {exc}") from exc
        columns = [d[0] for d in result.description or []]
        return columns, result.fetchall()


def _table_of(view: str, views: dict[str, Path]) -> str:
    return views[view].stem
