"""How long the runs rollup's first build takes, and how much memory: prints the figures
quoted in docs/performance.md.

    .venv/bin/python benchmarks/query.py --rows 2000000 --lake /tmp/rlake --keep --no-fresh  # a lake
    .venv/bin/python benchmarks/rollup_build.py /tmp/rlake

Each build deletes ``LAKE/_rollups`` (so use a copy of a lake you care about) and runs
``python -m otelbench.storage.rollups LAKE`` in a process of its own: its wall time, CPU
time (user + system: on a shared machine, CPU time / cores is the best an idle one shows)
and peak resident memory, which holds DuckDB's (``storage.rollups.MEMORY_LIMIT``) and the
Arrow tables the build merges.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def build(lake: Path) -> tuple[float, float, float]:
    """One first build: (wall s, CPU s, peak RSS MB)."""
    shutil.rmtree(lake / "_rollups", ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "otelbench.storage.rollups", str(lake)], check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # ru_maxrss of the children is the largest of any child so far (KiB on Linux): builds
    # run largest-last would hide nothing, but a smaller later one reads as the earlier peak
    return wall, cpu, after.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lake", type=Path)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    runs = []
    for _ in range(args.repeat):
        runs.append(build(args.lake))
        wall, cpu, rss = runs[-1]
        print(f"first build: {wall:.1f} s wall, {cpu:.1f} s CPU, {rss:.0f} MB peak RSS (so far)", flush=True)
    print(f"median of {len(runs)}: {statistics.median(r[0] for r in runs):.1f} s wall, "
          f"{statistics.median(r[1] for r in runs):.1f} s CPU, {max(r[2] for r in runs):.0f} MB peak RSS")


if __name__ == "__main__":
    main()
