"""How long the reads that keep private sub-agents private take: the run page's spans
(``RUN_SPANS``) and the processors' failure texts (``FAILURES``, ``ERRORS_OF_RUNS``,
``TOOL_CALLS_OF_RUNS``), each walking its traces' agents (storage.queries.walked_agents).

    .venv/bin/python benchmarks/query.py --rows 2000000 --lake /tmp/qlake --keep --no-fresh
    .venv/bin/python benchmarks/private_reads.py /tmp/qlake

Prints the median and fastest wall time of --repeat runs after a warm-up: one run's spans
(each of --runs runs in turn), the window's failures, and the failure texts of --batch
failed runs at once (what one judge or cluster pass asks). Half of the lake's agents are
made private, so the walk's filters have work to do.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from otelbench.storage.duckdb import open_lake  # noqa: E402
from otelbench.storage.lake import Lake  # noqa: E402
from otelbench.storage.queries import processors as q  # noqa: E402
from otelbench.storage.queries import web as web_q  # noqa: E402


def timed(fn, repeat: int) -> tuple[float, float]:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000, min(times) * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lake", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--runs", type=int, default=10, help="run pages read")
    ap.add_argument("--batch", type=int, default=500, help="failed runs whose texts are read at once")
    args = ap.parse_args()

    lake = Lake(args.lake)
    with open_lake(args.lake) as g:
        agents = [r[0] for r in g.query("SELECT DISTINCT agent FROM agent_runs ORDER BY agent", max_rows=None).rows]
        private = {"private_agents": agents[::2], "private_owners": []}
        runs = g.query("SELECT trace_id, agent, owner, start_time, duration_ms FROM agent_runs "
                       "WHERE status = 'error' ORDER BY trace_id LIMIT $n", {"n": max(args.batch, args.runs)},
                       max_rows=None).rows
        since = g.query("SELECT min(start_time) FROM agent_runs").rows[0][0]
        print(f"{args.lake}: {len(agents)} agents ({len(private['private_agents'])} private), "
              f"{len(runs)} failed runs sampled")

        pages = runs[: args.runs]

        def run_pages() -> None:
            for trace_id, _, _, start, duration in pages:
                margin = dt.timedelta(hours=1)
                until = start + dt.timedelta(milliseconds=duration or 0) + margin
                days = [(start - margin).date().isoformat(), until.date().isoformat()]
                g.query(web_q.RUN_SPANS, {**private, "trace_id": trace_id, "since": start - margin, "until": until,
                                          "span_files": lake.day_globs("spans", days)}, max_rows=None)

        batch = runs[: args.batch]
        given = {"trace_ids": [r[0] for r in batch], "agents": [r[1] for r in batch], "owners": [r[2] for r in batch]}
        figures = {
            f"RUN_SPANS, one run (mean of {len(pages)})": lambda: run_pages(),
            "FAILURES, the whole window": lambda: g.query(q.FAILURES, {**private, "since": since, "agent": None,
                                                                        "score_below": 0.5}, max_rows=None),
            f"ERRORS_OF_RUNS, {len(batch)} runs": lambda: g.query(q.ERRORS_OF_RUNS, {**private, **given}, max_rows=None),
            f"TOOL_CALLS_OF_RUNS, {len(batch)} runs": lambda: g.query(q.TOOL_CALLS_OF_RUNS, {**private, **given},
                                                                      max_rows=None),
        }
        for name, fn in figures.items():
            median, best = timed(fn, args.repeat)
            if name.startswith("RUN_SPANS"):
                median, best = median / len(pages), best / len(pages)
            print(f"{name:45s} median {median:8.1f} ms   fastest {best:8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
