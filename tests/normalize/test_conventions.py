"""normalize.conventions: the tables, and the rules that apply them, as tables of input → output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from normalize import conventions as cv
from normalize.anyvalue import as_float, as_int, as_str

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
