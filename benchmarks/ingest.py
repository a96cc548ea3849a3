"""Ingest benchmark: realistic gen_ai traces over OTLP/HTTP protobuf against `otelbench serve`.

Phase 1 (closed loop): 4 concurrent clients send pre-encoded requests (agent root +
llm + tool spans, message content 0.5–2 KB) as fast as the collector answers, with
durability on (fsync group commit). Prints accepted spans/s, spans/s until
queryable (first request → every span in Parquet), p50/p99 request latency, peak
RSS and PSS of the collector (every process it runs, summed at the same instants, and
each role's own peak: receiver, flusher, compactor and its plan process), the
write-ahead log's peak and final size, and the CPU time per span of each role during the
phase (the collector's start-up excluded). The process tree is read at every sample,
from each thread's child list, so a plan process that lives half a second is counted;
``--exact-pss`` reads PSS at every sample near the peak too. ``--compaction-interval 2``
runs a compactor process every 2 s while the clients send, so that all three run at once
(``--compaction-memory MIB``: its ``compaction.memory_mib``). Before it starts, the
environment's shared libraries are dropped from the page cache
(``scripts/settle_page_cache.py``; ``--keep-page-cache`` skips it): right after a pip
install they sit there in large folios that recent kernels map whole, ~50 MiB more RSS in
the flusher alone. The summed RSS less file-backed pages (the processes' own memory, not
their libraries' code) is printed beside RSS and PSS.

Phase 2 (overload): open loop at 2× the rate phase 1 sustained, with a smaller
WAL bound; prints how many requests were answered 429/503 with Retry-After and
the peak RSS, to show memory stays bounded and the collector says "slow down".

With ``--lake s3://bucket/prefix``, phase 1 runs twice in the same session, on local disk
then with the lake in the bucket, and prints both side by side with the requests the
bucket answered per million spans (by method). Without AWS_ENDPOINT_URL(_S3) in the
environment it starts a local S3-compatible server (``moto_server``: on these same two
cores, so the bucket's figure includes the server's own CPU) and counts from its log.

    python benchmarks/ingest.py [--spans 400000] [--clients 4] [--overload-seconds 15]
    python benchmarks/ingest.py --lake s3://bench/lake --overload-seconds 0
    python benchmarks/ingest.py --profile benchmarks/profiles/NAME --overload-seconds 0

With ``--profile DIR``, py-spy samples the receiver and each flusher worker during phase 1
(local disk): ``DIR/<role>.svg`` (a flame graph per thread) and ``DIR/<role>.txt`` (the same
stacks collapsed, one line per stack with its sample count, for ``benchmarks/profile_top.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psutil
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from otelbench.testing.otlp import agent_request  # noqa: E402

PB = {"Content-Type": "application/x-protobuf"}


def make_payloads(n_spans: int, per_request: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    agents = ["triage", "coder", "researcher", "planner"]
    return [
        agent_request(rng, per_request, agent=agents[i % 4]).SerializeToString()
        for i in range(n_spans // per_request)
    ]


def start_server(workdir: Path, max_unflushed_mib: int, max_batch_mib: int | None = None,
                 compaction_interval_s: float | None = None, workers: int | None = None,
                 lake: str | None = None, compaction_mib: int | None = None) -> tuple[subprocess.Popen, str]:
    parquet: dict = {"path": lake or str(workdir / "lake")}
    if workers:
        parquet["workers"] = workers
    if max_batch_mib:
        parquet["flush"] = {"max_batch_mib": max_batch_mib}
    if compaction_interval_s:
        parquet["compaction"] = {"interval_s": compaction_interval_s}
    if compaction_mib:
        parquet.setdefault("compaction", {})["memory_mib"] = compaction_mib
    cfg = {
        "receivers": {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:0"}}}},
        "exporters": {"parquet": parquet},
        "service": {
            "wal": {"dir": str(workdir / "wal"), "fsync": True},
            "limits": {"max_unflushed_mib": max_unflushed_mib},
            "telemetry": {"log_level": "warning"},
            "pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["parquet"]}},
        },
    }
    (workdir / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    proc = subprocess.Popen(
        [sys.executable, "-m", "otelbench", "serve", "--config", str(workdir / "cfg.yaml")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
    )
    for line in proc.stdout:
        if "OTLP/HTTP listening on" in line:
            threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
            return proc, line.strip().rsplit(" ", 1)[-1]
    raise RuntimeError("collector did not start")


class Sampler(threading.Thread):
    """Peak RSS and PSS of the collector's process tree, its CPU time, and the peak WAL size, every 100 ms."""

    def __init__(self, pid: int, wal_dir: Path, exact_pss: bool = False):
        super().__init__(daemon=True)
        self.proc = psutil.Process(pid)
        self.wal_dir = wal_dir
        self.exact_pss = exact_pss
        self.peak_rss = 0
        self.peak_pss = 0
        self.peak_anon = 0  # summed anonymous RSS (RSS less file-backed pages: libraries' code)
        self.peak_wal = 0
        self.peak_rss_role: dict[str, int] = {}  # role → the peak RSS of one of its processes
        self.roles: dict[int, str] = {}  # pid → role
        self.cpu: dict[int, tuple[str, float]] = {}  # pid → (role, CPU seconds so far)
        self.cpu_before = self.cpu_times()  # start-up (imports, warm-up) is not per-span work
        self.stop = threading.Event()

    def cpu_times(self) -> dict[int, float]:
        times = {}
        for p in [self.proc, *self.proc.children(recursive=True)]:
            try:
                t = p.cpu_times()
            except psutil.Error:
                continue
            times[p.pid] = t.user + t.system
        return times

    def run(self) -> None:
        known: dict[int, psutil.Process] = {}
        pss_at = 0.0
        while not self.stop.is_set():
            try:
                # the tree at every tick, from the kernel's child lists (cheap, unlike a scan
                # of /proc): a compactor's plan process lives well under a second
                procs = [known.get(pid) or known.setdefault(pid, psutil.Process(pid)) for pid in tree(self.proc.pid)]
                infos = [p.memory_info() for p in procs]
                rss = sum(m.rss for m in infos)
                self.peak_anon = max(self.peak_anon, sum(m.rss - m.shared for m in infos))
                # PSS costs ~12 ms of kernel time per process, on the collector's cores:
                # only at a new RSS peak (at most 5 times a second), or near one once a second;
                # --exact-pss: at every tick within 15 % of the peak (~0.5 us/span more CPU)
                since = time.monotonic() - pss_at
                if ((self.exact_pss and rss >= 0.85 * self.peak_rss)
                        or (rss > self.peak_rss and since > 0.2) or (rss >= 0.95 * self.peak_rss and since > 1.0)):
                    self.peak_pss, pss_at = max(self.peak_pss, sum(map(pss, procs))), time.monotonic()
                self.peak_rss = max(self.peak_rss, rss)
                for p, m in zip(procs, infos):
                    t = p.cpu_times()
                    if p.pid not in self.roles:
                        self.roles[p.pid] = role(p, self.proc.pid)
                    r = self.roles[p.pid]
                    self.cpu[p.pid] = (r, t.user + t.system)
                    self.peak_rss_role[r] = max(self.peak_rss_role.get(r, 0), m.rss)
            except psutil.Error:
                pass
            self.peak_wal = max(self.peak_wal, wal_size(self.wal_dir))
            time.sleep(0.1)


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux: ``/proc/PID/task/TID/children`` lists the
    children each thread started: the compactor's come from a thread of the receiver)."""
    pids = [pid]
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return pids
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                children = f.read().split()
        except OSError:
            continue
        for child in children:
            pids += tree(int(child))
    return pids


