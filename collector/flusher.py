"""The flusher workers: write-ahead log → Parquet, exactly once.

Normalization and Parquet encoding are CPU-bound, so they run in their own process
(``exporters.parquet.workers``, default 1), away from the receivers, in two stages
that overlap: the main thread reads the log, cuts batches and normalizes them
(decoding and polars hold the GIL), and a writer thread encodes, compresses and
fsyncs each batch's Parquet files (Arrow releases the GIL), then checkpoints. At most
two batches are in flight (one written, one normalized), so a worker's memory is
bounded by two batches. One process with two stages keeps two cores busy without a
second interpreter's ~170 MiB.

With several workers, worker *k* of *N* owns the log records whose checksum is *k* mod
*N* (a retried request has the same bytes, hence the same checksum and the same
worker, whose dedupe set then drops its spans). Each worker loops: read its records up
to the durable position the receiver publishes, normalize them into a batch, write the
batch as Parquet files named ``<start position>_<k>``, fsync its checkpoint
``checkpoint-<k>.json`` (the position after the batch), and retire WAL segments that
every worker has passed. A write that fails (disk full, say) is retried, the same
batch, until it succeeds: no later checkpoint passes it.

Crash safety: files are renamed into place only when complete, and the checkpoint is
written after them. On start, every file of worker *k* whose batch starts at or after
its checkpoint is an orphan of a crash between the two and is deleted before the log
is replayed from the checkpoint, so no row is stored twice.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import queue
import secrets
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otelbench.collector import wal
from otelbench.collector.state import SharedState
from otelbench.storage import is_remote
from otelbench.storage.durable import replace_atomic
from otelbench.storage.process import die_with_parent

if TYPE_CHECKING:  # a worker gets WorkerSettings, never the config: no pydantic in its process
    from otelbench.collector.config import Config

log = logging.getLogger("otelbench.flusher")

READ_CHUNK_BYTES = 8 << 20
BATCHES_IN_FLIGHT = 2  # one being written, one being normalized: a worker's memory bound
IDLE_POLL_S = 0.01
ERROR_BACKOFF_S = 1.0


def batch_id(pos: int, worker: int | None = None, owner: str | None = None) -> str:
    """Fixed width so that string order is log order; the worker suffix keeps workers'
    files apart, the collector id (``owner``) collectors' (storage.files.owner_of)."""
    base = f"{pos:020d}" if worker is None else f"{pos:020d}_{worker}"
    return base if owner is None else f"{base}_{owner}"


def collector_id(config: "Config") -> str | None:
    """The id this collector writes its lake files under: ``exporters.parquet.collector_id``;
    for a lake in a bucket without one, an id made at the first start and kept in the
    write-ahead log's folder (``collector-id``) — unique per collector, the same after a
    restart, which recovery needs (its files are the ones it settles). None: a local
    lake's only writer. The receiver calls it before starting the workers, so they read
    the file it made."""
    parquet = config.exporters.parquet
    if parquet is None:
        return None
    if parquet.collector_id:
        return parquet.collector_id
    if not is_remote(parquet.path):
        return None
    path = Path(config.service.wal.dir) / "collector-id"
    if path.exists():
        return path.read_text().strip()
    made = "c" + secrets.token_hex(4)
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_atomic(path, made)
    return made


def _checkpoint_path(wal_dir: Path, worker: int) -> Path:
    return wal_dir / f"checkpoint-{worker}.json"


def read_checkpoints(wal_dir: Path) -> dict[int, dict[str, int]]:
    found = {}
    for p in wal_dir.glob("checkpoint-*.json"):
        try:
            found[int(p.stem.split("-", 1)[1])] = json.loads(p.read_text())
        except (ValueError, OSError):
            continue
    return found


