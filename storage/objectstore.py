"""The lake on S3-compatible object storage: ``s3://bucket/prefix``.

The same ``LakeFS`` calls as a local lake (``storage.fs``), over pyarrow's S3 client, with
the commit protocol object storage allows — no rename, no fsync, no folder, no lock:

- **A file appears whole under its final name or not at all.** A small file (a flushed
  batch, a commit, a journal) is encoded in memory and sent in one upload; a big one (a
  compaction's output) is written to a local spool file and uploaded when sealed. An S3
  object becomes visible only when its upload completes (a multipart upload only on its
  completion), so no reader ever sees part of one. There is no hidden staging object.
- **Compaction publishes before it deletes**, journaled in the bucket
  (``storage.compaction``: ``_journal-<batch>.json`` lists inputs and outputs before any
  output is written). Uploading an output makes it visible at once, so readers apply the
  journal (``storage.files.visible``): while any planned output is missing, the outputs
  are hidden; once all exist, the inputs are. A reader therefore never counts a row twice
  while a compaction runs, and a crash half-way is settled by its owner's next start.
- **Locks are per machine** (``flock`` on a file under ``~/.cache/otelbench/locks``):
  processes of one machine take turns; collectors on several machines never need one,
  since each writes and compacts only the files under its own collector id
  (``storage.lake``).

Where the bucket is: ``s3://bucket/prefix``; the endpoint, region, addressing style and
credentials come from the variables AWS tools already read (``S3Options.from_env``):
``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``, ``AWS_REGION`` or ``AWS_DEFAULT_REGION``,
``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN`` (else pyarrow's
default chain: profile, instance role), and ``AWS_S3_ADDRESSING_STYLE`` (``path`` or
``virtual``; botocore's setting of that name). The collector's config can override the
first three (docs/config.md, ``exporters.parquet.s3``).

DuckDB reads the bucket through ``ObjectLakeFS.attach``: pyarrow's S3 client registered as
an fsspec filesystem for ``s3://`` (DuckDB's own ``httpfs`` extension needs a download
that offline machines cannot make), which lists with the journal rule above and answers
DuckDB's questions about a listed object's size from the listing: a query makes one LIST
per table it reads, one HEAD per file it opens and ranged GETs.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import posixpath
import shutil
import tempfile
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from fsspec.implementations.arrow import ArrowFSWrapper

from otelbench.storage.files import visible_glob
from otelbench.storage.fs import LakeFS, LakeLocationError

SCHEME = "s3://"
LOCK_DIR = Path.home() / ".cache" / "otelbench" / "locks"
_SMALL_UPLOAD = 64 << 20  # a file up to this size is encoded in memory, above it spooled to disk
_DOWNLOADS = 8  # a merge's inputs are fetched this many at a time


@dataclass(frozen=True)
class S3Options:
    """Where the bucket's server is and how to address it (credentials stay in the
    environment: never in a config file)."""

    endpoint: str | None = None  # "http://127.0.0.1:9000"; None: AWS itself
    region: str | None = None
    path_style: bool | None = None  # None: pyarrow's choice (path style with an endpoint)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> S3Options:
        env = os.environ if env is None else env
        style = (env.get("AWS_S3_ADDRESSING_STYLE") or "").strip().lower()
        if style not in ("", "auto", "path", "virtual"):
            raise LakeLocationError(f"AWS_S3_ADDRESSING_STYLE={style!r}: expected path, virtual or auto")
        return cls(
            endpoint=env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None,
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
            path_style={"path": True, "virtual": False}.get(style),
        )

    def filesystem(self, **kwargs: Any) -> pafs.S3FileSystem:
        """pyarrow's S3 client for these options (``kwargs``: more of its options)."""
        if self.endpoint:
            parts = urlsplit(self.endpoint if "://" in self.endpoint else f"https://{self.endpoint}")
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise LakeLocationError(f"S3 endpoint {self.endpoint!r}: expected http(s)://host[:port]")
            kwargs.update(endpoint_override=parts.netloc, scheme=parts.scheme)
        if self.region:
            kwargs["region"] = self.region
        if self.path_style is False:
            kwargs["force_virtual_addressing"] = True
        return pafs.S3FileSystem(**kwargs)


