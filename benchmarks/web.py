"""How fast the web UI answers over a big lake: prints the figures quoted in docs/performance.md.

    .venv/bin/python benchmarks/web.py                          # 10 M spans in a temp lake
    .venv/bin/python benchmarks/web.py --lake /tmp/weblake --keep   # build once, time again later
    .venv/bin/python benchmarks/web.py --spans 1000000          # a quicker look

Fills a lake with --spans spans (benchmarks/query.py's traces: ten spans a run, so 10 M
spans are 1 M agent runs) over --agents agents and the last 30 days, compacts it, adds
the judge's scores for every run, failure clusters for every agent and bench results,
then builds the rollups (``python -m otelbench.storage.rollups``, timed: what the web's refresher
does once for a lake it has never seen; after that it only folds in new files).

Then starts ``otelbench web`` on the lake and prints: the time from start to the first
answer, and the first request's own latency; then, per route, p50/p95 of --requests
requests from --clients concurrent clients (one asyncio process; the server and the
clients share this machine's cores, so figures are pessimistic for the server); then
the web process's RSS. Targets: pages and JSON p95 <= 150 ms, badge p95 <=
20 ms, first request <= 1 s, RSS <= 500 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import httpx  # noqa: E402
import psutil  # noqa: E402
import pyarrow as pa  # noqa: E402

import query  # noqa: E402  (benchmarks/query.py: the trace generator)
from otelbench.storage.duckdb import open_lake  # noqa: E402
from otelbench.storage.lake import Lake  # noqa: E402

DAY_US = 86_400_000_000


def fill(root: Path, spans: int, agents: int) -> None:
    lake = Lake(root)
    lake.init()
    query.AGENTS = [f"agent-{i:03d}" for i in range(agents)]
    query.START_US = int(time.time() * 1e6) - 30 * DAY_US  # the last 30 days: every window has data
    if not any(lake.files("spans")):
        t0 = time.perf_counter()
        query.generate(lake, spans, 500_000, 30)
        print(f"lake: {spans:,} spans written in {time.perf_counter() - t0:.0f} s", flush=True)
    if not any(p.name.startswith("compact-") for p in lake.files("spans")):
        took = query.compact(lake, query.MEMORY_MIB)
        print(f"compacted in {took['spans']:.0f} s", flush=True)
    with open_lake(root, memory_limit=None) as gw:
        runs = gw.arrow("SELECT trace_id, agent, status FROM agent_runs", max_rows=None, timeout_s=None).table
    # the judge's scores for every run, committed in chunks as the processors do
    rng = random.Random(7)
    now = dt.datetime.now(dt.timezone.utc)
    n = runs.num_rows
    for lo in range(0, n, 100_000):
        part = runs.slice(lo, 100_000)
        k = part.num_rows
        lake.append("evals", pa.table({
            "trace_id": part["trace_id"], "agent": part["agent"],
            "score": [rng.random() for _ in range(k)], "reasoning": ["the answer follows from the tool's result"] * k,
            "judge_model": ["qwen2.5-coder-0.5b"] * k, "judge_version": ["judge-run@bench"] * k,
            "method": ["logprobs"] * k, "error": pa.nulls(k, pa.string()), "raw_answer": pa.nulls(k, pa.string()),
            "attempts": [1] * k, "input_truncated": [False] * k, "judged_at": [now] * k}))
    # failure clusters: a few per agent, members from its failed runs
    failed = runs.filter(pa.compute.equal(runs["status"], "error")).to_pylist()
    by_agent: dict[str, list[str]] = {}
    for r in failed:
        by_agent.setdefault(r["agent"], []).append(r["trace_id"])
    for agent, ids in by_agent.items():
        k = 3
        lake.replace("failure_clusters", pa.table({
            "agent": [agent] * k, "cluster_id": list(range(k)), "size": [len(ids) // k] * k, "share": [1 / k] * k,
            "first_seen": [now - dt.timedelta(days=20)] * k, "last_seen": [now] * k,
            "example_trace_ids": [ids[i::k][:3] for i in range(k)],
            "top_terms": [["timeout", "tool"], ["rate", "limited"], ["invalid", "json"]],
            "description": ["The web search tool times out", "The provider rate-limits calls",
                            "The model returns invalid JSON"],
            "params": ["{}"] * k, "run_at": [now] * k}), {"agent": agent})
        lake.replace("cluster_members", pa.table({"trace_id": ids, "agent": [agent] * len(ids),
                                                   "cluster_id": [i % k for i in range(len(ids))]}), {"agent": agent})
    for table in ("evals", "failure_clusters", "cluster_members"):  # as the collector's compactor does
        lake.compact(table, below_batch_id="z" * 40, min_files=2)
    print(f"evals: {n:,} scores; clusters for {len(by_agent)} agents (compacted)", flush=True)


def _count(root: Path, table: str) -> int:
    with open_lake(root) as gw:
        return gw.query(f"SELECT count(*) FROM {table}").rows[0][0]


def build_rollups(root: Path) -> None:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "otelbench.storage.rollups", str(root)], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    print(f"rollups built in {time.perf_counter() - t0:.0f} s ({out.stdout.strip()})", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sample_targets(root: Path) -> dict[str, Any]:
    with open_lake(root) as gw:
        agents = sorted(r[0] for r in gw.query("SELECT DISTINCT agent FROM evals").rows)
        traces = [r[0] for r in gw.query("SELECT trace_id FROM evals USING SAMPLE 200 ROWS").rows]
    return {"a": agents[0], "b": agents[1], "agent": agents[2], "trace": traces[0], "agents": agents[3:],
            "traces": traces[1:]}


async def load(base: str, path: str | list[str], requests: int, clients: int) -> list[float]:
    """``requests`` GETs of ``path`` (or of each of a list of paths, once) from ``clients``
    concurrent clients; their latencies."""
    latencies: list[float] = []
    todo = iter(path if isinstance(path, list) else [path] * requests)
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        async def client() -> None:
            for path in todo:
                t0 = time.perf_counter()
                r = await http.get(path)
                latencies.append(time.perf_counter() - t0)
                if r.status_code != 200:
                    raise SystemExit(f"{path}: HTTP {r.status_code}: {r.text[:300]}")
        await asyncio.gather(*(client() for _ in range(clients)))
    return latencies


def pct(xs: list[float], q: float) -> float:
    return statistics.quantiles(xs, n=100, method="inclusive")[int(q) - 1] * 1000 if len(xs) > 1 else xs[0] * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spans", type=int, default=10_000_000)
    ap.add_argument("--agents", type=int, default=200)
    ap.add_argument("--lake", type=Path)
    ap.add_argument("--keep", action="store_true", help="keep the lake (and reuse it when it is there)")
    ap.add_argument("--requests", type=int, default=200, help="per route")
    ap.add_argument("--clients", type=int, default=8)
    args = ap.parse_args()

    root = args.lake or Path(tempfile.mkdtemp(prefix="otelbench-web-"))
    try:
        if not (root / "_lake.json").exists() or not _count(root, "evals"):
            fill(root, args.spans, args.agents)
        if not (root / "_rollups" / "runs" / "manifest.json").exists():
            build_rollups(root)
        t = sample_targets(root)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        started = time.perf_counter()
        web = subprocess.Popen([sys.executable, "-m", "otelbench", "web", "--lake", str(root), "--endpoint",
                                f"127.0.0.1:{port}"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            while True:
                try:
                    t0 = time.perf_counter()
                    r = httpx.get(f"{base}/leaderboard", timeout=60)
                    break
                except httpx.TransportError:
                    if web.poll() is not None:
                        raise SystemExit(web.stderr.read().decode()[-2000:]) from None
                    time.sleep(0.02)
            first = time.perf_counter() - t0
            print(f"first answer {time.perf_counter() - started:.2f} s after start (process start included); "
                  f"the first request itself {first * 1000:.0f} ms (HTTP {r.status_code})")
            routes = ["/", "/leaderboard", "/leaderboard?sort=success&window=24h", "/api/leaderboard?sort=latency",
                      f"/agents/{t['agent']}", f"/api/agents/{t['agent']}", f"/api/agents/{t['agent']}/insights",
                      f"/runs/{t['trace']}", f"/api/runs/{t['trace']}", f"/vs/{t['a']}/{t['b']}",
                      f"/embed/{t['agent']}?theme=dark", f"/badge/{t['agent']}.svg?metric=success"]
            print(f"{'route':<48} {'p50 ms':>8} {'p95 ms':>8}   ({args.requests} requests, {args.clients} clients; "
                  f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
            for path in routes:
                asyncio.run(load(base, path, 16, args.clients))  # warm-up
                lat = asyncio.run(load(base, path, args.requests, args.clients))
                shown = path.replace(t["agent"], "AGENT").replace(t["trace"], "TRACE").replace(t["a"], "A").replace(
                    t["b"], "B")
                print(f"{shown:<48} {pct(lat, 50):>8.1f} {pct(lat, 95):>8.1f}", flush=True)
            # nothing cached: each request the first for its agent or run (answers are cached
            # per rollup version, so the routes above measure mostly warm answers)
            for label, paths in (("/api/agents/AGENT, each agent's first view", [f"/api/agents/{a}" for a in t["agents"][::2]]),
                                 ("/agents/AGENT, each agent's first view", [f"/agents/{a}" for a in t["agents"][1::2]]),
                                 ("/api/runs/TRACE, each run's first view", [f"/api/runs/{x}" for x in t["traces"]])):
                lat = asyncio.run(load(base, paths, len(paths), args.clients))
                print(f"{label:<48} {pct(lat, 50):>8.1f} {pct(lat, 95):>8.1f}   ({len(paths)} requests)", flush=True)
            rss = psutil.Process(web.pid).memory_info().rss
            print(f"web process RSS {rss / 2**20:.0f} MiB")
        finally:
            web.terminate()
            web.wait(10)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
