"""The GenAI conventions as tables: which attribute means which column, and how the
operation, span type, provider and finish reasons are derived.

Pure data and small pure functions, the one statement of these rules: the row path
(``normalize.rows``) applies them span by span, the columnar path
(``normalize.columnar_genai``) compiles the same tables into polars expressions. Every
rule, field by field, with the alias table as a reader sees it: docs/normalization.md
(a test keeps its table equal to ``ALIASES``).

Specs: OTel GenAI https://opentelemetry.io/docs/specs/semconv/gen-ai/ (current and
deprecated names), OpenInference
https://github.com/Arize-ai/openinference/blob/main/spec/semantic_conventions.md ,
OpenLLMetry https://github.com/traceloop/openllmetry (opentelemetry-semantic-conventions-ai).
"""

from __future__ import annotations

from typing import Any

import orjson

from otelbench.normalize import messages as msgs
from otelbench.normalize.anyvalue import as_float, as_int, as_str, as_text

# canonical field → attribute keys, best first (a field takes the best-ranked alias whose
# value coerces, see COERCE). Renames: gen_ai.system → gen_ai.provider.name (semconv
# v1.37), prompt/completion_tokens → input/output_tokens (v1.27).
ALIASES: dict[str, tuple[str, ...]] = {
    "operation": ("gen_ai.operation.name",),
    "llm_request_type": ("llm.request.type",),
    "openinference_kind": ("openinference.span.kind",),
    "traceloop_kind": ("traceloop.span.kind",),
    "traceloop_entity": ("traceloop.entity.name",),
    "provider": ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system"),
    "agent_name": ("gen_ai.agent.name", "agent.name", "ai.telemetry.functionId"),
    "agent_id": ("gen_ai.agent.id",),
    "graph_node": ("graph.node.name", "graph.node.id"),
    "request_model": ("gen_ai.request.model", "llm.request.model_name", "llm.request.model",
                      "llm.model_name", "embedding.model_name"),
    "response_model": ("gen_ai.response.model", "llm.response.model_name", "llm.response.model"),
    "input_tokens": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens",
                     "llm.token_count.prompt", "llm.usage.prompt_tokens"),
    "output_tokens": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                      "llm.token_count.completion", "llm.usage.completion_tokens"),
    "total_tokens": ("gen_ai.usage.total_tokens", "llm.usage.total_tokens", "llm.token_count.total"),
    "cache_read_tokens": ("gen_ai.usage.cache_read.input_tokens",
                          "gen_ai.usage.cache_read_input_tokens",
                          "llm.token_count.prompt_details.cache_read"),
    "cache_write_tokens": ("gen_ai.usage.cache_creation.input_tokens",
                           "gen_ai.usage.cache_creation_input_tokens",
                           "llm.token_count.prompt_details.cache_write"),
    "reasoning_tokens": ("gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens",
                         "llm.token_count.completion_details.reasoning"),
    "cost": ("gen_ai.usage.cost", "llm.cost.total", "operation.cost"),
    "finish_reasons": ("gen_ai.response.finish_reasons", "llm.finish_reason"),
    "conversation_id": ("gen_ai.conversation.id", "session.id"),
    # one invocation of an agent (pydantic-ai stamps it on every span of the run): tells
    # two runs of one agent apart when they share a trace
    "agent_call_id": ("gen_ai.agent.call.id",),
    "tool_name": ("gen_ai.tool.name", "tool.name", "ai.toolCall.name"),
    # Mastra sends the id of the call a model asked for on a model_chunk span under it
    # (storage.queries.tool_links reads it there)
    "tool_call_id": ("gen_ai.tool.call.id", "tool_call.id", "ai.toolCall.id", "mastra.metadata.toolCallId"),
    # what a tool was called with and returned: the GenAI semconv's, the Vercel AI SDK's
    # legacy ai.toolCall spans' (JSON.stringify'd), pydantic-ai's instrumentation v1
    # ("running tool" spans); OpenInference and OpenLLMetry keep them in documents
    # (normalize.tool_io)
    "tool_arguments": ("gen_ai.tool.call.arguments", "ai.toolCall.args", "tool_arguments"),
    "tool_result": ("gen_ai.tool.call.result", "ai.toolCall.result", "tool_response"),
    "ttft_s": ("gen_ai.server.time_to_first_token", "gen_ai.response.time_to_first_chunk",
               "gen_ai.client.operation.time_to_first_chunk"),
    "error_type": ("error.type",),
}
FIELDS = tuple(ALIASES)

