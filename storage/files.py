"""The lake's files: names, atomic writes, fsync, Parquet write options.

The primitives ``storage.lake`` (flushed batches) and ``storage.compaction`` (merges)
share: every file appears atomically, written under a hidden ``.…tmp`` name in its
folder, fsynced, renamed, then the folder fsynced; a ``DataFile`` name orders files the
way their rows were written.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from storage.schema import PARTITION_COLUMN, TABLES, Table

COMPRESSION = "zstd"
ROW_GROUP_ROWS = 122_880  # DuckDB's own row-group size: one scan task per group
# Unique per row: a dictionary page would only fill up and fall back, slowing reads.
_NO_DICTIONARY: dict[str, frozenset[str]] = {"spans": frozenset({"span_id"})}

_BATCH_ID = re.compile(r"^[0-9A-Za-z_]+$")
_DATA_FILE = re.compile(r"^(?P<kind>part|compact)-(?P<batch>[0-9A-Za-z_]+)-(?P<n>\d+)\.parquet$")


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


def table(name: str) -> Table:
    try:
        return TABLES[name]
    except KeyError:
        raise LakeError(f"unknown table {name!r}; tables: {', '.join(TABLES)}") from None


def check_batch_id(batch_id: str) -> None:
    if not isinstance(batch_id, str) or not _BATCH_ID.match(batch_id):
        raise LakeError(f"batch id must be letters, digits or '_' (fixed width), got {batch_id!r}")


def partitions(root: Path, t: Table) -> list[Path]:
    return sorted(p for p in (root / t.name).glob(f"{PARTITION_COLUMN}=*") if p.is_dir())


def write_options(t: Table) -> dict[str, Any]:
    plain = _NO_DICTIONARY.get(t.name, frozenset())
    return {"compression": COMPRESSION, "use_dictionary": [c for c in t.stored_columns if c not in plain]}


def write_atomic(data: pa.Table, path: Path, t: Table) -> None:
    tmp = temp_name(path)
    pq.write_table(data, tmp, row_group_size=ROW_GROUP_ROWS, **write_options(t))
    fsync(tmp)
    os.replace(tmp, path)


def write_json_atomic(path: Path, body: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(body))
    fsync(tmp)
    os.replace(tmp, path)


def temp_name(path: Path) -> Path:
    # Leading dot: hidden from every reader's glob; ".tmp": never mistaken for Parquet.
    return path.with_name(f".{path.name}.tmp")


def is_temp(path: Path) -> bool:
    return path.name.startswith(".") and path.name.endswith(".tmp")


def fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    # A rename or unlink is durable only once its folder is fsynced (POSIX).
    fsync(path)
