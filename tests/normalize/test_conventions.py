"""normalize.conventions: the tables, and the rules that apply them, as tables of input → output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from otelbench.normalize import conventions as cv
from otelbench.normalize.anyvalue import as_float, as_int, as_str

DOC = Path(__file__).resolve().parents[2] / "docs" / "normalization.md"


# -- the alias table ---------------------------------------------------------------------


def test_the_documented_alias_table_is_aliases() -> None:
    section = DOC.read_text(encoding="utf-8").split("## GenAI attribute aliases", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    documented = {}
    for row in rows:
        field, keys = (cell.strip() for cell in row.strip("|").split("|"))
        documented[field.strip("`")] = tuple(re.findall(r"`([^`]+)`", keys))
    assert list(documented) == list(cv.ALIASES)
    assert documented == cv.ALIASES


def test_an_attribute_key_means_one_field() -> None:
    keys = [k for aliases in cv.ALIASES.values() for k in aliases]
    assert len(keys) == len(set(keys))


def test_a_field_has_at_most_eight_aliases() -> None:
    """The columnar path packs (field, rank) into one code with 3 bits for the rank."""
    assert max(len(aliases) for aliases in cv.ALIASES.values()) <= 8


@pytest.mark.parametrize(("field", "coerce"), [
    ("operation", (str, as_str)),
    ("provider", (str, as_str)),
    ("request_model", (str, as_str)),
    ("input_tokens", (int, as_int)),
    ("cache_write_tokens", (int, as_int)),
    ("reasoning_tokens", (int, as_int)),
    ("cost", (None, as_float)),
    ("ttft_s", (None, as_float)),
    ("finish_reasons", (None, None)),
])
def test_coercion_of_a_field(field: str, coerce: tuple) -> None:
    assert cv.COERCE[field] == coerce


def test_every_field_coerces() -> None:
    assert set(cv.COERCE) == set(cv.ALIASES) == set(cv.FIELDS)


def test_every_derived_operation_has_a_span_type_or_is_rerank() -> None:
    derived = {*cv.REQUEST_TYPE_OPS.values(), *cv.OPENINFERENCE_OPS.values(), *cv.TRACELOOP_OPS.values()}
    assert derived - set(cv.SPAN_TYPE_OF_OPERATION) == {"rerank"}


# -- operation ---------------------------------------------------------------------------


@pytest.mark.parametrize(("request_type", "oi_kind", "tl_kind", "has_agent", "name", "want"), [
    ("chat", None, None, False, "x", "chat"),
    ("completion", None, None, False, "x", "text_completion"),
    ("embedding", None, None, False, "x", "embeddings"),
    ("rerank", None, None, False, "x", "rerank"),
    ("unknown", "LLM", None, False, "x", "chat"),  # an unknown request type falls through
    ("chat", "TOOL", "tool", False, "x", "chat"),  # OpenLLMetry's request type first
    (None, "LLM", None, False, "x", "chat"),
    (None, "llm", None, False, "x", "chat"),  # upper-cased
    (None, "EMBEDDING", None, False, "x", "embeddings"),
    (None, "TOOL", None, False, "x", "execute_tool"),
    (None, "AGENT", None, False, "x", "invoke_agent"),
    (None, "RETRIEVER", None, False, "x", "retrieval"),
    (None, "RERANKER", None, False, "x", "rerank"),
    (None, "CHAIN", None, False, "RunnableSequence", None),
    (None, "CHAIN", None, False, "AgentExecutor", "invoke_agent"),
    (None, "chain", None, True, "x", "invoke_agent"),
    (None, "GUARDRAIL", "tool", False, "x", "execute_tool"),  # an unknown kind falls through
    (None, None, "workflow", False, "x", "invoke_workflow"),
    (None, None, "agent", False, "x", "invoke_agent"),
    (None, None, "tool", False, "x", "execute_tool"),
    (None, None, "task", False, "chat m", "chat"),  # no operation of its own: the name decides
    (None, None, None, False, "chat gpt-4o", "chat"),
    (None, None, None, False, "execute_tool search", "execute_tool"),
    (None, None, None, False, "invoke_workflow", "invoke_workflow"),
    (None, None, None, False, "chatter box", None),
    (None, None, None, False, "", None),
])
def test_operation(request_type: str | None, oi_kind: str | None, tl_kind: str | None, has_agent: bool,
                   name: str, want: str | None) -> None:
    assert cv.operation(request_type, oi_kind, tl_kind, has_agent, name) == want


@pytest.mark.parametrize(("op", "has_model", "want"), [
    ("chat", False, "llm"),
    ("text_completion", True, "llm"),
    ("generate_content", False, "llm"),
    ("embeddings", False, "embedding"),
    ("execute_tool", True, "tool"),
    ("retrieval", False, "retrieval"),
    ("invoke_agent", False, "agent"),
    ("create_agent", False, "agent"),
    ("invoke_workflow", False, "agent"),
    ("rerank", True, "other"),  # an operation without a span type, model or not
    (None, True, "llm"),
    (None, False, "other"),
])
def test_span_type(op: str | None, has_model: bool, want: str) -> None:
    assert cv.span_type(op, has_model) == want


@pytest.mark.parametrize(("oi_kind", "name", "want"), [
    ("LLM", "OpenAI._prepare_chat_with_tools", True),
    ("llm", "Anthropic._prepare_chat_with_tools", True),
    ("LLM", "OpenAI.astream_chat", False),
    ("CHAIN", "OpenAI._prepare_chat_with_tools", False),
    (None, "OpenAI._prepare_chat_with_tools", False),
    ("LLM", "_prepare_chat_with_tools", False),  # a method of a class, by its span name
])
def test_not_a_call(oi_kind: str | None, name: str, want: bool) -> None:
    assert cv.not_a_call(oi_kind, name) is want
    if want:
        assert cv.operation(None, oi_kind, None, False, name) is None


@pytest.mark.parametrize(("attrs", "want"), [
    ({"gen_ai.request.stream": False}, True),
    ({"gen_ai.is_streaming": False}, True),
    ({"gen_ai.request.stream": True, "gen_ai.is_streaming": False}, True),
    ({"gen_ai.request.stream": True}, False),
    ({"gen_ai.request.stream": "false"}, False),  # only a boolean says it
    ({"gen_ai.request.stream": 0}, False),
    ({}, False),
])
def test_not_streamed(attrs: dict, want: bool) -> None:
    assert cv.not_streamed(attrs) is want


# -- what frameworks keep in JSON documents ------------------------------------------------


@pytest.mark.parametrize(("metadata", "want"), [
    ('{"ls_integration": "langchain_create_agent", "lc_agent_name": "weather_agent"}', "weather_agent"),
    ({"lc_agent_name": "a"}, "a"),  # a structured value
    ('{"lc_agent_name": ""}', None),
    ('{"lc_agent_name": ["a"]}', None),
    ('{"langgraph_node": "model"}', None),
    ("[1]", None),
    ("{bad", None),
    (None, None),
])
def test_metadata_agent_name(metadata: object, want: str | None) -> None:
    assert cv.metadata_agent_name(metadata) == want


_INV = "llm.invocation_parameters"


@pytest.mark.parametrize(("attrs", "request_model", "response_model", "want"), [
    ({_INV: '{"model": "gpt-4o-mini"}', "llm.model_name": "gpt-4o-mini-2024-07-18"}, "gpt-4o-mini-2024-07-18", None,
     ("gpt-4o-mini", "gpt-4o-mini-2024-07-18")),
    ({_INV: '{"model": "gpt-4o-mini"}', "llm.model_name": "gpt-4o-mini"}, "gpt-4o-mini", None,
     ("gpt-4o-mini", None)),
    ({_INV: '{"model": "a"}', "llm.model_name": "b"}, "b", "r", ("a", "r")),  # a response model attribute stays
    ({_INV: '{"model": "a"}', "gen_ai.request.model": "g", "llm.model_name": "b"}, "g", None, ("g", None)),
    ({_INV: '{"model": "a"}', "llm.request.model": "q"}, "q", None, ("q", None)),
    ({_INV: '{"model_name": "a"}', "llm.model_name": "b"}, "b", None, ("b", None)),  # LlamaIndex's metadata
    ({_INV: '{"model": 5}'}, None, None, ("5", None)),
    ({_INV: "[]"}, None, None, (None, None)),
    ({}, "m", None, ("m", None)),
])
def test_invocation_models(attrs: dict, request_model: str | None, response_model: str | None, want: tuple) -> None:
    assert cv.invocation_models(attrs, request_model, response_model) == want


@pytest.mark.parametrize(("output", "want"), [
    ('{"generations": [[{"generation_info": {"model_name": "m-1"}, "message": {"kwargs": '
     '{"response_metadata": {"model_name": "m-2"}}}}]]}', "m-1"),
    ('{"generations": [[{"generation_info": null, "message": {"kwargs": '
     '{"response_metadata": {"model_name": "m-2"}}}}]]}', "m-2"),
    ('{"generations": [[{"text": "hi"}]]}', None),
    ('{"generations": [[]]}', None),
    ('{"generations": []}', None),
    ('{"generations": [["x"]]}', None),
    ('{"messages": []}', None),
    ('{"generations": [[{', None),
    (None, None),
])
def test_langchain_response_model(output: str | None, want: str | None) -> None:
    assert cv.langchain_response_model(output) == want


@pytest.mark.parametrize(("output", "want"), [
    ('{"type": "tool", "data": {"content": "sunny", "tool_call_id": "call_1"}}', "call_1"),
    ('{"type": "ai", "data": {"tool_call_id": "call_1"}}', None),
    ('{"type": "tool", "data": {"tool_call_id": null}}', None),
    ('{"type": "tool", "data": "x", "tool_call_id": "c"}', None),
    ('{"messages": [{"type": "tool", "data": {"tool_call_id": "call_1"}}]}', None),  # the tools node, not a tool
    ("sunny", None),
])
def test_langchain_tool_call_id(output: str, want: str | None) -> None:
    assert cv.langchain_tool_call_id(output) == want


# -- provider ----------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "want"), [
    ("openai", "openai"),
    ("OpenAI", "openai"),
    ("az.ai.inference", "azure.ai.inference"),
    ("AZ.AI.OpenAI", "azure.ai.openai"),
    ("azure.ai.openai", "azure.ai.openai"),
    ("xai", "x_ai"),
    ("XAI", "x_ai"),
    ("x_ai", "x_ai"),
    ("xai.beta", "xai.beta"),
    ("", ""),
])
def test_provider(value: str, want: str) -> None:
    assert cv.provider(value) == want


# -- finish reasons ----------------------------------------------------------------------

_STOP = [{"role": "assistant", "parts": [], "finish_reason": "stop"}]


@pytest.mark.parametrize(("value", "attrs", "output", "want"), [
    (["stop", "length"], {}, None, ["stop", "length"]),
    (["stop", None, 3], {}, None, ["stop", "3"]),
    ([], {}, _STOP, None),  # an empty array says there are none
    ('["tool_calls"]', {}, None, ["tool_call"]),  # OpenAI's spelling → the semconv's
    (["tool_use", "function_call", "tool_call", "length"], {}, None, ["tool_call", "tool_call", "tool_call", "length"]),
    (None, {"gen_ai.completion.0.finish_reason": "tool_calls"}, None, ["tool_call"]),
    (None, {}, [{"role": "assistant", "parts": [], "finish_reason": "tool_calls"}], ["tool_call"]),
    ("[oops", {}, None, ["[oops"]),  # not JSON: one reason as sent
    ("stop", {}, None, ["stop"]),
    ("", {}, _STOP, ["stop"]),
    (None, {"gen_ai.completion.0.finish_reason": "stop", "gen_ai.completion.1.finish_reason": "length",
            "gen_ai.completion.3.finish_reason": "gap"}, _STOP, ["stop", "length"]),
    (None, {"gen_ai.completion.1.finish_reason": "length"}, None, None),  # indexed from 0
    (None, {}, _STOP, ["stop"]),
    (None, {}, None, None),
])
def test_finish_reasons(value: object, attrs: dict, output: list | None, want: list[str] | None) -> None:
    assert cv.finish_reasons(value, attrs, output) == want


# -- OTLP enums ---------------------------------------------------------------------------


def test_enum_names() -> None:
    assert [cv.KIND_NAMES[i] for i in range(6)] == ["unspecified", "internal", "server", "client", "producer",
                                                    "consumer"]
    assert [cv.STATUS_NAMES[i] for i in range(3)] == ["unset", "ok", "error"]
    assert cv.TEMPORALITY_NAMES == (None, "delta", "cumulative")
