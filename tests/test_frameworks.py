"""Fourteen recorded agent stacks (nine Python, five JavaScript) through the lake, held to what each run really was.

Each recording of tests/testdata/recorded/<stack>/ goes through the collector's write path
(ParquetSink → Lake.write_batch) into a lake in tmp, and agent_runs, llm_calls and
tool_calls are compared with its expected.json field by field
(``otelbench.testing.frameworks.compare``, which scripts/compare_frameworks.py prints).
A field that differs must be in ``otelbench.testing.frameworks.KNOWN_GAPS``, with why; a
known gap that no longer differs fails too, so that the list stays true. What each stack sends:
docs/frameworks-recorded.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otelbench.testing import frameworks

RECORDED = Path(__file__).parent / "testdata" / "recorded"

STACKS = [p.name for p in frameworks.stacks(RECORDED)]


def test_every_recorded_stack_has_its_gap_list() -> None:
    assert sorted(frameworks.KNOWN_GAPS) == STACKS
    assert len(STACKS) == 14


@pytest.mark.parametrize("stack", STACKS)
def test_the_views_answer_what_the_run_was(stack: str, tmp_path: Path) -> None:
    folder = RECORDED / stack
    expected = json.loads((folder / "expected.json").read_text())
    frameworks.load_lake(folder, tmp_path / "lake")
    rows = frameworks.compare(expected, frameworks.views(tmp_path / "lake"))
    found = frameworks.gaps(rows)
    known = set(frameworks.KNOWN_GAPS[stack])
    table = "\n".join(f" {mark} {field}: {today!r} (expected {want!r})" for field, today, want, mark in rows
                      if mark != "✓")
    assert not found - known, f"new gaps in {stack}:\n{table}"
    assert not known - found, f"gaps listed for {stack} that are closed now: {sorted(known - found)}"