def plan_workers(wal_dir: Path, configured: int) -> tuple[int, dict[int, int]]:
    """How many workers to run and where each starts.

    The record → worker assignment depends on the worker count, so the count may
    change only where every worker had reached the same position (after a clean
    stop); otherwise the previous count is kept until the log is drained.
    """
    found = read_checkpoints(wal_dir)
    if not found:
        seqs = wal.list_segments(wal_dir)
        start = wal.position(seqs[0] if seqs else 1, 0)
        return configured, {k: start for k in range(configured)}
    previous = {int(c.get("workers", len(found))) for c in found.values()}
    positions = {c["position"] for c in found.values()}
    if len(positions) == 1 and len(previous) == 1 and len(found) == previous.pop():
        common = positions.pop()
        return configured, {k: common for k in range(configured)}
    n = max(found) + 1
    if n != configured:
        log.warning("keeping %d flusher workers until the write-ahead log is drained (configured: %d)", n, configured)
    low = min(positions)
    return n, {k: found.get(k, {"position": low})["position"] for k in range(n)}


def write_checkpoint(wal_dir: Path, worker: int, workers: int, pos: int) -> None:
    body = {"position": pos, "batch_id": batch_id(pos, worker), "workers": workers}
    replace_atomic(_checkpoint_path(wal_dir, worker), json.dumps(body))


@dataclass(frozen=True)
class WorkerSettings:
    """What a worker needs of the config, as plain values (made in the receiver, pickled
    to the worker): unpickling the config itself would import pydantic, yaml and every
    section's models, ~9 MiB of the worker's memory, for these few values."""

    wal_dir: str
    log_level: str
    lake: str | None  # exporters.parquet.path; None: no Parquet exporter, checkpoints only
    owner: str | None  # collector_id
    signals: frozenset[str]  # those the pipelines send to Parquet
    dedupe_window: int = 0
    max_rows: int = 1
    max_batch_mib: int = 0  # 0: one byte (no Parquet exporter: nothing is batched)
    interval_s: float = 0.1

    @classmethod
    def of(cls, config: "Config") -> "WorkerSettings":
        parquet = config.exporters.parquet
        common = {"wal_dir": str(config.service.wal.dir), "log_level": config.service.telemetry.log_level,
                  "owner": collector_id(config), "signals": config.signals_to("parquet")}
        if parquet is None:
            return cls(lake=None, **common)
        return cls(lake=str(parquet.path), dedupe_window=parquet.dedupe_window, max_rows=parquet.flush.max_rows,
                   max_batch_mib=parquet.flush.max_batch_mib, interval_s=parquet.flush.interval_s, **common)


