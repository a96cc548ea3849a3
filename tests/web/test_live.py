"""The live dashboard end to end: a real ``otelbench serve`` with a web section, spans from
the real OTel SDK, WebSocket viewers on the real port. Inside serve a span is live from
the write-ahead log (its flush interval here is 5 minutes: nothing reaches Parquet during
these tests); ``otelbench web`` alone follows new lake files."""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import yaml

from otelbench.testing.agent_runs import Run, send_runs
from otelbench.testing.live import LiveViewer, live_counters
from otelbench.testing.serve import ROOT, Served, free_port, serve, web_up
from otelbench.testing.wait import wait_for
from otelbench.storage.duckdb import open_lake
from otelbench.web.live import QUEUE_SIZE, SLOW_CLOSE, Hub, Viewer

SECRET = "TOP-SECRET-PAYROLL-FIGURES"
HIDDEN = "the-hidden-input-text"
HIDDEN_ERROR = "timeout while reading the-hidden-input-text"
ODD_NAME = "team/ä.bot%2F"


def _seed(tmp: Path) -> None:
    """One run of each agent in the lake first: a profile (and its live feed) exists for
    agents the lake knows."""
    from otelbench.collector.wiring import Collector
    from otelbench.testing.collector import collector_config

    collector = Collector(collector_config(tmp)).start()
    try:
        send_runs(f"http://127.0.0.1:{collector.http_port}",
                  [Run(a, "seed", "seed") for a in ("calc", "quiet", "payroll", "chatty", "crowd", ODD_NAME)])
        collector.wait_flushed()
    finally:
        collector.stop()


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[tuple[Served, str, Path]]:
    tmp = tmp_path_factory.mktemp("live")
    _seed(tmp)
    port = free_port()
    cfg = tmp / "otel-config.yaml"
    cfg.write_text(yaml.safe_dump({
        "receivers": {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:0"}}}},
        "exporters": {"parquet": {"path": str(tmp / "lake"), "flush": {"interval_s": 300}}},
        "service": {"wal": {"dir": str(tmp / "wal")},
                    "pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["parquet"]}}},
        "privacy": {"private_agents": ["payroll"], "hide_io_agents": ["quiet"]},
        "web": {"endpoint": f"127.0.0.1:{port}"},
    }))
    web = f"http://127.0.0.1:{port}"
    with serve(cfg) as s:
        wait_for(lambda: web_up(web), timeout_s=60, what="the web UI")
        yield s, web, tmp / "lake"


def _ws(web: str, path: str) -> str:
    return web.replace("http://", "ws://") + path


def _in_parquet(lake: Path, trace_id: str) -> int:
    with open_lake(lake) as gw:
        return gw.query("SELECT count(*) FROM spans WHERE trace_id = $t", {"t": trace_id}).rows[0][0]


def test_a_span_is_live_within_2s_of_its_acknowledgement_before_it_reaches_parquet(served) -> None:
    s, web, lake = served
    viewer = LiveViewer(_ws(web, "/live/agents/calc"))
    try:
        acks: dict[str, float] = {}  # each span exported alone, as it ends: its own acknowledgement
        traces = send_runs(s.url, [Run("calc", f"What is {i} + 1?", str(i + 1), tool="add") for i in range(10)],
                           acks=acks)
        viewer.wait(lambda v: {m["span_id"] for m in v.of("span")} >= set(acks), what="every span, live")
        late = {m["span_id"]: at - acks[m["span_id"]] for at, m in viewer.messages if m["type"] == "span"}
        assert max(late.values()) < 2.0, sorted(late.values())
        assert {m["trace_id"] for m in viewer.of("run", status="ok")} == set(traces)
        assert _in_parquet(lake, traces[-1]) == 0  # the flusher has not written it: it came from the log
        chat = viewer.of("span", trace_id=traces[0], span_type="llm")[0]
        assert chat["agent"] == "calc" and chat["name"] == "chat smollm2" and chat["model"] == "smollm2"
        assert chat["input_tokens"] == 40 and chat["duration_ms"] >= 0 and chat["start_ms"] > 0
        assert viewer.of("span", trace_id=traces[0], span_type="tool")[0]["tool"] == "add"
    finally:
        viewer.close()


def test_an_error_is_live_with_its_message_and_the_run_fails(served) -> None:
    s, web, _ = served
    viewer, board = LiveViewer(_ws(web, "/live/agents/calc")), LiveViewer(_ws(web, "/live/leaderboard"))
    try:
        [trace] = send_runs(s.url, [Run("calc", "Divide by zero", None, error="ZeroDivisionError: division by zero",
                                        error_type="ZeroDivisionError")])
        run = board.wait(lambda v: v.of("run", trace_id=trace), what="the run on the leaderboard")[0]
        assert run["agent"] == "calc" and run["status"] == "error" and run["duration_ms"] > 0
        root = viewer.wait(lambda v: v.of("span", trace_id=trace, span_type="agent"), what="the agent span")[0]
        assert root["status"] == "error" and [e["name"] for e in root["events"]] == ["exception"]
        assert root["events"][0]["offset_ms"] >= 0
    finally:
        viewer.close()
        board.close()


def test_many_viewers_of_one_agent_share_one_feed(served) -> None:
    s, web, _ = served
    viewers = [LiveViewer(_ws(web, "/live/agents/crowd")) for _ in range(5)]
    try:
        wait_for(lambda: live_counters(web)["otelbench_web_live_viewers"] == 5, what="5 viewers")
        before = live_counters(web)
        send_runs(s.url, [Run("crowd", "hello", "hi")] * 3)
        for v in viewers:
            v.wait(lambda v: len(v.of("run")) == 3, what="3 runs at every viewer")
        after = live_counters(web)
        assert after["otelbench_web_live_feeds"] == 1  # one topic, five viewers
        def grew(name: str) -> float:
            return after[name] - before[name]

        encoded = grew('otelbench_web_live_messages_total{type="span"}')
        runs = grew('otelbench_web_live_messages_total{type="run"}')
        assert encoded == 6 and runs == 3  # 2 spans a run, each encoded once; no leaderboard viewer
        assert grew("otelbench_web_live_sent_total") == 5 * (6 + 3)
    finally:
        for v in viewers:
            v.close()
    wait_for(lambda: live_counters(web)["otelbench_web_live_pump_running"] == 0, what="the pump stops with the last")
    assert live_counters(web)["otelbench_web_live_feeds"] == 0


class _Stalled:
    """A WebSocket client that shakes hands and then does not read (a tiny receive buffer,
    so the server's writes back up quickly)."""

    def __init__(self, web: str, path: str) -> None:
        host, port = web.removeprefix("http://").split(":")
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.connect((host, int(port)))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                          f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
                          .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        assert head.startswith(b"HTTP/1.1 101"), head

    def close_code(self) -> int | None:
        """Read everything now, frame by frame, to the server's close frame: its code."""
        self.sock.settimeout(30)
        buf = b""

        def take(n: int) -> bytes:
            nonlocal buf
            while len(buf) < n:
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    raise EOFError
                buf += chunk
            out, buf = buf[:n], buf[n:]
            return out

        try:
            while True:
                op, length = take(2)
                length &= 0x7F
                if length == 126:
                    length = struct.unpack("!H", take(2))[0]
                elif length == 127:
                    length = struct.unpack("!Q", take(8))[0]
                payload = take(length)
                if op & 0x0F == 0x8:
                    return struct.unpack("!H", payload[:2])[0]
        except EOFError:
            return None


def test_a_slow_viewer_is_dropped_and_its_queue_stays_bounded(served) -> None:
    s, web, _ = served
    stalled = _Stalled(web, "/live/agents/chatty")
    keeping_up = LiveViewer(_ws(web, "/live/agents/chatty"))
    try:
        sent = 0
        while live_counters(web)["otelbench_web_live_dropped_total"] == 0:
            # error messages make each span message ~1 kB: the stalled socket's buffers fill
            send_runs(s.url, [Run("chatty", "go", "ok", tool="fetch", tool_error="E" * 2000)] * 200)
            sent += 200
            counters = live_counters(web)
            assert counters["otelbench_web_live_queued_messages"] <= 2 * (QUEUE_SIZE + 1)
            assert sent <= 10_000, "never dropped"
        assert live_counters(web)["otelbench_web_live_viewers"] == 1  # the one keeping up
        keeping_up.wait(lambda v: len(v.of("run")) == sent, what="every run at the viewer that keeps up")
        assert keeping_up.close_code is None
        assert stalled.close_code() == SLOW_CLOSE  # once it reads, it finds it was closed: 1013
    finally:
        keeping_up.close()
        stalled.sock.close()


def _refusal(web: str, path: str) -> tuple[int, bytes]:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    with pytest.raises(InvalidStatus) as refused:
        connect(_ws(web, path), open_timeout=10)
    return refused.value.response.status_code, refused.value.response.body


def test_a_private_agent_is_refused_like_an_unknown_one_and_never_streamed(served) -> None:
    s, web, _ = served
    private, unknown = _refusal(web, "/live/agents/payroll"), _refusal(web, "/live/agents/nobody12")
    assert private[0] == unknown[0] == 404
    assert private[1].replace(b"payroll", b"nobody12") == unknown[1]
    board, calc = LiveViewer(_ws(web, "/live/leaderboard")), LiveViewer(_ws(web, "/live/agents/calc"))
    try:
        before = live_counters(web)['otelbench_web_live_rows_total{outcome="private"}']
        send_runs(s.url, [Run("payroll", SECRET, SECRET, tool="ledger", tool_error=SECRET)])
        [last] = send_runs(s.url, [Run("calc", "after payroll", "ok")])  # the log keeps order: a barrier
        board.wait(lambda v: v.of("run", trace_id=last), what="the calc run after payroll's")
        calc.wait(lambda v: v.of("run", trace_id=last), what="the calc run after payroll's")
        for viewer in (board, calc):
            text = repr(viewer.messages)
            assert "payroll" not in text and SECRET not in text
        assert live_counters(web)['otelbench_web_live_rows_total{outcome="private"}'] - before == 3
    finally:
        board.close()
        calc.close()


def test_hide_io_text_is_never_streamed(served) -> None:
    s, web, _ = served
    viewer = LiveViewer(_ws(web, "/live/agents/quiet"))
    try:
        [trace] = send_runs(s.url, [Run("quiet", HIDDEN, HIDDEN, error=HIDDEN_ERROR, tool="read",
                                        tool_error=HIDDEN_ERROR)])
        viewer.wait(lambda v: v.of("run", trace_id=trace), what="the quiet run")
        spans = viewer.of("span", trace_id=trace)
        assert {m["span_type"] for m in spans} == {"agent", "llm", "tool"}
        assert {m["status"] for m in spans if m["span_type"] != "llm"} == {"error"}
        assert all(m["error_message"] is None and m["error_type"] is None for m in spans)
        assert "hidden" not in repr(viewer.messages)
    finally:
        viewer.close()


def test_names_with_slashes_dots_and_unicode_have_a_live_feed(served) -> None:
    s, web, _ = served
    viewer = LiveViewer(_ws(web, f"/live/agents/{quote(ODD_NAME, safe='')}"))
    try:
        [trace] = send_runs(s.url, [Run(ODD_NAME, "hi", "hello")])
        run = viewer.wait(lambda v: v.of("run", trace_id=trace), what="the run of an odd name")[0]
        assert run["agent"] == ODD_NAME
    finally:
        viewer.close()
    page = httpx.get(f"{web}/agents/{quote(ODD_NAME, safe='')}").text  # the page points at the same feed
    assert f'data-live-url="/live/agents/{quote(ODD_NAME)}"' in page


def test_otelbench_web_alone_follows_new_lake_files(tmp_path) -> None:
    from otelbench.collector.wiring import Collector
    from otelbench.testing.collector import collector_config

    collector = Collector(collector_config(tmp_path)).start()
    port = free_port()
    lake = collector.config.exporters.parquet.path
    web = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "otelbench", "web", "--lake", lake, "--endpoint",
                             f"127.0.0.1:{port}"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        endpoint = f"http://127.0.0.1:{collector.http_port}"
        send_runs(endpoint, [Run("calc", "seed", "seed")])
        collector.wait_flushed()
        wait_for(lambda: web_up(web), timeout_s=60, what="otelbench web")
        viewer = LiveViewer(_ws(web, "/live/agents/calc"))
        try:
            # the pump notes the lake's files when it starts: what is there already is not news
            wait_for(lambda: live_counters(web)["otelbench_web_live_pump_running"] == 1, what="the pump")
            traces = send_runs(endpoint, [Run("calc", "What is 1 + 1?", "2", tool="add")] * 2)
            viewer.wait(lambda v: {m["trace_id"] for m in v.of("run", status="ok")} == set(traces),
                        what="the new runs, from the lake's new files")
            assert len(viewer.of("span")) == 6 and {m["agent"] for m in viewer.of("span")} == {"calc"}
        finally:
            viewer.close()
    finally:
        proc.terminate()
        proc.wait(10)
        collector.stop()


def test_the_pages_point_at_their_feeds_and_the_one_script(served) -> None:
    _, web, _ = served
    agent = httpx.get(f"{web}/agents/calc").text
    assert '<section id="live" data-live-url="/live/agents/calc" hidden>' in agent
    assert '<ol id="live-events">' in agent and '<ol id="live-runs">' in agent
    assert '<script src="/static/live.js" defer></script>' in agent and "<script>" not in agent  # nothing inline
    board = httpx.get(f"{web}/leaderboard?window=all").text
    assert 'data-live-url="/live/leaderboard"' in board and '<tr data-agent="calc">' in board
    assert '<td class="num" data-figure="runs" data-live="runs">' in board
    script = httpx.get(f"{web}/static/live.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert "script-src 'self'" in script.headers["content-security-policy"]


def test_the_script_writes_text_never_markup() -> None:
    script = (ROOT / "web" / "static" / "live.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "Function("):
        assert sink not in script, sink
    assert script.count("textContent") >= 3


def test_a_viewer_that_never_reads_is_dropped_holding_no_more_than_its_queue() -> None:
    started, stopped = [], []

    async def pump(hub: Hub) -> None:
        started.append(1)
        try:
            await asyncio.Event().wait()
        finally:
            stopped.append(1)

    async def scenario() -> tuple[Hub, Viewer, Viewer]:
        hub = Hub(pump, queue_size=8)
        slow, fast = hub.subscribe("agent:x"), hub.subscribe("agent:x")
        for i in range(100):
            hub.publish([("agent:x", {"type": "span", "i": i}), ("agent:nobody-watches", {"type": "span"})])
            while not fast.queue.empty():
                fast.queue.get_nowait()
        await asyncio.sleep(0)
        assert started == [1] and not stopped  # one pump, started by the first viewer
        hub.unsubscribe(fast)
        await asyncio.sleep(0)
        return hub, slow, fast

    hub, slow, fast = _run(scenario())
    assert hub.counts["dropped"] == 1 and not hub.topics and stopped == [1]  # gone with the last viewer
    assert slow.queue.qsize() == 1 and slow.queue.get_nowait() is None  # only the close mark is left
    assert hub.counts["published_span"] == 100 and hub.counts["queued"] == 8 + 100  # encoded once per topic


def test_a_pump_that_fails_is_counted_and_the_next_viewer_starts_another() -> None:
    runs = []

    async def pump(hub: Hub) -> None:
        runs.append(1)
        if len(runs) == 1:
            raise OSError("the lake's disk went away")
        await asyncio.Event().wait()

    async def scenario() -> Hub:
        hub = Hub(pump)
        hub.subscribe("leaderboard")
        while hub._pump is not None:  # it runs, fails, and its end is noted
            await asyncio.sleep(0)
        hub.subscribe("leaderboard")  # the first viewer is still there: a second pump starts
        await asyncio.sleep(0)
        assert hub._pump is not None and not hub._pump.done()
        await hub.close()
        return hub

    hub = _run(scenario())
    assert runs == [1, 1] and hub.counts["errors"] == 1


def _run(coroutine: Any) -> Any:
    """``asyncio.run`` in a thread of its own: the browser tests' Playwright (sync API) may
    hold an event loop open in this one for the whole session."""
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()

