"""The Parquet lake on disk: layout, flushed batches, crash recovery, reads.

With ``storage.compaction`` (merges) and ``storage.files`` (atomic files, names), the
only code that writes or deletes Parquet files.

Layout (see docs/schema.md)::

    <root>/_lake.json                              {"schema_version": N, ...}
    <root>/<table>/date=1970-01-01/seed.parquet    zero rows, current schema
    <root>/<table>/date=YYYY-MM-DD/part-<batch>-<n>.parquet
    <root>/<table>/date=YYYY-MM-DD/compact-<batch>-<n>.parquet
    <root>/<table>/date=YYYY-MM-DD/_journal-<batch>.json   (only mid-compaction)

Every file appears atomically: written under a hidden ``.…tmp`` name in the same folder,
fsynced, renamed, then the folder fsynced. Hidden and ``_`` names are skipped by
DuckDB's ``*.parquet`` glob, by ``pyarrow.dataset`` and by polars, so readers never
see half a file. ``batch_id`` is the collector's fixed-width checkpoint position, so
"newer than the checkpoint" is a plain string comparison on file names.

Derived columns (``Table.derived``): ``spans.resolved_agent`` is filled here, not by the
producer — by ``write_batch`` where the batch alone decides it, and by ``compact`` from
the whole lake (see ``_resolve_agents`` and ``queries.compact_spans_sql``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage import compaction
from storage.files import DataFile, LakeError, check_batch_id, fsync, fsync_dir, is_temp, partitions, write_atomic
from storage.files import table as _table
from storage.schema import PARTITION_COLUMN, SCHEMA_VERSION, SPANS, TABLES, Table

__all__ = ["Lake", "LakeError", "DataFile", "MANIFEST_NAME"]

SEED_DATE = "1970-01-01"
SEED_NAME = "seed.parquet"
MANIFEST_NAME = "_lake.json"


class Lake:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).absolute()

    # ------------------------------------------------------------------ layout
    def table_dir(self, table: str) -> Path:
        return self.root / _table(table).name

    def init(self) -> None:
        """Create the folders, seed files and manifest; finish any interrupted compaction."""
        self.root.mkdir(parents=True, exist_ok=True)
        manifest = self.root / MANIFEST_NAME
        if manifest.exists():
            found = json.loads(manifest.read_text()).get("schema_version")
            if isinstance(found, int) and found > SCHEMA_VERSION:
                raise LakeError(
                    f"{self.root} holds schema version {found}; this otelbench writes "
                    f"version {SCHEMA_VERSION} — upgrade otelbench"
                )
        for t in TABLES.values():
            seed_dir = self.table_dir(t.name) / f"{PARTITION_COLUMN}={SEED_DATE}"
            seed_dir.mkdir(parents=True, exist_ok=True)
            seed = seed_dir / SEED_NAME
            # Rewrite the seed when the schema grew, so union_by_name sees every column.
            if not seed.exists() or not pq.read_schema(seed).equals(t.stored_schema):
                write_atomic(t.stored_schema.empty_table(), seed, t)
                fsync_dir(seed_dir)
            self._recover(t)
        body = {
            "schema_version": SCHEMA_VERSION,
            "partitioning": f"hive: {PARTITION_COLUMN}=YYYY-MM-DD (UTC date of the time column)",
            "tables": {
                t.name: {"time_column": t.time_column, "key": list(t.key), "derived": t.derived.names}
                for t in TABLES.values()
            },
        }
        text = json.dumps(body, indent=2) + "\n"
        if not manifest.exists() or manifest.read_text() != text:
            tmp = manifest.with_name(f".{MANIFEST_NAME}.tmp")
            tmp.write_text(text)
            fsync(tmp)
            os.replace(tmp, manifest)
            fsync_dir(self.root)

    def files(self, table: str) -> list[Path]:
        """Data files (part and compact, not the seed), oldest batch first."""
        return [f.path for f in self._data_files(_table(table))]

    def _data_files(self, t: Table) -> list[DataFile]:
        found = (DataFile.parse(p) for p in self.table_dir(t.name).glob("*/*.parquet"))
        return sorted(f for f in found if f is not None)

    def _partitions(self, t: Table) -> list[Path]:
        return partitions(self.root, t)

    # ------------------------------------------------------------------ writes
    def write_batch(self, batch_id: str, tables: Mapping[str, Mapping[str, Sequence[Any]]]) -> list[Path]:
        """Write one flush: each table's rows split by the UTC date of its time column.

        ``tables[name]`` holds exactly the table's ``columns``; its derived columns may be
        left out (they are computed here; non-null values given for them are kept).
        """
        check_batch_id(batch_id)
        written: list[Path] = []
        dirs: set[Path] = set()
        for name, columns in tables.items():
            t = _table(name)
            data = _to_arrow(t, columns)
            if data.num_rows == 0:
                continue
            if t is SPANS:
                data = _resolve_agents(data)
            for n, (day, rows) in enumerate(_split_by_date(data, t.time_column)):
                folder = self.table_dir(t.name) / f"{PARTITION_COLUMN}={day}"
                folder.mkdir(parents=True, exist_ok=True)
                path = folder / f"part-{batch_id}-{n}.parquet"
                # a fresh batch file is one row group: sorting it could not let a reader
                # skip anything, and it cost ~10% of a flusher's time; compaction sorts
                write_atomic(rows, path, t)
                written.append(path)
                dirs.add(folder)
        for folder in dirs:
            fsync_dir(folder)
        return written

    def discard_after(self, batch_id: str, *, suffix: str | None = None) -> int:
        """Delete part files of batches >= batch_id (written but never checkpointed) and temp files.

        ``suffix``: only batches whose id ends with it (one flusher worker's files,
        e.g. ``_0``); the other workers' files are theirs to judge.
        """
        check_batch_id(batch_id)
        removed = 0
        for t in TABLES.values():
            self._recover(t)  # a journal may name temp files; settle it before sweeping
            for part in self._partitions(t):
                for p in part.iterdir():
                    f = DataFile.parse(p)
                    stale_part = (
                        f is not None
                        and f.kind_rank == 1
                        and f.batch_id >= batch_id
                        and (suffix is None or f.batch_id.endswith(suffix))
                    )
                    if stale_part or is_temp(p):
                        p.unlink()
                        removed += 1
                if removed:
                    fsync_dir(part)
        return removed

    # ------------------------------------------------------------------ reads
    def recent_keys(self, table: str, limit: int) -> list[tuple[Any, ...]]:
        """Key tuples from the newest files, newest first, at most ``limit`` (for the flusher's dedupe set)."""
        t = _table(table)
        if not t.key or limit <= 0:
            return []
        keys: list[tuple[Any, ...]] = []
        for f in reversed(self._data_files(t)):
            cols = pq.read_table(f.path, columns=list(t.key))
            values = [cols.column(k).to_pylist() for k in t.key]
            keys.extend(reversed(list(zip(*values))))
            if len(keys) >= limit:
                break
        return keys[:limit]

    # ------------------------------------------------------------------ compaction
    def compact(self, table: str, *, below_batch_id: str, min_files: int = 8,
                target_rows: int = compaction.TARGET_ROWS, target_bytes: int = compaction.TARGET_BYTES) -> int:
        """Merge each partition's small files older than ``below_batch_id``; returns files
        merged (``storage.compaction.compact``)."""
        return compaction.compact(self.root, table, below_batch_id=below_batch_id, min_files=min_files,
                                  target_rows=target_rows, target_bytes=target_bytes)

    def _recover(self, t: Table) -> None:
        compaction.recover(self.root, t)


# ---------------------------------------------------------------------- helpers
def _to_arrow(t: Table, columns: Mapping[str, Sequence[Any]]) -> pa.Table:
    """The table's stored schema: a missing or unknown column is a programming error, named;
    a derived column left out is all NULL (for ``_resolve_agents`` to fill)."""
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
        if values is None:  # a derived column the producer left to us
            arrays.append(pa.nulls(n, f.type))
        elif isinstance(values, (pa.Array, pa.ChunkedArray)):
            arrays.append(values if values.type == f.type else values.cast(f.type))
        else:  # lists, numpy arrays: timestamps as int microseconds convert directly
            arrays.append(pa.array(values, type=f.type))
    return pa.Table.from_arrays(arrays, schema=t.stored_schema)


def _resolve_agents(data: pa.Table) -> pa.Table:
    """Fill ``resolved_agent`` where this batch alone decides it (the rule: storage.schema).

    A span naming its agent resolves to it, a root to its service; a span whose parent
    is in the batch to the parent's agent_name, else its own service. Spans whose parent
    is elsewhere stay NULL for compaction (exporters send children before their parent,
    so for long agent runs that is most calls). Values already given are kept.
    """
    col = data.schema.get_field_index("resolved_agent")
    agent, parent = data.column("agent_name"), data.column("parent_span_id")
    service = data.column("service_name")
    root_service = pc.if_else(pc.is_null(parent), service, pa.scalar(None, pa.string()))
    known = pc.coalesce(data.column(col), agent, root_service)
    need = pc.is_null(known)
    if pc.any(need).as_py():
        # "trace/span" keys: ids are hex, so the separator keeps the pair unambiguous
        trace = data.column("trace_id")
        keys = pc.binary_join_element_wise(trace, data.column("span_id"), "/")
        named = pc.is_valid(agent)
        wanted = pc.binary_join_element_wise(trace.filter(need), parent.filter(need), "/")
        at = pc.index_in(wanted, value_set=keys.filter(named).combine_chunks())
        from_parent = agent.filter(named).combine_chunks().take(at)
        found = pc.is_in(wanted, value_set=keys.combine_chunks())
        fallback = pc.if_else(found, service.filter(need), pa.scalar(None, pa.string()))
        filled = pc.coalesce(from_parent, fallback)
        known = pc.replace_with_mask(known.combine_chunks(), need.combine_chunks(), filled.combine_chunks())
    return data.set_column(col, data.schema.field(col), known)


def _split_by_date(data: pa.Table, time_column: str) -> Iterable[tuple[str, pa.Table]]:
    """(YYYY-MM-DD, rows) per UTC day; rows without a time land in the seed's 1970-01-01."""
    days = pc.fill_null(pc.cast(data.column(time_column), pa.date32()), pa.scalar(0, pa.date32()))
    unique = pc.unique(days)
    if len(unique) == 1:
        yield unique[0].as_py().isoformat(), data
        return
    for day in sorted(unique.to_pylist()):
        yield day.isoformat(), data.filter(pc.equal(days, pa.scalar(day, pa.date32())))