class Flusher:
    def __init__(self, settings: WorkerSettings, state: SharedState, worker: int, workers: int, start: int):
        from otelbench.exporters.parquet import ParquetSink  # heavy imports stay in the worker processes
        from otelbench.storage.lake import Lake

        self.state = state
        self.worker, self.workers = worker, workers
        self.wal_dir = Path(settings.wal_dir)
        self.owner = settings.owner
        self.lake = Lake(settings.lake, self.owner) if settings.lake is not None else None
        self.sink = (
            ParquetSink(self.lake, settings.signals, dedupe_window=settings.dedupe_window)
            if self.lake is not None
            else None
        )
        self.max_rows = settings.max_rows
        self.max_bytes = (settings.max_batch_mib << 20) or 1
        self.interval = settings.interval_s
        self.checkpoint = start  # written and checkpointed up to here (the writer thread)
        self.handed = start  # handed to the writer up to here (the reading thread)
        self._in_flight = threading.BoundedSemaphore(BATCHES_IN_FLIGHT)
        self._writer = _Writer(self)

    def _mine(self, crc: int) -> bool:
        return crc % self.workers == self.worker

    def recover(self, starts: dict[int, int]) -> None:
        """Worker 0 settles the lake for everyone (seed files, interrupted compactions,
        each worker's orphans) while the others wait, so no worker sweeps files that
        another is writing."""
        if self.lake is not None:
            if self.worker == 0:
                self.lake.init()
                for k, start in starts.items():
                    orphans = self.lake.discard_after(batch_id(start, k, self.owner),
                                                      suffix=batch_id(0, k, self.owner)[20:])
                    if orphans:
                        log.info("discarded %d files of worker %d written after its last checkpoint", orphans, k)
                self.state.set("recovered", 1)
            else:
                while not self.state.get("recovered"):
                    time.sleep(0.01)
            window = self.sink.recent.capacity
            if window:
                self.sink.remember_stored(self.lake.recent_keys("spans", window))
        self.state.set("flushed_pos", self.checkpoint)

    def _retire(self) -> None:
        everyone = self.state.flushed_pos  # the slowest worker's checkpoint
        self.state.add("retired_bytes", wal.retire_before(self.wal_dir, everyone))

    def _hand_off(self, end: int) -> None:
        """Stage 1 (this thread): normalize what is buffered, up to log position ``end``,
        and queue it for the writer. Waits while two batches are in flight (one being
        written, this one), so a worker holds at most two batches' memory."""
        while not self._in_flight.acquire(timeout=0.1):
            self._writer.check()
        started = time.perf_counter()
        batch = self.sink.take() if self.sink is not None and self.sink.pending else None
        duplicates = self.sink.duplicates if self.sink is not None else 0
        took = time.perf_counter() - started
        self._writer.put(_Job(self.handed, end, batch, duplicates, took))
        self.handed = end

    def _write(self, job: "_Job") -> None:
        """Stage 2 (the writer thread): Parquet, then the checkpoint past it, then retire."""
        started = time.perf_counter()
        if job.batch is not None:
            self.sink.write(batch_id(job.start, self.worker, self.owner), job.batch)
            self.state.add("flushed_spans", job.batch.counts["traces"])
            self.state.add("flushed_logs", job.batch.counts["logs"])
            self.state.add("flushed_points", job.batch.counts["metrics"])
        self.state.set("duplicates_dropped", job.duplicates)
        write_checkpoint(self.wal_dir, self.worker, self.workers, job.end)
        self.checkpoint = job.end
        self.state.set("flushed_pos", job.end)
        self._retire()
        took = int((time.perf_counter() - started + job.normalize_s) * 1e6)
        self.state.add("flushes", 1)
        self.state.add("flush_seconds_us", took)
        self.state.set("last_flush_us", took)

    def run(self) -> None:
        """Stage 1's loop: read this worker's records, cut batches, hand them to the writer.

        The two stages overlap: while the writer encodes and compresses a batch (Arrow
        releases the GIL), this thread decodes and normalizes the next one.
        """
        self._writer.start()
        try:
            self._read_loop()
        finally:
            self._writer.close()

    def _read_loop(self) -> None:
        pos = self.checkpoint
        last_flush = time.monotonic()
        # After a full batch the worker is behind: what it reads next has already waited,
        # so the rest is flushed as soon as it catches up instead of waiting out the
        # interval (the interval is for gathering a trickle into one file).
        behind = False
        while True:
            self._writer.check()
            durable = self.state.durable_pos
            stopping = bool(self.state.get("stop"))
            got = False
            for pos, rec in wal.read_records(self.wal_dir, pos, durable, READ_CHUNK_BYTES, self._mine):
                got = True
                if rec is not None and self.sink is not None:
                    self.sink.add(rec.signal, rec.owner, rec.payload, rec.agent)
                    if self.sink.rows >= self.max_rows or self.sink.payload_bytes >= self.max_bytes:
                        break
            caught_up = pos >= durable
            pending = pos != self.handed
            full = self.sink is not None and (self.sink.rows >= self.max_rows or self.sink.payload_bytes >= self.max_bytes)
            due = pending and (full or (caught_up and (behind or stopping)) or time.monotonic() - last_flush >= self.interval)
            if due:
                self._hand_off(pos)
                last_flush = time.monotonic()
                behind = full
            elif not pending:
                last_flush = time.monotonic()
            if stopping and caught_up and pos == self.handed:
                self._writer.drain()
                self._retire()
                return
            self.state.add("polls", 1)
            if not got:
                time.sleep(IDLE_POLL_S)