# How each field's value is coerced: (the type that needs no work, the converter).
# Tokens may arrive as int, double or numeric string; a value that does not
# convert falls through to the next alias. finish_reasons takes any value as sent.
COERCE: dict[str, tuple[type | None, Any]] = {
    **{f: (str, as_str) for f in FIELDS},
    **{f: (int, as_int) for f in FIELDS if f.endswith("_tokens")},
    "cost": (None, as_float), "ttft_s": (None, as_float), "finish_reasons": (None, None),
    # any value: a string as sent, anything else as its JSON text
    "tool_arguments": (str, as_text), "tool_result": (str, as_text),
}

# Keys whose string value is the JSON text of the value: the GenAI semconv records
# gen_ai.tool.call.arguments / .result "as a JSON string if structured format is not
# supported" (@ai-sdk/otel JSON.stringify's them), and the AI SDK's ai.* shape
# JSON.stringify's ai.toolCall.args / .result. There a JSON string literal is read as the
# string it encodes ('"sunny"' → sunny); anything else stays as sent (an object's JSON, or
# the raw text pydantic-ai and Mastra send). The raw attribute keeps its quotes.
JSON_TEXT_KEYS = frozenset({"gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
                            "ai.toolCall.args", "ai.toolCall.result"})


def json_text(v: Any) -> str | None:
    """``as_text``, but a JSON string literal is the string it encodes (JSON_TEXT_KEYS)."""
    if type(v) is str and len(v) >= 2 and v[0] == '"' and v[-1] == '"':
        try:
            decoded = orjson.loads(v)
        except orjson.JSONDecodeError:
            return v
        return (decoded or None) if isinstance(decoded, str) else v
    return as_text(v)


# (the type that needs no work, the converter) of a key, where it differs from its field's
KEY_COERCE: dict[str, tuple[type | None, Any]] = {k: (None, json_text) for k in JSON_TEXT_KEYS}

# -- operation and span type ----------------------------------------------------------

# OpenLLMetry's llm.request.type
REQUEST_TYPE_OPS = {"chat": "chat", "completion": "text_completion",
                    "embedding": "embeddings", "rerank": "rerank"}
# openinference.span.kind (upper-cased first); CHAIN: see CHAIN_KIND
OPENINFERENCE_OPS = {"LLM": "chat", "EMBEDDING": "embeddings", "TOOL": "execute_tool",
                     "AGENT": "invoke_agent", "RETRIEVER": "retrieval", "RERANKER": "rerank"}
# LangChain's AgentExecutor & co. are CHAIN spans: agents only when they look like one
CHAIN_KIND, AGENT_WORD = "CHAIN", "agent"
# traceloop.span.kind; "task" has no GenAI operation
TRACELOOP_OPS = {"workflow": "invoke_workflow", "agent": "invoke_agent", "tool": "execute_tool"}
SPAN_TYPE_OF_OPERATION = {
    "chat": "llm", "text_completion": "llm", "generate_content": "llm",
    "embeddings": "embedding", "execute_tool": "tool", "retrieval": "retrieval",
    "invoke_agent": "agent", "create_agent": "agent", "invoke_workflow": "agent",
}
# a span name's first word that names its operation ("chat gpt-4o")
NAME_OPS = frozenset(SPAN_TYPE_OF_OPERATION)
# span names of other conventions that name an operation: the Vercel AI SDK's legacy
# (ai.*) tool span
OTHER_NAME_OPS = {"ai.toolCall": "execute_tool"}
# span names "invoke_agent NAME" / "create_agent NAME" / "execute_tool NAME" name the agent / tool
AGENT_NAME_OPS = ("invoke_agent", "create_agent")
TOOL_NAME_OP = "execute_tool"
# the traceloop.span.kind whose traceloop.entity.name is the agent's / the tool's name
TRACELOOP_AGENT, TRACELOOP_TOOL = "agent", "tool"
# openinference.span.kind values some rules below are about
LLM_KIND, TOOL_KIND, AGENT_KIND = "LLM", "TOOL", "AGENT"
# LlamaIndex: its instrumentation gives a span to every implementation of an abstract
# method of an LLM class and marks it LLM by the object's type; FunctionCallingLLM's
# _prepare_chat_with_tools only builds the request (the call is its sibling). Such an
# OpenInference LLM span, named "<class>.<method>", is not a call.
NOT_A_CALL_METHODS = ("._prepare_chat_with_tools",)


def not_a_call(openinference_kind: str | None, name: str) -> bool:
    """Is this OpenInference LLM span a framework helper that calls no model?"""
    return (openinference_kind is not None and openinference_kind.upper() == LLM_KIND
            and name.endswith(NOT_A_CALL_METHODS))


