"""The live dashboard: WebSocket viewers subscribed to topics, one feed per topic, and the
pump that reads the sources while anyone watches (docs/web.md "Live dashboard").

- **One pump** per web process, started with the first viewer and stopped with the last.
  It polls its sources — acknowledged spans from the write-ahead log inside ``otelbench
  serve`` (``collector.tail``, handed in by the command), else the lake's new span files
  (``storage.tail``), and the lake's new judge scores — turns rows into messages
  (``web.feed``) and publishes them. An idle source costs one cheap check per interval,
  whatever the number of viewers; a viewer has no timer or poll of its own.
- **One feed per topic** (``leaderboard``; ``agent:<name>``): a message is encoded once
  and the same text queued for every viewer of its topic.
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

from web.feed import LAKE_SPAN_COLUMNS, LEADERBOARD, SCORE_COLUMNS, Feed, Out, agent_topic
from web.site import NotFound, Site

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
    __slots__ = ("topic", "queue")

    def __init__(self, topic: str, size: int) -> None:
        self.topic = topic
        self.queue: asyncio.Queue[str | None] = asyncio.Queue(size + 1)  # size messages, then the close mark


class Hub:
    def __init__(self, pump: Callable[[Hub], Any] | None = None, *, queue_size: int = QUEUE_SIZE,
                 max_viewers: int = MAX_VIEWERS) -> None:
        self._pump_factory = pump  # hub → coroutine that runs until cancelled
        self._pump: asyncio.Task[None] | None = None
        self.queue_size, self.max_viewers = queue_size, max_viewers
        self.topics: dict[str, set[Viewer]] = {}
        self.viewers = 0
        self._lock = threading.Lock()  # topics change on the loop; /metrics reads them from a thread
        self.ready = False  # the pump's sources noted where they start: from now on is news
        self.counts: Counter[str] = Counter()
        self.feed_counts: Counter[str] = Counter()  # the pump's web.feed counters, copied each round

    # -- viewers ---------------------------------------------------------------------------
    def subscribe(self, topic: str) -> Viewer | None:
        """A new viewer of ``topic`` (None: at ``max_viewers``); starts the pump if it is the first."""
        if self.viewers >= self.max_viewers:
            self.counts["refused_full"] += 1
            return None
        viewer = Viewer(topic, self.queue_size)
        with self._lock:
            if topic not in self.topics:
                self.counts["feeds_started"] += 1
            self.topics.setdefault(topic, set()).add(viewer)
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
            viewers = self.topics.get(viewer.topic)
            if viewers is None or viewer not in viewers:
                return  # dropped already
            viewers.discard(viewer)
            self.viewers -= 1
            if not viewers:
                del self.topics[viewer.topic]
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
    def publish(self, messages: Iterable[Out]) -> None:
        for topic, message in messages:
            viewers = self.topics.get(topic)
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

    async def deliver(self, messages: list[Out]) -> None:
        """``publish`` a round's messages ``STEP`` at a time, letting the viewers' senders run
        in between: a burst larger than a queue (a poll can read thousands of spans) then
        drops only the viewers that cannot take it, not every viewer."""
        for i in range(0, len(messages), STEP):
            self.publish(messages[i:i + STEP])
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


class Pump:
    """Sources → ``web.feed`` → the hub, while the hub has viewers (``Hub(pump=Pump(...))``)."""

    def __init__(self, feed: Feed, spans: Source | None, scores: Source | None,
                 private_traces: Callable[[list[str]], frozenset[str]] | None = None) -> None:
        self.feed, self.spans, self.scores = feed, spans, scores
        self.private_traces = private_traces  # runs of a private owner, asked of the lake
        self._sources = [s for s in (spans, scores) if s is not None]
        self._lock = threading.Lock()  # a cancelled pump's poll may still be running in its thread

    def _call(self, fn: Callable[[], Any]) -> Any:
        with self._lock:
            return fn()

    async def __call__(self, hub: Hub) -> None:
        counts, self.feed = self.feed.counts, Feed(self.feed.privacy)  # news from now: nothing held over
        self.feed.counts = counts  # counters only grow
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
                    messages = await self._round(source)
                    busy = busy or bool(messages)
                    await hub.deliver(messages)
                except Exception:  # a bug or a failing disk: counted, logged once, polled again
                    if not hub.counts["errors"]:
                        log.exception("the live feed's poll failed (counted in /metrics from now on)")
                    hub.counts["errors"] += 1
            await hub.deliver(self.feed.expire(time.monotonic()))
            hub.feed_counts = self.feed.counts.copy()
            # quiet: look less often, up to IDLE_TICK_S; busy or holding spans: every interval
            tick = fastest if busy or self.feed.n_held else min(tick * 2, max(fastest, IDLE_TICK_S))
            await asyncio.sleep(tick)

    async def _round(self, source: Source) -> list[Out]:
        rows = await asyncio.to_thread(self._call, source.poll)
        if not rows:
            return []
        if source is self.spans:
            return self.feed.spans(rows, time.monotonic())
        private: frozenset[str] = frozenset()
        if self.private_traces is not None:
            private = await asyncio.to_thread(self.private_traces, [r["trace_id"] for r in rows])
        return self.feed.scores(rows, private)


def hub(site: Site, lake_root: str | Path, spans: Source | None = None) -> Hub:
    """The web's live feed: spans from ``spans`` (else the lake's new span files), scores
    from the lake's new ``evals`` commits, privacy as the site applies it."""
    from storage.queries import live as q
    from storage.tail import NewRows

    def private_traces(trace_ids: list[str]) -> frozenset[str]:
        return frozenset(r["trace_id"] for r in site.rows(q.PRIVATE_OWNER_TRACES, trace_ids=trace_ids))

    return Hub(Pump(Feed(site.privacy), spans or NewRows(lake_root, "spans", LAKE_SPAN_COLUMNS),
                    NewRows(lake_root, "evals", SCORE_COLUMNS, interval_s=SCORES_POLL_S),
                    private_traces if site.privacy.private_owners else None))


