"""The lake's one filesystem seam: every list, read, write, rename and delete of a lake file.

``storage.lake``, ``storage.compaction`` and ``storage.derived`` reach the lake's files
only through ``LakeFS`` (the write-ahead log is not a lake file: it stays on local disk,
``collector.wal``). Underneath is pyarrow's filesystem layer, so Parquet is read and
written by the same calls whatever the storage; the durability steps around them are
the local disk's (``storage.durable``): a file is written under a hidden staging name,
fsynced, renamed into place, and its folder fsynced.

A lake on S3-compatible object storage (``s3://bucket/prefix``) is ``ObjectLakeFS``
(``storage.objectstore``): the same calls, with the commit protocol object storage
allows (no rename: an object is uploaded under its final name once complete, which
``staging``/``seal``/``publish`` leave room for). ``storage.location.open_fs`` picks by
the location.

Paths are plain strings, '/'-separated and absolute (``LakeFS.path`` builds them under
the root); DuckDB and polars get them through ``uri``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import posixpath
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from otelbench.storage import durable


class LakeLocationError(ValueError):
    """A lake location this otelbench cannot use."""


class LakeBusy(RuntimeError):
    """A lake lock another process holds (``LakeFS.lock(wait=False)``)."""


class LakeFS:
    """The files of one lake, rooted at a local folder."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = str(Path(root).absolute())
        self.location = self.root  # what a person names the lake by (a folder, s3://...)
        self._fs = pafs.LocalFileSystem()

    @property
    def is_local(self) -> bool:
        return type(self) is LakeFS

    # ------------------------------------------------------------------ paths
    def path(self, *parts: str) -> str:
        return posixpath.join(self.root, *parts)

    def uri(self, path: str) -> str:
        """``path`` as DuckDB, polars and pyarrow datasets read it (a local path)."""
        return path

    def spill_dir(self) -> str:
        """A local folder where DuckDB may spill while it reads this lake (DuckDB makes it
        when it first spills)."""
        return self.path("_tmp")

    def attach(self, con: Any) -> None:
        """Let DuckDB connection ``con`` read this lake's paths (``uri``): nothing to do
        for a local folder."""

    @contextlib.contextmanager
    def local_copies(self, paths: list[str]) -> Iterator[dict[str, str]]:
        """Each of ``paths`` → a local file with its bytes while the block runs: the file
        itself here; a downloaded copy for a lake in a bucket (a merge then reads each
        object with one request instead of a ranged read per column chunk)."""
        yield {p: p for p in paths}

    # ------------------------------------------------------------------ listing
    def listdir(self, folder: str) -> list[tuple[str, bool]]:
        """(name, is_folder) of every entry of ``folder``, by name; [] when it does not exist."""
        infos = self._fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
        return sorted((i.base_name, i.type == pafs.FileType.Directory) for i in infos)

    def files(self, folder: str) -> list[str]:
        return [name for name, is_dir in self.listdir(folder) if not is_dir]

    def folders(self, folder: str) -> list[str]:
        return [name for name, is_dir in self.listdir(folder) if is_dir]

    def folder_mtimes(self, folder: str) -> dict[str, int]:
        """Each subfolder of ``folder`` → its modification time (ns): a folder gains a
        new mtime when a file appears in it or leaves it (``storage.tail``)."""
        infos = self._fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
        return {i.base_name: i.mtime_ns or 0 for i in infos if i.type == pafs.FileType.Directory}

    def exists(self, path: str) -> bool:
        return self._fs.get_file_info(path).type != pafs.FileType.NotFound

    def walk(self, folder: str) -> list[tuple[str, int, int]]:
        """(path, size, modification time in ns) of every file under ``folder``, at any
        depth (one listing on object storage); [] when it does not exist."""
        infos = self._fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True, recursive=True))
        return [(i.path, i.size, i.mtime_ns or 0) for i in infos if i.type == pafs.FileType.File]

    def makedirs(self, folder: str) -> None:
        self._fs.create_dir(folder, recursive=True)

    # ------------------------------------------------------------------ reads
    def read_text(self, path: str) -> str:
        with self._fs.open_input_stream(path) as f:
            return f.read().decode()

    def read_json(self, path: str) -> Any:
        return json.loads(self.read_text(path))

    def parquet_file(self, path: str) -> pq.ParquetFile:
        return pq.ParquetFile(path, filesystem=self._fs)

    def read_parquet(self, path: str, columns: list[str] | None = None) -> pa.Table:
        return pq.read_table(path, columns=columns, filesystem=self._fs)

    def parquet_schema(self, path: str) -> pa.Schema:
        return pq.read_schema(path, filesystem=self._fs)

    # ------------------------------------------------------------------ writes
    def staging(self, path: str) -> str:
        """Where a file is written before it appears under ``path`` (hidden from every
        reader's glob, never mistaken for Parquet)."""
        return str(durable.temp_name(path))

    def is_staging(self, name: str) -> bool:
        return durable.is_temp(name)

    def parquet_writer(self, path: str, schema: pa.Schema, **options: Any) -> pq.ParquetWriter:
        """A writer of the file that ``publish(path)`` later makes visible."""
        return pq.ParquetWriter(self.staging(path), schema, filesystem=self._fs, **options)

    def seal(self, path: str) -> None:
        """The staged file of ``path`` is complete: make its bytes durable (before publish)."""
        durable.fsync(self.staging(path))

    def publish(self, path: str) -> None:
        """Make the sealed staged file visible under ``path``, atomically (the folder is
        synced separately, once for many files: ``sync_folder``)."""
        self._fs.move(self.staging(path), path)

    def discard(self, path: str) -> None:
        """Forget the staged file of ``path``, if any."""
        self.delete(self.staging(path), missing_ok=True)

    def write_parquet(self, data: pa.Table, path: str, **options: Any) -> None:
        """``data`` appears under ``path`` whole or not at all (the folder sync is the caller's)."""
        pq.write_table(data, self.staging(path), filesystem=self._fs, **options)
        self.seal(path)
        self.publish(path)

    def write_json(self, path: str, body: Any, *, indent: int | None = None) -> None:
        """``body`` as JSON under ``path``, atomically and durably (folder synced too)."""
        durable.replace_atomic(path, json.dumps(body, indent=indent) + ("\n" if indent else ""))

    def delete(self, path: str, *, missing_ok: bool = False) -> None:
        try:
            self._fs.delete_file(path)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def sync_folder(self, folder: str) -> None:
        """Make the files published into or deleted from ``folder`` durable."""
        durable.fsync_dir(folder)

    @contextlib.contextmanager
    def lock(self, path: str, *, wait: bool = True) -> Iterator[None]:
        """Exclusive among the processes of this machine while the block runs (an advisory
        ``flock`` on ``path``, created if missing; its name should start with ``_`` so no
        reader takes it for data). ``wait=False``: raise ``LakeBusy`` at once when another
        process holds it. A process that dies releases it."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise LakeBusy(f"{path} is held by another process") from None
            yield
        finally:
            os.close(fd)  # closing releases the lock