def split_location(location: str) -> tuple[str, str]:
    """``s3://bucket/prefix`` → ("bucket", "prefix"); the prefix may be empty."""
    if not location.startswith(SCHEME):
        raise LakeLocationError(f"{location!r} is not an s3:// location")
    bucket, _, prefix = location[len(SCHEME):].rstrip("/").partition("/")
    if not bucket:
        raise LakeLocationError(f"lake location {location!r}: no bucket (expected s3://bucket/prefix)")
    if set("*?[]{}'") & set(location):
        raise LakeLocationError(f"lake location {location!r}: must not contain any of *?[]{{}}'")
    return bucket, prefix.strip("/")


class ObjectLakeFS(LakeFS):
    """The files of one lake under ``s3://bucket/prefix``. Paths are pyarrow's
    (``bucket/prefix/...``); ``uri`` adds the scheme."""

    def __init__(self, location: str, options: S3Options | None = None) -> None:
        bucket, prefix = split_location(location)
        self.root = posixpath.join(bucket, prefix) if prefix else bucket
        self.location = SCHEME + self.root
        self.options = options or S3Options.from_env()
        # delayed open: an object smaller than one upload part is one PutObject, not a
        # multipart upload's three requests
        self._fs = self.options.filesystem(allow_delayed_open=True)
        self._spooled: dict[str, str] = {}  # final path → local spool file being written
        self._spool_dir: str | None = None
        self._lock = threading.Lock()

    def uri(self, path: str) -> str:
        return SCHEME + path

    # -- what a folder is: a prefix, with no time of its own
    def folder_mtimes(self, folder: str) -> dict[str, int]:
        """Each subfolder → a fingerprint of the names in it (S3 has no folder times; a
        file appearing or leaving changes it)."""
        names: dict[str, list[str]] = {}
        for path, _, _ in self.walk(folder):
            rel = posixpath.relpath(path, folder)
            if "/" in rel:
                names.setdefault(rel.split("/", 1)[0], []).append(rel)
        return {sub: int.from_bytes(hashlib.blake2b("\n".join(sorted(n)).encode(), digest_size=7).digest(), "big")
                for sub, n in names.items()}

    def makedirs(self, folder: str) -> None:
        """Nothing: a prefix exists once an object is under it (a marker object would
        show up in every listing)."""

    def sync_folder(self, folder: str) -> None:
        """Nothing: an upload is durable once it completes."""

    # -- writes: whole objects under their final names
    def staging(self, path: str) -> str:
        return self._spooled.get(path, path)

    def is_staging(self, name: str) -> bool:
        return False  # nothing is ever staged in the bucket

    def parquet_writer(self, path: str, schema: pa.Schema, **options: Any) -> pq.ParquetWriter:
        fd, spool = tempfile.mkstemp(dir=self._spool(), suffix=".parquet")
        os.close(fd)
        with self._lock:
            self._spooled[path] = spool
        return pq.ParquetWriter(spool, schema, **options)

    def seal(self, path: str) -> None:
        """Upload the spooled file: from here on it is visible under ``path``."""
        spool = self._spooled.pop(path)
        try:
            pafs.copy_files(spool, path, source_filesystem=pafs.LocalFileSystem(), destination_filesystem=self._fs)
        finally:
            os.unlink(spool)

    @contextlib.contextmanager
    def local_copies(self, paths: list[str]) -> Iterator[dict[str, str]]:
        folder = tempfile.mkdtemp(prefix="otelbench-merge-", dir=self._spool())
        local = {p: os.path.join(folder, f"{i}.parquet") for i, p in enumerate(paths)}
        try:
            with ThreadPoolExecutor(_DOWNLOADS) as pool:
                list(pool.map(lambda p: pafs.copy_files(p, local[p], source_filesystem=self._fs,
                                                        destination_filesystem=pafs.LocalFileSystem()), paths))
            yield local
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _spool(self) -> str:
        with self._lock:
            if self._spool_dir is None:
                self._spool_dir = tempfile.mkdtemp(prefix="otelbench-spool-")
            return self._spool_dir

    def publish(self, path: str) -> None:
        """Nothing: sealing uploaded it, which made it visible."""

    def discard(self, path: str) -> None:
        spool = self._spooled.pop(path, None)
        if spool is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(spool)

    def write_parquet(self, data: pa.Table, path: str, **options: Any) -> None:
        if data.nbytes > _SMALL_UPLOAD:
            with self.parquet_writer(path, data.schema, **{k: v for k, v in options.items()
                                                          if k != "row_group_size"}) as writer:
                writer.write_table(data, row_group_size=options.get("row_group_size"))
            self.seal(path)
            return
        sink = pa.BufferOutputStream()
        pq.write_table(data, sink, **options)
        self._put(path, sink.getvalue())

    def write_json(self, path: str, body: Any, *, indent: int | None = None) -> None:
        self._put(path, (json.dumps(body, indent=indent) + ("\n" if indent else "")).encode())

    def _put(self, path: str, data: bytes | pa.Buffer) -> None:
        with self._fs.open_output_stream(path) as out:
            out.write(data)

    def delete(self, path: str, *, missing_ok: bool = False) -> None:
        if not missing_ok and not self.exists(path):
            raise FileNotFoundError(path)
        with contextlib.suppress(FileNotFoundError):
            self._fs.delete_file(path)

    @contextlib.contextmanager
    def lock(self, path: str, *, wait: bool = True) -> Iterator[None]:
        """Exclusive among the processes of this machine (see the module's note)."""
        LOCK_DIR.mkdir(parents=True, exist_ok=True)
        local = LOCK_DIR / (hashlib.sha256(self.uri(path).encode()).hexdigest()[:32] + ".lock")
        with super().lock(str(local), wait=wait):
            yield

    # -- DuckDB
    def attach(self, con: Any) -> None:
        """Register this bucket, as the fsspec filesystem DuckDB reads ``s3://`` through,
        on ``con``."""
        con.register_filesystem(DuckDBView(self))

    def spill_dir(self) -> str:
        folder = os.path.join(tempfile.gettempdir(), "otelbench-duckdb")
        os.makedirs(folder, exist_ok=True)
        return folder


