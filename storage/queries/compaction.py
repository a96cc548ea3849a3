"""Compaction's SQL: the rows of a partition's small files as one stream, without repeats.

Run by storage.compaction (signal tables) and storage.derived (derived tables).
"""

from __future__ import annotations

from collections.abc import Sequence

from storage.queries.tables import ident
from storage.schema import Table

DISABLE_PROGRESS_BAR = "SET enable_progress_bar = false"


def compact_sql(columns: Sequence[str], key: Sequence[str]) -> str:
    """Rows of ``$files`` as one stream, without key repeats.

    Of rows sharing ``key``, the first (earliest file, then row) is kept. Duplicates are
    found on the key columns alone; the full rows only stream (no ORDER BY: DuckDB's
    sort cannot spill kilobyte strings; ``storage.rowgroups`` orders the row groups).
    ``columns``: the ones the files have.
    """
    ctes, rows = _compact_rows(key)
    cols = ", ".join(ident(c) for c in columns)
    return f"{ctes} SELECT {cols} FROM {rows}"


def compact_spans_sql(columns: Sequence[str], key: Sequence[str]) -> str:
    """``compact_sql`` for spans, with ``resolved_agent`` filled (the rule: storage.schema).

    A span without agent_name or resolved_agent looks its parent up: among the spans of
    the whole lake (``$lake``) that name an agent — few, and the files' row-group
    statistics skip the rest — else among every span of its own partition
    (``$partition``), which resolves it to its service. A parent found nowhere leaves it
    NULL: the views' join resolves it at query time, a later compaction for good.
    """
    ctes, rows = _compact_rows(key)
    given = "s.resolved_agent" if "resolved_agent" in columns else "NULL"
    resolved = (
        f"coalesce({given}, s.agent_name, CASE WHEN s.parent_span_id IS NULL THEN s.service_name END, "
        "n.agent_name, CASE WHEN h.span_id IS NOT NULL THEN s.service_name END) AS resolved_agent"
    )
    cols = ", ".join(resolved if c == "resolved_agent" else f"s.{ident(c)}" for c in columns)
    if "resolved_agent" not in columns:
        cols += f", {resolved}"
    given_src = "resolved_agent" if "resolved_agent" in columns else "NULL"
    # the parent to look up; NULL (no hash-join work) for rows that need none
    parent = f"CASE WHEN s.agent_name IS NULL AND {given} IS NULL THEN s.parent_span_id END"
    return f"""{ctes},
wanted AS (
    SELECT DISTINCT trace_id, parent_span_id AS span_id FROM src
    WHERE agent_name IS NULL AND {given_src} IS NULL AND parent_span_id IS NOT NULL
),
named AS (
    SELECT p.trace_id, p.span_id, any_value(p.agent_name) AS agent_name
    FROM read_parquet($lake, union_by_name = true, hive_partitioning = false) AS p
    SEMI JOIN wanted USING (trace_id, span_id)
    WHERE p.agent_name IS NOT NULL
    GROUP BY p.trace_id, p.span_id
),
near AS (
    SELECT DISTINCT p.trace_id, p.span_id
    FROM read_parquet($partition, union_by_name = true, hive_partitioning = false) AS p
    SEMI JOIN wanted USING (trace_id, span_id)
)
SELECT {cols}
FROM {rows} AS s
LEFT JOIN named AS n ON n.trace_id = s.trace_id AND n.span_id = {parent}
LEFT JOIN near AS h ON h.trace_id = s.trace_id AND h.span_id = {parent}"""


def _compact_rows(key: Sequence[str]) -> tuple[str, str]:
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
    return (
        f"""WITH src AS NOT MATERIALIZED ({src}),
dup_keys AS (SELECT {keys} FROM src GROUP BY ALL HAVING count(*) > 1),
drop_rows AS (
    SELECT _file, _row FROM src SEMI JOIN dup_keys USING ({keys})
    QUALIFY row_number() OVER (PARTITION BY {keys} ORDER BY _file, _row) > 1
),
kept AS NOT MATERIALIZED (SELECT * FROM src ANTI JOIN drop_rows USING (_file, _row))""",
        "kept",
    )


def compact_derived_sql(t: Table) -> str:
    """The rows of derived ``$files`` that a view of the whole table (``$table``) could
    still show, oldest commit first: of each result set only its latest commit
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
    return f"""WITH {live}
SELECT {shown}
FROM read_parquet($files, union_by_name = true, hive_partitioning = false) AS f
SEMI JOIN live USING (committed_at, _row)
ORDER BY f.committed_at, f._row"""