def operation(request_type: str | None, openinference_kind: str | None, traceloop_kind: str | None,
              has_agent: bool, name: str) -> str | None:
    """The operation of a span without ``gen_ai.operation.name``: from OpenLLMetry's
    request type, else OpenInference's span kind, else traceloop's span kind, else the
    span name's first word."""
    if request_type is not None:
        op = REQUEST_TYPE_OPS.get(request_type)
        if op is not None:
            return op
    if openinference_kind is not None:
        openinference_kind = openinference_kind.upper()
        if openinference_kind == CHAIN_KIND and (has_agent or AGENT_WORD in name.lower()):
            return "invoke_agent"
        if openinference_kind == LLM_KIND and name.endswith(NOT_A_CALL_METHODS):
            return None
        op = OPENINFERENCE_OPS.get(openinference_kind)
        if op is not None:
            return op
    if traceloop_kind is not None:
        op = TRACELOOP_OPS.get(traceloop_kind)
        if op is not None:
            return op
    first = name.partition(" ")[0]
    return first if first in NAME_OPS else OTHER_NAME_OPS.get(first)


def span_type(op: str | None, has_model: bool) -> str:
    """llm / embedding / tool / retrieval / agent / other; a span naming a model but no
    operation is an llm call (callers pass ``has_model`` false for ``not_a_call`` spans)."""
    if op:
        return SPAN_TYPE_OF_OPERATION.get(op, "other")
    return "llm" if op is None and has_model else "other"


# -- what frameworks keep in JSON documents ----------------------------------------------
# Read by the row path only (the columnar path hands spans carrying ROW_PATH_KEYS, or
# input.value / output.value, to it). Each reader takes the attribute's value as sent
# and returns None for anything it does not recognise.

# OpenInference ``metadata`` (a JSON object): LangChain's create_agent(name=...) puts the
# agent's name there as lc_agent_name, on its graph's span and every span inside; it
# names an OpenInference AGENT span (the graph's own), as do graph.node.name / .id
# (CrewAI: the agent's role; the Agents SDK: its name, also in agent.name).
METADATA, LC_AGENT_NAME = "metadata", "lc_agent_name"
# OpenInference ``llm.invocation_parameters`` (JSON): the request's parameters, so its
# "model" is the requested model. llm.model_name is whatever the instrumentation put
# there: the request's model (LangChain, LlamaIndex, the Agents SDK) or the response's
# (openinference-instrumentation-openai, under CrewAI); when it differs from the
# requested one it is the response model.
INVOCATION_PARAMETERS = "llm.invocation_parameters"
_REQUEST_MODEL_KEYS = ALIASES["request_model"][:ALIASES["request_model"].index("llm.model_name")]
OI_MODEL_NAME = "llm.model_name"
ROW_PATH_KEYS = frozenset({METADATA, INVOCATION_PARAMETERS})


def _json_object(v: Any) -> dict[str, Any] | None:
    v = msgs.maybe_json(v)
    return v if isinstance(v, dict) else None


def metadata_agent_name(metadata: Any) -> str | None:
    """``metadata``'s lc_agent_name (LangChain create_agent)."""
    doc = _json_object(metadata)
    return as_str(doc.get(LC_AGENT_NAME)) if doc is not None else None


def invocation_models(attrs: dict[str, Any], request: str | None,
                      response: str | None) -> tuple[str | None, str | None]:
    """(request model, response model) with ``llm.invocation_parameters``' "model" as the
    request model, unless a GenAI request model attribute is sent; llm.model_name becomes
    the response model when it differs (and no response model attribute is sent)."""
    doc = _json_object(attrs.get(INVOCATION_PARAMETERS))
    model = as_str(doc.get("model")) if doc is not None else None
    if model is None or any(as_str(attrs.get(k)) for k in _REQUEST_MODEL_KEYS):
        return request, response
    named = as_str(attrs.get(OI_MODEL_NAME))
    if response is None and named is not None and named != model:
        response = named
    return model, response


def langchain_response_model(output: Any) -> str | None:
    """The model that answered, from a LangChain ``LLMResult`` in an OpenInference LLM
    span's ``output.value``: ``generations[0][0].generation_info.model_name``, else the
    message's ``response_metadata.model_name``."""
    if not isinstance(output, str) or '"generations"' not in output:
        return None
    doc = _json_object(output)
    gens = doc.get("generations") if doc is not None else None
    if not (isinstance(gens, list) and gens and isinstance(gens[0], list) and gens[0]
            and isinstance(gens[0][0], dict)):
        return None
    gen = gens[0][0]
    info = gen.get("generation_info")
    model = as_str(info.get("model_name")) if isinstance(info, dict) else None
    if model is None:
        message = gen.get("message")
        kwargs = message.get("kwargs") if isinstance(message, dict) else None
        meta = kwargs.get("response_metadata") if isinstance(kwargs, dict) else None
        model = as_str(meta.get("model_name")) if isinstance(meta, dict) else None
    return model


