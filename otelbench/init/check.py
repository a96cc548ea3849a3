"""``otelbench init --check``: send one ``invoke_agent`` span for the agent the way the
project will (Python: the OTel SDK here; JavaScript: node in the project's folder, through
the project's own ``@opentelemetry/sdk-node`` and OTLP exporter), then wait until the web
shows the run. docs/init.md."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult

from otelbench.init.project import Plan, shown

WEB_TIMEOUT_S = 30.0
NODE_TIMEOUT_S = 60.0  # the export alone retries for up to 10 s
JS_CHECK = Path(__file__).with_name("js_check.mjs")
INPUT = '[{"role":"user","parts":[{"type":"text","content":"otelbench init --check"}]}]'


class CheckFailed(Exception):
    """What the person running the check should look at."""


def check(plans: list[Plan], folder: Path, *, endpoint: str, key: str | None, agent: str, web: str) -> int:
    """Send through each language the project has a plan for (Python's SDK when none), and
    wait for the web to show every span sent."""
    js = [p for p in plans if p.language == "javascript"]
    try:
        traces = [send_js(js[0], folder, endpoint=endpoint, key=key, agent=agent)] if js else []
        if not js or any(p.language == "python" for p in plans):
            traces.append(send_python(endpoint=endpoint, key=key, agent=agent))
        for trace_id in traces:
            print(f"\ncheck: span sent to {endpoint} (trace {trace_id}); waiting for {web} to show it …", flush=True)
            wait_for_web(web, trace_id, agent)
    except CheckFailed as exc:
        print(f"otelbench init --check: {exc}", file=sys.stderr)
        return 1
    base = web.rstrip("/")
    print(f"check: ok — {base}/agents/{quote(agent, safe='')} (the run: {base}/runs/{traces[-1]})")
    return 0


def send_python(*, endpoint: str, key: str | None, agent: str) -> str:
    """The span through this Python's OTLP exporter; its trace id."""
    provider = TracerProvider(resource=Resource.create({"service.name": agent}))
    exporter = OTLPSpanExporter(endpoint=f"{endpoint.rstrip('/')}/v1/traces", timeout=10,
                                headers={"X-Bench-Key": key} if key else None)
    with provider.get_tracer("otelbench.init").start_as_current_span(f"invoke_agent {agent}", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent, "gen_ai.input.messages": INPUT,
    }) as span:
        trace_id = format(span.get_span_context().trace_id, "032x")
    if exporter.export([span]) != SpanExportResult.SUCCESS:  # the ended span, sent now: its answer decides
        raise CheckFailed(_not_taken(endpoint))
    return trace_id


def send_js(plan: Plan, folder: Path, *, endpoint: str, key: str | None, agent: str) -> str:
    """The span through the project's own JavaScript packages (js_check.mjs, run by node in
    ``folder``: nothing is written there); its trace id. Every package of the plan is
    imported first, so one that is missing fails here, with the command that adds it."""
    node = shutil.which("node")
    if node is None:
        raise CheckFailed("node is not installed here (the JavaScript check runs the project's own packages)")
    params = json.dumps({"endpoint": endpoint, "key": key, "agent": agent, "imports": plan.imports})
    try:
        done = subprocess.run([node, "--input-type=module", "-e", JS_CHECK.read_text(), params], cwd=folder,
                              capture_output=True, text=True, timeout=NODE_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise CheckFailed(f"node did not finish the check within {NODE_TIMEOUT_S:g} s") from exc
    try:
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError) as exc:
        raise CheckFailed(f"node failed (exit {done.returncode}):\n{done.stderr.strip()[-2000:]}") from exc
    if answer.get("missing"):
        install = shown(plan.install) if plan.install else "reinstall the project's packages (npm install)"
        raise CheckFailed(f"the project in {folder} cannot import {', '.join(answer['missing'])}: "
                          f"run {install}  (or otelbench init --install)")
    if not answer.get("ok"):
        raise CheckFailed(f"{_not_taken(endpoint)}: {answer.get('error')}")
    return str(answer["trace_id"])


def wait_for_web(web: str, trace_id: str, agent: str, *, timeout_s: float = WEB_TIMEOUT_S) -> None:
    """Until the run's page answers (the rollups hold it) and the agent's (its figures do)."""
    base = web.rstrip("/")
    wanted = [f"{base}/api/runs/{trace_id}", f"{base}/api/agents/{quote(agent, safe='')}"]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if all(httpx.get(url, timeout=5).status_code == 200 for url in wanted):
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise CheckFailed(f"the collector took the span but {web} did not show it within {timeout_s:g} s "
                      "(is the web UI running on that lake?)")


def _not_taken(endpoint: str) -> str:
    return f"the collector at {endpoint} did not take the span (is `otelbench serve` running? is the key right?)"
