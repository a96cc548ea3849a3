"""The memory the judge's read of its runs needs: prints the figures quoted in docs/performance.md.

    .venv/bin/python benchmarks/query.py --rows 2000000 --lake /tmp/lake2m --keep --no-fresh --repeat 1
    .venv/bin/python benchmarks/judge_memory.py /tmp/lake2m --memory-limit 400MB

Reads every run a new judge would score (processors.pipeline.runs_to_judge), in a gateway
held to --memory-limit, first as one part (one statement over the whole lake), then as the
pipeline reads it (parts by span count, doubled after running out of memory). Each in its
own process, so each peak RSS is its own.
"""

from __future__ import annotations

import argparse
import datetime as dt
import resource
import subprocess
import sys
import time
from pathlib import Path

from otelbench.processors import pipeline
from otelbench.storage.duckdb import QueryError, open_lake


def read(lake: Path, memory_limit: str, one_part: bool) -> str:
    if one_part:
        pipeline.JUDGE_PART_SPANS, pipeline.JUDGE_MAX_PARTS = 1 << 62, 1
    params = {"since": dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc), "agent": None, "judge_model": "m",
              "judge_version": "v", "max_attempts": 1}
    with open_lake(lake, memory_limit=memory_limit) as gateway:
        t = time.perf_counter()
        try:
            found = f"{pipeline.runs_to_judge(gateway, params).height:,} runs"
        except QueryError as exc:
            found = f"failed ({exc.kind}: {str(exc).splitlines()[0][:60]})"
        took = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    how = "one statement" if one_part else "in parts"
    return f"{how:>13}, DuckDB memory limit {memory_limit}: {found} in {took:.1f} s, peak RSS {peak:.0f} MiB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lake", type=Path)
    ap.add_argument("--memory-limit", default="400MB")
    ap.add_argument("--one", choices=("part", "parts"), help=argparse.SUPPRESS)  # the child's run
    args = ap.parse_args()
    if args.one:
        print(read(args.lake, args.memory_limit, args.one == "part"))
        return
    for one in ("part", "parts"):
        subprocess.run([sys.executable, __file__, str(args.lake), "--memory-limit", args.memory_limit, "--one", one],
                       check=True)


if __name__ == "__main__":
    main()
