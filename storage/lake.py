"""The Parquet lake on disk: the only code that writes (or deletes) Parquet files.

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
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage import queries
from storage.rowgroups import RowGroupWriter
from storage.schema import PARTITION_COLUMN, SCHEMA_VERSION, SPANS, TABLES, Table

SEED_DATE = "1970-01-01"
SEED_NAME = "seed.parquet"
MANIFEST_NAME = "_lake.json"
COMPRESSION = "zstd"
ROW_GROUP_ROWS = 122_880  # DuckDB's own row-group size: one scan task per group
_BUFFER_BYTES = 128 << 20  # compaction holds at most this much of its output before writing a row group
_COMPACT_MEMORY = "128MB"  # DuckDB dedupes and looks parents up within this, spilling to <root>/_tmp
# A compacted file is done (never merged again) at this many rows or uncompressed bytes;
# one compaction run merges at most about that much per partition, so a run is bounded
# in time and in what it rewrites.
TARGET_ROWS = 2_000_000
TARGET_BYTES = 1 << 30

# Row order inside every compacted file. The views filter on these columns (span_type = 'llm',
# message_direction IN ...); a file sorted by them lets DuckDB skip whole row groups by
# their min/max statistics, so llm_calls reads only the llm row groups of a big file.
SORT_KEYS: dict[str, tuple[str, ...]] = {
    "spans": ("span_type", "start_time"),
    "logs": ("message_direction", "time"),
    "metrics": ("metric_name", "time"),
}
# Unique per row: a dictionary page would only fill up and fall back, slowing reads.
_NO_DICTIONARY: dict[str, frozenset[str]] = {"spans": frozenset({"span_id"})}

_BATCH_ID = re.compile(r"^[0-9A-Za-z_]+$")
_DATA_FILE = re.compile(r"^(?P<kind>part|compact)-(?P<batch>[0-9A-Za-z_]+)-(?P<n>\d+)\.parquet$")
_JOURNAL = re.compile(r"^_journal-(?P<batch>[0-9A-Za-z_]+)\.json$")


class LakeError(RuntimeError):
    """The lake on disk cannot be used as asked (newer schema, bad batch id)."""


@dataclass(frozen=True, order=True)
class DataFile:
    """A part or compact file, ordered the way its rows were written."""

    batch_id: str
    kind_rank: int  # a compact file holds rows older than a part file of the same batch
    n: int
    path: Path

    @classmethod
    def parse(cls, path: Path) -> DataFile | None:
        m = _DATA_FILE.match(path.name)
        if m is None:
            return None
        rank = 0 if m["kind"] == "compact" else 1
        return cls(m["batch"], rank, int(m["n"]), path)


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
                _write_atomic(t.stored_schema.empty_table(), seed, t)
                _fsync_dir(seed_dir)
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
            _fsync(tmp)
            os.replace(tmp, manifest)
            _fsync_dir(self.root)

    def files(self, table: str) -> list[Path]:
        """Data files (part and compact, not the seed), oldest batch first."""
        return [f.path for f in self._data_files(_table(table))]

    def _data_files(self, t: Table) -> list[DataFile]:
        found = (DataFile.parse(p) for p in self.table_dir(t.name).glob("*/*.parquet"))
        return sorted(f for f in found if f is not None)

    def _partitions(self, t: Table) -> list[Path]:
        return sorted(p for p in self.table_dir(t.name).glob(f"{PARTITION_COLUMN}=*") if p.is_dir())

    # ------------------------------------------------------------------ writes
    def write_batch(self, batch_id: str, tables: Mapping[str, Mapping[str, Sequence[Any]]]) -> list[Path]:
        """Write one flush: each table's rows split by the UTC date of its time column.

        ``tables[name]`` holds exactly the table's ``columns``; its derived columns may be
        left out (they are computed here; non-null values given for them are kept).
        """
        _check_batch_id(batch_id)
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
                _write_atomic(rows, path, t)
                written.append(path)
                dirs.add(folder)
        for folder in dirs:
            _fsync_dir(folder)
        return written

    def discard_after(self, batch_id: str, *, suffix: str | None = None) -> int:
        """Delete part files of batches >= batch_id (written but never checkpointed) and temp files.

        ``suffix``: only batches whose id ends with it (one flusher worker's files,
        e.g. ``_0``); the other workers' files are theirs to judge.
        """
        _check_batch_id(batch_id)
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
                    if stale_part or _is_temp(p):
                        p.unlink()
                        removed += 1
                if removed:
                    _fsync_dir(part)
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
    def compact(
        self,
        table: str,
        *,
        below_batch_id: str,
        min_files: int = 8,
        target_rows: int = TARGET_ROWS,
        target_bytes: int = TARGET_BYTES,
    ) -> int:
        """Merge each partition's small files older than ``below_batch_id``; returns files merged.

        Rows with an equal ``Table.key`` keep their first copy (oldest batch, then file order).
        A file counts as small below ``target_rows`` rows and ``target_bytes`` uncompressed;
        one run merges the oldest small files of a partition up to about one target's worth.
        Memory stays bounded: DuckDB only streams (it finds duplicates on the key columns,
        within ``_COMPACT_MEMORY``, spilling to ``<root>/_tmp``), and ``storage.rowgroups``
        writes row groups of one ``SORT_KEYS[0]`` value each, sorted by the other keys.
        Spans get ``resolved_agent`` filled from their parents anywhere in the lake
        (``queries.compact_spans_sql``). A file written by an older schema version is
        merged whatever its size and however few files its partition has, so it is
        rewritten once with every column.
        """
        _check_batch_id(below_batch_id)
        t = _table(table)
        self._recover(t)
        merged = 0
        for part in self._partitions(t):
            small: list[tuple[DataFile, int, int]] = []
            outdated = False
            for f in sorted(filter(None, map(DataFile.parse, part.glob("*.parquet")))):
                if f.batch_id >= below_batch_id:
                    continue
                meta = pq.ParquetFile(f.path).metadata
                old = not set(t.stored_columns) <= set(meta.schema.to_arrow_schema().names)
                size = _uncompressed_bytes(meta)
                if old or (meta.num_rows < target_rows and size < target_bytes):
                    small.append((f, meta.num_rows, size))
                    outdated |= old
            # A file from an older schema version is rewritten whatever its size, once:
            # afterwards it carries every column, derived ones filled.
            if not small or not (outdated or len(small) >= max(min_files, 2)):
                continue
            inputs, rows, size = [], 0, 0
            for f, n, b in small:  # the oldest, until they make one target's worth
                inputs.append(f)
                rows, size = rows + n, size + b
                if rows >= target_rows or size >= target_bytes:
                    break
            if len(inputs) >= 2 or outdated:
                self._compact_partition(t, part, inputs, rows, size, target_rows, target_bytes)
                merged += len(inputs)
        return merged

    def _compact_partition(self, t: Table, part: Path, inputs: list[DataFile], total: int, size: int,
                           target_rows: int, target_bytes: int) -> None:
        """Merge ``inputs`` (``total`` rows, ``size`` bytes uncompressed) into new files."""
        top = max(f.batch_id for f in inputs)
        taken = {p.name for p in part.iterdir()}
        names: list[str] = []
        n = 0
        while len(names) < max(1, -(-total // target_rows), -(-size // target_bytes)):
            name = f"compact-{top}-{n}.parquet"
            if name not in taken:  # never reuse a name: it could be one of the inputs
                names.append(name)
            n += 1
        journal = part / f"_journal-{top}.json"
        plan = {"inputs": [f.path.name for f in inputs], "outputs": names}
        _write_json_atomic(journal, plan)
        _fsync_dir(part)

        try:
            written = self._merge(t, inputs, [part / name for name in names], target_rows, target_bytes)
        except BaseException:
            # Nothing was renamed yet: drop the temp files and the journal, keep the inputs.
            for name in names:
                _temp_name(part / name).unlink(missing_ok=True)
            journal.unlink(missing_ok=True)
            raise
        if len(written) < len(names):  # duplicates dropped: fewer outputs than planned
            plan["outputs"] = [p.name for p in written]
            _write_json_atomic(journal, plan)
        for final in written:
            os.replace(_temp_name(final), final)
        _fsync_dir(part)
        self._finish(part, journal)

    def _merge(self, t: Table, inputs: list[DataFile], outputs: list[Path], target_rows: int,
               target_bytes: int) -> list[Path]:
        """Stream the inputs, without repeated keys, into the temp files of ``outputs``.

        Returns the outputs that received rows, each fsynced under its temp name.
        """
        import duckdb  # lazy: only compaction needs it, not the collector's hot path

        tmp_dir = self.root / "_tmp"
        tmp_dir.mkdir(exist_ok=True)
        # one thread: the compactor runs beside the receiver and the flusher workers
        config = {"memory_limit": _COMPACT_MEMORY, "temp_directory": str(tmp_dir), "threads": 1}
        present = set().union(*(pq.read_schema(f.path).names for f in inputs))
        columns = [c for c in t.stored_columns if c in present]
        params: dict[str, Any] = {"files": [str(f.path) for f in inputs]}
        if t is SPANS:
            # parents anywhere in the lake that name an agent; any parent in this partition
            sql = queries.compact_spans_sql(columns, t.key)
            params["lake"] = queries.table_glob(self.root, t.name)
            params["partition"] = str(outputs[0].parent / "*.parquet")
        else:
            sql = queries.compact_sql(columns, t.key)
        out = RowGroupWriter(
            outputs,
            sort_keys=SORT_KEYS.get(t.name, ()),
            row_group_rows=ROW_GROUP_ROWS,
            target_rows=target_rows,
            target_bytes=target_bytes,
            buffer_bytes=_BUFFER_BYTES,
            open_file=lambda path: pq.ParquetWriter(_temp_name(path), t.stored_schema, **_write_options(t)),
            close_file=lambda path: _fsync(_temp_name(path)),
        )
        try:
            with duckdb.connect(":memory:", config=config) as con:
                con.execute(queries.DISABLE_PROGRESS_BAR)  # it would draw on the collector's stdout
                result = con.sql(sql, params=params)
                for batch in result.to_arrow_reader(4096):
                    out.write(_conform(batch, t.stored_schema))
        finally:
            out.close()
        return out.written

    def _recover(self, t: Table) -> None:
        """Settle journals left by a crash: finish a compaction whose outputs all exist, else undo it."""
        for part in self._partitions(t):
            for journal in sorted(part.glob("_journal-*.json")):
                if not _JOURNAL.match(journal.name):
                    continue
                plan = json.loads(journal.read_text())
                outs = [part / name for name in plan["outputs"]]
                if not all(p.exists() for p in outs):
                    # The inputs are all still there (they go only after every rename): roll back.
                    for p in outs:
                        p.unlink(missing_ok=True)
                        _temp_name(p).unlink(missing_ok=True)
                    journal.unlink()
                    _fsync_dir(part)
                else:
                    self._finish(part, journal)

    @staticmethod
    def _finish(part: Path, journal: Path) -> None:
        plan = json.loads(journal.read_text())
        for name in plan["inputs"]:
            (part / name).unlink(missing_ok=True)
        _fsync_dir(part)
        journal.unlink()
        _fsync_dir(part)


# ---------------------------------------------------------------------- helpers
def _table(name: str) -> Table:
    try:
        return TABLES[name]
    except KeyError:
        raise LakeError(f"unknown table {name!r}; tables: {', '.join(TABLES)}") from None


def _check_batch_id(batch_id: str) -> None:
    if not isinstance(batch_id, str) or not _BATCH_ID.match(batch_id):
        raise LakeError(f"batch id must be letters, digits or '_' (fixed width), got {batch_id!r}")


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


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """DuckDB's Arrow output → exactly ``schema`` (time zone names, string views, and
    columns that no input file had, from an older schema version)."""
    arrays = []
    for f in schema:
        i = batch.schema.get_field_index(f.name)
        arrays.append(pa.nulls(batch.num_rows, f.type) if i < 0 else batch.column(i).cast(f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _uncompressed_bytes(meta: pq.FileMetaData) -> int:
    return sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))


def _write_options(t: Table) -> dict[str, Any]:
    plain = _NO_DICTIONARY.get(t.name, frozenset())
    return {"compression": COMPRESSION, "use_dictionary": [c for c in t.stored_columns if c not in plain]}


def _write_atomic(data: pa.Table, path: Path, t: Table) -> None:
    tmp = _temp_name(path)
    pq.write_table(data, tmp, row_group_size=ROW_GROUP_ROWS, **_write_options(t))
    _fsync(tmp)
    os.replace(tmp, path)


def _write_json_atomic(path: Path, body: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(body))
    _fsync(tmp)
    os.replace(tmp, path)


def _temp_name(path: Path) -> Path:
    # Leading dot: hidden from every reader's glob; ".tmp": never mistaken for Parquet.
    return path.with_name(f".{path.name}.tmp")


def _is_temp(path: Path) -> bool:
    return path.name.startswith(".") and path.name.endswith(".tmp")


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    # A rename or unlink is durable only once its folder is fsynced (POSIX).
    _fsync(path)
