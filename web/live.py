"""The live dashboard: WebSocket viewers subscribed to topics, one feed per topic, and the
pump that reads the sources while anyone watches (docs/web.md "Live dashboard").

- **One pump** per web process, started with the first viewer and stopped with the last.
  It polls its sources — acknowledged spans from the write-ahead log inside ``otelbench
  serve`` (``collector.tail``, handed in by the command), else the lake's new span files
  (``storage.tail``), and the lake's new judge scores — turns rows into messages
  (``web.feed``) and publishes them. An idle source costs one cheap check per interval,
  whatever the number of viewers; a viewer has no timer or poll of its own.
- **One feed per topic and reader** (``leaderboard``; ``agent:<name>``): a viewer reads
  as its request's headers say (``web.access``: public, or a read key's grants), and the
  pump runs one ``web.feed.Feed`` per distinct reading among the viewers, so a granted
  private agent reaches that key's viewers alone, by the very rules the pages apply. A
  message is encoded once and the same text queued for every viewer of its topic and
  reading.
- **Every queue bounded**: a viewer's queue holds ``QUEUE_SIZE`` messages; a viewer that
  falls that far behind is dropped — unsubscribed, its queue emptied — and closed with
  ``SLOW_CLOSE`` (1013, try again later) as soon as its connection takes the frame. At
  most ``MAX_VIEWERS`` viewers; the next is refused with a 503.
- Counters, not logs: ``Hub.metrics_text`` (appended to ``/metrics``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

import orjson
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse
from starlette.websockets import WebSocket

from otelbench.storage.privacy import Privacy
from otelbench.storage.queries import live as q
from otelbench.storage.tail import NewRows
from otelbench.web.access import Access, Denied
from otelbench.web.errors import NotFound
from otelbench.web.feed import LAKE_SPAN_COLUMNS, LEADERBOARD, SCORE_COLUMNS, Feed, Out, agent_topic
from otelbench.web.pages.agent import agent
from otelbench.web.site import Site

log = logging.getLogger("otelbench.web.live")

QUEUE_SIZE = 256  # messages a viewer may fall behind by before it is dropped
STEP = 32  # messages published between two turns of the viewers' senders
KNOWN_TTL_S = 10.0  # how long a profile's existence (or absence) is taken as known
KNOWN_MAX = 1024
IDLE_TICK_S = 0.4  # the pump's slowest look at a quiet source (the ack → live budget is 2 s)
MAX_VIEWERS = 10_000
SLOW_CLOSE = 1013  # RFC 6455 registry: "Try Again Later"
SCORES_POLL_S = 2.0  # the judge commits every processors.interval_s (minutes): no hurry


class Source(Protocol):
    """New rows since ``start`` (``collector.tail.WalSpans``, ``storage.tail.NewRows``)."""

    interval_s: float

    def start(self) -> None: ...
    def due(self) -> bool: ...  # cheap, on the event loop: worth a poll?
    def poll(self) -> list[dict[str, Any]]: ...


class Viewer:
    """One WebSocket's queue, its topic, and its reading (``privacy``; None: the base one,
    what a visitor without a key sees)."""

    __slots__ = ("topic", "privacy", "queue")

    def __init__(self, topic: str, size: int, privacy: Privacy | None = None) -> None:
        self.topic, self.privacy = topic, privacy
        self.queue: asyncio.Queue[str | None] = asyncio.Queue(size + 1)  # size messages, then the close mark


class Hub:
    def __init__(self, pump: Callable[[Hub], Any] | None = None, *, queue_size: int = QUEUE_SIZE,
                 max_viewers: int = MAX_VIEWERS) -> None:
        self._pump_factory = pump  # hub → coroutine that runs until cancelled
        self._pump: asyncio.Task[None] | None = None
        self.queue_size, self.max_viewers = queue_size, max_viewers
        self.topics: dict[tuple[Privacy | None, str], set[Viewer]] = {}  # (reading, topic) → viewers
        self.viewers = 0
        self._lock = threading.Lock()  # topics change on the loop; /metrics reads them from a thread
        self.ready = False  # the pump's sources noted where they start: from now on is news
        self.counts: Counter[str] = Counter()
        self.feed_counts: Counter[str] = Counter()  # the pump's web.feed counters, copied each poll

    # -- viewers ---------------------------------------------------------------------------
    def subscribe(self, topic: str, privacy: Privacy | None = None) -> Viewer | None:
        """A new viewer of ``topic`` reading under ``privacy`` (None: the base reading; None
        back: at ``max_viewers``); starts the pump if it is the first."""
        if self.viewers >= self.max_viewers:
            self.counts["refused_full"] += 1
            return None
        viewer = Viewer(topic, self.queue_size, privacy)
        with self._lock:
            if (privacy, topic) not in self.topics:
                self.counts["feeds_started"] += 1
            self.topics.setdefault((privacy, topic), set()).add(viewer)
            self.viewers += 1
        self.counts["viewers"] += 1
        if self._pump is None and self._pump_factory is not None:
            self._pump = asyncio.get_running_loop().create_task(self._pump_factory(self))
            self._pump.add_done_callback(self._pump_ended)
        return viewer

    def _pump_ended(self, task: asyncio.Task[None]) -> None:
        """A pump that failed (not one stopped): counted and logged; the next viewer starts another."""
        if task.cancelled():
            return
        self.counts["errors"] += 1
        log.error("the live feed stopped: %r", task.exception())
        if task is self._pump:
            self._pump, self.ready = None, False

    def unsubscribe(self, viewer: Viewer) -> None:
        with self._lock:
            viewers = self.topics.get((viewer.privacy, viewer.topic))
            if viewers is None or viewer not in viewers:
                return  # dropped already
            viewers.discard(viewer)
            self.viewers -= 1
            if not viewers:
                del self.topics[(viewer.privacy, viewer.topic)]
        if not self.topics and self._pump is not None:
            self._pump.cancel()
            self._pump, self.ready = None, False

    def _drop(self, viewer: Viewer) -> None:
        """A viewer ``queue_size`` messages behind: out of its topic, its queue emptied, then
        the close mark (its sender closes the connection when it takes it)."""
        self.unsubscribe(viewer)
        while not viewer.queue.empty():
            viewer.queue.get_nowait()
        viewer.queue.put_nowait(None)
        self.counts["dropped"] += 1

    # -- messages --------------------------------------------------------------------------
    def readings(self) -> set[Privacy]:
        """The readings other than the base one that viewers watch under now."""
        with self._lock:
            return {p for p, _ in self.topics if p is not None}

    def publish(self, messages: Iterable[Out], privacy: Privacy | None = None) -> None:
        """``messages`` (as the feed of reading ``privacy`` made them) to that reading's viewers."""
        for topic, message in messages:
            viewers = self.topics.get((privacy, topic))
            if not viewers:
                continue
            text = orjson.dumps(message).decode()  # once per topic, whatever the viewers
            self.counts[f"published_{message['type']}"] += 1
            for viewer in list(viewers):
                if viewer.queue.qsize() >= self.queue_size:
                    self._drop(viewer)
                else:
                    viewer.queue.put_nowait(text)
                    self.counts["queued"] += 1

    async def deliver(self, messages: list[Out], privacy: Privacy | None = None) -> None:
        """``publish`` a poll's messages ``STEP`` at a time, letting the viewers' senders run
        in between: a burst larger than a queue (a poll can read thousands of spans) then
        drops only the viewers that cannot take it, not every viewer."""
        for i in range(0, len(messages), STEP):
            self.publish(messages[i:i + STEP], privacy)
            await asyncio.sleep(0)

    async def close(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
            self._pump, self.ready = None, False

    def metrics_text(self) -> str:
        with self._lock:
            topics = len(self.topics)
            waiting = sum(v.queue.qsize() for viewers in self.topics.values() for v in viewers)
            viewers = self.viewers
        c, f = self.counts, self.feed_counts
        lines = [
            "# TYPE otelbench_web_live_viewers gauge", f"otelbench_web_live_viewers {viewers}",
            "# TYPE otelbench_web_live_feeds gauge", f"otelbench_web_live_feeds {topics}",
            "# TYPE otelbench_web_live_pump_running gauge", f"otelbench_web_live_pump_running {int(self.ready)}",
            "# TYPE otelbench_web_live_queued_messages gauge", f"otelbench_web_live_queued_messages {waiting}",
            "# TYPE otelbench_web_live_viewers_total counter", f"otelbench_web_live_viewers_total {c['viewers']}",
            "# TYPE otelbench_web_live_feeds_started_total counter",
            f"otelbench_web_live_feeds_started_total {c['feeds_started']}",
            "# TYPE otelbench_web_live_refused_total counter",
            f'otelbench_web_live_refused_total{{reason="not_found"}} {c["refused_not_found"]}',
            f'otelbench_web_live_refused_total{{reason="full"}} {c["refused_full"]}',
            "# TYPE otelbench_web_live_dropped_total counter", f"otelbench_web_live_dropped_total {c['dropped']}",
            "# TYPE otelbench_web_live_messages_total counter",
            *(f'otelbench_web_live_messages_total{{type="{t}"}} {c["published_" + t]}'
              for t in ("span", "run", "score")),
            "# TYPE otelbench_web_live_sent_total counter", f"otelbench_web_live_sent_total {c['queued']}",
            "# TYPE otelbench_web_live_rows_total counter",
            *(f'otelbench_web_live_rows_total{{outcome="{k}"}} {f[k]}'
              for k in ("spans", "runs", "scores", "private", "held", "fallback")),
            "# TYPE otelbench_web_live_poll_errors_total counter",
            f"otelbench_web_live_poll_errors_total {c['errors']}",
        ]
        return "\n".join(lines) + "\n"


PrivateTraces = Callable[[list[str], Privacy], frozenset[str]]


class Pump:
    """Sources → ``web.feed`` → the hub, while the hub has viewers (``Hub(pump=Pump(...))``):
    ``feed`` for the base reading, and one more ``Feed`` per reading a read key's viewers
    watch under (``Hub.readings``), made when the first such viewer is there, each fed every
    row from then on."""

    def __init__(self, feed: Feed, spans: Source | None, scores: Source | None,
                 private_traces: PrivateTraces | None = None) -> None:
        self.feed, self.spans, self.scores = feed, spans, scores
        self.granted: dict[Privacy, Feed] = {}
        self.private_traces = private_traces  # runs of a private owner, asked of the lake
        self._sources = [s for s in (spans, scores) if s is not None]
        self._lock = threading.Lock()  # a cancelled pump's poll may still be running in its thread

    def _call(self, fn: Callable[[], Any]) -> Any:
        with self._lock:
            return fn()

    async def __call__(self, hub: Hub) -> None:
        counts, self.feed = self.feed.counts, Feed(self.feed.privacy)  # news from now: nothing held over
        self.feed.counts = counts  # counters only grow
        self.granted = {}
        for source in self._sources:
            await asyncio.to_thread(self._call, source.start)
        hub.ready = True
        due = [0.0] * len(self._sources)
        fastest = min((s.interval_s for s in self._sources), default=1.0)
        tick = fastest
        while True:
            busy = False
            for i, source in enumerate(self._sources):
                now = time.monotonic()
                if now < due[i] or not source.due():
                    continue
                due[i] = now + source.interval_s
                try:
                    for privacy, messages in await self._round(source, hub):
                        busy = busy or bool(messages)
                        await hub.deliver(messages, privacy)
                except Exception:  # a bug or a failing disk: counted, logged once, polled again
                    if not hub.counts["errors"]:
                        log.exception("the live feed's poll failed (counted in /metrics from now on)")
                    hub.counts["errors"] += 1
            for privacy, feed in self._feeds(hub):
                await hub.deliver(feed.expire(time.monotonic()), privacy)
            hub.feed_counts = self.feed.counts.copy()
            # quiet: look less often, up to IDLE_TICK_S; busy or holding spans: every interval
            held = any(f.n_held for f in (self.feed, *self.granted.values()))
            tick = fastest if busy or held else min(tick * 2, max(fastest, IDLE_TICK_S))
            await asyncio.sleep(tick)

    def _feeds(self, hub: Hub) -> list[tuple[Privacy | None, Feed]]:
        """The base feed (reading None) and one per reading viewers watch under now; a
        reading no viewer uses any more loses its feed."""
        readings = hub.readings()
        self.granted = {p: self.granted.get(p) or Feed(p) for p in readings}
        return [(None, self.feed), *self.granted.items()]

    async def _round(self, source: Source, hub: Hub) -> list[tuple[Privacy | None, list[Out]]]:
        rows = await asyncio.to_thread(self._call, source.poll)
        if not rows:
            return []
        feeds = self._feeds(hub)
        if source is self.spans:
            now = time.monotonic()
            return [(privacy, feed.spans(rows, now)) for privacy, feed in feeds]
        out = []
        for privacy, feed in feeds:
            private: frozenset[str] = frozenset()
            if self.private_traces is not None and feed.privacy.private_owners:
                private = await asyncio.to_thread(self.private_traces, [r["trace_id"] for r in rows], feed.privacy)
            out.append((privacy, feed.scores(rows, private)))
        return out


def hub(site: Site, lake_root: str | Path, spans: Source | None = None) -> Hub:
    """The web's live feed: spans from ``spans`` (else the lake's new span files), scores
    from the lake's new ``evals`` commits, privacy as the site applies it to each reader."""
    def private_traces(trace_ids: list[str], privacy: Privacy) -> frozenset[str]:
        return frozenset(r["trace_id"] for r in site.viewing(privacy).rows(q.PRIVATE_OWNER_TRACES, trace_ids=trace_ids))

    return Hub(Pump(Feed(site.privacy), spans or NewRows(lake_root, "spans", LAKE_SPAN_COLUMNS),
                    NewRows(lake_root, "evals", SCORE_COLUMNS, interval_s=SCORES_POLL_S), private_traces))


# -- the WebSocket endpoints ------------------------------------------------------------------

def reading(ws: WebSocket, access: Access) -> Privacy | None:
    """What this viewer may see: its handshake's ``X-Bench-Key`` or ``Authorization:
    Bearer`` header, as the pages read it (web/access.py); None: the base reading (no key,
    or a key that adds nothing). Denied for a key that cannot read."""
    privacy = access.privacy_of(ws.headers)
    return None if privacy == access.public else privacy


async def _refuse(ws: WebSocket, status: int, message: str, **headers: str) -> None:
    await ws.send_denial_response(JSONResponse({"error": message}, status_code=status, headers=headers or None))


def leaderboard_endpoint(hub: Hub, access: Access) -> Callable[[WebSocket], Any]:
    async def live_leaderboard(ws: WebSocket) -> None:
        try:
            privacy = reading(ws, access)
        except Denied as exc:  # as the pages answer it: 401, saying why, never the key
            await _refuse(ws, 401, str(exc))
            return
        await _watch(ws, hub, LEADERBOARD, privacy)
    return live_leaderboard


class KnownAgents:
    """Whether a name may be watched — an agent the profile page shows (web/pages/agent.py; a
    private one is unknown) — remembered ``KNOWN_TTL_S`` for at most ``KNOWN_MAX`` names,
    so a thousand viewers opening one profile cost one lookup, not a thousand (a lookup
    is three queries: ~50 ms on a small lake), per reading (a read key's grants may show
    it). Returns None, or why the name is refused."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self._seen: OrderedDict[tuple[Privacy | None, str], tuple[str | None, float]] = OrderedDict()
        self._lock = threading.Lock()  # called from the thread pool

    def refusal(self, name: str, privacy: Privacy | None = None) -> str | None:
        now = time.monotonic()
        with self._lock:
            hit = self._seen.get((privacy, name))
        if hit is not None and hit[1] > now:
            return hit[0]
        try:
            agent(self.site if privacy is None else self.site.viewing(privacy), name, recent=False)
            why = None
        except NotFound as exc:
            why = str(exc)
        with self._lock:
            self._seen[(privacy, name)] = (why, now + KNOWN_TTL_S)
            self._seen.move_to_end((privacy, name))
            while len(self._seen) > KNOWN_MAX:
                self._seen.popitem(last=False)
        return why


def agent_endpoint(hub: Hub, site: Site, access: Access) -> Callable[[WebSocket], Any]:
    known = KnownAgents(site)

    async def live_agent(ws: WebSocket) -> None:
        name = ws.path_params["name"]
        try:
            privacy = reading(ws, access)
        except Denied as exc:
            await _refuse(ws, 401, str(exc))
            return
        why = await run_in_threadpool(known.refusal, name, privacy)
        if why is not None:  # a private agent is refused exactly as an unknown one: its statements apply privacy
            hub.counts["refused_not_found"] += 1
            await _refuse(ws, 404, why)
            return
        await _watch(ws, hub, agent_topic(name), privacy)
    return live_agent


async def _watch(ws: WebSocket, hub: Hub, topic: str, privacy: Privacy | None = None) -> None:
    viewer = hub.subscribe(topic, privacy)
    if viewer is None:
        await _refuse(ws, 503, "too many live viewers: try again later", **{"Retry-After": "10"})
        return
    try:
        await ws.accept()
        sender = asyncio.create_task(_send(ws, viewer))
        try:  # viewers send nothing; what they send is read (uvicorn waits for that) and ignored
            while (await ws.receive())["type"] != "websocket.disconnect":
                pass
        finally:
            sender.cancel()
    finally:
        hub.unsubscribe(viewer)


async def _send(ws: WebSocket, viewer: Viewer) -> None:
    try:
        while (text := await viewer.queue.get()) is not None:
            await ws.send_text(text)
        await ws.close(SLOW_CLOSE, "too slow: more than the queue behind")
    except Exception:  # noqa: BLE001 - the viewer left mid-send: its receive loop ends the rest
        pass
