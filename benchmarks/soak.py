"""Soak: everything ``otelbench serve`` runs, at once, for a long time, on one machine.

``otelbench serve`` runs its collector (OTLP/HTTP receiver, flushers, the compactor on its
interval), the processors on their schedule (the judge on the embedded model, then
failure clustering) and the web UI. While it runs, this script:

- sends realistic agent traces (``otelbench.testing.otlp.agent_trace``: an invoke_agent
  root, chat spans with 0.5–2 KB messages, tool spans; a fifth of the runs fail, with one
  of a few error messages, so clustering has failures) at ``--rate`` spans/s, open loop,
  from ``--senders`` keep-alive connections; a 429/503 answer is retried with the same
  body after its Retry-After. Every span id is unique: request ``k`` is a pre-encoded
  template whose ids all end in a 4-byte marker, replaced by ``k``;
- runs ``--readers`` web readers in parallel, each cycling through ``READS`` (pages, JSON
  twins, badges, search when the tree has it: a route marked optional that answers 404 at
  the start is left out);
- samples every ``--sample-s`` the RSS of each process under serve (from /proc, as
  benchmarks/ingest.py does: receiver, each flusher, the compactor and its plan process
  while alive, the web, the processors' pass process, llama-server).

At the end it stops serve with SIGTERM (which drains the write-ahead log into the lake),
then counts, per request ``k``, the rows of the ``spans`` view whose span id ends in
``k``: every acknowledged request must have all its spans there (lost = acknowledged spans
missing; duplicates are counted too).

Pass/fail. Let T be the run's length and W = min(5 min, T/6) the warm-up. For each
process (by role: ``receiver``, ``flusher-0``, ``web``, ``processors``, ``llama-server``,
``compactor``, ...) its *baseline* is its maximum RSS over the samples in [W, 2W) (the
"RSS at minute 5", read as the highest RSS of the window that starts there, so that a
flusher's batch-by-batch sawtooth or a process that runs on an interval is compared peak
to peak), and its *end* is its maximum RSS over [T − W, T]. It passes when end ≤ 1.10 ×
baseline for every process seen in both windows (a process seen in only one is reported,
not judged), and 0 acknowledged spans are lost.

    python benchmarks/soak.py                                  # 30 min at 45,000 spans/s
    python benchmarks/soak.py --minutes 3 --rate 3000 --out /tmp/soak.json

Writes ``--out`` (JSON: the RSS time series per process, per-route latencies, ingest and
accounting figures, the verdict) and the text summary beside it (``.txt``). Span
timestamps are those of the templates (generated at start), within the judge's window.
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import os
import queue
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import httpx  # noqa: E402
import psutil  # noqa: E402
import yaml  # noqa: E402

import ingest  # noqa: E402  (benchmarks/ingest.py: the process tree, roles)
from otelbench.testing.otlp import agent_trace, trace_request  # noqa: E402
from otelbench.testing.serve import free_port, web_up  # noqa: E402

PB = {"Content-Type": "application/x-protobuf"}
MARK = b"\xa5\x5a\xc3\x3c"  # the last 4 bytes of every id in a template; replaced by the request's number
AGENTS = ["triage", "coder", "researcher", "planner", "support", "sql-analyst"]
FAILURES = ["tool timed out", "rate limited by the provider (429)", "invalid JSON in the tool's arguments",
            "permission denied reading the file", "upstream returned 502 Bad Gateway"]
CAPACITY = 91_500  # spans/s, one flusher worker: docs/performance.md, ingest

# What each web reader asks, in turn: (label, path, optional). {agent}, {a}, {b}: agents;
# {trace}: a run acknowledged a while ago; {q}: a word the messages carry. An optional
# route that answers 404 at the start is left out (not in this tree).
READS = [
    ("home", "/", False),
    ("leaderboard", "/leaderboard", False),
    ("api/leaderboard", "/api/leaderboard", False),
    ("api/home", "/api/home", False),
    ("agent", "/agents/{agent}", False),
    ("api/agent", "/api/agents/{agent}", False),
    ("api/insights", "/api/agents/{agent}/insights", False),
    ("run", "/runs/{trace}", False),
    ("api/run", "/api/runs/{trace}", False),
    ("vs", "/vs/{a}/{b}", False),
    ("api/vs", "/api/vs/{a}/{b}", False),
    ("embed", "/embed/{agent}", False),
    ("badge", "/badge/{agent}.svg", False),
    ("search", "/search?q={q}", True),
    ("api/search", "/api/search?q={q}", True),
]


# -- traffic ------------------------------------------------------------------------------


def _marked(rng: random.Random, n: int) -> bytes:
    return rng.randbytes(n - len(MARK)) + MARK


def template(rng: random.Random, per_request: int, agent: str, error_share: float) -> tuple[bytes, list[bytes]]:
    """One request of ``per_request`` spans (whole runs of ``agent``, the last one cut
    short), every id ending in MARK; and the 12-byte prefixes of its runs' trace ids."""
    spans, traces = [], []
    while len(spans) < per_request:
        error = rng.random() < error_share
        message = rng.choice(FAILURES)
        run = agent_trace(rng, agent=agent, error=error)
        trace = _marked(rng, 16)
        ids = {s.span_id: _marked(rng, 8) for s in run}
        for s in run:
            s.trace_id, s.span_id = trace, ids[s.span_id]
            if s.parent_span_id:
                s.parent_span_id = ids[s.parent_span_id]
            if s.status.message:
                s.status.message = message
        spans.extend(run)
        traces.append(trace[:12])
    spans = spans[:per_request]
    if len({s.span_id for s in spans}) != per_request:
        return template(rng, per_request, agent, error_share)
    body = trace_request(*spans, resource={"service.name": f"{agent}-svc", "telemetry.sdk.language": "python"},
                         scope=("otelbench.soak", "")).SerializeToString()
    marks = sum(2 + bool(s.parent_span_id) for s in spans)
    if body.count(MARK) != marks:  # the marker also inside a message or a length: draw again
        return template(rng, per_request, agent, error_share)
    return body, traces