@dataclass
class _Job:
    start: int  # log position of the batch's first record (names its files)
    end: int  # the checkpoint once it is written
    batch: Any  # exporters.parquet.Batch, or None: nothing of ours to write, only the checkpoint
    duplicates: int
    normalize_s: float


class _Writer(threading.Thread):
    """The flusher's second stage: writes batches in order; a failed write is retried
    (the same batch, after a back-off) until it succeeds, so no later checkpoint can pass it."""

    def __init__(self, flusher: Flusher):
        super().__init__(name=f"otelbench-writer-{flusher.worker}", daemon=True)
        self.flusher = flusher
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.failure: BaseException | None = None

    def put(self, job: _Job) -> None:
        self.jobs.put(job)

    def check(self) -> None:
        """Raise here what killed the writer (a bug, not an I/O error: those are retried)."""
        if self.failure is not None:
            raise RuntimeError(f"flusher worker {self.flusher.worker}: the writer failed") from self.failure

    def drain(self) -> None:
        """Wait until every batch handed over is written and checkpointed."""
        while self.flusher.checkpoint != self.flusher.handed:
            self.check()
            time.sleep(IDLE_POLL_S)

    def close(self) -> None:
        self.jobs.put(None)
        self.join()

    def run(self) -> None:
        f = self.flusher
        try:
            while (job := self.jobs.get()) is not None:
                while True:
                    try:
                        f._write(job)
                        break
                    except OSError as exc:
                        f.state.add("flush_errors", 1)
                        log.error("worker %d: flush failed, will retry: %s", f.worker, exc)
                        time.sleep(ERROR_BACKOFF_S)
                f._in_flight.release()
        except BaseException as exc:  # noqa: BLE001 - handed to the reading thread
            self.failure = exc


# Each batch allocates ~100 MB of short-lived buffers (ptars' and numpy's are glibc's): a
# glibc heap that handed them back to the kernel at once would pay for them again as page
# faults on the next batch. Polars' jemalloc keeps its decay defaults but one arena, so
# what the normalizing thread frees polars' own thread reuses. Figures: docs/performance.md
# ("Why the defaults are what they are"); Arrow's pool: storage.process.ARROW_ALLOCATOR_ENV.
# The workers start with these where the user has not set them (storage.process.Child's
# ``defaults``).
ALLOCATOR_ENV = {
    "MALLOC_MMAP_THRESHOLD_": str(1 << 30),
    "MALLOC_TRIM_THRESHOLD_": str(1 << 32),
    "MALLOC_TOP_PAD_": str(64 << 20),
    "_RJEM_MALLOC_CONF": "narenas:1",  # polars' jemalloc (its build's prefix: _rjem_)
}


def _single_threaded() -> None:
    """The workers are the parallelism (one per core, beside the receiver): polars' and
    Arrow's own thread pools would only add hand-offs between them (measured 10–25%
    more CPU per span). Must run before polars is imported."""
    os.environ.setdefault("POLARS_MAX_THREADS", "1")
    import pyarrow

    pyarrow.set_cpu_count(1)
    pyarrow.set_io_thread_count(1)


def main(settings: WorkerSettings, state_fd: int, worker: int, starts: dict[int, int], parent_pid: int) -> None:
    """Entry point of a flusher worker process (``storage.process``)."""
    die_with_parent(parent_pid)
    _single_threaded()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the receiver decides when we stop
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    level = settings.log_level.upper()
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    state = SharedState(fd=state_fd, worker=worker)
    flusher = Flusher(settings, state, worker, len(starts), starts[worker])
    flusher.recover(starts)
    if flusher.sink is not None and "traces" in flusher.sink.signals:
        from otelbench.normalize.columnar import warm_up

        warm_up()
    # Normalized rows are acyclic: move what exists out of the collector's sight and
    # collect rarely (measured 15–25% faster normalization).
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)
    state.set("ready", 1)
    try:
        flusher.run()
    finally:
        state.set("ready", 0)
