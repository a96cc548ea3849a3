"""What today's views say about each recorded framework run, next to what the run really was.

    python scripts/compare_frameworks.py [--only langchain] [--json out.json] [--spans] [--dir tests/testdata/recorded]

For each ``<dir>/<stack>/`` with an ``expected.json`` (scripts/record_frameworks.py), the
recorded OTLP requests go through the collector's own write path into a fresh lake and
the ``agent_runs``, ``llm_calls`` and ``tool_calls`` views are read through the gateway
(``otelbench.testing.frameworks``, which tests/test_frameworks.py holds to its list of
known gaps). Each answer is printed beside the expected one: ``✓`` the same, ``≈`` an
acceptable difference (said why), ``✗`` a gap. Nothing here judges how a view *should*
answer: expected.json is what a person reading the run would say.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DIR = REPO / "tests" / "testdata" / "recorded"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--only", help="comma-separated stacks (default: every folder with an expected.json)")
    parser.add_argument("--json", type=Path, help="also write the views' rows and the comparison here")
    parser.add_argument("--spans", action="store_true", help="also print the spans table's GenAI columns")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from otelbench.testing import frameworks

    folders = frameworks.stacks(args.dir)
    if args.only:
        folders = [f for f in folders if f.name in args.only.split(",")]
    everything = {}
    for folder in folders:
        expected, got = frameworks.run(folder)
        rows = frameworks.compare(expected, got)
        everything[folder.name] = {"views": got, "comparison": rows}
        print(f"\n== {folder.name}: {expected['description']}")
        if args.spans:
            for s in got["spans"]:
                print("   span", {k: v for k, v in s.items() if v is not None})
        for field, today, want, mark in rows:
            print(f" {mark} {field:32} today: {today!s:60.60}  expected: {want}")
    if args.json:
        args.json.write_text(json.dumps(everything, indent=1, default=str, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
