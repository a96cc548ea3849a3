"""Derived tables: what processors compute, committed whole, appended or replacing.

A *commit* is one call: ``append`` (new rows) or ``replace`` (the whole of one result
set, e.g. one agent's failure clusters). It is exactly one Parquet file,
``<table>/date=<day of the commit>/commit-<µs>-0.parquet``, which appears atomically
(``storage.fs``), so a reader sees all of a commit or none of it, and a crash before the
rename leaves only a hidden staging file (swept by the next commit or ``Lake.init``).

Every row carries the lake's commit columns (``storage.schema.COMMIT_COLUMNS``):
``committed_at`` — the commit's time and its id, unique and increasing within the lake
(commits of one table are serialized by a lock, and a commit is never dated before the
previous one) — ``_row``, its place in the commit, and ``_tombstone``, set on the one row
a replace writes when it leaves its result set empty. Nothing is rewritten when a newer
commit supersedes an older one; the views (``queries.tables.derived_view_sql``) apply the
rule, and compaction (``compact`` here) later drops what they would hide:

- a table with ``replace_by``: of each result set, only the rows of its latest commit;
- a table with a ``key``: of the rows sharing a key, only the latest (commit, then row);
- tombstones never show.

Raw files therefore hold history; read derived tables through the views (``otelbench
sql``, ``storage.duckdb``, ``otelbench sql --print-views`` for the duckdb CLI).
"""

from __future__ import annotations

import datetime as dt
import secrets
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from otelbench.storage import compaction
from otelbench.storage import plan as merge_plan
from otelbench.storage.queries import compaction as compaction_sql
from otelbench.storage.queries.tables import table_glob
from otelbench.storage.files import (DataFile, LakeError, conform_arrow, data_files, partition_dir, partitions, with_lineage,
                           write_parquet, write_staged)
from otelbench.storage.fs import LakeFS
from otelbench.storage.schema import DERIVED, Table

if TYPE_CHECKING:
    import polars as pl

LOCK_NAME = "_commit.lock"  # in the table's folder: one commit or compaction at a time
# a compacted file's row groups: small, since readers look up one agent's or one run's rows
# (sorted by them: compaction_sql.compact_derived_sql) more often than they scan
ROW_GROUP_ROWS = 16_384


def append(fs: LakeFS, t: Table, data: pa.Table | pl.DataFrame) -> str | None:
    """Commit ``data`` as new rows of ``t`` (a table without ``replace_by``).

    Rows whose key an earlier commit already holds supersede those (latest wins). Returns
    the commit's file, or None when ``data`` has no rows (nothing to commit).
    """
    _check(t)
    if t.replace_by is not None:
        raise LakeError(f"table {t.name} is replaced by result set ({', '.join(t.replace_by)}): use replace")
    rows = conform(t, data)
    if rows.num_rows == 0:
        return None
    return _commit(fs, t, rows, tombstone=False)


def replace(fs: LakeFS, t: Table, data: pa.Table | pl.DataFrame, result_set: Mapping[str, Any]) -> str:
    """Commit ``data`` as the whole of ``result_set`` of ``t``: from this commit on,
    readers see these rows of that set and none of its earlier ones.

    ``result_set`` gives a value for each ``replace_by`` column; ``data`` may leave those
    columns out (they are filled) or carry them (every row must match). An empty ``data``
    empties the set. Returns the commit's file.
    """
    _check(t)
    if t.replace_by is None:
        raise LakeError(f"table {t.name} is only appended to: use append")
    if set(result_set) != set(t.replace_by):
        raise LakeError(
            f"table {t.name}: a result set is named by ({', '.join(t.replace_by)}), got ({', '.join(result_set)})"
        )
    rows = conform(t, data, fill=result_set)
    tombstone = rows.num_rows == 0
    if tombstone:  # one row that says "this set is now empty"
        rows = conform(t, t.schema.empty_table(), fill=result_set, tombstone_row=True)
    return _commit(fs, t, rows, tombstone=tombstone)