def langchain_tool_call_id(output: Any) -> str | None:
    """The call id a LangChain tool answered, from the ToolMessage (``messages_to_dict``:
    ``{"type": "tool", "data": {"tool_call_id": ...}}``) in an OpenInference TOOL span's
    ``output.value``."""
    if not isinstance(output, str) or '"tool_call_id"' not in output:
        return None
    doc = _json_object(output)
    if doc is None or doc.get("type") != "tool" or not isinstance(doc.get("data"), dict):
        return None
    return as_str(doc["data"].get("tool_call_id"))


# -- provider --------------------------------------------------------------------------

# the values gen_ai.system used before it became gen_ai.provider.name
PROVIDER_PREFIX_RENAMES = {"az.ai.": "azure.ai."}
PROVIDER_RENAMES = {"xai": "x_ai"}


def provider(value: str) -> str:
    """A provider name, lowercased, in today's spelling."""
    value = value.lower()
    for old, new in PROVIDER_PREFIX_RENAMES.items():
        if value.startswith(old):
            return new + value[len(old):]
    return PROVIDER_RENAMES.get(value, value)


# -- events and finish reasons ------------------------------------------------------------

# OpenInference's streaming instrumentations mark the first chunk with this span event,
# OpenLLMetry's add one per chunk: the first of either, minus the span's start, is the TTFT.
FIRST_TOKEN_EVENT = "First Token Stream Event"
OPENLLMETRY_CHUNK_EVENT = "gen_ai.content.completion.chunk"
TTFT_EVENTS = frozenset({FIRST_TOKEN_EVENT, OPENLLMETRY_CHUNK_EVENT})
# A call that says it did not stream has no TTFT: OpenLIT sets
# gen_ai.server.time_to_first_token on every call, on a non-streamed one the whole call.
# (OpenLIT: gen_ai.request.stream, OpenLLMetry: gen_ai.is_streaming; booleans.)
STREAM_FLAGS = ("gen_ai.request.stream", "gen_ai.is_streaming")


def not_streamed(attrs: dict[str, Any]) -> bool:
    """Does the span say, with a boolean false, that its call did not stream?"""
    for k in STREAM_FLAGS:
        if attrs.get(k) is False:
            return True
    return False
EXCEPTION_EVENT = "exception"
# OpenLLMetry: one finish reason per choice, gen_ai.completion.{i}.finish_reason
OPENLLMETRY_FINISH = "gen_ai.completion.{}.finish_reason"
OPENLLMETRY_FIRST_FINISH = OPENLLMETRY_FINISH.format(0)
# One spelling for "the model stopped to call a tool": the GenAI semconv's enum value
# (gen-ai-output-messages.json, FinishReason: stop, length, content_filter, tool_call,
# error) for OpenAI's "tool_calls" (and its legacy "function_call") and Anthropic's
# "tool_use", and the Vercel AI SDK's "tool-calls" (Mastra sends it too; its
# "content-filter" likewise). The finish_reasons column is spelled this way; messages keep
# what was sent.
FINISH_REASON_SPELLINGS = {"tool_calls": "tool_call", "function_call": "tool_call", "tool_use": "tool_call",
                           "tool-calls": "tool_call", "content-filter": "content_filter"}


def finish_reason(value: str) -> str:
    """One finish reason in the column's spelling."""
    return FINISH_REASON_SPELLINGS.get(value, value)


def finish_reasons(value: Any, attrs: dict[str, Any], output: list | None) -> list[str] | None:
    """The ``finish_reasons`` alias's value (an array, a JSON array string or one
    string), else OpenLLMetry's indexed ones in ``attrs``, else the output messages';
    spelled as ``FINISH_REASON_SPELLINGS`` says."""
    if isinstance(value, str) and value.startswith("["):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            pass
    if isinstance(value, list):
        found = [str(x) for x in value if x is not None]
    elif isinstance(value, str) and value:
        found = [value]
    elif OPENLLMETRY_FIRST_FINISH in attrs:
        found, i = [], 0
        while (fr := attrs.get(OPENLLMETRY_FINISH.format(i))) is not None:
            found.append(str(fr))
            i += 1
        return [finish_reason(x) for x in found]
    else:
        found = msgs.finish_reasons(output) or []
    return [finish_reason(x) for x in found] or None


# -- OTLP enums -----------------------------------------------------------------------

KIND_NAMES = dict(enumerate(("unspecified", "internal", "server", "client", "producer", "consumer")))
STATUS_NAMES = dict(enumerate(("unset", "ok", "error")))
TEMPORALITY_NAMES = (None, "delta", "cumulative")
