"""``judge_runs`` against a misbehaving neighbour: an HTTP server that answers 429, 500,
garbage, or too late. Only the failure modes are faked here; the real model server is in
test_judge_model.py."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import openai
import polars as pl
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelbench.processors.judge import (EVALS_SCHEMA, JUDGE_SERVICE_NAME, JudgeEndpointError, RetryPolicy, check_endpoint,
                              judge_runs, load_prompt, traced)
from otelbench.processors.judge.prompt import parse_prompt

NOW = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
GRADE_ONLY = parse_prompt("grade-only", b"=== system ===\nRubric.\n=== run ===\nTASK: ${task}\nTOOLS: ${tools}\n"
                                        b"ERRORS: ${errors}\nOUTPUT: ${output}\n=== grade ===\nGrade it.\n")
Reply = tuple[int, dict[str, Any] | str, dict[str, str]]  # status, body, headers


def completion(content: str) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


class Neighbour:
    """A fake OpenAI-compatible server: ``script`` decides each chat reply from the request body."""

    def __init__(self, script: Callable[[dict[str, Any]], Reply], models: tuple[str, ...] = ("fake",)) -> None:
        self.script = script
        self.models = models
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: dict[str, Any] | str, headers: dict[str, str]) -> None:
                data = (body if isinstance(body, str) else json.dumps(body)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in outer.models]}, {})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                try:
                    self._send(*outer.script(body))
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> Neighbour:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def runs(n: int = 2, **overrides: Any) -> pl.DataFrame:
    rows = [{"trace_id": f"{i:032x}", "agent": "calc-agent", "status": "ok",
             "input": json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"What is {i} + {i}?"}]}]),
             "output": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": f"{2 * i}"}]}]),
             "llm_calls": 1, "tool_calls": 0, "owner": None, "start_time": NOW, "tool_summary": None,
             "error_summary": None, "attempts_so_far": 0} | overrides for i in range(n)]
    return pl.DataFrame(rows)


@pytest.fixture
def slept() -> list[float]:
    return []


def judge(url: str, frame: pl.DataFrame, slept: list[float], *, prompt: Any = GRADE_ONLY, tries: int = 3,
          timeout_s: float = 5.0, **kw: Any) -> pl.DataFrame:
    client = openai.OpenAI(base_url=url, api_key="none")
    return judge_runs(frame, client=client, model="fake", prompt=prompt, now=lambda: NOW,
                      concurrency=kw.pop("concurrency", 1), max_input_tokens=kw.pop("max_input_tokens", 1500),
                      attempts_so_far=kw.pop("attempts_so_far", {}), timeout_s=timeout_s,
                      retry=RetryPolicy(tries=tries, base_s=0.01, max_s=0.02, sleep=slept.append), **kw)


def test_rows_match_the_evals_schema_and_record_method_version_attempts(slept: list[float]) -> None:
    with Neighbour(lambda body: (200, completion('{"grade": 5, "reasoning": "right"}'), {})) as n:
        out = judge(n.url, runs(3), slept, attempts_so_far={f"{1:032x}": 2})
    assert out.schema == pl.Schema(EVALS_SCHEMA)
    assert out["score"].to_list() == [1.0, 1.0, 1.0]
    assert set(out["method"]) == {"json"} and set(out["judge_version"]) == {GRADE_ONLY.version}
    assert out["attempts"].to_list() == [1, 3, 1]
    assert out["judged_at"].to_list() == [NOW] * 3 and out["error"].null_count() == 3
    assert slept == []


def test_format_negotiation_falls_back_from_json_schema(slept: list[float]) -> None:
    """llama-cpp-python answers ``json_schema`` with a 500 naming it; the judge then sends
    ``json_object`` with a schema, and keeps doing so."""
    def script(body: dict[str, Any]) -> Reply:
        if body.get("response_format", {}).get("type") == "json_schema":
            return 500, {"error": {"message": "response_format json_schema not supported"}}, {}
        return 200, completion('{"grade": 4, "reasoning": "ok"}'), {}

    with Neighbour(script) as n:
        out = judge(n.url, runs(2), slept)
    assert out["score"].to_list() == [0.75, 0.75]
    kinds = [r.get("response_format", {}).get("type") for r in n.requests]
    assert kinds == ["json_schema", "json_object", "json_object"] and slept == []


def test_garbage_is_a_judge_error_with_the_raw_answer(slept: list[float]) -> None:
    with Neighbour(lambda body: (200, completion("I refuse to grade, but here is a poem."), {})) as n:
        out = judge(n.url, runs(1), slept)
    row = out.row(0, named=True)
    assert row["score"] is None and row["method"] is None
    assert row["error"].startswith("unusable answer") and row["raw_answer"] == "I refuse to grade, but here is a poem."


def test_429_is_retried_with_backoff_then_succeeds(slept: list[float]) -> None:
    calls = iter(range(100))

    def script(body: dict[str, Any]) -> Reply:
        if next(calls) < 2:
            return 429, {"error": {"message": "slow down"}}, {"retry-after": "0"}
        return 200, completion('{"grade": 3, "reasoning": "partly"}'), {}

    with Neighbour(script) as n:
        out = judge(n.url, runs(1), slept, tries=4)
    assert out["score"].to_list() == [0.5] and len(slept) == 2 and len(n.requests) == 3


def test_500_after_the_last_try_is_an_error_row_not_a_crash(slept: list[float]) -> None:
    with Neighbour(lambda body: (500, {"error": {"message": "model crashed"}}, {})) as n:
        out = judge(n.url, runs(2), slept, tries=3)
    assert out["score"].to_list() == [None, None]
    assert all("HTTP 500" in e and "after 3 tries" in e for e in out["error"].to_list())
    assert len(slept) == 4 and len(n.requests) == 6  # 2 runs × 3 tries, 2 waits each


def test_400_is_not_retried(slept: list[float]) -> None:
    with Neighbour(lambda body: (400, {"error": {"message": "prompt too long"}}, {})) as n:
        out = judge(n.url, runs(1), slept, tries=3)
    assert "HTTP 400" in out["error"][0] and slept == [] and len(n.requests) == 1


def test_timeouts_are_retried_then_the_endpoint_is_given_up(slept: list[float]) -> None:
    def script(body: dict[str, Any]) -> Reply:
        time.sleep(1.0)
        return 200, completion('{"grade": 5, "reasoning": "late"}'), {}

    with Neighbour(script) as n, pytest.raises(JudgeEndpointError, match="unreachable: timed out"):
        judge(n.url, runs(1), slept, tries=2, timeout_s=0.2)
    assert len(slept) == 1


def test_a_dead_endpoint_raises_one_line(slept: list[float]) -> None:
    with Neighbour(lambda body: (200, completion("{}"), {})) as n:
        url = n.url
    client = openai.OpenAI(base_url=url, api_key="none")
    with pytest.raises(JudgeEndpointError) as info:
        check_endpoint(client, "fake")
    assert str(info.value) == f"judge endpoint {url} unreachable: connection refused"
    with pytest.raises(JudgeEndpointError, match="unreachable"):
        judge(url, runs(3), slept, tries=2, concurrency=2)


def test_check_endpoint_names_a_missing_model() -> None:
    with Neighbour(lambda body: (200, completion("{}"), {}), models=("a", "b")) as n:
        check_endpoint(openai.OpenAI(base_url=n.url, api_key="none"), "b")
        with pytest.raises(JudgeEndpointError, match="has no model 'c'; it serves: a, b"):
            check_endpoint(openai.OpenAI(base_url=n.url, api_key="none"), "c")
    with Neighbour(lambda body: (200, completion("{}"), {})) as n:
        check_endpoint(openai.OpenAI(base_url=n.url, api_key="none"), "fake")
        # a single-model server answers whatever model is named (llama.cpp does)
        check_endpoint(openai.OpenAI(base_url=n.url, api_key="none"), "other")


def test_solve_failure_still_grades_and_long_input_is_truncated(slept: list[float]) -> None:
    def script(body: dict[str, Any]) -> Reply:
        if "response_format" not in body:  # the judge's own answer to the task
            return 500, {"error": {"message": "busy"}}, {}
        return 200, completion('{"grade": 2, "reasoning": "mostly wrong"}'), {}

    long_task = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "word " * 5000}]}])
    with Neighbour(script) as n:
        out = judge(n.url, runs(1, input=long_task), slept, prompt=load_prompt(), tries=2, max_input_tokens=300)
    row = out.row(0, named=True)
    assert row["score"] == 0.25 and row["input_truncated"] is True
    grade_request = [r for r in n.requests if "response_format" in r][0]
    assert "characters cut" in grade_request["messages"][1]["content"]


def test_signals_cap_and_runs_without_text(slept: list[float]) -> None:
    frame = pl.concat([
        runs(1, status="error", error_summary="tool failed twice"),
        runs(1, output=json.dumps([{"role": "assistant", "parts": [{"type": "text",
                                                                    "content": "As an AI, I cannot do that."}]}])),
        runs(1, input=None, output=None),
    ]).with_columns(pl.Series("trace_id", ["a" * 32, "b" * 32, "c" * 32]))
    with Neighbour(lambda body: (200, completion('{"grade": 5, "reasoning": "great"}'), {})) as n:
        out = judge(n.url, frame, slept)
    assert out["score"].to_list() == [0.2, 0.1, None]
    assert "Capped at 0.2" in out["reasoning"][0] and out["error"][2] == "the run has no input and no output"
    assert len(n.requests) == 2  # nothing is asked about a run with nothing to judge


def test_traced_requests_are_marked_as_the_judge(slept: list[float]) -> None:
    exporter = InMemorySpanExporter()
    with Neighbour(lambda body: (200, completion('{"grade": 4, "reasoning": "ok"}'), {})) as n:
        client = openai.OpenAI(base_url=n.url, api_key="none")
        with traced(client, None, exporter=exporter) as judged_client:
            judge_runs(runs(2), client=judged_client, model="fake", prompt=GRADE_ONLY, now=lambda: NOW,
                       concurrency=2, max_input_tokens=1500, attempts_so_far={},
                       retry=RetryPolicy(sleep=slept.append))
    spans = exporter.get_finished_spans()
    assert len(spans) == 2
    for span in spans:
        assert span.resource.attributes["service.name"] == JUDGE_SERVICE_NAME
        a = span.attributes
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.request.model"] == "fake"
        assert a["otelbench.judge"] is True and a["gen_ai.usage.input_tokens"] == 10
        assert a["gen_ai.usage.output_tokens"] == 5
    assert {s.attributes["otelbench.judge.run_trace_id"] for s in spans} == {f"{0:032x}", f"{1:032x}"}


def test_untraced_without_an_endpoint() -> None:
    with traced("client", None) as c:
        assert c.client == "client" and c.tracer is None

