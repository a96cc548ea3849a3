"""Write-ahead log: acknowledged means on disk.

The receivers append each accepted request (as OTLP protobuf bytes) to the log
and answer only after the bytes are fsynced. Concurrent requests share one fsync
(group commit): a single committer thread writes everything that queued up
during the previous fsync in one ``write`` and one ``fdatasync``.

Layout: ``<dir>/wal-<seq>.log`` segments of records

    u32 payload length | u32 crc32 | u8 signal | u8 reserved | u16 sender length
    sender bytes (utf-8) | payload bytes

The sender is the ingest key's owner, then — when the request names an agent
(``X-Bench-Agent``, or the key's default) — a 0x1F separator and the agent. Records
written before agents existed hold the owner alone and read the same.

A position is ``seq << 40 | offset``: one int, ordered like the log itself.
The flusher reads records up to the *durable* position published by the
committer, writes Parquet, records a checkpoint and retires whole segments
behind it. A torn record at the tail (a crash mid-write) is cut off at startup;
it was never acknowledged.
"""

from __future__ import annotations

import os
import struct
import threading
import zlib
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from otelbench.storage.durable import fsync_dir

HEADER = struct.Struct("<IIBBH")
OFFSET_BITS = 40
_OFFSET_MASK = (1 << OFFSET_BITS) - 1

SIGNAL_CODES = {"traces": 1, "logs": 2, "metrics": 3}
SIGNAL_NAMES = {v: k for k, v in SIGNAL_CODES.items()}


class WalFull(Exception):
    """More bytes are waiting for the committer than the configured bound."""


def position(seq: int, offset: int) -> int:
    return (seq << OFFSET_BITS) | offset


def split(pos: int) -> tuple[int, int]:
    return pos >> OFFSET_BITS, pos & _OFFSET_MASK


def segment_path(directory: Path, seq: int) -> Path:
    return directory / f"wal-{seq:010d}.log"


def list_segments(directory: Path) -> list[int]:
    seqs = []
    for p in directory.glob("wal-*.log"):
        try:
            seqs.append(int(p.stem[4:]))
        except ValueError:
            continue
    return sorted(seqs)


SENDER_SEPARATOR = "\x1f"  # neither an owner (config) nor an agent (header check) may hold it


def encode_record(signal: str, owner: str | None, payload: bytes, agent: str | None = None) -> bytes:
    code = SIGNAL_CODES[signal]
    ob = ((owner or "") + (SENDER_SEPARATOR + agent if agent else "")).encode()
    crc = zlib.crc32(payload, zlib.crc32(ob, code))
    return HEADER.pack(len(payload), crc, code, 0, len(ob)) + ob + payload


@dataclass(frozen=True)
class Record:
    end: int  # position just after this record
    signal: str
    owner: str | None
    payload: bytes
    agent: str | None = None  # the agent the request named, if any


def _records(
    buf: memoryview, seq: int, start: int, want: Callable[[int], bool] | None = None
) -> Iterator[tuple[int, Record | None]]:
    """Whole, valid records of ``buf`` (which begins at offset ``start``), one at a time.

    Yields ``(bytes of buf consumed, record)``, and ``(consumed, None)`` once at the end
    when records were stepped over after the last one yielded; stops at a partial or
    corrupt record. ``want(crc)`` selects records by checksum: the others are stepped over
    without being copied or verified (flusher workers split the log this way; a retried
    request has the same checksum, so it meets the same worker). Lazy: a reader that
    stops early (its batch is full) pays nothing for the records after.
    """
    i, n, hs = 0, len(buf), HEADER.size
    reported = 0
    while i + hs <= n:
        length, crc, code, _, olen = HEADER.unpack_from(buf, i)
        end = i + hs + olen + length
        if end > n or code not in SIGNAL_NAMES:
            break
        if want is not None and not want(crc):
            i = end
            continue
        ob = bytes(buf[i + hs : i + hs + olen])
        payload = bytes(buf[i + hs + olen : end])
        if zlib.crc32(payload, zlib.crc32(ob, code)) != crc:
            break
        i = reported = end
        owner, _, agent = ob.decode().partition(SENDER_SEPARATOR)
        yield i, Record(position(seq, start + end), SIGNAL_NAMES[code], owner or None, payload, agent or None)
    if i != reported:
        yield i, None


