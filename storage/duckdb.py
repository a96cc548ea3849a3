"""The one gateway between otelbench and DuckDB: views over the lake, locked down, read-only.

Every query of the project (CLI, processors, web, MCP) goes through a ``Gateway``, which
refuses anything but a single read statement, binds parameters, and applies limits —
the Datasette executor, for Parquet. Limits are on by default (``DEFAULT_MAX_ROWS`` rows,
``DEFAULT_TIMEOUT_S`` seconds per query, ``DEFAULT_MEMORY_LIMIT`` per connection); a
caller that needs more says so explicitly (``max_rows=None``, ``timeout_s=None``,
``open_lake(..., memory_limit=...)``). Results come as Python rows (``query``), an Arrow
table (``arrow``) or a polars DataFrame (``polars``); ``storage.values`` renders values as
JSON the same way for every caller.

Lockdown (docs/security.md, "SQL confined to the lake"): after the views exist,
``allowed_directories=[<lake>/]``, ``enable_external_access=false``,
``lock_configuration=true``. That stops reads outside the lake, ATTACH, INSTALL/LOAD and
settings changes, but not ``COPY … TO '<lake>/…'`` — so the statement-type check here is
what keeps the lake itself unwritable.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import duckdb
import pyarrow as pa

from otelbench.storage.queries import lockdown, views
from otelbench.storage.location import open_fs
from otelbench.storage.lake import MANIFEST_NAME

# EXPLAIN [ANALYZE] runs its statement (ANALYZE executes it), so the statement must be a read too.
_EXPLAIN = re.compile(r"^\s*EXPLAIN(\s+ANALY[SZ]E)?\s+", re.IGNORECASE)
_READ_TYPES = {duckdb.StatementType.SELECT}
# Even a writable gateway never touches files, settings or extensions.
_NEVER = {
    duckdb.StatementType.COPY,
    duckdb.StatementType.COPY_DATABASE,
    duckdb.StatementType.EXPORT,
    duckdb.StatementType.ATTACH,
    duckdb.StatementType.DETACH,
    duckdb.StatementType.LOAD,  # INSTALL and LOAD
    duckdb.StatementType.EXTENSION,
    duckdb.StatementType.SET,  # SET, RESET, USE
    duckdb.StatementType.VARIABLE_SET,
    duckdb.StatementType.PRAGMA,
    duckdb.StatementType.CALL,  # CALL and CHECKPOINT
    duckdb.StatementType.VACUUM,
    duckdb.StatementType.TRANSACTION,
}

if TYPE_CHECKING:
    import polars as pl

_R = TypeVar("_R")
_ARROW_BATCH_ROWS = 8192
# A reader that finds a lake file gone tries again for up to _VANISHED_PATIENCE_S, waiting
# 10 ms, doubled at each try up to 160 ms: under back-to-back compactions (a test's, or a
# loaded 2-core machine's) a fixed few tries could all land on a merge.
_VANISHED_PATIENCE_S = 5.0
_VANISHED_WAIT_S = 0.01
_VANISHED_WAIT_MAX_S = 0.16
# DuckDB's own words for a local file; pyarrow's (through fsspec) for an object in a bucket,
# when opened and when read — deleted under the read, the response then cut short (a
# bucket's connection reads nothing but its lake: lockdown)
_VANISHED = re.compile(r'Cannot open file "(?P<path>[^"]+)": No such file or directory'
                       r"|FileNotFoundError: \[Errno 2\] (Path does not exist|No such file or directory:) '(?P<key>[^']+)'"
                       r"|(?P<read>AWS Error (NO_SUCH_KEY|RESOURCE_NOT_FOUND|INTERNAL_FAILURE) during GetObject operation)")

Params = Sequence[Any] | Mapping[str, Any] | None

DEFAULT_MAX_ROWS = 10_000
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MEMORY_LIMIT = "1GB"  # DuckDB spills sorts, joins and aggregates past it to <lake>/_tmp


class _Default:
    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Any = _Default()  # "the gateway's limit"; None means "no limit", asked for explicitly


class QueryError(Exception):
    """A query that was refused or failed; ``kind`` says which, ``str()`` says why.

    kind: ``refused`` (not a read statement), ``invalid`` (DuckDB rejected it: syntax,
    binding, permission), ``memory`` (it needed more than the connection's memory limit),
    ``timeout``, ``too_many_rows`` (a polars result over the row limit), ``lake`` (no lake
    at the path).
    """

    def __init__(self, message: str, kind: str = "invalid") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Result:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    types: list[str] = field(default_factory=list)  # DuckDB type names, one per column
    truncated: bool = False  # more rows existed than max_rows


@dataclass(frozen=True)
class ArrowResult:
    table: pa.Table
    truncated: bool = False  # more rows existed than max_rows

    @property
    def columns(self) -> list[str]:
        return self.table.column_names

    def to_polars(self) -> pl.DataFrame:
        import polars as pl

        return pl.from_arrow(self.table)  # type: ignore[return-value]


class Gateway:
    """A locked-down in-memory DuckDB with the lake's views. Thread-safe: a cursor per query."""

    def __init__(self, con: duckdb.DuckDBPyConnection, root: str, *, read_only: bool) -> None:
        self._con = con
        self._lock = threading.Lock()
        self.root = root
        self.read_only = read_only

    def check(self, sql: str) -> None:
        """Raise QueryError unless ``sql`` is exactly one statement this gateway may run."""
        try:
            with self._lock:
                statements = self._con.extract_statements(sql)
        except duckdb.Error as exc:
            raise QueryError(_message(exc)) from exc
        if len(statements) != 1:
            raise QueryError(f"expected one SQL statement, got {len(statements)}", "refused")
        kind = statements[0].type
        if kind == duckdb.StatementType.EXPLAIN:
            inner = _EXPLAIN.sub("", statements[0].query, count=1)
            if inner == statements[0].query:
                raise QueryError("EXPLAIN must be followed by the statement to explain", "refused")
            self.check(inner)
            return
        if kind in _READ_TYPES:
            return
        name = kind.name
        if self.read_only or kind in _NEVER:
            raise QueryError(
                f"{name} statements are not allowed: the lake is read-only through this "
                "gateway (use SELECT, WITH, FROM, DESCRIBE, SHOW, SUMMARIZE or EXPLAIN)",
                "refused",
            )

    def query(self, sql: str, params: Params = None, *, max_rows: int | None = DEFAULT,
              timeout_s: float | None = DEFAULT) -> Result:
        """Rows as Python values (``storage.values`` renders them as JSON)."""

        def fetch(cur: duckdb.DuckDBPyConnection, limit: int | None) -> Result:
            cur.execute(sql, params)
            if cur.description is None:  # a statement without a result (writable gateway)
                return Result([], [])
            columns = [d[0] for d in cur.description]
            types = [str(d[1]) for d in cur.description]
            if limit is None:
                return Result(columns, cur.fetchall(), types)
            rows = cur.fetchmany(limit + 1)
            return Result(columns, rows[:limit], types, truncated=len(rows) > limit)

        return self._run(sql, max_rows, timeout_s, fetch)

    def arrow(self, sql: str, params: Params = None, *, max_rows: int | None = DEFAULT,
              timeout_s: float | None = DEFAULT) -> ArrowResult:
        """The result as one Arrow table, read batch by batch up to the row limit."""

        def fetch(cur: duckdb.DuckDBPyConnection, limit: int | None) -> ArrowResult:
            relation = cur.sql(sql, params=params)  # streams: no Python rows in between
            if relation is None:  # a statement without a result (writable gateway)
                return ArrowResult(pa.table({}))
            reader = relation.to_arrow_reader(_ARROW_BATCH_ROWS)
            batches, n = [], 0
            for batch in reader:
                batches.append(batch)
                n += batch.num_rows
                if limit is not None and n > limit:
                    break
            table = pa.Table.from_batches(batches, schema=reader.schema)
            if limit is not None and n > limit:
                return ArrowResult(table.slice(0, limit), truncated=True)
            return ArrowResult(table)

        return self._run(sql, max_rows, timeout_s, fetch)

    def polars(self, sql: str, params: Params = None, *, max_rows: int | None = DEFAULT,
               timeout_s: float | None = DEFAULT) -> pl.DataFrame:
        """The result as a polars DataFrame. A result over the row limit is an error
        (a DataFrame has no place to say it was cut): ask for the rows you need."""
        result = self.arrow(sql, params, max_rows=max_rows, timeout_s=timeout_s)
        if result.truncated:
            raise QueryError(f"more than {result.table.num_rows} rows: pass max_rows (None for no limit) "
                             "or narrow the query", "too_many_rows")
        return result.to_polars()

    def _run(self, sql: str, max_rows: int | None, timeout_s: float | None,
             fetch: Callable[[duckdb.DuckDBPyConnection, int | None], _R]) -> _R:
        """Check ``sql``, then ``fetch(cursor, row limit)`` (which runs it) under the time limit.

        A query that finds a lake file gone is run again (for up to ``_VANISHED_PATIENCE_S``,
        waiting a little longer each time, within the same time limit): DuckDB lists a view's files when the query
        starts, and compaction deletes the files it merged — after publishing their
        merge, so the next run reads that instead. Without this a reader during
        compaction failed now and then with "Cannot open file" (tests/storage/test_duckdb.py).
        """
        self.check(sql)
        max_rows = DEFAULT_MAX_ROWS if max_rows is DEFAULT else max_rows
        timeout_s = DEFAULT_TIMEOUT_S if timeout_s is DEFAULT else timeout_s
        deadline = None if not timeout_s else time.monotonic() + timeout_s
        give_up = time.monotonic() + _VANISHED_PATIENCE_S
        for attempt in itertools.count():
            with self._lock:
                cur = self._con.cursor()
            left = None if deadline is None else max(deadline - time.monotonic(), 0.001)
            timer = threading.Timer(left, cur.interrupt) if left is not None else None
            try:
                if timer is not None:
                    timer.start()
                return fetch(cur, max_rows)
            except duckdb.InterruptException as exc:
                raise QueryError(f"query timed out after {timeout_s:g} s", "timeout") from exc
            except duckdb.OutOfMemoryException as exc:
                raise QueryError(_message(exc), "memory") from exc
            except duckdb.Error as exc:  # an IOException; a bucket's: a Python error through fsspec
                if time.monotonic() >= give_up or not _vanished(exc, self.root):
                    raise QueryError(_message(exc)) from exc
                # the merge deletes its inputs one by one: give it a moment to finish
                delay = _vanished_wait(attempt)
                time.sleep(delay if deadline is None else min(delay, max(deadline - time.monotonic(), 0)))
            finally:
                if timer is not None:
                    timer.cancel()
                cur.close()
        raise AssertionError("unreachable")

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_lake(root: str | Path, *, read_only: bool = True, memory_limit: str | None = DEFAULT_MEMORY_LIMIT) -> Gateway:
    """Open the lake at ``root`` (a folder, or ``s3://bucket/prefix``; created by
    ``Lake.init``) behind a locked-down connection.

    ``memory_limit``: DuckDB's for this connection (e.g. ``"4GB"``); None leaves DuckDB's
    own default (80 % of the machine).

    ``read_only=False`` additionally allows statements that change the in-memory catalog
    only (CREATE TABLE/VIEW, INSERT, DROP; TEMP objects live for one query, since each
    query runs on its own cursor) — files, settings and extensions stay out of reach.

    A lake in a bucket is read through ``storage.objectstore``'s filesystem, registered
    for ``s3://`` on this connection only; DuckDB spills to a local temporary folder then.
    """
    fs = open_fs(root)
    location = fs.location
    if not fs.exists(fs.path(MANIFEST_NAME)):
        raise QueryError(f"no lake at {location} (missing {MANIFEST_NAME}); start the collector first", "lake")
    config = {
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        # spill inside a local lake (a bucket: a local temporary folder), not in whatever
        # the cwd is (DuckDB allows its temp dir)
        "temp_directory": fs.spill_dir(),
    }
    if memory_limit is not None:
        config["memory_limit"] = memory_limit
    # Creating a view binds it, which reads a file's footer: compaction may delete that
    # file between the listing and the read (after publishing its merge), so open again.
    give_up = time.monotonic() + _VANISHED_PATIENCE_S
    for attempt in itertools.count():
        con = duckdb.connect(":memory:", config=config)
        try:
            fs.attach(con)
            con.execute(lockdown.SET_TIME_ZONE_UTC)
            con.execute(lockdown.KEEP_PARQUET_FOOTERS)
            for stmt in views.view_ddl(location):
                con.execute(stmt)
            con.execute(lockdown.SET_ALLOWED_DIRECTORIES, [[f"{location}/"]])
            con.execute(lockdown.DISABLE_EXTERNAL_ACCESS)
            con.execute(lockdown.LOCK_CONFIGURATION)
            return Gateway(con, location, read_only=read_only)
        except duckdb.Error as exc:
            con.close()
            if time.monotonic() >= give_up or not _vanished(exc, location):
                raise QueryError(f"cannot open the lake at {location}: {_message(exc)}", "lake") from exc
            time.sleep(_vanished_wait(attempt))
    raise AssertionError("unreachable")


def _vanished_wait(attempt: int) -> float:
    return min(_VANISHED_WAIT_S * 2**attempt, _VANISHED_WAIT_MAX_S)


def _vanished(exc: duckdb.Error, root: str) -> bool:
    """A lake file that was listed, then deleted before it was read."""
    found = _VANISHED.search(str(exc))
    if found is None:
        return False
    if found["read"]:
        return root.startswith("s3://")
    path = found["path"] or f"s3://{found['key']}"
    return path.startswith(f"{root}/")


def _message(exc: BaseException) -> str:
    # DuckDB appends a caret diagram after the first line; keep it, but drop trailing blanks.
    return str(exc).strip()
