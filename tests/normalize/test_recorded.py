"""normalize.rows on OTLP recorded from real instrumentations (tests/testdata/recorded).

Each recording is the same agent turn (scripts/record_fixtures.py): an ``invoke_agent
weather_helper`` span around a plain chat, a streamed chat, a chat whose reply is a
``get_weather`` tool call, an ``execute_tool`` span and a follow-up chat with the tool
result. The tables below say what the promoted columns must hold for each span, per
instrumentation; the token counts are the ones the fixtures carry.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from otelbench.normalize.rows import normalize_logs, normalize_metrics, normalize_traces
from otelbench.storage.schema import LOGS, METRICS, SPANS
from tests.testdata.loader import recorded

OWNER = "alice"
INSTRUMENTATIONS = ("openai-v2", "openai-v2-latest", "openinference")
ROLES = ("agent", "plain", "stream", "tool_call", "tool", "follow_up")  # in start order


class EndsWith:
    def __init__(self, suffix: str) -> None:
        self.suffix = suffix

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and other.endswith(self.suffix)

    def __repr__(self) -> str:
        return f"<str ending {self.suffix!r}>"


class StartsWith(EndsWith):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and other.startswith(self.suffix)

    def __repr__(self) -> str:
        return f"<str starting {self.suffix!r}>"


MODEL = EndsWith("/SmolLM2-135M-Instruct.Q4_1.gguf")  # llama.cpp reports the file path
CALL_ID = StartsWith("call__0_get_weather_")

AGENT = {"span_type": "agent", "operation": "invoke_agent", "agent_name": "weather_helper",
         "parent_span_id": None, "kind": "internal", "provider": None, "request_model": None}
TOOL = {"span_type": "tool", "operation": "execute_tool", "tool_name": "get_weather",
        "tool_call_id": CALL_ID, "kind": "internal", "input_tokens": None}
CHAT = {"span_type": "llm", "operation": "chat", "provider": "openai", "request_model": MODEL}
USAGE = {  # (input, output, total); llama.cpp sends no usage in a stream
    "plain": (26, 11, 37), "stream": (None, None, None),
    "tool_call": (27, 7, 34), "follow_up": (60, 29, 89),
}


def _chat(role: str, **fields: Any) -> dict[str, Any]:
    i, o, t = USAGE[role]
    return {**CHAT, "input_tokens": i, "output_tokens": o, "total_tokens": t, **fields}


# (instrumentation, span) → expected columns
EXPECTED: dict[tuple[str, str], dict[str, Any]] = {
    # opentelemetry-instrumentation-openai-v2, semconv v1.30: gen_ai.system, content only
    # in log events, and no finish reasons on a streamed span (its gen_ai.choice event has one).
    ("openai-v2", "agent"): AGENT,
    ("openai-v2", "tool"): TOOL,
    ("openai-v2", "plain"): _chat("plain", kind="client", response_model=MODEL, finish_reasons=["stop"],
                                  input_messages=None, output_messages=None),
    ("openai-v2", "stream"): _chat("stream", kind="client", response_model=MODEL, finish_reasons=None,
                                   input_messages=None, output_messages=None),
    ("openai-v2", "tool_call"): _chat("tool_call", kind="client", response_model=MODEL,
                                      finish_reasons=["tool_call"]),
    ("openai-v2", "follow_up"): _chat("follow_up", kind="client", response_model=MODEL, finish_reasons=["stop"]),
    # the same with gen_ai_latest_experimental: gen_ai.provider.name, messages on the span
    # (and in gen_ai.client.inference.operation.details events); a stream's finish reason
    # only in its output message.
    ("openai-v2-latest", "agent"): AGENT,
    ("openai-v2-latest", "tool"): TOOL,
    ("openai-v2-latest", "plain"): _chat("plain", kind="client", response_model=MODEL, finish_reasons=["stop"]),
    ("openai-v2-latest", "stream"): _chat("stream", kind="client", response_model=MODEL, finish_reasons=["stop"]),
    ("openai-v2-latest", "tool_call"): _chat("tool_call", kind="client", response_model=MODEL,
                                             finish_reasons=["tool_call"]),
    ("openai-v2-latest", "follow_up"): _chat("follow_up", kind="client", response_model=MODEL,
                                             finish_reasons=["stop"]),
    # openinference-instrumentation-openai: llm.* attributes, one model attribute
    # (llm.model_name, a request-model alias in docs/normalization.md), finish reason in
    # llm.finish_reason, messages as llm.{input,output}_messages.{i}.*
    ("openinference", "agent"): AGENT,
    ("openinference", "tool"): TOOL,
    ("openinference", "plain"): _chat("plain", name="ChatCompletion", kind="internal", finish_reasons=["stop"]),
    ("openinference", "stream"): _chat("stream", name="ChatCompletion", kind="internal", finish_reasons=["stop"]),
    ("openinference", "tool_call"): _chat("tool_call", name="ChatCompletion", kind="internal",
                                          finish_reasons=["tool_call"]),
    ("openinference", "follow_up"): _chat("follow_up", name="ChatCompletion", kind="internal",
                                          finish_reasons=["stop"]),
}

# Message shapes, the same for every instrumentation: [(role, [part types])], with
# empty text parts left out (openai-v2-latest keeps the tool-call turn's "" content).
TEXT_IN = [("system", ["text"]), ("user", ["text"])]
MESSAGES: dict[str, tuple[list, list]] = {
    "plain": (TEXT_IN, [("assistant", ["text"])]),
    "stream": (TEXT_IN, [("assistant", ["text"])]),
    "tool_call": (TEXT_IN, [("assistant", ["tool_call"])]),
    "follow_up": (TEXT_IN + [("assistant", ["tool_call"]), ("tool", ["tool_call_response"])],
                  [("assistant", ["text"])]),
}
# where each instrumentation puts message content
MESSAGES_IN = {"openai-v2": "logs", "openai-v2-latest": "spans", "openinference": "spans"}


def _rows(columns: dict[str, list]) -> list[dict[str, Any]]:
    names = list(columns)
    return [dict(zip(names, values)) for values in zip(*columns.values())]


@cache
def spans(instrumentation: str) -> dict[str, dict[str, Any]]:
    """role → span row of one recording."""
    rows: list[dict[str, Any]] = []
    for req in recorded(instrumentation, "traces"):
        columns = normalize_traces(req, OWNER)
        assert list(columns) == SPANS.columns
        rows += _rows(columns)
    rows.sort(key=lambda r: r["start_time"])
    assert len(rows) == len(ROLES), [r["name"] for r in rows]
    return dict(zip(ROLES, rows))


@cache
def logs(instrumentation: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for req in recorded(instrumentation, "logs"):
        columns = normalize_logs(req, OWNER)
        assert list(columns) == LOGS.columns
        rows += _rows(columns)
    return rows


def shape(messages: list[dict[str, Any]] | None) -> list[tuple[str, list[str]]] | None:
    if messages is None:
        return None
    return [
        (m["role"], [p["type"] for p in m["parts"] if not (p.get("type") == "text" and p.get("content") == "")])
        for m in messages
    ]


def messages_of(instrumentation: str, role: str) -> tuple[list | None, list | None]:
    """(input, output) messages of one chat, from wherever the instrumentation put them."""
    span = spans(instrumentation)[role]
    if MESSAGES_IN[instrumentation] == "spans":
        return (json.loads(span["input_messages"]) if span["input_messages"] else None,
                json.loads(span["output_messages"]) if span["output_messages"] else None)
    inp: list = []
    out: list = []
    for row in logs(instrumentation):
        if row["span_id"] == span["span_id"] and row["messages"] is not None:
            {"input": inp, "output": out}[row["message_direction"]].extend(json.loads(row["messages"]))
    return inp or None, out or None


CASES = sorted(EXPECTED, key=lambda k: (INSTRUMENTATIONS.index(k[0]), ROLES.index(k[1])))


@pytest.mark.parametrize(("instrumentation", "role"), CASES, ids=[f"{i}-{r}" for i, r in CASES])
def test_promoted_columns(instrumentation: str, role: str) -> None:
    row = spans(instrumentation)[role]
    expected = EXPECTED[instrumentation, role]
    actual = {k: row[k] for k in expected}
    mismatched = {k: (row[k], v) for k, v in expected.items() if not v == row[k]}
    assert not mismatched, f"(actual, expected) per column: {mismatched}\nall: {actual}"


@pytest.mark.parametrize("instrumentation", INSTRUMENTATIONS)
def test_every_span_is_in_one_trace_under_the_agent(instrumentation: str) -> None:
    by_role = spans(instrumentation)
    agent = by_role["agent"]
    assert len(agent["trace_id"]) == 32 and len(agent["span_id"]) == 16
    for role, row in by_role.items():
        assert row["trace_id"] == agent["trace_id"]
        assert row["owner"] == OWNER
        assert row["service_name"] == f"record-fixtures-{instrumentation}"
        assert row["status_code"] in {"unset", "ok"}
        assert row["duration_ms"] >= 0
        if role != "agent":
            assert row["parent_span_id"] == agent["span_id"], role


MESSAGE_CASES = [(i, r) for i in INSTRUMENTATIONS for r in MESSAGES]


@pytest.mark.parametrize(("instrumentation", "role"), MESSAGE_CASES, ids=[f"{i}-{r}" for i, r in MESSAGE_CASES])
def test_messages(instrumentation: str, role: str) -> None:
    inp, out = messages_of(instrumentation, role)
    want_in, want_out = MESSAGES[role]
    assert (shape(inp), shape(out)) == (want_in, want_out)
    assert inp[1]["parts"][0]["content"] in {
        "Say hello in five words.", "Count from one to five.", "What is the weather in Paris?"
    }
    if role == "tool_call":
        (call,) = out[0]["parts"]
        assert call["name"] == "get_weather" and call["id"] == CALL_ID
        args = call["arguments"]
        assert (json.loads(args) if isinstance(args, str) else args) == {"city": "Paris"}
    elif role == "follow_up":
        call = next(p for p in inp[2]["parts"] if p["type"] == "tool_call")
        (response,) = inp[3]["parts"]
        assert response["id"] == call["id"] == CALL_ID
        assert "cloudy" in response["response"]
    else:
        assert out[0]["parts"][0]["content"].strip()


@pytest.mark.parametrize("role", ["plain", "stream", "tool_call", "follow_up"])
def test_openai_v2_message_events_carry_the_choice_finish_reason(role: str) -> None:
    _, out = messages_of("openai-v2", role)
    assert out[-1]["finish_reason"] == ("tool_calls" if role == "tool_call" else "stop")


def test_openai_v2_log_events_are_named_and_correlated() -> None:
    rows = logs("openai-v2")
    chat_ids = {spans("openai-v2")[r]["span_id"] for r in MESSAGES}
    assert {r["event_name"] for r in rows} == {
        "gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message",
        "gen_ai.tool.message", "gen_ai.choice",
    }
    for row in rows:
        assert row["span_id"] in chat_ids
        assert row["trace_id"] == spans("openai-v2")["agent"]["trace_id"]
        assert row["message_direction"] == ("output" if row["event_name"] == "gen_ai.choice" else "input")


def test_openai_v2_latest_details_events_match_the_span_messages() -> None:
    by_span = {r["span_id"]: r for r in logs("openai-v2-latest")}
    for role in MESSAGES:
        span = spans("openai-v2-latest")[role]
        row = by_span[span["span_id"]]
        assert row["event_name"] == "gen_ai.client.inference.operation.details"
        assert row["message_direction"] == "details"
        details = json.loads(row["messages"])
        assert details["input"] == json.loads(span["input_messages"])
        assert details["output"] == json.loads(span["output_messages"])


def test_openinference_sends_no_logs() -> None:
    assert recorded("openinference", "logs") == []


@pytest.mark.parametrize("instrumentation", ["openai-v2", "openai-v2-latest"])
def test_openai_v2_metrics(instrumentation: str) -> None:
    (req,) = recorded(instrumentation, "metrics")
    columns = normalize_metrics(req, OWNER)
    assert list(columns) == METRICS.columns
    rows = _rows(columns)
    names = {r["metric_name"] for r in rows}
    assert {"gen_ai.client.operation.duration", "gen_ai.client.token.usage"} <= names
    for row in rows:
        if row["metric_name"].startswith("gen_ai.client."):
            assert row["metric_type"] == "histogram"
            assert row["count"] >= 1
            assert json.loads(row["attributes"])["gen_ai.request.model"] == MODEL
