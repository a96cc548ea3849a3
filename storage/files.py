"""The lake's files: names, partitions, Parquet write options.

What ``storage.lake`` (flushed batches), ``storage.derived`` (processors' commits) and
``storage.compaction`` (merges) share. Every file appears atomically through the
filesystem seam (``storage.fs``); a ``DataFile`` name orders files the way their rows
were written.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from otelbench.storage.fs import LakeFS
from otelbench.storage.schema import PARTITION_COLUMN, TABLES, Table

COMPRESSION = "zstd"  # the files that stay: compaction's outputs, derived tables, seeds
# A flushed batch's files live until the next compaction merges them (seconds to minutes):
# LZ4 compresses them at about half of zstd's CPU cost, on the ingest path's critical core,
# for files about twice as big meanwhile (benchmarks/ingest.py; docs/performance.md).
FRESH_COMPRESSION = "lz4"
ROW_GROUP_ROWS = 122_880  # DuckDB's own row-group size: one scan task per group
# Unique per row: a dictionary page would only fill up and fall back, slowing reads.
_NO_DICTIONARY: dict[str, frozenset[str]] = {"spans": frozenset({"span_id"})}
# A Parquet bloom filter per row group on the trace id: a run page, MCP's get_run and
# ``WHERE trace_id = ?`` read only the few row groups that hold the trace. Trace ids are
# random, so a row group's min/max span the whole id range and skip nothing, and clustering
# by trace would undo the span_type bucketing the aggregates skip by (docs/schema.md,
# "Layout"). Sized for as many ids as the row group has rows, at 1 % false
# positives (pyarrow shrinks a filter to the ids it got: ~0.7 bytes a span in all).
BLOOM_COLUMNS: dict[str, tuple[str, ...]] = {"spans": ("trace_id",), "logs": ("trace_id",)}
BLOOM_FPP = 0.01
_BLOOM_MIN_NDV = 1024

LINEAGE_KEY = b"otelbench.compacted_from"
SEED_DATE = "1970-01-01"
SEED_NAME = "seed.parquet"

_BATCH_ID = re.compile(r"^[0-9A-Za-z_]+$")
# part: a flushed batch (signal tables); commit: a processor's commit (derived tables);
# compact: a merge of either.
_DATA_FILE = re.compile(r"^(?P<kind>part|commit|compact)-(?P<batch>[0-9A-Za-z_]+)-(?P<n>\d+)\.parquet$")
# a compaction's plan, in the partition while it runs (storage.compaction)
JOURNAL = re.compile(r"^_journal-(?P<batch>[0-9A-Za-z_]+)\.json$")
_GLOB_CHARS = set("*?[")
_RELISTS = 8  # a journal that vanished between a listing and its read: list again


class LakeError(RuntimeError):
    """The lake on disk cannot be used as asked (newer schema, bad batch id, bad rows)."""


@dataclass(frozen=True, order=True)
class DataFile:
    """A part, commit or compact file, ordered the way its rows were written."""

    batch_id: str
    kind_rank: int  # a compact file holds rows older than a part/commit file of the same batch
    n: int
    path: str

    @classmethod
    def parse(cls, path: str) -> DataFile | None:
        m = _DATA_FILE.match(posixpath.basename(path))
        if m is None:
            return None
        rank = 0 if m["kind"] == "compact" else 1
        return cls(m["batch"], rank, int(m["n"]), path)

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)


def table(name: str) -> Table:
    try:
        return TABLES[name]
    except KeyError:
        raise LakeError(f"unknown table {name!r}; tables: {', '.join(TABLES)}") from None


_OWNER = re.compile(r"^[a-z][a-z0-9]{0,31}$")


def check_owner(owner: str | None) -> None:
    if owner is not None and not _OWNER.match(owner):
        raise LakeError(f"collector id must be a lowercase letter then up to 31 lowercase letters or digits, got {owner!r}")


def owner_of(batch_id: str) -> str | None:
    """The collector that wrote a batch: its id ends the batch id after a '_' (a worker
    number or a position never starts with a letter); None for a lake's only writer."""
    last = batch_id.rsplit("_", 1)[-1]
    return last if "_" in batch_id and last[:1].isalpha() else None