class WalWriter:
    """Appends records to the current segment; only the committer thread calls it."""

    def __init__(self, directory: str | Path, segment_size: int, *, fsync: bool = True, first_seq: int = 1):
        """``first_seq``: where to start when the folder holds no segment; it must be
        past every position a reader has checkpointed, so new records sort after them."""
        self.dir = Path(directory)
        self.segment_size = segment_size
        self.fsync = fsync
        self.dir.mkdir(parents=True, exist_ok=True)
        seqs = list_segments(self.dir)
        self.seq = seqs[-1] if seqs else first_seq
        path = segment_path(self.dir, self.seq)
        self.offset = self._valid_length(path) if path.exists() else 0
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        os.ftruncate(self._fd, self.offset)  # cut a torn tail: it was never acknowledged
        os.lseek(self._fd, self.offset, os.SEEK_SET)
        fsync_dir(self.dir)

    @staticmethod
    def _valid_length(path: Path) -> int:
        consumed = 0
        for consumed, _ in _records(memoryview(path.read_bytes()), 0, 0):
            pass
        return consumed

    @property
    def head(self) -> int:
        return position(self.seq, self.offset)

    def append(self, data: bytes) -> int:
        """Write pre-encoded records; returns the position after them (not yet synced)."""
        if self.offset and self.offset + len(data) > self.segment_size:
            self._roll()
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError:
            # leave no partial record behind: later records must stay readable
            os.ftruncate(self._fd, self.offset)
            os.lseek(self._fd, self.offset, os.SEEK_SET)
            raise
        self.offset += len(data)
        return self.head

    def sync(self) -> None:
        if self.fsync:
            os.fdatasync(self._fd)

    def _roll(self) -> None:
        self.sync()
        os.close(self._fd)
        self.seq += 1
        self.offset = 0
        self._fd = os.open(segment_path(self.dir, self.seq), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        if self.fsync:
            fsync_dir(self.dir)

    def close(self) -> None:
        self.sync()
        os.close(self._fd)


def retire_before(directory: str | Path, pos: int) -> int:
    """Delete segments wholly before ``pos``; returns the bytes this call freed.

    Several flusher workers may race to delete the same segment: only the one
    whose unlink succeeds counts its bytes.
    """
    seq, _ = split(pos)
    freed = 0
    for s in list_segments(Path(directory)):
        if s >= seq:
            break
        p = segment_path(Path(directory), s)
        try:
            size = p.stat().st_size
            p.unlink()
        except FileNotFoundError:
            continue
        freed += size
    return freed


def wal_bytes(directory: str | Path) -> int:
    return sum(segment_path(Path(directory), s).stat().st_size for s in list_segments(Path(directory)))


def read_records(
    directory: str | Path, start: int, until: int, max_bytes: int, want: Callable[[int], bool] | None = None
) -> Iterator[tuple[int, Record | None]]:
    """Records from ``start`` up to ``until`` (a durable position), about ``max_bytes`` at most.

    Yields ``(position after, record)``; ``record`` is None for a stretch of records
    that ``want`` skipped, so the caller's position still advances over them.
    Always yields at least one record when one is available, however large.
    Segments before ``until``'s are complete (the writer rolls only between
    records), so reaching the end of one means moving on to the next.
    """
    directory = Path(directory)
    seq, offset = split(start)
    end_seq, end_offset = split(until)
    budget = max_bytes
    while (seq, offset) < (end_seq, end_offset) and budget > 0:
        path = segment_path(directory, seq)
        try:
            size = end_offset if seq == end_seq else path.stat().st_size
            with open(path, "rb") as f:
                f.seek(offset)
                data = f.read(min(size - offset, max(budget, 1 << 20)))
                if len(data) >= HEADER.size:
                    length, _, _, _, olen = HEADER.unpack_from(data, 0)
                    if HEADER.size + olen + length > len(data):
                        # one record larger than the read: read exactly that record
                        f.seek(offset)
                        data = f.read(HEADER.size + olen + length)
        except FileNotFoundError:
            data, size = b"", offset
        consumed = 0
        for consumed, rec in _records(memoryview(data), seq, offset, want):
            if rec is not None:
                yield rec.end, rec
        budget -= consumed
        offset += consumed
        if consumed:
            yield position(seq, offset), None
        if offset >= size or consumed == 0:
            if seq == end_seq:
                return
            seq, offset = seq + 1, 0
            yield position(seq, 0), None  # past a finished (or already retired) segment


class GroupCommitter:
    """One thread that writes and fsyncs whatever queued up, then resolves the futures."""

    def __init__(
        self,
        writer: WalWriter,
        *,
        max_pending_bytes: int,
        on_durable: Callable[[int, int], None] = lambda pos, nbytes: None,
    ):
        self._writer = writer
        self._max_pending = max_pending_bytes
        self._on_durable = on_durable
        self._cv = threading.Condition()
        self._pending: list[tuple[bytes, Future[int]]] = []
        self._pending_bytes = 0
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="wal-committer", daemon=True)
        self._thread.start()

    @property
    def pending_bytes(self) -> int:
        return self._pending_bytes

    def submit(self, record: bytes) -> "Future[int]":
        fut: Future[int] = Future()
        with self._cv:
            if self._closing:
                raise WalFull("the write-ahead log is closing")
            if self._pending_bytes + len(record) > self._max_pending and self._pending:
                raise WalFull("too many bytes waiting for the write-ahead log")
            self._pending.append((record, fut))
            self._pending_bytes += len(record)
            self._cv.notify()
        return fut

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._pending and not self._closing:
                    self._cv.wait()
                batch, self._pending = self._pending, []
                nbytes, self._pending_bytes = self._pending_bytes, 0
                if not batch and self._closing:
                    return
            try:
                end = self._writer.append(b"".join(r for r, _ in batch))
                self._writer.sync()
            except OSError as exc:  # disk full, I/O error: nothing in this batch is acknowledged
                for _, fut in batch:
                    fut.set_exception(exc)
                continue
            self._on_durable(end, nbytes)
            for _, fut in batch:
                fut.set_result(end)

    def close(self) -> None:
        with self._cv:
            self._closing = True
            self._cv.notify()
        self._thread.join()
        self._writer.close()
