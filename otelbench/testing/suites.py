"""Small agent suites for tests: ``suite.yaml`` text from cases (bench_runner/agent_suite.py)."""

from __future__ import annotations

CAPITAL = """  - id: capital
    input: What is the capital of France?
    check: {exact: Paris}
"""
YEAR = """  - id: year
    input: When did the Berlin wall fall?
    check: {regex: "\\\\b1989\\\\b"}
"""
NAME = """  - id: name
    input: What is this tool called?
    check: {exact: otelbench}
"""


def suite_yaml(name: str, version: int, *cases: str, description: str = "Small fixed tasks", repeats: int = 2,
               time_limit_s: float = 20) -> str:
    """A suite.yaml of ``cases`` (each a YAML list item, as CAPITAL)."""
    return (f"name: {name}\nversion: {version}\ndescription: {description}\nrepeats: {repeats}\n"
            f"time_limit_s: {time_limit_s:g}\ncases:\n" + "".join(cases))