def conform(t: Table, data: pa.Table | pl.DataFrame, *, fill: Mapping[str, Any] | None = None,
            tombstone_row: bool = False) -> pa.Table:
    """``data`` as exactly ``t.schema``: an unknown or missing column is an error that names
    it, a value that does not fit its column's type too. ``fill``: columns set to one
    value (added when absent, checked when present). ``tombstone_row``: one row, all NULL
    but ``fill``."""
    if not isinstance(data, pa.Table):
        data = data.to_arrow()  # a polars DataFrame
    fill = dict(fill or {})
    given = set(data.column_names)
    unknown = sorted(given - set(t.columns))
    missing = sorted(set(t.columns) - given - set(fill))
    if unknown or missing:
        raise LakeError(f"table {t.name}: unknown columns {unknown}, missing columns {missing}")
    n = 1 if tombstone_row else data.num_rows
    arrays = []
    for f in t.schema:
        try:
            if f.name in fill:
                value = pa.scalar(fill[f.name], f.type)
                if f.name in given and not tombstone_row:
                    col = data.column(f.name).cast(f.type)
                    same = pc.equal(col, value) if value.is_valid else pc.is_null(col)
                    if data.num_rows and not pc.all(pc.fill_null(same, False)).as_py():  # all([]) is null
                        raise LakeError(f"table {t.name}: rows outside the result set {f.name} = {fill[f.name]!r}")
                arrays.append(pa.array([value.as_py()] * n, f.type))
            elif tombstone_row:
                arrays.append(pa.nulls(n, f.type))
            else:
                arrays.append(data.column(f.name).cast(f.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise LakeError(f"table {t.name}, column {f.name} ({f.type}): {exc}") from exc
    return pa.Table.from_arrays(arrays, schema=t.schema)


def _check(t: Table) -> None:
    if t.kind != DERIVED:
        raise LakeError(f"table {t.name} is a signal table: only the collector writes it")


def _commit(fs: LakeFS, t: Table, rows: pa.Table, *, tombstone: bool) -> str:
    with fs.lock(fs.path(t.name, LOCK_NAME)):
        _sweep(fs, t)
        at = _commit_time(fs, t)
        day = dt.datetime.fromtimestamp(at / 1e6, dt.timezone.utc).date().isoformat()
        folder = partition_dir(fs, t, day)
        fs.makedirs(folder)
        # in a bucket, writers on other machines hold other locks: a random number keeps
        # two commits of the same microsecond from taking one name
        path = f"{folder}/commit-{at:016d}-{0 if fs.is_local else secrets.randbelow(10**9)}.parquet"
        n = rows.num_rows
        stored = pa.Table.from_arrays(
            [*rows.columns,
             pa.array([at] * n, pa.int64()).cast(t.lake_columns.field("committed_at").type),
             pa.array(range(n), pa.int64()),
             pa.array([tombstone] * n, pa.bool_())],
            schema=t.stored_schema,
        )
        write_parquet(fs, stored, path, t)
        fs.sync_folder(folder)
    return path


def _commit_time(fs: LakeFS, t: Table) -> int:
    """Now in µs, but always after the table's latest commit (a clock that stepped back,
    two commits in one µs): commit order is id order, which "latest wins" relies on."""
    now = time.time_ns() // 1000
    latest = max((int(f.batch_id) for f in data_files(fs, t)), default=0)
    return max(now, latest + 1)


def _sweep(fs: LakeFS, t: Table) -> None:
    """Delete staging files of commits that never appeared (a crash); under the lock."""
    for part in partitions(fs, t):
        stale = [name for name in fs.files(part) if fs.is_staging(name) and name.startswith(".commit-")]
        for name in stale:
            fs.delete(f"{part}/{name}")
        if stale:
            fs.sync_folder(part)


def recover(fs: LakeFS, t: Table) -> None:
    """Settle what a crash left: a compaction's journal, a commit's staging file."""
    with fs.lock(fs.path(t.name, LOCK_NAME)):
        compaction.recover(fs, t)
        _sweep(fs, t)


def compact(fs: LakeFS, t: Table, *, min_files: int = 8, memory_mib: int = compaction.MEMORY_MIB) -> int:
    """Merge each partition's commit and compact files (at least ``min_files`` of them)
    into one file, without the rows the views hide; returns files merged.

    A row is dropped when a newer commit anywhere in the table supersedes it (its result
    set replaced, its key written again); tombstones that are still their set's latest
    commit stay, so an older partition's rows of that set stay hidden. Commits are
    locked out meanwhile, so no commit lands between the plan and the merge.
    """
    _check(t)
    merged = 0
    with fs.lock(fs.path(t.name, LOCK_NAME)):
        compaction.recover(fs, t)
        _sweep(fs, t)
        for part in partitions(fs, t):
            inputs = sorted(filter(None, (DataFile.parse(f"{part}/{name}") for name in fs.files(part))))
            if len(inputs) < max(min_files, 2):
                continue
            compaction.replace_files(fs, part, inputs, 1, lambda paths: _merge(fs, t, inputs, paths, memory_mib))
            merged += len(inputs)
    return merged


def _merge(fs: LakeFS, t: Table, inputs: list[DataFile], outputs: list[str], memory_mib: int) -> list[str]:
    params = {"files": [fs.uri(f.path) for f in inputs], "table": table_glob(fs.uri(fs.root), t.name)}

    def rows(budget: int) -> pa.Table:
        with merge_plan.merge_connection(fs, budget) as con:
            reader = con.sql(compaction_sql.compact_derived_sql(t), params=params).to_arrow_reader(4096)
            return pa.Table.from_batches([conform_arrow(b, t.stored_schema) for b in reader],
                                         t.stored_schema)

    data = merge_plan.with_growing_memory(rows, memory_mib, f"compacting {t.name} ({len(inputs)} files)")
    if data.num_rows == 0:  # every row superseded: the inputs just go
        return []
    write_staged(fs, data, outputs[0], t, with_lineage(t.stored_schema, inputs), row_group_rows=ROW_GROUP_ROWS)
    return outputs[:1]
