"""The live dashboard's figures (docs/performance.md, docs/web.md): how soon a span is live after the
collector acknowledges it, and what an idle viewer costs the web process.

Part 1 starts ``otelbench serve`` with a web section (the flusher writes every 5 minutes,
so every span seen live came from the write-ahead log), sends ``--runs`` agent runs with
the real OTel SDK, each span exported alone as it ends (so each has its own
acknowledgement), and prints, over every span, the time from the export's
acknowledgement to its arrival at a WebSocket viewer of the agent's feed (a Python
client in this process: both instants on this process's monotonic clock).

Part 2 opens ``--idle`` viewers of one agent's feed, idle (nothing is sent), and prints
the web process's RSS growth per connection and its CPU time over ``--idle-s`` seconds
with them all open.

    python benchmarks/live.py [--runs 200] [--idle 1000] [--idle-s 10]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402
import yaml  # noqa: E402

from otelbench.testing.agent_runs import Run, send_runs  # noqa: E402
from otelbench.testing.live import LiveViewer, live_counters  # noqa: E402
from otelbench.testing.serve import free_port, serve, web_up  # noqa: E402
from otelbench.testing.wait import wait_for  # noqa: E402


def _web_process(serve_pid: int) -> psutil.Process:
    for child in psutil.Process(serve_pid).children():
        if "otelbench-web" in " ".join(child.cmdline()):
            return child
    raise RuntimeError("no web process under otelbench serve")


def latency(url: str, web: str, runs: int) -> None:
    viewer = LiveViewer(web.replace("http://", "ws://") + "/live/agents/calc")
    acks: dict[str, float] = {}
    send_runs(url, [Run("calc", f"What is {i} + 1?", str(i + 1), tool="add") for i in range(runs)], acks=acks)
    viewer.wait(lambda v: {m["span_id"] for m in v.of("span")} >= set(acks), timeout_s=120)
    late = sorted((at - acks[m["span_id"]]) * 1000 for at, m in viewer.messages if m["type"] == "span")
    viewer.close()
    p95 = late[int(0.95 * (len(late) - 1))]
    print(f"ack → live, {len(late)} spans ({runs} runs, each span its own export): "
          f"median {statistics.median(late):.1f} ms, p95 {p95:.1f} ms, max {late[-1]:.1f} ms")


async def _idle(url: str, n: int) -> list:
    from websockets.asyncio.client import connect

    return [await connect(url) for _ in range(n)]


def idle_cost(web: str, proc: psutil.Process, n: int, seconds: float) -> None:
    url = web.replace("http://", "ws://") + "/live/agents/calc"
    loop = asyncio.new_event_loop()
    warm = loop.run_until_complete(_idle(url, 10))  # the pump and the first connections' one-off costs
    wait_for(lambda: live_counters(web)["otelbench_web_live_viewers"] == 10)
    before = proc.memory_info().rss
    conns = loop.run_until_complete(_idle(url, n))
    wait_for(lambda: live_counters(web)["otelbench_web_live_viewers"] == n + 10, timeout_s=120)
    after = proc.memory_info().rss
    cpu0, t0 = sum(proc.cpu_times()[:2]), time.monotonic()
    loop.run_until_complete(asyncio.sleep(seconds))
    cpu = sum(proc.cpu_times()[:2]) - cpu0
    wall = time.monotonic() - t0
    print(f"{n} idle viewers: RSS +{(after - before) / 2**20:.1f} MiB ({(after - before) / n / 1024:.1f} KiB each); "
          f"web process CPU {cpu * 1000 / wall:.1f} ms/s while they idle")
    for c in conns + warm:
        loop.run_until_complete(c.close())
    loop.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--idle", type=int, default=1000)
    ap.add_argument("--idle-s", type=float, default=10.0)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 2 * args.idle + 256)), hard))  # serve inherits it
    with tempfile.TemporaryDirectory() as tmp:
        from otelbench.collector.wiring import Collector
        from otelbench.testing.collector import collector_config

        collector = Collector(collector_config(Path(tmp))).start()  # the agent's first run, in the lake
        send_runs(f"http://127.0.0.1:{collector.http_port}", [Run("calc", "seed", "seed")])
        collector.wait_flushed()
        collector.stop()
        port = free_port()
        cfg = Path(tmp) / "otel-config.yaml"
        cfg.write_text(yaml.safe_dump({
            "receivers": {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:0"}}}},
            "exporters": {"parquet": {"path": f"{tmp}/lake", "flush": {"interval_s": 300}}},
            "service": {"wal": {"dir": f"{tmp}/wal"},
                        "pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["parquet"]}}},
            "web": {"endpoint": f"127.0.0.1:{port}"},
        }))
        web = f"http://127.0.0.1:{port}"
        with serve(cfg) as served:
            wait_for(lambda: web_up(web), timeout_s=60)
            latency(served.url, web, args.runs)
            idle_cost(web, _web_process(served.proc.pid), args.idle, args.idle_s)


if __name__ == "__main__":
    main()
