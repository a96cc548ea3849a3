"""The stub's weather script, driven by the real openai client: the turn agent frameworks see."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from openai import OpenAI

from otelbench.testing.openai_stub import WEATHER_ANSWER, WEATHER_CALL_ID, StubServer

QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]
TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


def client(stub: StubServer) -> OpenAI:
    return OpenAI(base_url=stub.base_url("weather", ttft_ms=30, gap_ms=1), api_key="x", max_retries=0)


def after_tool(arguments: str) -> list[dict]:
    call = {"id": WEATHER_CALL_ID, "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
    return [*QUESTION, {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": WEATHER_CALL_ID, "content": "sunny, 22 °C"}]  # fmt: skip


def test_a_tool_call_then_the_answer(stub: StubServer) -> None:
    first = client(stub).chat.completions.create(model="gpt-4o-mini", messages=QUESTION, tools=[TOOL])
    assert first.model == "gpt-4o-mini-2024-07-18"
    assert first.choices[0].finish_reason == "tool_calls"
    call = first.choices[0].message.tool_calls[0]
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        WEATHER_CALL_ID, "get_weather", {"city": "Paris"})  # fmt: skip
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (61, 17)
    second = client(stub).chat.completions.create(model="gpt-4o-mini", messages=after_tool(call.function.arguments))
    assert second.choices[0].message.content == WEATHER_ANSWER
    assert (second.usage.prompt_tokens, second.usage.completion_tokens, second.usage.total_tokens) == (94, 12, 106)
    assert [s["reply"] for s in stub.served[-2:]] == ["tool_call", "answer"]


def test_streamed_with_usage_only_when_asked(stub: StubServer) -> None:
    chunks = list(client(stub).chat.completions.create(
        model="gpt-4o-mini", messages=QUESTION, tools=[TOOL], stream=True))  # fmt: skip
    arguments = "".join(c.choices[0].delta.tool_calls[0].function.arguments or ""
                        for c in chunks if c.choices and c.choices[0].delta.tool_calls)  # fmt: skip
    assert json.loads(arguments) == {"city": "Paris"}
    assert all(c.usage is None for c in chunks) and not stub.served[-1]["usage_sent"]
    chunks = list(client(stub).chat.completions.create(
        model="gpt-4o-mini", messages=after_tool(arguments), stream=True, stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == WEATHER_ANSWER
    assert chunks[-1].usage.completion_tokens == 12 and {c.model for c in chunks} == {"gpt-4o-mini-2024-07-18"}
    served = stub.served[-1]
    assert served["usage_sent"] and served["ttft_ms"] >= 30
