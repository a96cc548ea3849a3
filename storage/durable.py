"""Durable files on local disk: fsync, folder fsync, atomic replace.

The one copy of these primitives, shared by the write-ahead log and the flusher's
checkpoints (collector/) and by the lake's local filesystem (``storage.fs``). Light on
purpose: no pyarrow, so the receiver process can import it.

POSIX: a new or renamed file survives a crash only once the file *and* its folder are
fsynced; ``rename`` over an existing name is atomic, so a reader sees the old file or
the new one, never half of either.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["fsync", "fsync_dir", "replace_atomic", "temp_name", "is_temp"]


def fsync(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make the creations, renames and deletions inside folder ``path`` durable."""
    fsync(path)


def temp_name(path: str | os.PathLike[str]) -> Path:
    """Where a file is written before it appears under ``path``: the same folder (so the
    rename is atomic), a leading dot (hidden from every reader's glob) and ``.tmp`` (never
    mistaken for Parquet or JSON)."""
    p = Path(path)
    return p.with_name(f".{p.name}.tmp")


def is_temp(path: str | os.PathLike[str]) -> bool:
    name = Path(path).name
    return name.startswith(".") and name.endswith(".tmp")


def replace_atomic(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Write ``data`` to ``path`` atomically and durably: temp file, fsync, rename, folder fsync."""
    target = Path(path)
    tmp = temp_name(target)
    with open(tmp, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)
    fsync_dir(target.parent)
