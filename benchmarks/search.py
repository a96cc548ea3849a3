"""How fast run search answers over 1 M runs, two ways: prints the figures quoted in
docs/performance.md ("Run search").

    .venv/bin/python benchmarks/search.py                           # 1 M runs in a temp folder
    .venv/bin/python benchmarks/search.py --folder /tmp/search --keep   # build once, time again later
    .venv/bin/python benchmarks/search.py --runs 100000             # a quicker look

Writes a runs rollup (storage/rollups.py's files and manifest, as the web's refresher
leaves them) straight from generated rows: --runs runs of --agents agents over 30 days,
each with a task of 10–40 and an answer of 30–120 words drawn from a 5,000-word
vocabulary by a Zipf law (the previews a real rollup keeps, as JSON messages), a status
(15 % errors), a judge score, a cost and a duration. Then:

- **tantivy** (storage/search_index.py): builds the index from the rollup (timed), then
  answers the queries below through storage/run_search.py;
- **DuckDB scan** (storage/queries/search.py ``SCAN``): the same filters over the
  rollup's Parquet files, each word a ``contains`` over the lowercased task and answer;

per query kind p50/p95 of --repeat queries (each with other words), and the time to make
--new new runs searchable: a new delta and manifest (what a fold leaves), then
``search_index.update`` (timed, in this process: the web's refresher runs it in a process
of its own, which adds the interpreter's start, ~0.5 s). First (--fresh), end to end on a
small lake: a run sent through a real collector, timed from its acknowledgement until the
web's own refresher (``web.site.Site``) has folded it and indexed it and search finds it.
Targets: a text + filter query's p95 <= 300 ms over 1 M runs; a new run searchable within
60 s of its arrival.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from otelbench.storage import rollups, search_index  # noqa: E402
from otelbench.storage.privacy import Privacy  # noqa: E402
from otelbench.storage.queries import bind  # noqa: E402
from otelbench.storage.queries import search as search_sql  # noqa: E402
from otelbench.storage.run_search import Query, Reader  # noqa: E402
from otelbench.testing import runs_rollup  # noqa: E402

VOCABULARY = 5000
DAY_US = 86_400_000_000
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "vi", "zo", "pe", "shi", "dra", "gon", "tel", "mar", "quo", "bex"]


def vocabulary(rng: np.random.Generator) -> list[str]:
    out: set[str] = set()
    while len(out) < VOCABULARY:
        out.add("".join(rng.choice(SYLLABLES, size=int(rng.integers(2, 5)))))
    return sorted(out)


def texts(rng: np.random.Generator, words: list[str], n: int, low: int, high: int, role: str) -> list[str]:
    """``n`` JSON message arrays of ``low``–``high`` Zipf-drawn words each."""
    ranks = np.minimum(rng.zipf(1.1, size=n * high) - 1, VOCABULARY - 1)
    lengths = rng.integers(low, high + 1, size=n)
    vocab = np.array(words, dtype=object)
    out = []
    for i, k in enumerate(lengths):
        body = " ".join(vocab[ranks[i * high:i * high + k]])
        out.append(json.dumps([{"role": role, "parts": [{"type": "text", "content": body}]}]))
    return out


def rows(rng: np.random.Generator, words: list[str], n: int, agents: int, first: int, now_us: int,
         texts: Callable[..., list[str]] = texts) -> pa.Table:
    start = now_us - rng.integers(0, 30 * DAY_US, size=n)
    agent = [f"agent-{a:03d}" for a in rng.integers(0, agents, size=n)]
    cost = rng.lognormal(-5, 1, size=n)
    return pa.table({
        "trace_id": [f"{first + i:032x}" for i in range(n)], "agent": agent, "owner": ["team"] * n,
        "status": np.where(rng.random(n) < 0.15, "error", "ok").tolist(),
        "start_time": pa.array(start, pa.timestamp("us", tz="UTC")),
        "duration_ms": rng.lognormal(8, 1, size=n), "cost_usd": cost, "cost_reported": cost,
        "cost_computed": pa.nulls(n, pa.float64()), "calls_reported": pa.array([1] * n, pa.int64()),
        "calls_computed": pa.array([0] * n, pa.int64()),
        "input_tokens": rng.integers(10, 5000, size=n), "output_tokens": rng.integers(10, 2000, size=n),
        "llm_calls": pa.array([2] * n, pa.int64()), "tool_calls": pa.array([1] * n, pa.int64()),
        "eval_score": rng.random(n).round(2),
        "input_preview": texts(rng, words, n, 10, 40, "user"),
        "output_preview": texts(rng, words, n, 30, 120, "assistant"),
        "date": pa.array((start // DAY_US).astype("int32"), pa.date32()),
        "models": [[m] for m in rng.choice(["gpt-4o", "smollm2", "qwen3-8b"], size=n)],
    }).cast(rollups.RUNS_SCHEMA)


def timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]


def kinds(words: list[str], now: dt.datetime) -> dict[str, Callable[[int], dict[str, Any]]]:
    """Query kinds: i -> filters (each i other words: mid-frequency ranks 20–520, rare ones 2000+)."""
    def mid(i: int) -> str:
        return words[20 + (i * 37) % 500]

    week = now - dt.timedelta(days=7)
    return {
        "word + status + 7 d, newest": lambda i: {"words": (mid(i),), "status": "error", "since": week},
        "two words + agent, relevance": lambda i: {"words": (mid(i), mid(i + 1)), "agent": f"agent-{i % 200:03d}",
                                                   "sort": "relevance"},
        "rare word + score >= 0.5, best": lambda i: {"words": (words[2000 + i],), "min_score": 0.5, "sort": "best"},
        "word + cost + latency, costliest": lambda i: {"words": (mid(i),), "min_cost": 0.005, "max_ms": 5000.0,
                                                       "sort": "costliest"},
        "filters only: status + 30 d, newest": lambda i: {"status": "error", "since": now - dt.timedelta(days=30)},
    }


def scan_params(snap: Any, f: dict[str, Any]) -> dict[str, Any]:
    none = {k: None for k in ("agent", "status", "model", "since", "until", "min_score", "max_score", "min_cost",
                              "max_cost", "min_ms", "max_ms")}
    given = {**none, **{k: v for k, v in f.items() if k in none}, "words": list(f.get("words", ())),
             "private_agents": [], "private_owners": [], "hidden_agents": [], "hidden_owners": [], "limit": 20,
             "offset": 0, **snap.params}
    return bind(search_sql.SCAN, given)


def freshness(runs: int) -> list[float]:
    """Seconds from a run's acknowledgement by a real collector to its first search hit,
    through the web's own refresher (``Site``, refresh_s 2: fold the rollup, then the index)."""
    from otelbench.collector.wiring import Collector
    from otelbench.testing.agent_runs import Run, send_runs
    from otelbench.testing.collector import collector_config
    from otelbench.web.site import Site

    tmp = Path(tempfile.mkdtemp(prefix="otelbench-fresh-"))
    running = Collector(collector_config(tmp)).start()
    out = []
    try:
        url, root = f"http://127.0.0.1:{running.http_port}", Path(running.config.exporters.parquet.path)
        send_runs(url, [Run("scout", "warm up", "ok")])
        site = Site(root, refresh_s=2.0)
        while site.search_runs(Query(words=("warm",))).total == 0:  # the first rollup and index
            time.sleep(0.2)
        for k in range(runs):
            word = f"narwhal{k}"
            send_runs(url, [Run("scout", f"a {word} appears", "noted")])
            acked = time.perf_counter()
            while site.search_runs(Query(words=(word,))).total == 0:
                time.sleep(0.1)
            out.append(time.perf_counter() - acked)
        site.close()
    finally:
        running.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1_000_000)
    ap.add_argument("--agents", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=40, help="queries per kind (tantivy)")
    ap.add_argument("--scan-repeat", type=int, default=8, help="queries per kind (DuckDB scan)")
    ap.add_argument("--new", type=int, default=1000, help="new runs made searchable at once")
    ap.add_argument("--folder", type=Path, help="where the rollup and index go (default: a temp folder)")
    ap.add_argument("--keep", action="store_true", help="keep the folder; reuse its rollup")
    ap.add_argument("--fresh", type=int, default=5, help="runs sent through a real collector, timed until found")
    args = ap.parse_args()
    if args.fresh:
        took = freshness(args.fresh)
        print(f"a run acknowledged by the collector is found by search after {statistics.median(took):.1f} s "
              f"(median of {len(took)}; {min(took):.1f}–{max(took):.1f} s), through the web's refresher (2 s)")
    root = args.folder or Path(tempfile.mkdtemp(prefix="otelbench-search-"))
    rng = np.random.default_rng(7)
    words = vocabulary(rng)
    now_us = int(time.time() * 1e6)
    now = dt.datetime.fromtimestamp(now_us / 1e6, dt.timezone.utc)
    try:
        snap = rollups.current(root)
        if snap is None:
            shutil.rmtree(root.joinpath("_search"), ignore_errors=True)
            t = time.perf_counter()
            table = pa.concat_tables([rows(rng, words, min(200_000, args.runs - k), args.agents, k, now_us)
                                      for k in range(0, args.runs, 200_000)])
            runs_rollup.write(root, table, 1)
            print(f"rollup of {args.runs:,} runs written in {time.perf_counter() - t:.1f} s "
                  f"({sum(f.stat().st_size for f in root.joinpath(*rollups.FOLDER).iterdir()) / 2**20:.0f} MiB)")
            del table
        snap = rollups.current(root)
        if search_index.pending(root, Privacy()):
            done = search_index.update(root, Privacy())
            print(f"tantivy: index of {done.added:,} runs built in {done.seconds:.1f} s "
                  f"({sum(f.stat().st_size for f in search_index.folder(root).rglob('*') if f.is_file()) / 2**20:.0f}"
                  f" MiB)")
        reader = Reader(root)
        reader.search(Query())  # opened once, as the web keeps it open

        import duckdb

        con = duckdb.connect()
        print(f"\n{'query':40} {'tantivy p50':>12} {'p95':>8} {'scan p50':>10} {'p95':>8}   matches")
        for name, make in kinds(words, now).items():
            found = reader.search(Query(**make(0)))
            ta = timed(lambda it=iter(range(10**6)): reader.search(Query(**make(next(it)))), args.repeat)
            sc = timed(lambda it=iter(range(10**6)): con.execute(search_sql.SCAN,
                                                                 scan_params(snap, make(next(it)))).fetchall(),
                       args.scan_repeat)
            print(f"{name:40} {p(ta, 50):9.1f} ms {p(ta, 95):5.1f} ms {p(sc, 50):7.0f} ms {p(sc, 95):5.0f} ms"
                  f"   {found.total:,}")

        # new runs: a fold's new delta and manifest, then the index update
        new = rows(rng, words, args.new, args.agents, 10**9, now_us)
        runs_rollup.write_delta(root, new, snap.version + 1)
        done = search_index.update(root, Privacy())
        probe = new.slice(0, 1).to_pylist()[0]
        hit = reader.search(Query(agent=probe["agent"], since=probe["start_time"],
                                  until=probe["start_time"] + dt.timedelta(microseconds=1)))
        assert any(r["trace_id"] == probe["trace_id"] for r in hit.runs), "the new run is not searchable"
        print(f"\n{args.new:,} new runs indexed in {done.seconds * 1000:.0f} ms (index update, in process), "
              f"then searchable")
        # the new runs gone again (tombstones in the next delta), so --keep times the same index again
        runs_rollup.write_delta(root, runs_rollup.tombstones(new["trace_id"].to_pylist()), snap.version + 2)
        search_index.update(root, Privacy())
        assert reader.search(Query()).total == args.runs
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
