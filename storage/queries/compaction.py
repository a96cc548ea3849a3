"""Compaction's SQL: the rows of a partition's small files as one stream, without repeats.

Run by storage.compaction (signal tables) and storage.derived (derived tables).
"""

from __future__ import annotations

from collections.abc import Sequence

from storage.queries.tables import ident
from storage.schema import Table

DISABLE_PROGRESS_BAR = "SET enable_progress_bar = false"


def compact_sql(columns: Sequence[str], key: Sequence[str], others: bool = False) -> str:
    """Rows of ``$files`` as one stream, without key repeats.

    Of rows sharing ``key``, the first (earliest file, then row) is kept. Duplicates are
    found on the key columns alone; the full rows only stream (no ORDER BY: DuckDB's
    sort cannot spill kilobyte strings; ``storage.rowgroups`` orders the row groups).
    ``columns``: the ones the files have. ``others``: also drop the rows whose key one of
    the files ``$others`` holds (another collector's, which keeps it: storage.compaction).
    """
    ctes, rows = _compact_rows(key, others)
    cols = ", ".join(ident(c) for c in columns)
    return f"{ctes} SELECT {cols} FROM {rows}"


def compact_spans_sql(columns: Sequence[str], key: Sequence[str], others: bool = False) -> str:
    """``compact_sql`` for spans, with ``resolved_agent`` filled from ``agents_found``
    (trace_id, span_id, resolved_agent: what ``storage.agents`` resolved for the rows that
    need it, registered by storage.compaction). A row it could not resolve stays NULL: the
    views' join resolves it at query time, a later compaction for good."""
    ctes, rows = _compact_rows(key, others)
    given = "s.resolved_agent" if "resolved_agent" in columns else "NULL"
    resolved = f"coalesce({given}, s.agent_name, f.agent) AS resolved_agent"
    cols = ", ".join(resolved if c == "resolved_agent" else f"s.{ident(c)}" for c in columns)
    if "resolved_agent" not in columns:
        cols += f", {resolved}"
    # the key to look up; NULL (no hash-join work) for rows that need none
    need = f"CASE WHEN s.agent_name IS NULL AND {given} IS NULL THEN s.span_id END"
    return f"""{ctes},
found AS (
    -- one row per span even if the lookup met it twice, so the join never doubles a row
    SELECT trace_id, span_id, any_value(resolved_agent) AS agent FROM agents_found GROUP BY ALL
)
SELECT {cols}
FROM {rows} AS s
LEFT JOIN found AS f ON f.trace_id = s.trace_id AND f.span_id = {need}"""


def unresolved_traces_sql(has_resolved: bool) -> str:
    """The traces of ``$files`` with spans whose agent is not resolved yet."""
    given = "resolved_agent" if has_resolved else "NULL"
    return f"""SELECT DISTINCT trace_id
FROM read_parquet($files, union_by_name = true, hive_partitioning = false)
WHERE agent_name IS NULL AND {given} IS NULL"""


def agent_lookup_sql(partition_has_resolved: bool, partition_has_request_agent: bool) -> str:
    """What ``storage.agents`` needs to resolve the spans of ``unresolved_traces``: every
    span of those traces in the partition (``$partition``, the merged files among them),
    and those elsewhere in the lake (``$lake``) that name an agent — few, and row-group
    statistics skip the rest."""
    stored = "resolved_agent" if partition_has_resolved else "NULL::VARCHAR AS resolved_agent"
    request = "request_agent" if partition_has_request_agent else "NULL::VARCHAR AS request_agent"
    cols = "trace_id, span_id, parent_span_id, agent_name, service_name"
    return f"""SELECT {cols}, {stored}, {request}
FROM read_parquet($partition, union_by_name = true, hive_partitioning = false)
SEMI JOIN unresolved_traces USING (trace_id)
UNION ALL
SELECT {cols}, agent_name AS resolved_agent, NULL::VARCHAR AS request_agent
FROM read_parquet($lake, union_by_name = true, hive_partitioning = false)
SEMI JOIN unresolved_traces USING (trace_id)
WHERE agent_name IS NOT NULL"""


def _compact_rows(key: Sequence[str], others: bool = False) -> tuple[str, str]:
    """The CTEs shared by the compaction queries, and the relation of the rows kept."""
    # NOT MATERIALIZED: each use reads only the columns it needs, straight from the files
    src = (
        "SELECT *, list_position($files, filename) AS _file, file_row_number AS _row "
        "FROM read_parquet($files, filename = true, file_row_number = true, "
        "union_by_name = true, hive_partitioning = false)"
    )
    if not key:
        return f"WITH src AS NOT MATERIALIZED ({src})", "src"
    keys = ", ".join(ident(k) for k in key)
    elsewhere = anti = ""
    if others:
        # the other files' rows are only probed against these files' keys (the build side)
        elsewhere = f"""
elsewhere AS (
    SELECT {keys} FROM read_parquet($others, union_by_name = true, hive_partitioning = false)
    SEMI JOIN (SELECT {keys} FROM src) AS mine USING ({keys})
),"""
        anti = f" ANTI JOIN elsewhere USING ({keys})"
    return (
        f"""WITH src AS NOT MATERIALIZED ({src}),
dup_keys AS (SELECT {keys} FROM src GROUP BY ALL HAVING count(*) > 1),
drop_rows AS (
    SELECT _file, _row FROM src SEMI JOIN dup_keys USING ({keys})
    QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY _file, _row) > 1
),{elsewhere}
kept AS NOT MATERIALIZED (SELECT * FROM src ANTI JOIN drop_rows USING (_file, _row){anti})""",
        "kept",
    )


def compact_derived_sql(t: Table) -> str:
    """The rows of derived ``$files`` that a view of the whole table (``$table``) could
    still show, sorted by result set and key (``replace_by``, ``key``: a reader narrowed
    to one agent's clusters or one run's scores then reads a few row groups), then oldest
    commit first: of each result set only its latest commit
    (tombstone included: it hides the set's rows in partitions not merged now), of each
    key only its latest row (storage.derived has the rule)."""
    keep = []
    window = []
    if t.replace_by is not None:
        over = f"PARTITION BY {', '.join(ident(c) for c in t.replace_by)}" if t.replace_by else ""
        window.append(f"committed_at = max(committed_at) OVER ({over}) AS _set_live")
        keep.append("_set_live")
    if t.key:
        over = f"PARTITION BY {', '.join(ident(c) for c in t.key)} ORDER BY committed_at DESC, _row DESC"
        window.append(f"row_number() OVER ({over}) = 1 AS _key_live")
        keep.append("(_key_live OR _tombstone)")
    needed = sorted({*(t.replace_by or ()), *t.key})
    cols = ", ".join([*(ident(c) for c in needed), "committed_at", "_row", "_tombstone"])
    live = f"""live AS (
    SELECT committed_at, _row FROM (
        SELECT committed_at, _row, _tombstone{"".join(", " + w for w in window)}
        FROM (SELECT {cols} FROM read_parquet($table, union_by_name = true, hive_partitioning = false))
    ){f"{chr(10)}    WHERE {' AND '.join(keep)}" if keep else ""}
)"""
    shown = ", ".join(f"f.{ident(c)}" for c in t.stored_columns)
    order = ", ".join(f"f.{ident(c)}" for c in [*(t.replace_by or ()), *t.key, "committed_at", "_row"])
    return f"""WITH {live}
SELECT {shown}
FROM read_parquet($files, union_by_name = true, hive_partitioning = false) AS f
SEMI JOIN live USING (committed_at, _row)
ORDER BY {order}"""