def check_batch_id(batch_id: str) -> None:
    if not isinstance(batch_id, str) or not _BATCH_ID.match(batch_id):
        raise LakeError(f"batch id must be letters, digits or '_' (fixed width), got {batch_id!r}")


def partitions(fs: LakeFS, t: Table) -> list[str]:
    """The table's partition folders, oldest date first."""
    top = fs.path(t.name)
    return [posixpath.join(top, name) for name in fs.folders(top) if name.startswith(f"{PARTITION_COLUMN}=")]


def data_files(fs: LakeFS, t: Table) -> list[DataFile]:
    """Every part, commit and compact file of the table (not the seed) that a reader
    counts (``visible``), oldest first."""
    found = (DataFile.parse(posixpath.join(part, name))
             for part in partitions(fs, t) for name in visible_files(fs, part))
    return sorted(f for f in found if f is not None)


class _Relist(Exception):
    """A journal listed a moment ago is gone: its compaction finished; list again."""


def visible(fs: LakeFS, folder: str, names: list[str]) -> list[str]:
    """The names of one folder's listing that a reader counts, given the compaction
    journals among them: while any output a journal plans is missing, its outputs are
    hidden (the merge is not done: its inputs still hold the rows); once all exist, its
    inputs are (the merge is done: they are about to be deleted). So rows are counted once
    whichever moment the listing caught. Raises ``_Relist`` when a journal vanished
    between the listing and its read."""
    present = set(names)
    hidden: set[str] = set()
    for name in names:
        if JOURNAL.match(name):
            try:
                plan = fs.read_json(posixpath.join(folder, name))
            except FileNotFoundError:
                raise _Relist from None
            outputs = plan["outputs"]
            hidden |= set(plan["inputs"]) if all(o in present for o in outputs) else set(outputs)
    return [n for n in names if n not in hidden]


def visible_files(fs: LakeFS, folder: str) -> list[str]:
    """``visible`` over a fresh listing of ``folder``, listed again while a compaction
    finishes under it."""
    for _ in range(_RELISTS):
        try:
            return visible(fs, folder, fs.files(folder))
        except _Relist:
            continue
    return visible(fs, folder, fs.files(folder))


def visible_glob(fs: LakeFS, pattern: str) -> dict[str, tuple[int, int]]:
    """The files matching ``pattern`` ('/'-separated, ``*``/``?``/``[`` within one path
    segment) that a reader counts → their size and modification time (ns): one recursive listing under the
    pattern's fixed part, each folder filtered by ``visible``. For a reader that lists
    for itself (DuckDB over object storage: ``storage.objectstore``)."""
    import fnmatch

    segments = pattern.split("/")
    fixed = next((i for i, s in enumerate(segments) if _GLOB_CHARS & set(s)), None)
    if fixed is None:
        return {path: (size, mtime) for path, size, mtime in fs.walk(pattern.rpartition("/")[0]) if path == pattern}
    base = "/".join(segments[:fixed])
    for _ in range(_RELISTS + 1):
        by_folder: dict[str, dict[str, tuple[int, int]]] = {}
        for path, size, mtime in fs.walk(base):
            folder, _, name = path.rpartition("/")
            by_folder.setdefault(folder, {})[name] = (size, mtime)
        try:
            found = {}
            for folder, sizes in by_folder.items():
                for name in visible(fs, folder, sorted(sizes)):
                    path = f"{folder}/{name}"
                    parts = path.split("/")
                    if len(parts) == len(segments) and all(fnmatch.fnmatchcase(p, s) for p, s in zip(parts, segments)):
                        found[path] = sizes[name]
            return found
        except _Relist:
            continue
    raise RuntimeError(f"{pattern}: the listing kept changing under a compaction")


def partition_dir(fs: LakeFS, t: Table, day: str) -> str:
    return fs.path(t.name, f"{PARTITION_COLUMN}={day}")


