"""A private sub-agent's spans that reach the lake before their parent stay private.

An SDK that exports each span as it ends (SimpleSpanProcessor, a JS BatchSpanProcessor
flushing on a timer) sends a sub-agent's calls before the sub-agent's own span. Flushed in
a batch of their own, those rows have no ``resolved_agent`` until compaction. The run page
and the processors' failure texts must still read them as the private sub-agent's: the
agent is walked over the run's spans at query time (storage.queries.walked_agents)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import httpx
import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Status
from starlette.testclient import TestClient

from otelbench.testing.otlp import make_span, trace_request
from otelbench.storage.duckdb import open_lake
from otelbench.storage.privacy import Privacy
from otelbench.storage.queries import processors as q
from otelbench.web.app import create_app

PRIVATE = "payroll-helper"
PRIVACY = Privacy(private_agents=(PRIVATE,))
TRACE = bytes.fromhex("7c0d2f4e6a8b1c3d5e7f90a1b2c3d4e5")
ROOT, SUB, STEP, CHAT, TOOL = (bytes([n]) * 8 for n in (1, 2, 3, 4, 5))
CANARIES = {"model": "canary-model-7a1", "tool": "canary-tool-7a1", "args": "canary-args-7a1",
            "tool_error": "canary-tool-error-7a1", "sub_error": "canary-sub-error-7a1"}
ERROR = Status(code=Status.STATUS_CODE_ERROR, message="")


def _error(message: str) -> Status:
    return Status(code=Status.STATUS_CODE_ERROR, message=message)


def _send(url: str, *spans: Any) -> None:
    r = httpx.post(f"{url}/v1/traces", content=trace_request(*spans).SerializeToString(),
                   headers={"Content-Type": "application/x-protobuf"})
    assert r.status_code == 200, r.text


@pytest.fixture
def lake(make_collector) -> Any:
    """Orchestrator (public) → the private sub-agent → a plain step → its chat and tool call;
    the step and both calls sent and flushed first, the sub-agent and the root after."""
    c = make_collector()
    url = f"http://127.0.0.1:{c.http_port}"
    _send(url,
          make_span({}, name="step", trace=TRACE, span_id=STEP, parent=SUB),
          make_span({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                     "gen_ai.request.model": CANARIES["model"]}, name="chat", trace=TRACE, span_id=CHAT, parent=STEP),
          make_span({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": CANARIES["tool"],
                     "gen_ai.tool.call.arguments": json.dumps({"q": CANARIES["args"]})},
                    name="execute_tool", trace=TRACE, span_id=TOOL, parent=STEP, status=_error(CANARIES["tool_error"])))
    c.wait_flushed()
    _send(url,
          make_span({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": PRIVATE},
                    name=f"invoke_agent {PRIVATE}", trace=TRACE, span_id=SUB, parent=ROOT,
                    status=_error(CANARIES["sub_error"])),
          make_span({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "orchestrator"},
                    name="invoke_agent orchestrator", trace=TRACE, span_id=ROOT, parent=b"", status=ERROR))
    c.wait_flushed()
    return c.config.exporters.parquet.path


def _rows(g: Any, sql: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    result = g.query(sql, params)
    return [dict(zip(result.columns, row)) for row in result.rows]


def _leaks(text: str) -> set[str]:
    return {name for name, word in CANARIES.items() if word in text}


def test_the_calls_were_written_before_their_agent_was_known(lake: Any) -> None:
    """The case under test: the calls' rows carry no resolved agent (else it proves nothing)."""
    with open_lake(lake) as g:
        rows = _rows(g, "SELECT span_id, resolved_agent FROM spans WHERE span_type IN ('llm', 'tool') ORDER BY span_id")
    assert [r["resolved_agent"] for r in rows] == [None, None]


def test_the_run_page_redacts_them(lake: Any) -> None:
    trace_id = TRACE.hex()
    with TestClient(create_app(lake, PRIVACY, refresh_s=0)) as client:
        api = client.get(f"/api/runs/{trace_id}")
        page = client.get(f"/runs/{trace_id}")
    assert api.status_code == 200 and page.status_code == 200
    assert _leaks(api.text) == set() and _leaks(page.text) == set()
    spans = {s["span_id"]: s for s in api.json()["spans"]}
    assert {spans[s.hex()]["agent"] for s in (SUB, STEP, CHAT, TOOL)} == {"private agent"}
    assert spans[ROOT.hex()]["agent"] == "orchestrator"


def test_the_failure_texts_leave_them_out(lake: Any) -> None:
    params = {"private_agents": [PRIVATE], "private_owners": []}
    runs = {"trace_ids": [TRACE.hex()], "agents": ["orchestrator"], "owners": [None]}
    with open_lake(lake) as g:
        failures = _rows(g, q.FAILURES, {**params, "since": dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc),
                                       "agent": None, "score_below": 0.5})
        errors = _rows(g, q.ERRORS_OF_RUNS, {**params, **runs})
        tools = _rows(g, q.TOOL_CALLS_OF_RUNS, {**params, **runs})
    assert [f["agent"] for f in failures] == ["orchestrator"]
    assert _leaks(json.dumps([failures, errors, tools], default=str)) == set()
    # with nothing private, the same rows are the run's own
    with open_lake(lake) as g:
        tools = _rows(g, q.TOOL_CALLS_OF_RUNS, {"private_agents": [], "private_owners": [], **runs})
    assert [t["tool_name"] for t in tools] == [CANARIES["tool"]]