# -- the WebSocket endpoints ------------------------------------------------------------------

def leaderboard_endpoint(hub: Hub) -> Callable[[WebSocket], Any]:
    async def live_leaderboard(ws: WebSocket) -> None:
        await _watch(ws, hub, LEADERBOARD)
    return live_leaderboard


class KnownAgents:
    """Whether a name may be watched — an agent the profile page shows (``Site.agent``; a
    private one is unknown) — remembered ``KNOWN_TTL_S`` for at most ``KNOWN_MAX`` names,
    so a thousand viewers opening one profile cost one lookup, not a thousand (a lookup
    is three queries: ~50 ms on a small lake). Returns None, or why the name is refused."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self._seen: OrderedDict[str, tuple[str | None, float]] = OrderedDict()
        self._lock = threading.Lock()  # called from the thread pool

    def refusal(self, name: str) -> str | None:
        now = time.monotonic()
        with self._lock:
            hit = self._seen.get(name)
        if hit is not None and hit[1] > now:
            return hit[0]
        try:
            self.site.agent(name, recent=False)
            why = None
        except NotFound as exc:
            why = str(exc)
        with self._lock:
            self._seen[name] = (why, now + KNOWN_TTL_S)
            self._seen.move_to_end(name)
            while len(self._seen) > KNOWN_MAX:
                self._seen.popitem(last=False)
        return why


def agent_endpoint(hub: Hub, site: Site) -> Callable[[WebSocket], Any]:
    known = KnownAgents(site)

    async def live_agent(ws: WebSocket) -> None:
        name = ws.path_params["name"]
        why = await run_in_threadpool(known.refusal, name)
        if why is not None:  # a private agent is refused exactly as an unknown one: Site applies privacy
            hub.counts["refused_not_found"] += 1
            await ws.send_denial_response(JSONResponse({"error": why}, status_code=404))
            return
        await _watch(ws, hub, agent_topic(name))
    return live_agent


async def _watch(ws: WebSocket, hub: Hub, topic: str) -> None:
    viewer = hub.subscribe(topic)
    if viewer is None:
        await ws.send_denial_response(JSONResponse({"error": "too many live viewers: try again later"},
                                                   status_code=503, headers={"Retry-After": "10"}))
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
