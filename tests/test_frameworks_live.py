"""Each agent framework of the `frameworks` extra, run for real against the canned
OpenAI-compatible stub and exporting to a real collector: the lake's views must answer
what tests/testdata/recorded/<stack>/expected.json says the run was, with no gap beyond
the stack's known ones (otelbench.testing.frameworks.KNOWN_GAPS) — the same bar the
recordings are held to in tests/test_frameworks.py, on a live run of today's library.

The Python agents are scripts/record_frameworks.py's (run as a program, ``--child``). OpenLIT,
LlamaIndex and CrewAI need openai < 3 and cannot share the extra's virtualenv
(pydantic-ai 2.x needs openai >= 3.31): they are held to their recordings only. The
JavaScript agents are tests/js/agents/'s, run by Node on the packages of tests/js's lock
file (scripts/setup.sh runs its ``npm ci``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from otelbench.testing import frameworks
from otelbench.testing.openai_stub import StubServer

REPO = Path(__file__).resolve().parents[1]
RECORDED = REPO / "tests" / "testdata" / "recorded"
# the stacks of pyproject.toml's `frameworks` extra, which scripts/setup.sh installs
LIVE = ("openllmetry", "langchain", "pydantic-ai", "logfire", "openai-agents", "google-adk")
JS_AGENTS = REPO / "tests" / "js" / "agents"
STUB_TTFT_MS = 150  # scripts/record_frameworks.py's: streamed calls' TTFT is then visible


def _python_agent(stack: str, endpoint: str, base_url: str, report: Path) -> list[str]:
    return [sys.executable, str(REPO / "scripts" / "record_frameworks.py"), "--child", stack,
            "--endpoint", endpoint, "--base-url", base_url, "--report", str(report)]


def _js_agent(stack: str, endpoint: str, base_url: str, report: Path) -> list[str]:
    node = shutil.which("node")
    assert node, "Node.js is not installed: the JavaScript stacks' live runs need it (scripts/setup.sh)"
    assert (REPO / "tests" / "js" / "node_modules").is_dir(), "tests/js has no node_modules: run scripts/setup.sh"
    script, *flags = frameworks.JS_AGENTS[stack]
    return [node, str(JS_AGENTS / script), endpoint, base_url, str(report), *flags]


@pytest.mark.slow
@pytest.mark.parametrize("stack", [*LIVE, *frameworks.JS_AGENTS])
def test_a_live_run_reads_as_the_run_was(stack: str, make_collector, tmp_path: Path) -> None:
    collector = make_collector()
    endpoint = f"http://127.0.0.1:{collector.http_port}"
    report = tmp_path / "report.json"
    agent = _js_agent if stack in frameworks.JS_AGENTS else _python_agent
    with StubServer() as stub:
        base_url = stub.base_url("weather", ttft_ms=STUB_TTFT_MS)
        proc = subprocess.run(
            agent(stack, endpoint, base_url, report),
            env=frameworks.child_env(endpoint, REPO), stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=300,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(report.read_text())["output"] == "It is sunny in Paris, 22 °C."  # the agent ran the script
    collector.wait_flushed()
    expected = json.loads((RECORDED / stack / "expected.json").read_text())
    rows = frameworks.compare(expected, frameworks.views(Path(collector.config.exporters.parquet.path)))
    found, known = frameworks.gaps(rows), set(frameworks.KNOWN_GAPS[stack])
    table = "\n".join(f" {mark} {field}: {today!r} (expected {want!r})" for field, today, want, mark in rows
                      if mark != "✓")
    assert found == known, f"{stack}, live:\n{table}"