def role(proc: psutil.Process, receiver: int) -> str:
    """receiver, flusher, compactor (a child's name: ``python -m otelbench.storage.process NAME``) or
    plan (a compactor's plan process: ``python -m otelbench.storage.plan_process``)."""
    if proc.pid == receiver:
        return "receiver"
    try:
        cmdline = proc.cmdline()
    except psutil.Error:
        return "child"
    if cmdline[2:3] == ["otelbench.storage.plan_process"]:
        return "plan"
    if len(cmdline) < 4:
        return "child"
    return cmdline[3].removeprefix("otelbench-").split("-")[0]


def pss(proc: psutil.Process) -> int:
    """Proportional set size: a page shared by k processes counts 1/k in each, so the sum
    over the tree is the memory it really holds (summed RSS counts the shared libraries of
    every worker again)."""
    try:
        with open(f"/proc/{proc.pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def wal_size(wal_dir: Path) -> int:
    total = 0
    for p in wal_dir.glob("wal-*.log"):
        try:
            total += p.stat().st_size
        except FileNotFoundError:
            pass
    return total


class Profiler:
    """py-spy on the receiver and its flusher workers (``--profile``): started once the
    workers are up, stopped (SIGINT: py-spy writes its files) when the phase ends."""

    def __init__(self, folder: str, receiver: int):
        import shutil

        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
        targets = {"receiver": receiver}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(targets) == 1:
            for child in psutil.Process(receiver).children():
                name = " ".join(child.cmdline()[3:4])
                if name.startswith("otelbench-flusher"):
                    targets[name.replace("otelbench-", "")] = child.pid
            time.sleep(0.1)
        self.procs = []
        for name, pid in targets.items():
            for fmt, ext in (("flamegraph", "svg"), ("raw", "txt")):
                self.procs.append(subprocess.Popen(
                    [spy, "record", "--pid", str(pid), "--rate", "100", "--threads", "--nonblocking",
                     "--format", fmt, "--output", str(self.folder / f"{name}.{ext}")],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    def stop(self) -> None:
        import signal

        for p in self.procs:
            p.send_signal(signal.SIGINT)
        for p in self.procs:
            p.wait(60)
        print(f"profiles                    {self.folder}/*.svg, *.txt")


class FlushedSpans:
    """Polls the collector's /metrics on one kept-alive connection (``httpx.get`` builds a
    client, TLS context included, per call: polled every 20 ms that alone took most of a core)."""

    def __init__(self, url: str):
        self.conn = http.client.HTTPConnection(urlsplit(url).netloc, timeout=30)

    def __call__(self) -> int:
        return self.metric('otelbench_flusher_flushed_items_total{signal="traces"}')

    def metric(self, name: str) -> int:
        self.conn.request("GET", "/metrics")
        body = self.conn.getresponse().read().decode()
        for line in body.splitlines():
            if line.startswith(name + " "):
                return int(float(line.split()[-1]))
        return 0


def wait_for_compaction(metrics: FlushedSpans, timeout_s: float) -> float:
    """Wait until the compactor run in progress now has ended and some run has merged
    files (each run's memory is part of what the collector holds); returns the seconds
    waited. A run in progress shows as runs_total still below the runs started, which the
    metrics do not tell: wait for runs_total to grow past its value now, then for merged
    files, one more run at a time."""
    t0 = time.perf_counter()
    runs = metrics.metric("otelbench_compactor_runs_total")
    while time.perf_counter() - t0 < timeout_s:
        now = metrics.metric("otelbench_compactor_runs_total")
        if now > runs:
            if metrics.metric("otelbench_compactor_merged_files_total") > 0:
                break
            runs = now
        time.sleep(0.05)
    return time.perf_counter() - t0


def closed_loop(url: str, payloads: list[bytes], clients: int) -> tuple[list[float], int, float]:
    """Each client: one keep-alive connection (the standard library's ``http.client``,
    which sends a pre-encoded body with one syscall; httpx spent ~20 µs of CPU per span
    here, on the same two cores the collector runs on)."""
    latencies: list[float] = []
    refused = 0
    cpu = 0.0
    lock = threading.Lock()
    queue = list(range(len(payloads)))
    netloc = urlsplit(url).netloc

    def worker() -> None:
        nonlocal refused, cpu
        conn = http.client.HTTPConnection(netloc, timeout=60)
        started = time.thread_time()
        try:
            while True:
                with lock:
                    if not queue:
                        return
                    i = queue.pop()
                while True:
                    t = time.perf_counter()
                    conn.request("POST", "/v1/traces", body=payloads[i], headers=PB)
                    r = conn.getresponse()
                    r.read()
                    if r.status == 200:
                        with lock:
                            latencies.append(time.perf_counter() - t)
                        break
                    with lock:
                        refused += 1
                    time.sleep(float(r.getheader("retry-after") or "1"))
        finally:
            conn.close()
            with lock:
                cpu += time.thread_time() - started

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    return latencies, refused, cpu


def open_loop(url: str, payloads: list[bytes], rate_rps: float, seconds: float) -> dict[str, int]:
    """Send at a fixed request rate regardless of answers (many concurrent senders)."""
    codes: dict[str, int] = {}
    lock = threading.Lock()
    retry_after_seen = 0
    sem = threading.Semaphore(256)

    def send(body: bytes, http: httpx.Client) -> None:
        nonlocal retry_after_seen
        try:
            r = http.post(url + "/v1/traces", content=body, headers=PB)
            key = str(r.status_code)
            with lock:
                codes[key] = codes.get(key, 0) + 1
                if r.status_code in (429, 503) and "retry-after" in r.headers:
                    retry_after_seen += 1
        except httpx.HTTPError as exc:
            with lock:
                codes[type(exc).__name__] = codes.get(type(exc).__name__, 0) + 1
        finally:
            sem.release()

    http = httpx.Client(timeout=60, limits=httpx.Limits(max_connections=256))
    start = time.perf_counter()
    n = 0
    threads = []
    while time.perf_counter() - start < seconds:
        due = start + n / rate_rps
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        sem.acquire()
        t = threading.Thread(target=send, args=(payloads[n % len(payloads)], http), daemon=True)
        t.start()
        threads.append(t)
        n += 1
    [t.join() for t in threads]
    http.close()
    codes["retry_after_headers"] = retry_after_seen
    return codes


def phase1(args: argparse.Namespace, payloads: list[bytes], total: int, lake: str | None, s3=None) -> dict:
    """The closed loop against one collector (lake: a bucket's location; None: local disk);
    prints its figures and returns spans/s until queryable, requests/s, bucket requests."""
    with tempfile.TemporaryDirectory(prefix="otelbench-ingest-") as tmp:
        work = Path(tmp)
        requests_before = s3.requests() if s3 is not None else None
        proc, url = start_server(work, max_unflushed_mib=1024, max_batch_mib=args.max_batch_mib,
                                 compaction_interval_s=args.compaction_interval, workers=args.workers, lake=lake,
                                 compaction_mib=args.compaction_memory)
        profiler = Profiler(args.profile, proc.pid) if args.profile and lake is None else None
        sampler = Sampler(proc.pid, work / "wal", exact_pss=args.exact_pss)
        sampler.start()
        t0 = time.perf_counter()
        own0 = time.process_time()
        latencies, refused, client_cpu = closed_loop(url, payloads, args.clients)
        t_acked = time.perf_counter() - t0
        flushed_spans = FlushedSpans(url)
        while flushed_spans() < total:
            time.sleep(0.02)
        t_queryable = time.perf_counter() - t0
        own_cpu = time.process_time() - own0
        if profiler is not None:
            profiler.stop()
        waited = 0.0
        if args.compaction_interval is not None:
            # all three at once: the compactor run in progress when the last span became
            # queryable is sampled to its end, and so is one that merged files
            waited = wait_for_compaction(flushed_spans, timeout_s=120.0)
        compactions = (flushed_spans.metric("otelbench_compactor_merged_files_total"),
                       flushed_spans.metric("otelbench_compactor_errors_total"))
        time.sleep(0.1)
        sampler.stop.set()
        sampler.join()
        wal_after = wal_size(work / "wal")
        proc.terminate()
        proc.wait(120)
        from otelbench.storage.duckdb import open_lake

        requests = None
        if s3 is not None:
            requests = s3.requests()
            requests.subtract(requests_before)
        stored = open_lake(lake or work / "lake").query("SELECT count(*) FROM spans").rows[0][0]
        from otelbench.storage.location import open_fs

        fs = open_fs(lake or work / "lake")
        lake_bytes = sum(size for path, size, _ in fs.walk(fs.root) if path.endswith(".parquet"))
        lat = sorted(latencies)
        print(f"\n== phase 1: closed loop, durable (fsync group commit), lake on {'local disk' if lake is None else lake} ==")
        print(f"spans sent                  {total:,} ({args.clients} clients), stored {stored:,}")
        print(f"accepted spans/s            {total / t_acked:,.0f}")
        print(f"spans/s until queryable     {total / t_queryable:,.0f}   (first request → all in Parquet: {t_queryable:.2f} s)")
        print(f"request latency p50 / p99   {statistics.median(lat) * 1e3:.1f} ms / {lat[int(len(lat) * 0.99) - 1] * 1e3:.1f} ms")
        print(f"peak memory, all processes {sampler.peak_rss / 2**20:.0f} MiB summed RSS, {sampler.peak_pss / 2**20:.0f} MiB summed PSS"
              f" ({sampler.peak_anon / 2**20:.0f} MiB summed RSS less file-backed pages)")
        print("peak RSS by role            " + ", ".join(f"{k} {v / 2**20:.0f}" for k, v in sorted(sampler.peak_rss_role.items())) + " MiB")
        print(f"WAL peak / after flush      {sampler.peak_wal / 2**20:.0f} MiB / {wal_after / 2**20:.0f} MiB")
        print(f"refused (429/503)           {refused}")
        print(f"lake bytes per span         {lake_bytes / total:,.0f} (Parquet as flushed, before compaction)")
        print(f"files compacted (failed)    {compactions[0]} ({compactions[1]})"
              + (f", sampled until a run that merged files had ended: {waited:.1f} s after the last span was queryable"
                 if args.compaction_interval is not None else ""))
        cpu = {"clients": client_cpu, "harness (sampling, polling)": own_cpu - client_cpu}
        for pid, (role, seconds) in sampler.cpu.items():
            cpu[role] = cpu.get(role, 0.0) + seconds - sampler.cpu_before.get(pid, 0.0)
        print("CPU µs/span by role         " + ", ".join(f"{k} {v / total * 1e6:.1f}" for k, v in cpu.items())
              + f" (2 cores × the time until queryable = {2 * t_queryable / total * 1e6:.1f})")
        compaction = None
        if s3 is not None:  # what merging the fresh files costs the bucket, in this process
            from otelbench.storage.lake import Lake
            from otelbench.storage.schema import tables

            merger = Lake(lake, (work / "wal" / "collector-id").read_text().strip())
            before = s3.requests()
            t = time.perf_counter()
            merged = sum(merger.compact(tb.name, below_batch_id="9" * 20, min_files=2) for tb in tables())
            seconds = time.perf_counter() - t
            compaction = s3.requests()
            compaction.subtract(before)
            compacted = sum(size for path, size, _ in fs.walk(fs.root) if path.endswith(".parquet"))
            print(f"compaction afterwards       {merged} files merged in {seconds:.1f} s "
                  f"({seconds / total * 1e6:.0f} µs/span), {compacted / total:,.0f} bytes per span after; bucket "
                  "requests / M spans " + ", ".join(f"{k} {v * 1e6 / total:,.0f}" for k, v in sorted(compaction.items())))
        return {"queryable": total / t_queryable, "rps": len(payloads) / t_queryable,
                "requests": dict(requests) if requests is not None else None, "bytes_per_span": lake_bytes / total,
                "compaction": dict(compaction) if compaction is not None else None}



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spans", type=int, default=400_000)
    ap.add_argument("--per-request", type=int, default=512)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--overload-seconds", type=float, default=15.0)
    ap.add_argument("--overload-wal-mib", type=int, default=128)
    ap.add_argument("--max-batch-mib", type=int, default=None, help="flush.max_batch_mib (default: the collector's)")
    ap.add_argument("--workers", type=int, default=None, help="exporters.parquet.workers (default: the collector's)")
    ap.add_argument("--lake", default=None, metavar="s3://bucket/prefix",
                    help="also run phase 1 with the lake in this bucket (see above)")
    ap.add_argument("--compaction-interval", type=float, default=None,
                    help="compaction.interval_s (default: the collector's 30 s, which a short run never reaches): "
                         "e.g. 2 to measure ingest with compaction running")
    ap.add_argument("--compaction-memory", type=int, default=None, metavar="MIB",
                    help="compaction.memory_mib (default: the collector's)")
    ap.add_argument("--exact-pss", action="store_true",
                    help="read PSS at every sample near the peak, not at most 5 times a second (a short-lived "
                         "process's share is not missed; the harness takes ~0.5 us/span more CPU)")
    ap.add_argument("--keep-page-cache", action="store_true",
                    help="do not drop the shared libraries from the page cache first (scripts/settle_page_cache.py)")
    ap.add_argument("--profile", metavar="DIR", default=None,
                    help="py-spy flame graphs and collapsed stacks of the receiver and flushers (phase 1, local)")
    args = ap.parse_args()

    if not args.keep_page_cache:  # figures of a settled machine, not of one that just ran pip
        subprocess.run([sys.executable, str(ROOT / "scripts" / "settle_page_cache.py")], check=True)
    print(f"generating {args.spans:,} spans in requests of {args.per_request} …", flush=True)
    payloads = make_payloads(args.spans, args.per_request, seed=1)
    total = len(payloads) * args.per_request
    mb = sum(map(len, payloads)) / 1e6
    print(f"{len(payloads)} requests, {mb:.0f} MB of protobuf ({mb * 1e6 / total:.0f} B/span)")

    results = [phase1(args, payloads, total, None)]
    if args.lake:
        if not args.lake.startswith("s3://"):
            ap.error("--lake: s3://bucket/prefix")
        location = args.lake.rstrip("/") + f"/run-{int(time.time())}"
        with contextlib.ExitStack() as stack:
            s3 = None
            if not (os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")):
                from otelbench.testing.s3 import s3_server

                s3 = stack.enter_context(s3_server())
                os.environ.update(s3.env)  # for the collector started next, and open_lake here
                s3.make_bucket(location[len("s3://"):].split("/", 1)[0])
            results.append(phase1(args, payloads, total, location, s3))
        local, bucket = results
        print("\n== local disk vs the bucket (same session) ==")
        print(f"spans/s until queryable     {local['queryable']:,.0f} vs {bucket['queryable']:,.0f} "
              f"({bucket['queryable'] / local['queryable']:.2f}×)")
        if bucket["requests"]:
            per_m = {k: v * 1e6 / total for k, v in sorted(bucket["requests"].items())}
            print("bucket requests / M spans   " + ", ".join(f"{k} {v:,.0f}" for k, v in per_m.items())
                  + f" (all: {sum(per_m.values()):,.0f})")
    sustained_rps = results[0]["rps"]

    if args.overload_seconds <= 0:
        return
    with tempfile.TemporaryDirectory(prefix="otelbench-overload-") as tmp:
        work = Path(tmp)
        proc, url = start_server(work, max_unflushed_mib=args.overload_wal_mib, max_batch_mib=args.max_batch_mib,
                                 workers=args.workers)
        sampler = Sampler(proc.pid, work / "wal")
        sampler.start()
        codes = open_loop(url, payloads, 2 * sustained_rps, args.overload_seconds)
        sampler.stop.set()
        sampler.join()
        proc.terminate()
        proc.wait(120)
        print(f"\n== phase 2: open loop at 2× ({2 * sustained_rps * args.per_request:,.0f} spans/s offered) for {args.overload_seconds:.0f} s ==")
        print(f"answers                     {dict(sorted(codes.items()))}")
        print(f"peak memory, all processes {sampler.peak_rss / 2**20:.0f} MiB summed RSS, {sampler.peak_pss / 2**20:.0f} MiB summed PSS")
        print(f"WAL peak (bound {args.overload_wal_mib} MiB)    {sampler.peak_wal / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
