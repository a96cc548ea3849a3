"""The ingest core: the one function both receivers call.

``Ingest.export`` takes a decoded OTLP request, admits it (auth, pipeline,
backpressure), drops invalid items (partial success), appends it to the
write-ahead log and returns a future that resolves once it is fsynced. The HTTP
and gRPC adapters only decode, call this, and encode; error → status mapping
lives in ``collector.errors``.
"""

from __future__ import annotations

import re
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Callable, Iterable

from google.protobuf.message import Message

from otelbench.collector import validate, wal
from otelbench.collector.errors import MalformedRequest, NotFound, TooManyRequests, Unavailable
from otelbench.collector.keys import Entry, Keyring
from otelbench.collector.telemetry import Telemetry

Forward = Callable[[str, bytes], None]  # (signal, OTLP protobuf payload) after acknowledgement


@dataclass(frozen=True)
class ExportResult:
    accepted: int
    rejected: int
    message: str | None


@dataclass(frozen=True)
class Sender:
    """Who sent a request: the ingest key's owner (None when auth is off) and the agent
    the request names (the X-Bench-Agent header, else the key's default; None)."""

    owner: str | None = None
    agent: str | None = None
    key: Entry | None = None  # the key's entry (its quotas); None when auth is off


_AGENT = re.compile(r"^[^\x00-\x1f\x7f]{1,200}$")  # printable: the log separates it with 0x1F


class Ingest:
    def __init__(
        self,
        *,
        signals: Iterable[str],
        keys: Keyring,
        committer: wal.GroupCommitter,
        telemetry: Telemetry,
        max_inflight: int,
        max_unflushed_bytes: int,
        retry_after_s: int,
        forwarders: Iterable[Forward] = (),
    ):
        self.signals = frozenset(signals)
        self.keys = keys
        self._committer = committer
        self.telemetry = telemetry
        self._max_inflight = max_inflight
        self._max_unflushed = max_unflushed_bytes
        self._retry_after = retry_after_s
        self._forwarders = tuple(forwarders)
        self._lock = threading.Lock()
        self._inflight = 0
        self.stopping = False

    # -- admission ----------------------------------------------------------------
    def authenticate(self, key: str | None, agent: str | None = None) -> Sender:
        """Who sent a request: the owner of ``key`` (None when auth is off) and the agent it
        names — ``agent`` (the ``X-Bench-Agent`` header) else the key's default. Raises
        Unauthenticated for a missing, unknown, expired or revoked key, Forbidden for a key
        without the ``ingest`` scope, QuotaExceeded over its requests per minute (collector/keys.py),
        MalformedRequest for a bad agent."""
        if agent is not None:
            agent = agent.strip()
            if not _AGENT.match(agent):
                raise MalformedRequest("X-Bench-Agent must be 1 to 200 printable characters")
        if not self.keys:
            return Sender(None, agent)
        entry = self.keys.find(key, "ingest")
        self.keys.admit(entry)  # requests per minute
        return Sender(entry.owner, agent or entry.agent, entry)

    def check_signal(self, signal: str) -> None:
        if signal not in self.signals:
            raise NotFound(f"no pipeline is configured for {signal}")

    def _admit(self) -> None:
        if self.stopping:
            raise Unavailable("the collector is shutting down", self._retry_after)
        if self.telemetry.wal_bytes() > self._max_unflushed:
            raise Unavailable(
                "write-ahead log is full: Parquet flushing is behind, retry later", self._retry_after
            )
        with self._lock:
            if self._inflight >= self._max_inflight:
                raise TooManyRequests("too many export requests in flight, retry later", self._retry_after)
            self._inflight += 1
            self.telemetry.inflight = self._inflight

    def _release(self) -> None:
        with self._lock:
            self._inflight -= 1
            self.telemetry.inflight = self._inflight

    # -- the core -------------------------------------------------------------------
    def export(self, signal: str, request: Message, raw: bytes | None, sender: Sender) -> "Future[ExportResult]":
        """Validate, log durably, and resolve when fsynced. ``raw`` is the protobuf body if it has one."""
        self.check_signal(signal)
        self._admit()
        try:
            checked = validate.check(signal, request)
            if checked.rejected:
                self.telemetry.count(self.telemetry.rejected, signal, checked.rejected)
            result = ExportResult(checked.accepted, checked.rejected, checked.reason)
            done: Future[ExportResult] = Future()
            if checked.accepted == 0:
                done.set_result(result)
                self._release()
                return done
            payload = raw if raw is not None and not checked.changed else request.SerializeToString()
            if sender.key is not None:  # the daily quotas, before anything is acknowledged
                self.keys.charge(sender.key, checked.accepted, len(payload))
            record = wal.encode_record(signal, sender.owner, payload, sender.agent)
            try:
                durable = self._committer.submit(record)
            except wal.WalFull as exc:
                raise Unavailable(str(exc), self._retry_after) from exc
        except BaseException:
            self._release()
            raise

        def on_durable(f: "Future[int]") -> None:
            self._release()
            exc = f.exception()
            if exc is not None:
                done.set_exception(Unavailable(f"write-ahead log write failed: {exc}", self._retry_after))
                return
            self.telemetry.count(self.telemetry.received, signal, checked.accepted)
            self.telemetry.wal_bytes_written += len(record)
            for forward in self._forwarders:
                forward(signal, payload)
            done.set_result(result)

        durable.add_done_callback(on_durable)
        return done
