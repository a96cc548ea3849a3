"""The Parquet lake: layout, flushed batches, crash recovery, reads.

With ``storage.compaction`` (merges), ``storage.derived`` (processors' commits) and
``storage.files`` (names), the only code that writes or deletes lake files — all of it
through the filesystem seam ``storage.fs``.

Layout (see docs/schema.md)::

    <root>/_lake.json                              {"schema_version": N, "tables": {...}}
    <root>/<table>/date=1970-01-01/seed.parquet    zero rows, current schema
    <root>/<table>/date=YYYY-MM-DD/part-<batch>-<n>.parquet      signal tables (the flusher)
    <root>/<table>/date=YYYY-MM-DD/commit-<commit>-0.parquet     derived tables (processors)
    <root>/<table>/date=YYYY-MM-DD/compact-<batch>-<n>.parquet
    <root>/<table>/date=YYYY-MM-DD/_journal-<batch>.json   (only mid-compaction)

Every file appears atomically: written under a hidden ``.…tmp`` name in the same folder,
fsynced, renamed, then the folder fsynced. Hidden and ``_`` names are skipped by
DuckDB's ``*.parquet`` glob, by ``pyarrow.dataset`` and by polars, so readers never
see half a file. ``batch_id`` is the collector's fixed-width checkpoint position, so
"newer than the checkpoint" is a plain string comparison on file names.

Lake columns (``Table.lake_columns``): ``spans.resolved_agent`` is filled here, not by the
producer — by ``write_batch`` where the batch alone decides it, and by ``compact`` from
the partition and the lake (the rule: ``storage.agents``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from otelbench.storage import agents, compaction, derived
from otelbench.storage.files import (SEED_DATE, SEED_NAME, DataFile, LakeError, check_batch_id, check_owner, data_files,
                           day_globs, owner_of, partition_dir, partitions, write_parquet)
from otelbench.storage.files import table as _table
from otelbench.storage.fs import LakeFS
from otelbench.storage.location import open_fs
from otelbench.storage.schema import PARTITION_COLUMN, SCHEMA_VERSION, SIGNAL, SPANS, Table, tables

if TYPE_CHECKING:
    import polars as pl

__all__ = ["Lake", "LakeError", "DataFile", "MANIFEST_NAME"]

MANIFEST_NAME = "_lake.json"


class Lake:
    """``owner``: the id of the collector writing through this object (``storage.files.
    owner_of``; None: the lake's only writer) — it compacts and recovers only its own files."""

    def __init__(self, root: str | Path, owner: str | None = None) -> None:
        check_owner(owner)
        self.owner = owner
        self.fs: LakeFS = open_fs(root)
        self.location = self.fs.location  # a folder or s3://bucket/prefix: what open_lake takes
        self.root: Path | str = Path(self.fs.root) if self.fs.is_local else self.location

    # ------------------------------------------------------------------ layout
    def table_dir(self, table: str) -> Path:
        return Path(self.fs.path(_table(table).name))

    def init(self, *, signals: bool = True) -> None:
        """Create the folders, seed files and manifest; settle what a crash left
        (an interrupted compaction, a derived commit that never appeared).

        ``signals=False``: leave the signal tables' compaction journals alone. Only the
        collector that compacts them may settle them (at its start, before any run): to
        anyone else, a journal whose outputs are not all there yet is a merge running now,
        and undoing it would delete the outputs of a merge that goes on to delete its
        inputs. The processors open the lake this way."""
        fs = self.fs
        fs.makedirs(fs.root)
        manifest = fs.path(MANIFEST_NAME)
        if fs.exists(manifest):
            found = fs.read_json(manifest).get("schema_version")
            if isinstance(found, int) and found > SCHEMA_VERSION:
                raise LakeError(
                    f"{fs.root} holds schema version {found}; this otelbench writes "
                    f"version {SCHEMA_VERSION} — upgrade otelbench"
                )
        for t in tables():
            seed_dir = partition_dir(fs, t, SEED_DATE)
            fs.makedirs(seed_dir)
            seed = f"{seed_dir}/{SEED_NAME}"
            # Rewrite the seed when the schema grew, so union_by_name sees every column.
            if not fs.exists(seed) or not fs.parquet_schema(seed).equals(t.stored_schema):
                write_parquet(fs, t.stored_schema.empty_table(), seed, t)
                fs.sync_folder(seed_dir)
            if signals or t.kind != SIGNAL:
                self._recover(t)
        body = {
            "schema_version": SCHEMA_VERSION,
            "partitioning": f"hive: {PARTITION_COLUMN}=YYYY-MM-DD (UTC date of the time column)",
            "tables": {t.name: _manifest_entry(t) for t in tables()},
        }
        if not fs.exists(manifest) or fs.read_json(manifest) != body:
            fs.write_json(manifest, body, indent=2)

    def files(self, table: str) -> list[Path]:
        """Data files (part, commit and compact, not the seed), oldest batch first."""
        return [Path(f.path) for f in data_files(self.fs, _table(table))]

    def day_globs(self, table: str, days: Iterable[str]) -> list[str]:
        """Globs of the table's files of some UTC days (YYYY-MM-DD), seed included, for a
        reader of those days only (``storage.files.day_globs``)."""
        return day_globs(self.fs, _table(table), list(days))

    # ------------------------------------------------------------------ writes: signal tables
    def write_batch(self, batch_id: str, tables: Mapping[str, Mapping[str, Sequence[Any]]]) -> list[Path]:
        """Write one flush: each table's rows split by the UTC date of its time column.

        ``tables[name]`` holds exactly the table's ``columns``; its lake columns may be
        left out (they are computed here; non-null values given for them are kept).
        """
        check_batch_id(batch_id)
        written: list[Path] = []
        dirs: set[str] = set()
        for name, columns in tables.items():
            t = _signal_table(name)
            data = _to_arrow(t, columns)
            if data.num_rows == 0:
                continue
            if t is SPANS:
                data = _resolve_agents(data)
            for n, (day, rows) in enumerate(_split_by_date(data, t.time_column)):
                folder = partition_dir(self.fs, t, day)
                self.fs.makedirs(folder)
                path = f"{folder}/part-{batch_id}-{n}.parquet"
                # a fresh batch file is one row group: sorting it could not let a reader
                # skip anything, and it cost ~10% of a flusher's time; compaction sorts
                write_parquet(self.fs, rows, path, t, fresh=True)
                written.append(Path(path))
                dirs.add(folder)
        for folder in dirs:
            self.fs.sync_folder(folder)
        return written

    def discard_after(self, batch_id: str, *, suffix: str | None = None) -> int:
        """Delete part files of batches >= batch_id (written but never checkpointed) and temp files.

        ``suffix``: only batches whose id ends with it (one flusher worker's files,
        e.g. ``_0``); the other workers' files are theirs to judge. Only this object's
        ``owner``'s files: other collectors' are theirs. Signal tables only: derived
        tables belong to processors.
        """
        check_batch_id(batch_id)
        fs = self.fs
        removed = 0
        for t in tables(SIGNAL):
            self._recover(t)  # a journal may name temp files; settle it before sweeping
            for part in partitions(fs, t):
                gone = 0
                for name in fs.files(part):
                    f = DataFile.parse(name)
                    stale_part = (
                        f is not None
                        and f.kind_rank == 1
                        and owner_of(f.batch_id) == self.owner
                        and f.batch_id >= batch_id
                        and (suffix is None or f.batch_id.endswith(suffix))
                    )
                    if stale_part or fs.is_staging(name):
                        fs.delete(f"{part}/{name}")
                        gone += 1
                if gone:
                    fs.sync_folder(part)
                removed += gone
        return removed

    # ------------------------------------------------------------------ writes: derived tables
    def append(self, table: str, data: pa.Table | pl.DataFrame) -> str | None:
        """Commit ``data`` as new rows of derived ``table``; returns the commit's file
        (``storage.derived.append``)."""
        return derived.append(self.fs, _table(table), data)

    def replace(self, table: str, data: pa.Table | pl.DataFrame, result_set: Mapping[str, Any]) -> str:
        """Commit ``data`` as the whole of ``result_set`` of derived ``table``
        (``storage.derived.replace``)."""
        return derived.replace(self.fs, _table(table), data, result_set)

    # ------------------------------------------------------------------ reads
    def recent_keys(self, table: str, limit: int) -> list[tuple[Any, ...]]:
        """Key tuples from the newest files, newest first, at most ``limit`` (for the flusher's dedupe set)."""
        t = _table(table)
        if not t.key or limit <= 0:
            return []
        keys: list[tuple[Any, ...]] = []
        for f in reversed(data_files(self.fs, t)):
            cols = self.fs.read_parquet(f.path, columns=list(t.key))
            values = [cols.column(k).to_pylist() for k in t.key]
            keys.extend(reversed(list(zip(*values))))
            if len(keys) >= limit:
                break
        return keys[:limit]

    # ------------------------------------------------------------------ compaction
    def compact(self, table: str, *, below_batch_id: str, min_files: int = 8,
                target_rows: int = compaction.TARGET_ROWS, target_bytes: int = compaction.TARGET_BYTES,
                memory_mib: int = compaction.MEMORY_MIB, plan_in_child: bool = False) -> int:
        """Merge each partition's small files older than ``below_batch_id``; returns files
        merged (``storage.compaction.compact``; for a derived table ``storage.derived.compact``,
        which needs no batch bound: a commit is complete once it is visible). ``memory_mib``:
        what one merge may hold; ``plan_in_child``: plan each merge of a signal table in a
        process of its own (``storage.plan_process``)."""
        t = _table(table)
        if t.kind != SIGNAL:
            return derived.compact(self.fs, t, min_files=min_files, memory_mib=memory_mib)
        return compaction.compact(self.fs, t, below_batch_id=below_batch_id, owner=self.owner, min_files=min_files,
                                  target_rows=target_rows, target_bytes=target_bytes, memory_mib=memory_mib,
                                  plan_in_child=plan_in_child)

    def _recover(self, t: Table) -> None:
        if t.kind == SIGNAL:
            compaction.recover(self.fs, t, self.owner)
        else:
            derived.recover(self.fs, t)


def _signal_table(name: str) -> Table:
    t = _table(name)
    if t.kind != SIGNAL:
        raise LakeError(f"table {name} is derived: write it with append or replace, not as a flushed batch")
    return t


def _manifest_entry(t: Table) -> dict[str, Any]:
    entry: dict[str, Any] = {"kind": t.kind, "time_column": t.time_column, "key": list(t.key),
                             "lake_columns": t.lake_columns.names}
    if t.replace_by is not None:
        entry["replace_by"] = list(t.replace_by)
    return entry


# ---------------------------------------------------------------------- helpers
def _to_arrow(t: Table, columns: Mapping[str, Sequence[Any]]) -> pa.Table:
    """The table's stored schema: a missing or unknown column is a programming error, named;
    a lake column left out is all NULL (for ``_resolve_agents`` to fill)."""
    unknown = set(columns) - set(t.stored_columns)
    missing = set(t.columns) - set(columns)
    if unknown or missing:
        raise LakeError(
            f"table {t.name}: unknown columns {sorted(unknown)}, missing columns {sorted(missing)}"
        )
    n = len(columns[t.columns[0]])
    arrays = []
    for f in t.stored_schema:
        values = columns.get(f.name)
        if values is None:  # a lake column the producer left to us
            arrays.append(pa.nulls(n, f.type))
        elif isinstance(values, (pa.Array, pa.ChunkedArray)):
            arrays.append(values if values.type == f.type else values.cast(f.type))
        else:  # lists, numpy arrays: timestamps as int microseconds convert directly
            arrays.append(pa.array(values, type=f.type))
    return pa.Table.from_arrays(arrays, schema=t.stored_schema)


def _resolve_agents(data: pa.Table) -> pa.Table:
    """Fill ``resolved_agent`` where this batch alone decides it (``storage.agents``): spans
    whose chain of parents is complete in the batch; the rest stay NULL for compaction
    (exporters send children before their parents, so for long agent runs that is most
    calls). Values already given are kept."""
    col = data.schema.get_field_index("resolved_agent")
    return data.set_column(col, data.schema.field(col), agents.resolve_columns(data))


def _split_by_date(data: pa.Table, time_column: str) -> Iterable[tuple[str, pa.Table]]:
    """(YYYY-MM-DD, rows) per UTC day; rows without a time land in the seed's 1970-01-01."""
    days = pc.fill_null(pc.cast(data.column(time_column), pa.date32()), pa.scalar(0, pa.date32()))
    unique = pc.unique(days)
    if len(unique) == 1:
        yield unique[0].as_py().isoformat(), data
        return
    for day in sorted(unique.to_pylist()):
        yield day.isoformat(), data.filter(pc.equal(days, pa.scalar(day, pa.date32())))


