"""The lake's tables as SQL: paths, literals, one view per table.

Signal tables are read as stored; a derived table's view applies its "latest wins" rule
(``derived_view_sql``; the rule itself: storage.derived). Values are always bound as
parameters. The only things ever formatted into SQL are the lake's own folder path
(``CREATE VIEW`` cannot take parameters) and names from ``storage.schema`` — both ours,
never a caller's, and both quoted.
"""

from __future__ import annotations

import json
from pathlib import Path

from otelbench.storage import is_remote
from otelbench.storage.schema import MOVED_ATTRIBUTES, PARTITION_COLUMN, SIGNAL, SPANS, Table

_GLOB_CHARS = set("*?[]{}")
_READ_OPTIONS = f"hive_partitioning = true, union_by_name = true, hive_types = {{'{PARTITION_COLUMN}': 'DATE'}}"


def sql_string(value: str) -> str:
    """A SQL string literal; used only for the lake path, which views cannot bind."""
    return "'" + value.replace("'", "''") + "'"


def ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def lake_location(lake_root: str | Path) -> str:
    """The lake's location as SQL reads it: an absolute folder, or ``s3://bucket/prefix``."""
    return str(lake_root).rstrip("/") if is_remote(lake_root) else str(Path(lake_root).absolute())


def table_glob(lake_root: str | Path, table: str) -> str:
    """Every Parquet file of ``table``; hidden temp files and journals never match."""
    root = lake_location(lake_root)
    if _GLOB_CHARS & set(root):
        # the path becomes a glob pattern: a '[' in a folder name would silently match nothing
        raise ValueError(f"lake path must not contain any of {''.join(sorted(_GLOB_CHARS))}: {root}")
    return f"{root}/{table}/*/*.parquet"


def read_table_sql(lake_root: str | Path, table: str, *, row_numbers: bool = False) -> str:
    """The ``read_parquet`` call behind a table view.

    union_by_name: files written before a column was added still read (as NULL); the seed
    file always carries the current schema. hive_types pins ``date`` to DATE rather than
    trusting auto-detection.
    """
    extra = ", filename = true, file_row_number = true" if row_numbers else ""
    return f"read_parquet({sql_string(table_glob(lake_root, table))}, {_READ_OPTIONS}{extra})"


def read_files_sql(files_param: str, *, row_numbers: bool = False) -> str:
    """``read_table_sql`` for some of a table's files: a glob or list bound to
    ``$files_param`` (``storage.files.day_globs``, a table's glob)."""
    extra = ", filename = true, file_row_number = true" if row_numbers else ""
    return f"read_parquet(${files_param}, {_READ_OPTIONS}{extra})"


def span_attributes_sql(alias: str = "") -> str:
    """``spans.attributes`` as sent: the keys the files store once (``attributes_moved``,
    storage.schema.MOVED_ATTRIBUTES) put back from their columns. Computed only when a
    query reads ``attributes``; a row with nothing moved is read as stored.

    The moved pairs are spliced into the stored object's text, each only where its key is
    named: the stored keys and values stay byte for byte as written, and a key that was not
    moved is never touched (a JSON merge patch would read an unmoved key's NULL as "delete
    this key", and would re-print every stored number)."""
    p = f"{alias}." if alias else ""
    pairs = ", ".join(f"CASE WHEN list_contains({p}attributes_moved, {sql_string(key)}) "
                      f"THEN {sql_string(json.dumps(key) + ':')} || to_json({p}{ident(column)}) END"
                      for key, column in MOVED_ATTRIBUTES.items())
    rest = f"CASE WHEN {p}attributes IS NULL OR {p}attributes = '{{}}' THEN '}}' ELSE ',' || substr({p}attributes, 2) END"
    return (f"CASE WHEN {p}attributes_moved IS NULL THEN {p}attributes "
            f"ELSE '{{' || concat_ws(',', {pairs}) || {rest} END")


def table_view_sql(lake_root: str | Path, table: str) -> str:
    # spans: attributes read as sent (span_attributes_sql)
    replace = f" REPLACE ({span_attributes_sql()} AS attributes)" if table == SPANS.name else ""
    return f"CREATE OR REPLACE VIEW {table} AS SELECT *{replace} FROM {read_table_sql(lake_root, table)}"



