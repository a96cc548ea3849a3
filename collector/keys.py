"""Ingest keys: who may send, and how much (``receivers.otlp.auth.keys``, docs/config.md).

A presented key is found by its SHA-256 digest, compared in constant time against every
configured key's (no early exit, so the time says nothing about which key or how close);
configured keys are held as digests only. A key may have expired, been revoked, or lack
the ``ingest`` scope (a ``read`` key: the web's, not the receiver's) — each refused with a
message saying which, never echoing the key.

Quotas per key, counted here in memory (a restart starts the windows anew; what was stored
per owner and day is the lake's ``key_usage`` view): requests per minute (checked when a
request arrives), spans (items) and bytes per UTC day (checked once the request is decoded,
before anything is acknowledged: a request over a quota is refused whole, 429 with
``Retry-After``, and nothing of it is stored).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from otelbench.collector.errors import Forbidden, QuotaExceeded, Unauthenticated

MISSING = "missing or unknown ingest key: send it as 'X-Bench-Key: <key>' or 'Authorization: Bearer <key>'"


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass
class Usage:
    """One key's counters: this minute's requests, this UTC day's items and bytes, and
    everything since start (for /metrics)."""

    minute: int = -1
    requests_this_minute: int = 0
    day: str = ""
    items_today: int = 0
    bytes_today: int = 0
    requests: int = 0
    items: int = 0
    bytes: int = 0
    refused: dict[str, int] = field(default_factory=dict)  # quota name -> requests refused


@dataclass(frozen=True)
class Entry:
    """A configured key, without the key: its digest, fingerprint (for /metrics), owner,
    default agent, scopes, quotas, expiry and revocation."""

    digest: str
    owner: str
    agent: str | None
    scopes: frozenset[str]
    requests_per_minute: int | None
    spans_per_day: int | None
    bytes_per_day: int | None
    expires: dt.datetime | None
    revoked: bool
    grants: tuple[Any, ...] = ()  # collector.config.ReadGrant

    @property
    def fingerprint(self) -> str:
        return self.digest[:12]


class Keyring:
    """The configured keys and their usage. Thread-safe."""

    def __init__(self, keys: Sequence[Any], clock: Callable[[], float] = time.time) -> None:
        self._entries = [Entry(k.key_sha256 or digest(k.key), k.owner, k.agent, frozenset(k.scopes),
                               k.quotas.requests_per_minute, k.quotas.spans_per_day, k.quotas.bytes_per_day,
                               k.expires, k.revoked, tuple(k.grants)) for k in keys]
        self._clock = clock
        self._lock = threading.Lock()
        self._usage: dict[str, Usage] = {e.digest: Usage() for e in self._entries}

    def __bool__(self) -> bool:
        return bool(self._entries)

    def by_fingerprint(self, fingerprint: str) -> Entry | None:
        """The entry a signed link names (web/access.py; check it with ``usable``); None for none."""
        return next((e for e in self._entries if hmac.compare_digest(e.fingerprint, fingerprint)), None)

    def find(self, key: str | None, scope: str = "ingest") -> Entry:
        """The entry of ``key`` if it may be used for ``scope`` now; else Unauthenticated
        (missing, unknown, expired, revoked) or Forbidden (another scope)."""
        if not key:
            raise Unauthenticated(MISSING)
        presented = digest(key).encode()
        found = None
        for e in self._entries:  # every one compared: constant time whichever matches
            if hmac.compare_digest(e.digest.encode(), presented):
                found = e
        if found is None:
            raise Unauthenticated(MISSING)
        return self.usable(found, scope)

    def usable(self, found: Entry, scope: str) -> Entry:
        """``found`` if it is neither revoked nor expired and has ``scope``; else the error."""
        if found.revoked:
            raise Unauthenticated(f"this key (owner {found.owner!r}) was revoked")
        if found.expires is not None and self._clock() >= found.expires.timestamp():
            raise Unauthenticated(f"this key (owner {found.owner!r}) expired at {found.expires.isoformat()}")
        if scope not in found.scopes:
            raise Forbidden(f"this key (owner {found.owner!r}) may not {scope}: its scopes are "
                            f"{', '.join(sorted(found.scopes))}")
        return found

    def lookup(self, key: str | None, scope: str) -> tuple[Entry | None, str]:
        """``find`` without raising, for a reader outside the receiver (web/access.py):
        (the entry, "") or (None, why it cannot be used)."""
        try:
            return self.find(key, scope), ""
        except (Unauthenticated, Forbidden) as exc:
            return None, str(exc)

    def still_usable(self, e: Entry, scope: str) -> str:
        """"" when ``e`` may be used for ``scope`` now; else why not (``usable`` without raising)."""
        try:
            self.usable(e, scope)
            return ""
        except (Unauthenticated, Forbidden) as exc:
            return str(exc)

    def admit(self, e: Entry) -> None:
        """Count a request against ``requests_per_minute``; QuotaExceeded when over."""
        now = self._clock()
        with self._lock:
            u = self._usage[e.digest]
            minute = int(now // 60)
            if u.minute != minute:
                u.minute, u.requests_this_minute = minute, 0
            if e.requests_per_minute is not None and u.requests_this_minute >= e.requests_per_minute:
                u.refused["requests_per_minute"] = u.refused.get("requests_per_minute", 0) + 1
                raise QuotaExceeded(f"quota requests_per_minute ({e.requests_per_minute}) of the key of owner "
                                    f"{e.owner!r} reached; it resets within a minute", max(1, 60 - int(now % 60)))
            u.requests_this_minute += 1
            u.requests += 1

    def charge(self, e: Entry, items: int, nbytes: int) -> None:
        """Count ``items`` and ``nbytes`` against the daily quotas, or refuse the whole
        request (QuotaExceeded, nothing counted) when it would go over one."""
        now = self._clock()
        day = dt.datetime.fromtimestamp(now, dt.timezone.utc).date()
        with self._lock:
            u = self._usage[e.digest]
            if u.day != day.isoformat():
                u.day, u.items_today, u.bytes_today = day.isoformat(), 0, 0
            for name, limit, used, more in (("spans_per_day", e.spans_per_day, u.items_today, items),
                                            ("bytes_per_day", e.bytes_per_day, u.bytes_today, nbytes)):
                if limit is not None and used + more > limit:
                    u.refused[name] = u.refused.get(name, 0) + 1
                    midnight = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), dt.timezone.utc)
                    raise QuotaExceeded(
                        f"quota {name} ({limit:,}) of the key of owner {e.owner!r} reached: {used:,} used today, "
                        f"this request has {more:,}; it resets at 00:00 UTC", max(1, int(midnight.timestamp() - now)))
            u.items_today += items
            u.bytes_today += nbytes
            u.items += items
            u.bytes += nbytes

    def metrics(self) -> list[tuple[str, str, str, list[tuple[str, float]]]]:
        """(name, kind, help, samples) for /metrics, one sample per key (owner and the key's
        fingerprint, never the key)."""
        with self._lock:
            rows = [(f'{{owner="{_label(e.owner)}",key="{e.fingerprint}"}}', self._usage[e.digest], e)
                    for e in self._entries]
        return [
            ("key_requests_total", "counter", "Export requests admitted, by key.", [(k, u.requests) for k, u, _ in rows]),
            ("key_items_total", "counter", "Items (spans, log records, points) accepted, by key.",
             [(k, u.items) for k, u, _ in rows]),
            ("key_bytes_total", "counter", "Request bytes accepted, by key.", [(k, u.bytes) for k, u, _ in rows]),
            ("key_items_today", "gauge", "Items counted against today's (UTC) quota, by key.",
             [(k, u.items_today) for k, u, _ in rows]),
            ("key_quota_refused_requests_total", "counter", "Requests refused over a quota, by key and quota.",
             [(f'{k[:-1]},quota="{q}"}}', n) for k, u, _ in rows for q, n in sorted(u.refused.items())]),
        ]


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