class DuckDBView(ArrowFSWrapper):
    """pyarrow's S3 client as fsspec for DuckDB: globs list the folder once and apply
    the compaction journals (``storage.files.visible``); sizes come from the listing."""

    protocol = "s3"
    root_marker = ""
    cachable = False  # one per lake connection, never shared through fsspec's cache

    def __init__(self, lake: ObjectLakeFS) -> None:
        super().__init__(lake._fs)
        self.lake = lake
        self._sizes: dict[str, tuple[int, int]] = {}  # listed path → size, mtime (ns)

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        return str(path).split("://", 1)[-1].rstrip("/")

    def glob(self, path: str, **kwargs: Any) -> Any:
        found = visible_glob(self.lake, self._strip_protocol(path))
        self._sizes.update(found)
        names = sorted(found)
        return {n: self.info(n) for n in names} if kwargs.get("detail") else names

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        stripped = self._strip_protocol(path)
        listed = self._sizes.get(stripped)
        if listed is not None:
            size, mtime_ns = listed
            when = datetime.datetime.fromtimestamp(mtime_ns / 1e9, datetime.timezone.utc)
            return {"name": stripped, "size": size, "type": "file", "mtime": when}
        return super().info(stripped, **kwargs)

    def modified(self, path: str) -> datetime.datetime:
        return self.info(path)["mtime"]  # fsspec's own gives None for an object gone
