"""normalize.framework_messages: each framework shape → messages, and what is not one.

Whole spans through both paths: the ``MESSAGES`` table of cases.py (langgraph-*,
crewai-*, llamaindex-*, traceloop-*, pydantic-ai-*); here, the readers' edges.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from otelbench.normalize import framework_messages as fw


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


@pytest.mark.parametrize(("value", "want"), [
    ("StopEvent(result=...)", True),
    ("AgentInput(input=[ChatMessage(role=<MessageRole.USER: 'user'>, ...", True),
    ("ToolCallResult(tool_name='get_weather')", True),
    ("What is f(x)?", False),
    ("Hello (world)", False),
    ("print(x)", False),  # not a class name
    ("Paris", False),
    ("Result(", False),
])
def test_is_python_repr(value: str, want: bool) -> None:
    assert fw.is_python_repr(value) is want


_ANSWER = ("StopEvent(result=AgentOutput(response=ChatMessage(role=<MessageRole.ASSISTANT: 'assistant'>, "
           "additional_kwargs={}, blocks=[{blocks}]), structured_response=None, current_agent_name='a'))")


@pytest.mark.parametrize(("blocks", "want"), [
    ("TextBlock(block_type='text', text='sunny')", [text("assistant", "sunny")]),
    ("TextBlock(block_type='text', text='a\\\\b \\x00 \\u2028 é')", [text("assistant", "a\\b \x00 \u2028 é")]),
    ("TextBlock(block_type='text', text='__import__(\"os\")')", [text("assistant", '__import__("os")')]),
    # a block of another type, a tool call's kwargs: not read
    ("TextBlock(block_type='text', text=''), ToolCallBlock(block_type='tool_call', tool_call_id='c')", None),
    ("ImageBlock(block_type='image')", None),
    ("TextBlock(block_type='text', text='unterminated)", None),
])
def test_llamaindex_answer(blocks: str, want: list | None) -> None:
    assert fw.llamaindex_answer(_ANSWER.replace("{blocks}", blocks)) == want


def test_llamaindex_answer_needs_an_assistant_message_without_extra_kwargs() -> None:
    value = _ANSWER.replace("{blocks}", "TextBlock(block_type='text', text='x')")
    assert fw.llamaindex_answer(value.replace("additional_kwargs={}", "additional_kwargs={'tool_calls': []}")) is None
    assert fw.llamaindex_answer(value.replace("ASSISTANT: 'assistant'", "USER: 'user'")) is None


@pytest.mark.parametrize(("value", "want"), [
    ('{"args": ["hi"], "kwargs": {}}', [text("user", "hi")]),
    ('{"args": [], "kwargs": {"question": "hi"}}', [text("user", "hi")]),
    ({"args": ["hi"]}, [text("user", "hi")]),  # a structured value
    ('{"args": [""], "kwargs": {}}', None),
    ('{"args": ["hi", 2], "kwargs": {}}', None),  # which argument is the input is not said
    ('{"args": [], "kwargs": {}}', None),
    ('{"args": [{"role": "user", "content": "hi"}], "kwargs": {}}', [text("user", "hi")]),
    ('{"args": [{"city": "Paris"}], "kwargs": {}}', None),
    ('{"args": [{"type": "human", "data": {"content": "hi"}}], "kwargs": {}}', [text("user", "hi")]),
    ('{"args": ["hi"], "kwargs": {}, "self": 1}', None),
    ('{"args": "hi"}', None),
    ("not json", None),
])
def test_traceloop_input(value: Any, want: list | None) -> None:
    assert fw.traceloop_input(value) == want


@pytest.mark.parametrize(("value", "want"), [
    ('"It is sunny in Paris, 22 \\u00b0C."', [text("assistant", "It is sunny in Paris, 22 °C.")]),
    ("42", [text("assistant", "42")]),
    ("true", None),
    ("null", None),
    ('{"answer": 4}', None),
    ('{"choices": [{"message": {"role": "assistant", "content": "yo"}}]}', [text("assistant", "yo")]),
    ("not json", None),
])
def test_traceloop_output(value: str, want: list | None) -> None:
    assert fw.traceloop_output(value) == want


_RUN = [text("user", "hi"), {"role": "assistant", "parts": [{"type": "tool_call", "id": "c", "name": "f"}]},
        {"role": "user", "parts": [{"type": "tool_call_response", "id": "c", "response": "r"}]},
        text("assistant", "yo")]


@pytest.mark.parametrize(("new_index", "want"), [
    (None, [text("user", "hi")]),
    (0, [text("user", "hi")]),
    (3, _RUN[:3]),  # the new request starts after an answer of an earlier run
    (99, _RUN),
    (-5, [text("user", "hi")]),
    ("2", _RUN[:3]),
])
def test_pydantic_ai_input(new_index: Any, want: list) -> None:
    assert fw.pydantic_ai_input(json.dumps(_RUN), new_index) == want


def test_pydantic_ai_input_and_output_of_nothing() -> None:
    assert fw.pydantic_ai_input("[]", None) is None
    assert fw.pydantic_ai_input(json.dumps([text("assistant", "yo")]), 0) is None
    assert fw.pydantic_ai_output("[]", "") is None
    assert fw.pydantic_ai_output("not json", "done") == [text("assistant", "done")]
    assert fw.pydantic_ai_output(json.dumps([{"role": "assistant", "parts": []}]), None) is None


@pytest.mark.parametrize(("m", "want"), [
    ({"type": "human", "data": {"content": "hi"}}, text("user", "hi")),
    ({"type": "system", "data": {"content": "be brief"}}, text("system", "be brief")),
    ({"type": "AIMessageChunk", "data": {"content": [{"type": "text", "text": "yo"}]}}, text("assistant", "yo")),
    ({"type": "tool", "data": {"content": "r", "tool_call_id": "c"}},
     {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c", "response": "r"}]}),
    ({"type": "ai", "data": {"content": "", "tool_calls": [{"name": "f", "args": {}, "id": "c"}, "junk"]}},
     {"role": "assistant", "parts": [{"type": "tool_call", "id": "c", "name": "f", "arguments": {}}]}),
    ({"type": "ai", "data": {"content": ""}}, {"role": "assistant", "parts": []}),
    ({"type": "remove", "data": {}}, None),
    ({"type": "human", "data": "hi"}, None),
])
def test_langchain_message(m: dict, want: dict | None) -> None:
    assert fw.langchain_message(m) == want


@pytest.mark.parametrize(("doc", "want"), [
    ({"raw": "yo", "tasks_output": []}, [text("assistant", "yo")]),
    ({"raw": "yo"}, None),  # "raw" alone is no CrewAI output
    ({"role": "user", "content": "hi"}, [text("user", "hi")]),  # one message
    ({"type": "tool", "data": {"content": "r", "tool_call_id": "c"}},
     [{"role": "tool", "parts": [{"type": "tool_call_response", "id": "c", "response": "r"}]}]),
    ({"raw": "", "tasks_output": []}, None),
    ({"messages": [{"role": "user", "content": "hi"}], "system": "be brief"},
     [text("system", "be brief"), text("user", "hi")]),
    ({"messages": [{"role": "user"}, "ChatMessage(...)", 3]}, None),
    ({"messages": [], "system": "be brief"}, None),
    ([{"role": "user", "content": "hi"}, {"name": "f", "args": {}}], [text("user", "hi")]),
    ({"choices": []}, None),
    ("text", None),
])
def test_json_messages(doc: Any, want: list | None) -> None:
    assert fw.json_messages(doc, "assistant") == want


@pytest.mark.parametrize(("value", "want"), [
    ('[{"description": "a"}, {"description": "b"}]', [text("user", "a"), text("user", "b")]),
    ('[{"description": 3}, {}]', None),
    ('{"description": "a"}', None),
    ("[bad", None),
])
def test_crewai_tasks(value: str, want: list | None) -> None:
    assert fw.crewai_tasks(value) == want
