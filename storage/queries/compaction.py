"""Compaction's SQL: the rows of a partition's small files as one stream, without repeats.

Run by storage.compaction (signal tables) and storage.derived (derived tables).
"""

from __future__ import annotations

from collections.abc import Sequence

from otelbench.storage.queries.tables import ident
from otelbench.storage.schema import Table

DISABLE_PROGRESS_BAR = "SET enable_progress_bar = false"


def dropped_rows_sql(key: Sequence[str], others: bool = False) -> str:
    """The rows of ``$files`` a merge leaves out, as ``(_file, _row)`` (the file's 1-based
    place in ``$files``, the row's in its file), in that order; reads the key columns only.

    Of rows sharing ``key``, all but the first (earliest file, then row). ``others``: also
    the rows whose key one of the files ``$others`` holds (another collector's, which
    keeps it: storage.compaction). The full rows never pass through DuckDB: its sort and
    hash tables cannot spill kilobyte strings, and its Parquet scan of them held ~120 MiB
    over any memory limit; storage.compaction streams them with pyarrow.
    """
    keys = ", ".join(ident(k) for k in key)
    # NOT MATERIALIZED: each use reads only the key columns, straight from the files
    src = (
        f"SELECT {keys}, list_position($files, filename) AS _file, file_row_number AS _row "
        "FROM read_parquet($files, filename = true, file_row_number = true, "
        "union_by_name = true, hive_partitioning = false)"
    )
    elsewhere = ""
    if others:
        # the other files' rows are only probed against these files' keys (the build side)
        elsewhere = f"""
UNION
SELECT _file, _row FROM src SEMI JOIN (
    SELECT {keys} FROM read_parquet($others, union_by_name = true, hive_partitioning = false)
    SEMI JOIN (SELECT {keys} FROM src) AS mine USING ({keys})
) AS elsewhere USING ({keys})"""
    # Candidates first, by a 64-bit hash of the key (8 bytes a row, not the key's text);
    # the exact keys of the few candidates then decide.
    return f"""WITH src AS NOT MATERIALIZED ({src}),
dup_hashes AS (SELECT hash({keys}) AS _h FROM src GROUP BY _h HAVING count(*) > 1)
SELECT _file, _row FROM (
SELECT _file, _row FROM src WHERE hash({keys}) IN (SELECT _h FROM dup_hashes)
QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY _file, _row) > 1{elsewhere}
) ORDER BY _file, _row"""


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
    statistics skip the rest. A span of a merged file (``$merged``: their names) carries
    where it is, ``_file`` (1-based, as in ``dropped_rows_sql``) and ``_row``, so that
    its agent reaches it without a join; the others carry NULLs."""
    stored = "resolved_agent" if partition_has_resolved else "NULL::VARCHAR AS resolved_agent"
    request = "request_agent" if partition_has_request_agent else "NULL::VARCHAR AS request_agent"
    cols = "trace_id, span_id, parent_span_id, agent_name, service_name"
    return f"""SELECT {cols}, {stored}, {request},
       list_position($merged, parse_filename(filename)) AS _file, file_row_number AS _row
FROM read_parquet($partition, union_by_name = true, hive_partitioning = false, filename = true,
                  file_row_number = true)
SEMI JOIN unresolved_traces USING (trace_id)
UNION ALL
SELECT {cols}, agent_name AS resolved_agent, NULL::VARCHAR AS request_agent, NULL::INTEGER, NULL::BIGINT
FROM read_parquet($lake, union_by_name = true, hive_partitioning = false)
SEMI JOIN unresolved_traces USING (trace_id)
WHERE agent_name IS NOT NULL"""


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
