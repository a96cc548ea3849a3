"""The one gateway between otelbench and DuckDB: views over the lake, locked down, read-only.

Every query of the project (CLI, web, processors) goes through ``Gateway.query``, which
refuses anything but a single read statement, binds parameters, and applies a time limit
and a row limit — the Datasette executor, for Parquet.

Lockdown (../shared/REFERENCE.md, "DuckDB lockdown"): after the views exist,
``allowed_directories=[<lake>/]``, ``enable_external_access=false``,
``lock_configuration=true``. That stops reads outside the lake, ATTACH, INSTALL/LOAD and
settings changes, but not ``COPY … TO '<lake>/…'`` — so the statement-type check here is
what keeps the lake itself unwritable.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from storage import queries
from storage.lake import MANIFEST_NAME

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

Params = Sequence[Any] | Mapping[str, Any] | None


class QueryError(Exception):
    """A query that was refused or failed; ``kind`` says which, ``str()`` says why.

    kind: ``refused`` (not a read statement), ``invalid`` (DuckDB rejected it: syntax,
    binding, permission), ``timeout``, ``lake`` (no lake at the path).
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


class Gateway:
    """A locked-down in-memory DuckDB with the lake's views. Thread-safe: a cursor per query."""

    def __init__(self, con: duckdb.DuckDBPyConnection, root: Path, *, read_only: bool) -> None:
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

    def query(
        self,
        sql: str,
        params: Params = None,
        *,
        max_rows: int | None = None,
        timeout_s: float | None = None,
    ) -> Result:
        self.check(sql)
        with self._lock:
            cur = self._con.cursor()
        timer = threading.Timer(timeout_s, cur.interrupt) if timeout_s else None
        try:
            if timer is not None:
                timer.start()
            cur.execute(sql, params)
            if cur.description is None:  # a statement without a result (writable gateway)
                return Result([], [])
            columns = [d[0] for d in cur.description]
            types = [str(d[1]) for d in cur.description]
            if max_rows is None:
                return Result(columns, cur.fetchall(), types)
            rows = cur.fetchmany(max_rows + 1)
            return Result(columns, rows[:max_rows], types, truncated=len(rows) > max_rows)
        except duckdb.InterruptException as exc:
            raise QueryError(f"query timed out after {timeout_s:g} s", "timeout") from exc
        except duckdb.Error as exc:
            raise QueryError(_message(exc)) from exc
        finally:
            if timer is not None:
                timer.cancel()
            cur.close()

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_lake(root: str | Path, *, read_only: bool = True) -> Gateway:
    """Open the lake at ``root`` (created by ``Lake.init``) behind a locked-down connection.

    ``read_only=False`` additionally allows statements that change the in-memory catalog
    only (CREATE TABLE/VIEW, INSERT, DROP; TEMP objects live for one query, since each
    query runs on its own cursor) — files, settings and extensions stay out of reach.
    """
    root = Path(root).absolute()
    if not (root / MANIFEST_NAME).exists():
        raise QueryError(f"no lake at {root} (missing {MANIFEST_NAME}); start the collector first", "lake")
    config = {
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        # spill inside the lake, not in whatever the cwd is (DuckDB allows its temp dir)
        "temp_directory": str(root / "_tmp"),
    }
    con = duckdb.connect(":memory:", config=config)
    try:
        con.execute(queries.SET_TIME_ZONE_UTC)
        for stmt in queries.view_ddl(root):
            con.execute(stmt)
        con.execute(queries.SET_ALLOWED_DIRECTORIES, [[f"{root}/"]])
        con.execute(queries.DISABLE_EXTERNAL_ACCESS)
        con.execute(queries.LOCK_CONFIGURATION)
    except duckdb.Error as exc:
        con.close()
        raise QueryError(f"cannot open the lake at {root}: {_message(exc)}", "lake") from exc
    return Gateway(con, root, read_only=read_only)


def _message(exc: BaseException) -> str:
    # DuckDB appends a caret diagram after the first line; keep it, but drop trailing blanks.
    return str(exc).strip()