def parents_cte(name: str, children: str, column: str, alias: str, *, where: str = "") -> str:
    """CTE ``name``: (trace_id, span_id, ``alias``) of the spans that are parents of the
    rows of CTE ``children``, with their ``column`` — only those parents, one row each."""
    return f"""{name} AS (
    SELECT p.trace_id, p.span_id, any_value(p.{column}) AS {alias}
    FROM spans AS p
    -- an inner join, not a semi join: a trace_id filter then reaches both sides
    JOIN (SELECT DISTINCT trace_id, parent_span_id FROM {children}) AS c
      ON p.trace_id = c.trace_id AND p.span_id = c.parent_span_id{f"{chr(10)}    WHERE {where}" if where else ""}
    -- one row per span even if it was stored twice, so a join to it never duplicates a child
    GROUP BY p.trace_id, p.span_id
)"""


def derived_view_sql(lake_root: str | Path, t: Table, source: str | None = None) -> str:
    """The view of derived table ``t``: what its latest commits say (storage.derived).

    Of each result set (``replace_by``), only the rows of its latest commit; tombstones
    dropped; then of the rows sharing a key (or the same commit row: a compaction's
    output and inputs side by side for a moment), the latest. The commit bookkeeping
    (``_row``, ``_tombstone``) is not shown; ``committed_at`` is.

    The files are read once per use of the view (a MATERIALIZED CTE): DuckDB turns a
    ``max() OVER (PARTITION BY ...)`` into an aggregate joined back to a *second* scan,
    and each scan lists the files anew — a commit landing between the two listings made
    a reader see its result set empty (tests/storage/test_derived.py, readers in other
    threads). ``source``: other rows of the table's files (storage.rollups narrows them
    to some traces).
    """
    return f"CREATE OR REPLACE VIEW {ident(t.name)} AS\n{derived_select_sql(t, source or read_table_sql(lake_root, t.name))}"


def derived_select_sql(t: Table, source: str) -> str:
    """The rows of derived table ``t`` that its view shows, read from ``source`` (a
    relation of the table's stored rows): the view's rule, for a query that narrows the
    files it reads first (``narrowed_source_sql``)."""
    steps = [f"d AS MATERIALIZED (SELECT * FROM {source})"]
    last = "d"
    if t.replace_by is not None:
        over = f"PARTITION BY {', '.join(ident(c) for c in t.replace_by)}" if t.replace_by else ""
        steps.append(f"latest AS (SELECT * FROM d QUALIFY committed_at = max(committed_at) OVER ({over}))")
        last = "latest"
    identity = ", ".join(ident(c) for c in t.key) if t.key else "committed_at, _row"
    shown = ", ".join(ident(c) for c in [*t.columns, "committed_at", PARTITION_COLUMN])
    return f"""WITH {(","+chr(10)+"     ").join(steps)}
SELECT {shown}
FROM {last}
WHERE NOT _tombstone
QUALIFY row_number() OVER (PARTITION BY {identity} ORDER BY committed_at DESC, _row DESC) = 1"""


def narrowed_source_sql(t: Table, files_param: str, by: str, value_param: str) -> str:
    """The rows of ``t``'s files (a glob or list bound to ``$files_param``) whose ``by``
    column equals ``$value_param``, for ``derived_select_sql``. The view's answer for those
    rows stays the same only when the filter keeps whole result sets and whole keys, so
    ``by`` must be a ``replace_by`` column of a replaced table (``agent`` of the clusters),
    or a ``key`` column of a table without one (``trace_id`` of ``evals``)."""
    allowed = t.replace_by if t.replace_by is not None else t.key
    if by not in allowed:
        raise ValueError(f"{t.name} narrowed by {by!r}: its view's rule holds only narrowed by one of {list(allowed)}")
    return f"(SELECT * FROM {read_files_sql(files_param)} WHERE {ident(by)} = ${value_param})"


def view_sql(lake_root: str | Path, t: Table) -> str:
    """The view of any lake table."""
    return table_view_sql(lake_root, t.name) if t.kind == SIGNAL else derived_view_sql(lake_root, t)
