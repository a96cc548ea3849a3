"""A lake of real agent-suite runs for the web's tests: the real ``otelbench suite run``
command runs a scripted agent on two versions of a small suite, exporting into a real
collector (with ingest and read keys), beside agents' own telemetry sent with the real
OTel SDK. One agent is public (``alpha``, whose answers hold markup), one ``hide_io``
(``quiet``), one private by name (``secret-agent``, alone on the ``vault`` suite) and one sent with a
private owner's key (``hushed``). ~20 s on this 2-core machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from otelbench.testing.agent_runs import Run, send_runs
from otelbench.testing.suites import CAPITAL, NAME, YEAR, suite_yaml
from otelbench.testing.wait import wait_for
from tests.web.lakes import fold, runs_in

ROOT = Path(__file__).resolve().parents[2]
INGEST, INGEST_HUSH = "ingest-team-01", "ingest-hush-01"
FULL, FIGURES, OWNER = "read-full-0001", "read-figs-0001", "read-owner-001"
SECRET = "TOP-SECRET-SUITE-ANSWER"
HUSHED = "HUSHED-SUITE-ANSWER"
QUIET_ANSWER, QUIET_STDERR = "QUIET-ANSWER-MARKER", "QUIET-STDERR-MARKER"
MARKUP = '<script>window.__sentinel = "pwned"</script><img src=x onerror=alert(1)>'

V1 = suite_yaml("chores", 1, CAPITAL, YEAR, """  - id: markup
    input: Print some markup.
    check: {regex: "script"}
""")
V2 = suite_yaml("chores", 2, CAPITAL, YEAR, NAME, description="Small fixed tasks, revised")

# a suite only the private agent ran: as absent as an unknown one to those who may not see it
VAULT = """name: vault
version: 1
description: Only the private agent ran this
repeats: 1
cases:
  - id: capital
    input: What is the capital of France?
    check: {exact: Paris}
"""

# The agent: ``agent.py MODE``; its answer depends on the mode and the case. ``alpha`` sends
# one priced llm call of its own under TRACEPARENT (the run's cost).
AGENT = r'''
import os, sys
mode, case = sys.argv[1], os.environ["OTELBENCH_CASE_ID"]
sys.stdin.read()
if mode.startswith("alpha"):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
    provider = TracerProvider(resource=Resource.create({"service.name": "alpha"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
        endpoint=os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] + "/v1/traces")))
    parent = TraceContextTextMapPropagator().extract({"traceparent": os.environ["TRACEPARENT"]})
    with provider.get_tracer("alpha").start_as_current_span("chat tiny", context=parent, attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "tiny", "gen_ai.provider.name": "openai",
            "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5, "gen_ai.usage.cost": 0.25}):
        pass
    provider.shutdown()
answers = {"capital": "Paris", "year": "It fell in 1989.", "markup": %(markup)r, "name": "nope"}
if mode == "alpha-old" and case == "capital":
    print("Lyon")
elif mode == "quiet":
    if case == "markup":
        sys.stderr.write(%(quiet_stderr)r + "\n"); sys.exit(2)
    print(%(quiet_answer)r if case == "capital" else answers[case])
elif mode == "secret":
    print(%(secret)r)
elif mode == "hushed":
    print(%(hushed)r)
else:
    print(answers[case])
''' % {"markup": MARKUP, "quiet_stderr": QUIET_STDERR, "quiet_answer": QUIET_ANSWER, "secret": SECRET,
       "hushed": HUSHED}

# (suite version folder, agent name, mode, ingest key, more arguments), in the order run
RUNS = [
    ("chores-v1", "alpha", "alpha-old", INGEST, []),
    ("chores-v1", "alpha", "alpha", INGEST, []),
    ("chores-v1", "alpha", "alpha-old", INGEST, ["--cases", "capital"]),  # later, but partial
    ("chores-v2", "alpha", "alpha", INGEST, []),
    ("chores-v1", "quiet", "quiet", INGEST, []),
    ("chores-v1", "secret-agent", "secret", INGEST, []),
    ("vault-v1", "secret-agent", "secret", INGEST, []),
    ("chores-v1", "hushed", "hushed", INGEST_HUSH, []),
]


def keys() -> list[dict[str, Any]]:
    return [{"key": INGEST, "owner": "team"}, {"key": INGEST_HUSH, "owner": "hush"},
            {"key": FULL, "owner": "auditor", "scopes": ["read"], "grants": [{"agents": ["secret-agent"], "io": True}]},
            {"key": FIGURES, "owner": "board", "scopes": ["read"], "grants": [{"agents": ["secret-agent"]}]},
            {"key": OWNER, "owner": "hush-lead", "scopes": ["read"], "grants": [{"owners": ["hush"], "io": True}]}]


def suite_lake(tmp: Path) -> Path:
    """Write the lake under ``tmp`` (the suites, the agent, the collector's lake and WAL);
    returns the lake's root, folded into its rollups."""
    from otelbench.collector.wiring import Collector
    from otelbench.testing.collector import collector_config

    suites = tmp / "suites"
    for folder, text in (("chores-v1", V1), ("chores-v2", V2), ("vault-v1", VAULT)):
        (suites / folder).mkdir(parents=True)
        (suites / folder / "suite.yaml").write_text(text)
    (tmp / "agent.py").write_text(AGENT)
    collector = Collector(collector_config(tmp, auth={"keys": keys()})).start()
    try:
        url = f"http://127.0.0.1:{collector.http_port}"
        telemetry = [Run(a, f"a production task of {a}", "done") for a in ("alpha", "quiet", "secret-agent")]
        send_runs(url, telemetry * 2, headers={"X-Bench-Key": INGEST})
        send_runs(url, [Run("hushed", "a hushed task", "done")] * 2, headers={"X-Bench-Key": INGEST_HUSH})
        for folder, agent, mode, key, more in RUNS:
            env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": url,
                   "OTEL_EXPORTER_OTLP_HEADERS": f"x-bench-key={key}"}
            done = subprocess.run(
                [sys.executable, "-m", "otelbench", "suite", "run", folder, "--root", str(suites),
                 "--agent", f"{sys.executable} {tmp / 'agent.py'} {mode}", "--agent-name", agent,
                 "--concurrency", "3", "--judge", "none", "--key", key, "--out", str(tmp / "out"), *more],
                capture_output=True, text=True, env=env, cwd=ROOT, timeout=240)
            assert done.returncode == 0, done.stderr[-3000:]
        collector.wait_flushed()
    finally:
        collector.stop()
    root = tmp / "lake"
    wait_for(lambda: runs_in(root) == 8, what="eight agent runs")
    fold(root)
    return root