def day_globs(fs: LakeFS, t: Table, days: list[str]) -> list[str]:
    """Globs of the Parquet files of ``days`` (YYYY-MM-DD) and of the seed (every column,
    for ``union_by_name``): what a reader of those days lists instead of every partition.
    A day's glob is left out while its folder holds no data file (DuckDB refuses a glob
    that matches nothing); once one is there one always is (compaction publishes its
    output before it deletes its inputs), and a reader that retries lists anew.
    """
    found = [partition_dir(fs, t, SEED_DATE)]
    for day in sorted(set(days)):
        folder = partition_dir(fs, t, day)
        if any(DataFile.parse(f"{folder}/{name}") for name in fs.files(folder)):
            found.append(folder)
    return [f"{fs.uri(folder)}/*.parquet" for folder in found]


def with_lineage(schema: pa.Schema, inputs: list[DataFile]) -> pa.Schema:
    """``schema`` carrying, in the file's footer, the names of the files a compaction merged
    into it (``LINEAGE_KEY``): a reader that has seen all of them (``storage.rollups``)
    knows the file holds nothing new without reading it."""
    return schema.with_metadata({LINEAGE_KEY: json.dumps(sorted(f.name for f in inputs))})


def lineage(fs: LakeFS, path: str) -> list[str] | None:
    """The names of the files a compact file was merged from (same folder); None when it
    does not say (written before lineage was recorded, or not a compaction's output)."""
    meta = fs.parquet_file(path).schema_arrow.metadata or {}
    raw = meta.get(LINEAGE_KEY)
    return json.loads(raw) if raw is not None else None


def conform_arrow(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """DuckDB's Arrow output → exactly ``schema`` (time zone names, string views, and
    columns that no input file had, from an older schema version)."""
    arrays = []
    for f in schema:
        i = batch.schema.get_field_index(f.name)
        arrays.append(pa.nulls(batch.num_rows, f.type) if i < 0 else batch.column(i).cast(f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def write_options(t: Table, *, fresh: bool = False, group_rows: int | None = None) -> dict[str, Any]:
    """Parquet writer options for ``t``; ``fresh``: a flushed batch's file, which compaction
    rewrites soon (``FRESH_COMPRESSION``); ``group_rows``: about how many rows a row group
    will hold, which sizes its bloom filters (``BLOOM_COLUMNS``; None: no filters)."""
    plain = _NO_DICTIONARY.get(t.name, frozenset())
    options: dict[str, Any] = {"compression": FRESH_COMPRESSION if fresh else COMPRESSION,
                               "use_dictionary": [c for c in t.stored_columns if c not in plain]}
    if group_rows is not None and t.name in BLOOM_COLUMNS:
        ndv = min(max(group_rows, _BLOOM_MIN_NDV), ROW_GROUP_ROWS)
        options["bloom_filter_options"] = {c: {"ndv": ndv, "fpp": BLOOM_FPP} for c in BLOOM_COLUMNS[t.name]}
    return options


def write_parquet(fs: LakeFS, data: Any, path: str, t: Table, *, fresh: bool = False) -> None:
    """``data`` (an Arrow table of ``t.stored_schema``) as one file, atomically."""
    fs.write_parquet(data, path, row_group_size=ROW_GROUP_ROWS,
                     **write_options(t, fresh=fresh, group_rows=min(data.num_rows, ROW_GROUP_ROWS)))


def write_staged(fs: LakeFS, data: Any, path: str, t: Table, schema: pa.Schema | None = None, *,
                 row_group_rows: int = ROW_GROUP_ROWS) -> None:
    """``data`` written and sealed under ``path``'s staging name, for a caller that
    publishes several files together (``storage.compaction.replace_files``); ``schema``:
    ``t.stored_schema`` with file metadata (``with_lineage``)."""
    with fs.parquet_writer(path, schema or t.stored_schema,
                           **write_options(t, group_rows=min(data.num_rows, row_group_rows))) as writer:
        writer.write_table(data, row_group_size=row_group_rows)
    fs.seal(path)