class Sender:
    """Open loop: request ``k`` is due at ``start + k × per_request / rate``; ``senders``
    threads send what is due, each on its own keep-alive connection."""

    def __init__(self, url: str, templates: list[tuple[bytes, list[bytes]]], per_request: int, rate: float,
                 senders: int):
        self.netloc = urlsplit(url).netloc
        self.templates, self.per_request, self.rate = templates, per_request, rate
        self.due: queue.Queue[int] = queue.Queue(maxsize=4 * senders)
        self.acked: dict[int, float] = {}  # request → when acknowledged (monotonic)
        self.recent: collections.deque[tuple[int, float]] = collections.deque(maxlen=2000)
        self.offered = 0
        self.refused = {"429": 0, "503": 0, "retry_after_honoured": 0}
        self.errors: dict[str, int] = {}
        self.latencies: list[float] = []
        self.behind_s = 0.0  # the most the pacer fell behind its schedule (senders all busy)
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._pace, daemon=True)]
        self.threads += [threading.Thread(target=self._send, daemon=True) for _ in range(senders)]

    def body(self, k: int) -> bytes:
        return self.templates[k % len(self.templates)][0].replace(MARK, k.to_bytes(4, "big"))

    def trace_of(self, k: int, i: int) -> str:
        traces = self.templates[k % len(self.templates)][1]
        return (traces[i % len(traces)] + k.to_bytes(4, "big")).hex()

    def start(self) -> Sender:
        self.t0 = time.monotonic()
        for t in self.threads:
            t.start()
        return self

    def _pace(self) -> None:
        k = 0
        while not self.stop.is_set():
            delay = self.t0 + k * self.per_request / self.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                self.behind_s = max(self.behind_s, -delay)
            while not self.stop.is_set():
                try:
                    self.due.put(k, timeout=0.5)
                    break
                except queue.Full:
                    continue
            else:
                return
            self.offered = k = k + 1

    def _send(self) -> None:
        conn = http.client.HTTPConnection(self.netloc, timeout=120)
        while not (self.stop.is_set() and self.due.empty()):
            try:
                k = self.due.get(timeout=0.5)
            except queue.Empty:
                continue
            body = self.body(k)
            for attempt in range(20):
                t = time.monotonic()
                try:
                    conn.request("POST", "/v1/traces", body=body, headers=PB)
                    r = conn.getresponse()
                    r.read()
                except (OSError, http.client.HTTPException) as exc:
                    with self.lock:
                        self.errors[type(exc).__name__] = self.errors.get(type(exc).__name__, 0) + 1
                    conn.close()
                    conn = http.client.HTTPConnection(self.netloc, timeout=120)
                    time.sleep(1)
                    continue
                if r.status == 200:
                    with self.lock:
                        self.acked[k] = time.monotonic()
                        self.recent.append((k, self.acked[k]))
                        self.latencies.append(time.monotonic() - t)
                    break
                with self.lock:
                    key = str(r.status)
                    if key in ("429", "503"):
                        self.refused[key] += 1
                    else:
                        self.errors[key] = self.errors.get(key, 0) + 1
                wait = r.getheader("retry-after")
                if wait is not None:
                    with self.lock:
                        self.refused["retry_after_honoured"] += 1
                time.sleep(float(wait or 1))
        conn.close()

    def join(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()

    def settled_trace(self, rng: random.Random, older_s: float) -> str | None:
        """A run of a request acknowledged at least ``older_s`` ago (flushed by now)."""
        cutoff = time.monotonic() - older_s
        with self.lock:
            old = [k for k, at in self.recent if at <= cutoff]
        return self.trace_of(rng.choice(old), rng.randrange(1000)) if old else None


# -- readers ------------------------------------------------------------------------------


class Readers:
    """``n`` threads, each cycling through the reads (from a different start), recording
    each answer's latency and status per route."""

    def __init__(self, base: str, n: int, sender: Sender, settle_s: float):
        self.base, self.sender, self.settle_s = base, sender, settle_s
        self.reads = [r for r in READS if not r[2] or self._present(r[1])]
        self.absent = [r[0] for r in READS if r not in self.reads]
        self.latency: dict[str, list[float]] = {label: [] for label, _, _ in self.reads}
        self.status: dict[str, dict[str, int]] = {label: {} for label, _, _ in self.reads}
        self.missing_runs: list[str] = []  # runs a run page did not find
        self.ready_s = 0.0
        self.examples: dict[str, list[str]] = {}  # failed reads of each route: the first 3, the last
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._read, args=(i,), daemon=True) for i in range(n)]

    def _present(self, path: str) -> bool:
        return httpx.get(self.base + path.format(q="timeout"), timeout=60).status_code != 404

    def start(self, timeout_s: float) -> Readers:
        """Once every agent's profile answers (the web's first rollups with them in), so that
        the latencies are of answers, not of the 404s of a lake the web has not read yet."""
        t0 = time.monotonic()
        while any(httpx.get(f"{self.base}/api/agents/{a}", timeout=60).status_code != 200 for a in AGENTS):
            if time.monotonic() - t0 > timeout_s:
                break
            time.sleep(0.5)
        self.ready_s = time.monotonic() - self.sender.t0
        for t in self.threads:
            t.start()
        return self

    def _read(self, i: int) -> None:
        rng = random.Random(i)
        with httpx.Client(base_url=self.base, timeout=120) as http:
            n = i
            while not self.stop.is_set():
                label, path, _ = self.reads[n % len(self.reads)]
                n += 1
                a, b = rng.sample(AGENTS, 2)
                trace = self.sender.settled_trace(rng, self.settle_s) if "{trace}" in path else ""
                if trace is None:
                    continue
                url = path.format(agent=a, a=a, b=b, trace=trace, q=rng.choice(["timeout", "payment", "JSON"]))
                t = time.monotonic()
                try:
                    code = str(http.get(url).status_code)
                except httpx.HTTPError as exc:
                    code = type(exc).__name__
                took = time.monotonic() - t
                self.latency[label].append(took)
                self.status[label][code] = self.status[label].get(code, 0) + 1
                if code != "200":  # the first few failed reads of a route, and its last one
                    seen = self.examples.setdefault(label, [])
                    line = f"{time.monotonic() - self.sender.t0:.0f}s {url} {code}"
                    seen[len(seen) if len(seen) < 4 else -1:] = [line]
                    if trace and len(self.missing_runs) < 50:
                        self.missing_runs.append(trace)

    def join(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()


# -- memory -------------------------------------------------------------------------------


def label(proc: psutil.Process, serve_pid: int) -> str:
    """receiver (serve itself), flusher-0, compactor, web, processors (a ``storage.process``
    child: its name), plan (``ingest.role``), llama-server, or a ``python -m`` module's last part."""
    try:
        cmdline = proc.cmdline()
    except psutil.Error:
        return "child"
    if proc.pid == serve_pid or cmdline[2:3] == ["otelbench.storage.plan_process"]:
        return ingest.role(proc, serve_pid)
    if cmdline[2:3] == ["otelbench.storage.process"] and len(cmdline) > 3:
        return cmdline[3].removeprefix("otelbench-")
    if cmdline[1:2] == ["-m"] and len(cmdline) > 2:
        return cmdline[2].rsplit(".", 1)[-1]
    return os.path.basename(cmdline[0]) if cmdline else "child"


class Memory(threading.Thread):
    """RSS of every process under serve, by label, every ``every`` seconds: ``series[label]``
    is a list of (seconds since start, bytes)."""

    def __init__(self, serve_pid: int, every: float, t0: float):
        super().__init__(daemon=True)
        self.serve_pid, self.every, self.t0 = serve_pid, every, t0
        self.series: dict[str, list[tuple[float, int]]] = {}
        self.total: list[tuple[float, int]] = []
        self.labels: dict[int, str] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        procs: dict[int, psutil.Process] = {}
        while not self.stop.wait(self.every):
            t = time.monotonic() - self.t0
            seen: dict[str, int] = {}
            for pid in ingest.tree(self.serve_pid):
                try:
                    p = procs.get(pid) or procs.setdefault(pid, psutil.Process(pid))
                    if pid not in self.labels:
                        self.labels[pid] = label(p, self.serve_pid)
                    rss = p.memory_info().rss
                except psutil.Error:
                    continue
                name = self.labels[pid]
                seen[name] = seen.get(name, 0) + rss  # two of one role at once (plan processes): summed
            for name, rss in seen.items():
                self.series.setdefault(name, []).append((t, rss))
            self.total.append((t, sum(seen.values())))


def window_max(samples: list[tuple[float, int]], lo: float, hi: float) -> int | None:
    inside = [rss for t, rss in samples if lo <= t <= hi]
    return max(inside) if inside else None


def rss_verdict(series: dict[str, list[tuple[float, int]]], run_s: float, warmup_s: float) -> dict[str, dict]:
    out = {}
    for name, samples in sorted(series.items()):
        base = window_max(samples, warmup_s, 2 * warmup_s - 1e-9)
        end = window_max(samples, run_s - warmup_s, run_s)
        growth = (end / base - 1) if base and end else None
        out[name] = {"baseline": base, "end": end, "growth": growth,
                     "ok": None if growth is None else growth <= 0.10}
    return out


# -- serve --------------------------------------------------------------------------------


def write_config(work: Path, args: argparse.Namespace, web_port: int, judge_sample: float,
                 processors_interval: float) -> Path:
    parquet: dict = {"path": str(work / "lake")}
    if args.workers:
        parquet["workers"] = args.workers
    judge: dict = {"sample": judge_sample} if args.judge else {"enabled": False}
    if args.judge and args.judge_model:
        judge["model"] = args.judge_model
    cfg = {
        "receivers": {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:0"}}}},
        "exporters": {"parquet": parquet},
        "service": {
            "wal": {"dir": str(work / "wal"), "fsync": True},
            "telemetry": {"log_level": "warning"},
            **({"limits": {"max_unflushed_mib": args.max_unflushed_mib}} if args.max_unflushed_mib else {}),
            "pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["parquet"]}},
        },
        "processors": {"interval_s": processors_interval, "judge": judge,
                       "clusters": {"describe": args.judge}},
        "web": {"endpoint": f"127.0.0.1:{web_port}"},
    }
    path = work / "otel-config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def start_serve(config: Path, log: Path) -> tuple[subprocess.Popen, str]:
    out = open(log, "w")
    proc = subprocess.Popen([sys.executable, "-m", "otelbench", "serve", "--config", str(config)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=out, text=True)
    for line in proc.stdout:
        out.write(line)
        if "OTLP/HTTP listening on" in line:
            threading.Thread(target=lambda: [out.write(x) for x in proc.stdout], daemon=True).start()
            return proc, line.strip().rsplit(" ", 1)[-1]
    raise SystemExit(f"otelbench serve did not start: see {log}")


def account(lake: Path, sender: Sender, missing_runs: list[str]) -> dict[str, int]:
    """Rows of ``spans`` per request (its span ids' last 4 bytes) against what was
    acknowledged; rows of other services (the judge's own calls) apart. And how many of the
    runs a run page did not find are in the lake after the drain."""
    from otelbench.storage.duckdb import open_lake

    services = [f"{a}-svc" for a in AGENTS]
    with open_lake(lake, memory_limit=None) as gw:
        rows = gw.arrow("SELECT right(span_id, 8) AS k, count(*) AS n FROM spans WHERE service_name IN "
                        "(SELECT unnest($services)) GROUP BY k", {"services": services},
                        max_rows=None, timeout_s=None).table.to_pylist()
        others = gw.query("SELECT count(*) FROM spans WHERE service_name NOT IN (SELECT unnest($services))",
                          {"services": services}).rows[0][0]
        missing_in_lake = gw.query("SELECT count(DISTINCT trace_id) FROM spans WHERE trace_id IN "
                                   "(SELECT unnest($ids))", {"ids": missing_runs or [""]}).rows[0][0]
    found = {int(r["k"], 16): r["n"] for r in rows}
    per = sender.per_request
    acked = set(sender.acked)
    return {
        "acknowledged_spans": len(acked) * per,
        "rows_of_acknowledged": sum(min(found.get(k, 0), per) for k in acked),
        "lost": sum(max(0, per - found.get(k, 0)) for k in acked),
        "duplicates": sum(max(0, n - per) for k, n in found.items()),
        "rows_unacknowledged": sum(n for k, n in found.items() if k not in acked),
        "rows_other_services": others,
        "runs_not_found_by_reads": len(set(missing_runs)),
        "of_them_in_lake_after_drain": missing_in_lake,
    }


# -- report -------------------------------------------------------------------------------


def pct(xs: list[float], q: int) -> float:
    if not xs:
        return float("nan")
    if len(xs) == 1:
        return xs[0] * 1000
    return statistics.quantiles(xs, n=100, method="inclusive")[q - 1] * 1000


def summary(res: dict) -> str:
    run_s, w = res["run_s"], res["warmup_s"]
    lines = [f"soak: {res['minutes']:g} min at {res['rate']:,.0f} spans/s offered; warm-up W = {w:.0f} s; "
             f"load average at the end {res['loadavg']:.1f} on {os.cpu_count()} CPUs"]
    ing = res["ingest"]
    lines.append(f"ingest: due by the schedule {res['rate'] * run_s:,.0f} spans, handed to the senders "
                 f"{ing['offered_spans']:,}, acknowledged {ing['acknowledged_spans']:,} "
                 f"({ing['acknowledged_spans'] / run_s:,.0f}/s); refused {ing['refused']}; errors {ing['errors']}; "
                 f"request p50/p99 {ing['p50_ms']:.0f}/{ing['p99_ms']:.0f} ms; pacer behind at most "
                 f"{ing['behind_s']:.1f} s")
    lines.append("serve: " + ", ".join(f"{k} {v:g}" for k, v in res["metrics"].items())
                 + f"; drain after SIGTERM {res['drain_s']:.1f} s (exit {res['serve_exit']})")
    edges = [i * w for i in range(int(round(run_s / w)) + 1)]
    head = "".join(f"{f'{a / 60:.1f}-{b / 60:.1f}m':>12}" for a, b in zip(edges, edges[1:]))
    lines += ["", f"max RSS (MiB) per window        {head}   growth  verdict"]
    for name, v in res["rss"].items():
        samples = res["series"][name]
        cells = "".join(f"{(m / 2**20 if (m := window_max(samples, a, b)) else float('nan')):>12.0f}"
                        for a, b in zip(edges, edges[1:]))
        g = v["growth"]
        verdict = "n/a" if v["ok"] is None else ("ok" if v["ok"] else "GREW")
        lines.append(f"{name:<32}{cells}   {'' if g is None else f'{g:+.1%}':>6}  {verdict}")
    lines += ["", f"web readers from {res['readers_started_s']:.0f} s (when every agent's profile answered)"]
    lines += [f"{'route':<18}{'requests':>9}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}  answers"]
    for name, v in res["reads"].items():
        lines.append(f"{name:<18}{v['n']:>9}{v['p50_ms']:>9.0f}{v['p95_ms']:>9.0f}{v['p99_ms']:>9.0f}  {v['status']}")
    if res["reads_absent"]:
        lines.append(f"(not in this tree: {', '.join(res['reads_absent'])})")
    a = res["accounting"]
    lines += ["", f"accounting: {a['acknowledged_spans']:,} spans acknowledged, {a['rows_of_acknowledged']:,} of them "
                  f"in `spans` after the drain; lost {a['lost']:,}, duplicates {a['duplicates']:,}; "
                  f"{a['rows_unacknowledged']:,} rows of unacknowledged requests, {a['rows_other_services']:,} of other "
                  f"services (the judge's own calls); runs a run page did not find: "
                  f"{a['runs_not_found_by_reads']} ({a['of_them_in_lake_after_drain']} of them in the lake after the drain)"]
    lines.append(f"RESULT: {'PASS' if res['pass'] else 'FAIL'} (lost {a['lost']}, processes grown > 10 %: "
                 f"{', '.join(res['grown']) or 'none'})")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--rate", type=float, default=CAPACITY / 2, help="spans/s offered (default: half the capacity)")
    ap.add_argument("--per-request", type=int, default=512)
    ap.add_argument("--templates", type=int, default=48, help="distinct request bodies (ids differ per send)")
    ap.add_argument("--error-share", type=float, default=0.2, help="share of runs that fail")
    ap.add_argument("--senders", type=int, default=8)
    ap.add_argument("--readers", type=int, default=8)
    ap.add_argument("--workers", type=int, default=None, help="exporters.parquet.workers (default: the collector's)")
    ap.add_argument("--max-unflushed-mib", type=int, default=None,
                    help="service.limits.max_unflushed_mib (default: the collector's); small: 429s sooner")
    ap.add_argument("--processors-interval", type=float, default=None,
                    help="processors.interval_s (default: the warm-up W, at most 300 s)")
    ap.add_argument("--judged-per-pass", type=int, default=50,
                    help="judge.sample is set so that about this many new runs are judged per pass")
    ap.add_argument("--judge-model", default=None, help="a GGUF path (default: the strongest local model)")
    ap.add_argument("--no-judge", dest="judge", action="store_false", help="clusters only (no llama-server)")
    ap.add_argument("--run-settle-s", type=float, default=30.0,
                    help="run pages ask for runs acknowledged at least this long ago")
    ap.add_argument("--sample-s", type=float, default=1.0, help="RSS sampling period")
    ap.add_argument("--keep", type=Path, default=None, help="copy the lake, WAL and config there at the end")
    ap.add_argument("--out", type=Path, default=Path("soak.json"))
    args = ap.parse_args()

    run_s = args.minutes * 60
    warmup_s = min(300.0, run_s / 6)
    interval = args.processors_interval or warmup_s
    rng = random.Random(1)
    print(f"generating {args.templates} request templates of {args.per_request} spans …", flush=True)
    templates = [template(rng, args.per_request, AGENTS[i % len(AGENTS)], args.error_share)
                 for i in range(args.templates)]
    runs_per_s = args.rate * sum(len(t[1]) for t in templates) / (args.templates * args.per_request)
    judge_sample = max(1e-9, min(1.0, args.judged_per_pass / (runs_per_s * interval)))

    with tempfile.TemporaryDirectory(prefix="otelbench-soak-") as tmp:
        work = Path(tmp)
        web_port = free_port()
        config = write_config(work, args, web_port, judge_sample, interval)
        proc, url = start_serve(config, work / "serve.log")
        web = f"http://127.0.0.1:{web_port}"
        deadline = time.monotonic() + 120
        while not web_up(web):
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(f"the web UI did not answer: {(work / 'serve.log').read_text()[-2000:]}")
            time.sleep(0.2)
        t0 = time.monotonic()
        memory = Memory(proc.pid, args.sample_s, t0)
        memory.start()
        sender = Sender(url, templates, args.per_request, args.rate, args.senders).start()
        readers = Readers(web, args.readers, sender, settle_s=args.run_settle_s).start(run_s / 2)
        print(f"serving: OTLP {url}, web {web}; {args.rate:,.0f} spans/s for {args.minutes:g} min, "
              f"{args.readers} readers, processors every {interval:g} s (judge sample {judge_sample:.2g})", flush=True)
        next_note = 60.0
        while (now := time.monotonic() - t0) < run_s:
            time.sleep(min(1.0, run_s - now))
            if now >= next_note:
                next_note += 60
                rss = sum(s[-1][1] for s in memory.series.values() if s and s[-1][0] > now - 5)
                print(f"  {now / 60:4.1f} min: {len(sender.acked) * args.per_request:,} spans acknowledged, "
                      f"RSS {rss / 2**20:,.0f} MiB in {len(memory.series)} roles seen", flush=True)
            if proc.poll() is not None:
                raise SystemExit(f"otelbench serve exited: {(work / 'serve.log').read_text()[-2000:]}")
        readers.join()
        sender.join()
        metrics = ingest.FlushedSpans(url)
        wanted = {"processors runs": "otelbench_processors_runs_total",
                  "processors failed": "otelbench_processors_errors_total",
                  "compactor runs": "otelbench_compactor_runs_total",
                  "files compacted": "otelbench_compactor_merged_files_total",
                  "compactor errors": "otelbench_compactor_errors_total"}
        serve_metrics = {k: metrics.metric(v) for k, v in wanted.items()}
        loadavg = os.getloadavg()[0]
        t_stop = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        exit_code = proc.wait(900)
        drain_s = time.monotonic() - t_stop
        memory.stop.set()
        memory.join()
        accounting = account(work / "lake", sender, readers.missing_runs)
        serve_log = (work / "serve.log").read_text()
        args.out.with_suffix(".serve.log").write_text(serve_log)
        errors_log = [line for line in serve_log.splitlines() if "ERROR" in line or "Error" in line][-20:]
        if args.keep:
            import shutil

            shutil.copytree(work, args.keep, dirs_exist_ok=True)

    lat = sender.latencies
    rss = rss_verdict(memory.series, run_s, warmup_s)
    grown = [name for name, v in rss.items() if v["ok"] is False]
    res = {
        "minutes": args.minutes, "rate": args.rate, "run_s": run_s, "warmup_s": warmup_s, "loadavg": loadavg,
        "processors_interval_s": interval, "judge_sample": judge_sample, "readers": args.readers,
        "ingest": {"offered_spans": sender.offered * args.per_request,
                   "acknowledged_spans": len(sender.acked) * args.per_request, "refused": sender.refused,
                   "errors": sender.errors, "behind_s": sender.behind_s,
                   "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99)},
        "metrics": serve_metrics, "drain_s": drain_s, "serve_exit": exit_code, "serve_errors": errors_log,
        "rss": rss, "grown": grown,
        "series": memory.series, "total_rss": memory.total,
        "reads": {name: {"n": len(xs), "p50_ms": pct(xs, 50), "p95_ms": pct(xs, 95), "p99_ms": pct(xs, 99),
                         "status": readers.status[name]} for name, xs in readers.latency.items()},
        "reads_absent": readers.absent, "readers_started_s": readers.ready_s, "reads_failed_first": readers.examples,
        "accounting": accounting,
        "pass": accounting["lost"] == 0 and not grown,
    }
    text = summary(res)
    args.out.write_text(json.dumps(res, indent=1, default=str))
    args.out.with_suffix(".txt").write_text(text + "\n")
    print("\n" + text)
    if errors_log:
        print("\nserve logged errors (last ones):\n" + "\n".join(errors_log))
    print(f"\nwritten: {args.out}, {args.out.with_suffix('.txt')}")


if __name__ == "__main__":
    main()
