"""The top functions of a py-spy collapsed-stack file (``benchmarks/ingest.py --profile``):
inclusive and self share of the samples, per thread.

    python benchmarks/profile_top.py benchmarks/profiles/NAME/flusher-0.txt [--top 30] [--match normalize]

A collapsed line is ``frame;frame;...;frame COUNT`` (root first; with ``--threads`` the
root is the thread). Inclusive: samples with the function anywhere on the stack (once per
stack); self: samples where it is the innermost frame.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter, defaultdict
from pathlib import Path

_LINE = re.compile(r"^(.*) (\d+)$")


def _function(frame: str) -> str:
    """``name (file.py:123)`` → ``name (file.py)``: lines of one function count together."""
    return re.sub(r":\d+\)$", ")", frame.strip())


def read(path: Path) -> dict[str, list[tuple[list[str], int]]]:
    """Stacks by thread (the first frame when py-spy ran with ``--threads``)."""
    threads: dict[str, list[tuple[list[str], int]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        found = _LINE.match(line)
        if not found:
            continue
        frames = found[1].split(";")
        thread = frames[0] if frames[0].startswith(("thread", "process")) else "all"
        body = frames[1:] if thread != "all" else frames
        threads[thread].append(([_function(f) for f in body], int(found[2])))
    return threads


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", type=Path)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--match", default="", help="only functions whose text contains this")
    args = ap.parse_args()
    for thread, stacks in read(args.file).items():
        total = sum(n for _, n in stacks)
        inclusive, own = Counter(), Counter()
        for frames, n in stacks:
            for f in set(frames):
                inclusive[f] += n
            if frames:
                own[frames[-1]] += n
        print(f"\n== {thread}: {total} samples ==")
        print(f"{'incl %':>7} {'self %':>7}  function")
        shown = 0
        for f, n in inclusive.most_common():
            if args.match not in f:
                continue
            print(f"{100 * n / total:7.1f} {100 * own[f] / total:7.1f}  {f[:150]}")
            shown += 1
            if shown >= args.top:
                break


if __name__ == "__main__":
    main()
