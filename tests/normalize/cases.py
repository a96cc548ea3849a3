"""The tables of normalization cases: OTLP input → the columns expected.

``test_rows.py`` checks the row path against the expected values of every table;
``test_columnar.py`` runs the span of every case of ``SPAN_TABLES`` (below) through
both paths and checks that they agree. A case added to a table is checked by both; a
new table whose cases build a span goes into ``SPAN_TABLES`` too (``test_rows.py``
fails until it does).
"""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from otelbench.testing.otlp import PARENT, SERVICE, START, event

# -- core fields -----------------------------------------------------------------------

PARENT_IDS = [
    (b"", None),
    (b"\x00" * 8, None),
    (bytes.fromhex("00000000000000ff"), "00000000000000ff"),
    (bytes.fromhex("ABCDEF0123456789"), "abcdef0123456789"),
]


KINDS_AND_STATUSES = [
    (Span.SPAN_KIND_UNSPECIFIED, Status.STATUS_CODE_UNSET, ("unspecified", "unset")),
    (Span.SPAN_KIND_INTERNAL, Status.STATUS_CODE_OK, ("internal", "ok")),
    (Span.SPAN_KIND_CLIENT, Status.STATUS_CODE_ERROR, ("client", "error")),
    (Span.SPAN_KIND_PRODUCER, Status.STATUS_CODE_UNSET, ("producer", "unset")),
    (Span.SPAN_KIND_CONSUMER, Status.STATUS_CODE_UNSET, ("consumer", "unset")),
]


# -- operation, span type, provider ----------------------------------------------------

OPERATIONS = [
    # (attributes, span name, operation, span_type)
    ({"gen_ai.operation.name": "chat"}, "x", "chat", "llm"),
    ({"gen_ai.operation.name": "generate_content"}, "x", "generate_content", "llm"),
    ({"gen_ai.operation.name": "text_completion"}, "x", "text_completion", "llm"),
    ({"gen_ai.operation.name": "embeddings"}, "x", "embeddings", "embedding"),
    ({"gen_ai.operation.name": "retrieval"}, "x", "retrieval", "retrieval"),
    ({"gen_ai.operation.name": "create_agent"}, "x", "create_agent", "agent"),
    ({"gen_ai.operation.name": "invoke_workflow"}, "x", "invoke_workflow", "agent"),
    ({"gen_ai.operation.name": "chat", "llm.request.type": "embedding"}, "x", "chat", "llm"),
    # OpenLLMetry
    ({"llm.request.type": "chat"}, "openai.chat", "chat", "llm"),
    ({"llm.request.type": "completion"}, "x", "text_completion", "llm"),
    ({"llm.request.type": "embedding"}, "x", "embeddings", "embedding"),
    ({"traceloop.span.kind": "workflow"}, "x", "invoke_workflow", "agent"),
    ({"traceloop.span.kind": "agent"}, "x", "invoke_agent", "agent"),
    ({"traceloop.span.kind": "tool"}, "x", "execute_tool", "tool"),
    ({"traceloop.span.kind": "task"}, "x", None, "other"),
    # OpenInference
    ({"openinference.span.kind": "LLM"}, "ChatCompletion", "chat", "llm"),
    ({"openinference.span.kind": "EMBEDDING"}, "x", "embeddings", "embedding"),
    ({"openinference.span.kind": "TOOL"}, "x", "execute_tool", "tool"),
    ({"openinference.span.kind": "AGENT"}, "x", "invoke_agent", "agent"),
    ({"openinference.span.kind": "RETRIEVER"}, "x", "retrieval", "retrieval"),
    ({"openinference.span.kind": "RERANKER"}, "x", "rerank", "other"),
    ({"openinference.span.kind": "CHAIN"}, "RunnableSequence", None, "other"),
    ({"openinference.span.kind": "CHAIN"}, "AgentExecutor", "invoke_agent", "agent"),
    ({"openinference.span.kind": "CHAIN", "agent.name": "a"}, "x", "invoke_agent", "agent"),
    ({"openinference.span.kind": "GUARDRAIL"}, "x", None, "other"),
    # LlamaIndex's request-building helper is marked LLM but calls nothing
    ({"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini"}, "OpenAI._prepare_chat_with_tools",
     None, "other"),
    ({"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini"}, "OpenAI.astream_chat", "chat", "llm"),
    ({"openinference.span.kind": "CHAIN", "llm.model_name": "m"}, "Runner._prepare_chat_with_tools", None, "llm"),
    ({"gen_ai.operation.name": "chat"}, "OpenAI._prepare_chat_with_tools", "chat", "llm"),
    # span name
    ({}, "chat gpt-4o", "chat", "llm"),
    ({}, "execute_tool search", "execute_tool", "tool"),
    ({"ai.operationId": "ai.toolCall"}, "ai.toolCall", "execute_tool", "tool"),  # the Vercel AI SDK's legacy span
    ({}, "invoke_agent triage", "invoke_agent", "agent"),
    ({}, "embeddings", "embeddings", "embedding"),
    ({}, "text_completion m", "text_completion", "llm"),
    ({}, "generate_content gemini", "generate_content", "llm"),
    ({}, "create_agent a", "create_agent", "agent"),
    ({}, "invoke_workflow w", "invoke_workflow", "agent"),
    ({}, "chatter box", None, "other"),
    # a model and no operation → llm
    ({"gen_ai.request.model": "gpt-4o"}, "x", None, "llm"),
    ({"llm.model_name": "gpt-4o"}, "x", None, "llm"),
    ({}, "GET /", None, "other"),
]


PROVIDERS = [
    ({"gen_ai.provider.name": "openai"}, "openai"),
    ({"gen_ai.provider.name": "anthropic", "gen_ai.system": "openai"}, "anthropic"),
    ({"gen_ai.system": "OpenAI"}, "openai"),
    ({"gen_ai.system": "az.ai.inference"}, "azure.ai.inference"),
    ({"gen_ai.system": "az.ai.openai"}, "azure.ai.openai"),
    ({"gen_ai.system": "xai"}, "x_ai"),
    ({"llm.provider": "anthropic", "llm.system": "openai"}, "anthropic"),
    ({"llm.system": "openai"}, "openai"),
    ({"gen_ai.provider.name": ""}, None),
    ({}, None),
]


# -- models, tokens, cost --------------------------------------------------------------

USAGE = [
    # current GenAI semconv
    ({"gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 20,
      "gen_ai.usage.cache_read.input_tokens": 80, "gen_ai.usage.cache_creation.input_tokens": 10,
      "gen_ai.usage.reasoning.output_tokens": 5},
     (100, 20, 120, 80, 10, 5)),
    # deprecated (before v1.27) names and OpenLLMetry's cache/total names
    ({"gen_ai.usage.prompt_tokens": 100, "gen_ai.usage.completion_tokens": 20,
      "llm.usage.total_tokens": 125, "gen_ai.usage.cache_read_input_tokens": 7,
      "gen_ai.usage.cache_creation_input_tokens": 3, "gen_ai.usage.reasoning_tokens": 4},
     (100, 20, 125, 7, 3, 4)),
    # OpenInference
    ({"llm.token_count.prompt": 26, "llm.token_count.completion": 11, "llm.token_count.total": 37,
      "llm.token_count.prompt_details.cache_read": 6, "llm.token_count.prompt_details.cache_write": 2,
      "llm.token_count.completion_details.reasoning": 1},
     (26, 11, 37, 6, 2, 1)),
    # the current name wins over a deprecated one
    ({"gen_ai.usage.prompt_tokens": 1, "gen_ai.usage.input_tokens": 2}, (2, None, None, None, None, None)),
    # coercion: double, numeric strings; junk and bools are dropped
    ({"gen_ai.usage.input_tokens": 12.0, "gen_ai.usage.output_tokens": "7"}, (12, 7, 19, None, None, None)),
    ({"gen_ai.usage.input_tokens": "12.0", "gen_ai.usage.output_tokens": True},
     (12, None, None, None, None, None)),
    ({"gen_ai.usage.input_tokens": "many", "llm.token_count.prompt": 5}, (5, None, None, None, None, None)),
    ({"gen_ai.usage.input_tokens": 0, "gen_ai.usage.output_tokens": 0}, (0, 0, 0, None, None, None)),
    ({}, (None,) * 6),
]


MODELS = [
    ({"gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o-2024-08-06"},
     ("gpt-4o", "gpt-4o-2024-08-06")),
    ({"llm.request.model_name": "a", "llm.response.model_name": "b"}, ("a", "b")),
    ({"llm.model_name": "m"}, ("m", None)),
    ({"embedding.model_name": "text-embedding-3-small"}, ("text-embedding-3-small", None)),
    ({"gen_ai.request.model": 4}, ("4", None)),
    # OpenInference: llm.invocation_parameters' "model" is the request model, llm.model_name
    # then the response model when it differs (openinference-instrumentation-openai, CrewAI)
    ({"llm.model_name": "gpt-4o-mini-2024-07-18", "llm.invocation_parameters": '{"model": "gpt-4o-mini"}'},
     ("gpt-4o-mini", "gpt-4o-mini-2024-07-18")),
    ({"llm.model_name": "gpt-4o-mini", "llm.invocation_parameters": '{"model": "gpt-4o-mini", "stream": true}'},
     ("gpt-4o-mini", None)),
    ({"llm.model_name": "m", "llm.invocation_parameters": '{"base_url": "http://x/v1/"}'}, ("m", None)),
    ({"llm.invocation_parameters": '{"model": "a"}'}, ("a", None)),
    ({"llm.model_name": "n", "llm.invocation_parameters": '{"model": "a"}', "gen_ai.response.model": "r"},
     ("a", "r")),
    # a GenAI request model wins; llm.model_name is then not a response model either
    ({"gen_ai.request.model": "g", "llm.model_name": "n", "llm.invocation_parameters": '{"model": "a"}'},
     ("g", None)),
    ({"llm.model_name": "m", "llm.invocation_parameters": "{bad json"}, ("m", None)),
    ({"llm.model_name": "m", "llm.invocation_parameters": '{"model": ""}'}, ("m", None)),
    # LangChain: the response model only in the LLMResult of an LLM span's output.value
    ({"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
      "output.value": json.dumps({"generations": [[{"text": "", "generation_info": {
          "finish_reason": "stop", "model_name": "gpt-4o-mini-2024-07-18"}}]]})},
     ("gpt-4o-mini", "gpt-4o-mini-2024-07-18")),
    ({"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
      "output.value": json.dumps({"generations": [[{"text": "", "message": {"lc": 1, "type": "constructor", "kwargs": {
          "response_metadata": {"model_name": "gpt-4o-mini-2024-07-18"}}}}]]})},
     ("gpt-4o-mini", "gpt-4o-mini-2024-07-18")),
    ({"openinference.span.kind": "CHAIN",
      "output.value": json.dumps({"generations": [[{"generation_info": {"model_name": "x"}}]]})}, (None, None)),
    ({"openinference.span.kind": "LLM", "output.value": '{"generations": [[]]}'}, (None, None)),
]


_GPT4O = {"gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 1000,
          "gen_ai.usage.output_tokens": 100}

COSTS = [
    ({**_GPT4O, "gen_ai.usage.cost": 0.5}, 0.5, "reported"),
    ({**_GPT4O, "llm.cost.total": "0.25"}, 0.25, "reported"),
    ({**_GPT4O, "operation.cost": 1.935e-05}, 1.935e-05, "reported"),  # pydantic-ai (genai-prices)
    ({**_GPT4O, "operation.cost": 0.1, "gen_ai.usage.cost": 0.5}, 0.5, "reported"),
    ({"gen_ai.usage.cost": 0.0}, 0.0, "reported"),
    # a reported 0 for a priced model that used tokens (OpenLIT offline) is priced instead
    ({**_GPT4O, "gen_ai.usage.cost": 0}, (1000 * 2.5 + 100 * 10) / 1e6, "computed"),
    ({**_GPT4O, "gen_ai.usage.cost": 0.0, "gen_ai.response.model": "gpt-4o-mini-2024-07-18"},
     (1000 * 0.15 + 100 * 0.6) / 1e6, "computed"),
    # ... but stays reported when the model has no price, or no tokens were used
    ({**_GPT4O, "gen_ai.request.model": "local-llama", "gen_ai.usage.cost": 0.0}, 0.0, "reported"),
    ({"gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 0, "gen_ai.usage.output_tokens": 0,
      "gen_ai.usage.cost": 0.0}, 0.0, "reported"),
    ({**_GPT4O, "gen_ai.usage.cost": 0.0001}, 0.0001, "reported"),  # any positive reported cost wins
    (_GPT4O, (1000 * 2.5 + 100 * 10) / 1e6, "computed"),
    ({**_GPT4O, "gen_ai.usage.cache_read.input_tokens": 800},
     (200 * 2.5 + 800 * 1.25 + 100 * 10) / 1e6, "computed"),
    # the response model is priced first
    ({**_GPT4O, "gen_ai.response.model": "gpt-4o-mini-2024-07-18"}, (1000 * 0.15 + 100 * 0.6) / 1e6,
     "computed"),
    # an unknown response model falls back to the request model
    ({**_GPT4O, "gen_ai.response.model": "my-deployment"}, (1000 * 2.5 + 100 * 10) / 1e6, "computed"),
    ({**_GPT4O, "gen_ai.request.model": "local-llama"}, None, None),
    ({"gen_ai.request.model": "gpt-4o"}, None, None),  # no token counts
    ({}, None, None),
]


# -- agent, tool, conversation, ttft, finish reasons, errors ---------------------------

AGENTS = [
    # (attributes, span name, parent, agent_name, agent_id)
    ({"gen_ai.agent.name": "triage", "gen_ai.agent.id": "asst_1"}, "x", PARENT, "triage", "asst_1"),
    ({"agent.name": "planner"}, "x", PARENT, "planner", None),
    ({"gen_ai.agent.name": "a", "agent.name": "b"}, "x", PARENT, "a", None),
    ({"traceloop.span.kind": "agent", "traceloop.entity.name": "researcher"}, "x", PARENT, "researcher", None),
    ({"traceloop.span.kind": "task", "traceloop.entity.name": "step"}, "x", PARENT, None, None),
    ({"gen_ai.operation.name": "invoke_agent"}, "invoke_agent helper", PARENT, "helper", None),
    # an agent span without a name, a GenAI root: no name (a service-name fallback on a root
    # would outrank a real agent span below it; the views fall back instead)
    ({"gen_ai.operation.name": "invoke_agent"}, "invoke_agent", PARENT, None, None),
    ({"openinference.span.kind": "AGENT"}, "run", PARENT, None, None),
    ({"gen_ai.operation.name": "chat"}, "chat m", b"", None, None),
    ({"openinference.span.kind": "CHAIN"}, "LangGraph", b"", None, None),
    ({"http.method": "GET"}, "GET /", b"", None, None),
    ({"gen_ai.operation.name": "chat"}, "chat m", PARENT, None, None),
    # OpenInference AGENT spans: LangChain create_agent's metadata, graph node name / id
    ({"openinference.span.kind": "AGENT",
      "metadata": '{"ls_integration": "langchain_create_agent", "lc_agent_name": "weather_agent"}'},
     "weather_agent", b"", "weather_agent", None),
    ({"openinference.span.kind": "AGENT", "graph.node.id": "weather_agent"}, "weather_agent._execute_core", PARENT,
     "weather_agent", None),
    ({"openinference.span.kind": "AGENT", "graph.node.name": "Planner", "graph.node.id": "n1"}, "x", PARENT,
     "Planner", None),
    ({"openinference.span.kind": "AGENT", "metadata": '{"lc_agent_name": "a"}', "graph.node.id": "b"}, "x", PARENT,
     "a", None),
    ({"openinference.span.kind": "AGENT", "agent.name": "a", "graph.node.id": "b"}, "x", PARENT, "a", None),
    ({"openinference.span.kind": "AGENT", "metadata": "not json"}, "Agent workflow", b"", None, None),
    # ... but not on other spans, which carry the same metadata inside the agent
    ({"openinference.span.kind": "LLM", "metadata": '{"lc_agent_name": "weather_agent"}'}, "ChatOpenAI", PARENT,
     None, None),
    ({"openinference.span.kind": "CHAIN", "graph.node.id": "n"}, "model", PARENT, None, None),
]


TOOLS = [
    ({"gen_ai.tool.name": "search", "gen_ai.tool.call.id": "call_1"}, "x", ("search", "call_1")),
    ({"tool.name": "calc", "tool_call.id": "c2"}, "x", ("calc", "c2")),
    ({"traceloop.span.kind": "tool", "traceloop.entity.name": "fetch"}, "x", ("fetch", None)),
    ({"gen_ai.operation.name": "execute_tool"}, "execute_tool web_search", ("web_search", None)),
    # LangChain (OpenInference): the ToolMessage in the TOOL span's output.value
    ({"openinference.span.kind": "TOOL", "tool.name": "get_weather", "output.value": json.dumps(
        {"type": "tool", "data": {"content": "sunny", "type": "tool", "tool_call_id": "call_1", "status": "success"}}),
      "output.mime_type": "application/json"}, "get_weather", ("get_weather", "call_1")),
    ({"openinference.span.kind": "TOOL", "tool.name": "t", "tool_call.id": "c0",
      "output.value": '{"type": "tool", "data": {"tool_call_id": "c1"}}'}, "t", ("t", "c0")),
    ({"openinference.span.kind": "TOOL", "tool.name": "t", "output.value": '{"tool_call_id": "c1"}'}, "t",
     ("t", None)),
    ({"openinference.span.kind": "CHAIN", "output.value": '{"type": "tool", "data": {"tool_call_id": "c1"}}'}, "t",
     (None, None)),
    ({}, "x", (None, None)),
]


_KWARGS = '{"args": [], "kwargs": {"city": "Paris"}}'
_TOOL_MESSAGE = json.dumps({"type": "tool", "data": {"content": "sunny", "type": "tool", "tool_call_id": "call_1"}})
_TOOL_OUTPUT = json.dumps({"blocks": [{"text": "sunny"}], "tool_name": "get_weather",
                           "raw_input": {"args": [], "kwargs": {"city": "Paris"}}, "raw_output": "sunny"})
TOOL_IO = [
    # (attributes, span name, (tool_arguments, tool_result))
    # GenAI semconv (pydantic-ai, logfire): as sent; a structured value as its JSON
    ({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.arguments": '{"city":"Paris"}',
      "gen_ai.tool.call.result": "sunny, 22 °C"}, "execute_tool get_weather", ('{"city":"Paris"}', "sunny, 22 °C")),
    ({"gen_ai.tool.call.arguments": {"city": "Paris", "days": 2}, "gen_ai.tool.call.result": ["sunny", 22]}, "x",
     ('{"city":"Paris","days":2}', '["sunny",22]')),
    ({"gen_ai.tool.call.result": 22, "gen_ai.tool.call.arguments": ""}, "x", (None, "22")),
    ({"gen_ai.tool.call.result": True, "gen_ai.tool.call.arguments": 2.5}, "x", ("2.5", "true")),
    # the GenAI key wins over the older spellings
    ({"gen_ai.tool.call.arguments": "{}", "tool_arguments": '{"a":1}', "tool_response": "r"}, "x", ("{}", "r")),
    # pydantic-ai's instrumentation v1 ("running tool")
    ({"gen_ai.tool.name": "t", "tool_arguments": '{"a":1}', "tool_response": "ok"}, "running tool", ('{"a":1}', "ok")),
    # the Vercel AI SDK's legacy ai.toolCall span: JSON.stringify'd; a JSON string is its text
    ({"ai.toolCall.name": "get_weather", "ai.toolCall.id": "call_1", "ai.toolCall.args": '{"city":"Paris"}',
      "ai.toolCall.result": '"sunny"'}, "ai.toolCall", ('{"city":"Paris"}', "sunny")),
    ({"ai.toolCall.result": '{"t": 22}', "ai.toolCall.args": '"Paris"'}, "ai.toolCall", ("Paris", '{"t": 22}')),
    # AI SDK 7's GenAI keys, JSON.stringify'd as the semconv allows: the string literal
    # decoded (escapes included), an object's JSON as sent
    ({"gen_ai.tool.call.arguments": '{"city":"Paris"}', "gen_ai.tool.call.result": '"sunny, 22 \\u00b0C"'},
     "execute_tool get_weather", ('{"city":"Paris"}', "sunny, 22 °C")),
    ({"gen_ai.tool.call.result": r'"line 1\nline \"2\""'}, "x", (None, 'line 1\nline "2"')),
    ({"gen_ai.tool.call.result": '{"forecast": "sunny"}'}, "x", (None, '{"forecast": "sunny"}')),
    # not a JSON string literal: as sent (unbalanced, not JSON, a number, a lone quote)
    ({"gen_ai.tool.call.result": '"sunny" and "dry"'}, "x", (None, '"sunny" and "dry"')),
    ({"gen_ai.tool.call.result": r'"unterminated \"'}, "x", (None, r'"unterminated \"')),
    ({"gen_ai.tool.call.result": "22", "gen_ai.tool.call.arguments": '"'}, "x", ('"', "22")),
    # an empty JSON string is no result: the next alias
    ({"gen_ai.tool.call.result": '""', "tool_response": "r"}, "x", (None, "r")),
    # pydantic-ai's instrumentation v1 sends the value, not its JSON: kept as sent
    ({"tool_response": '"quoted"', "tool_arguments": '"a"'}, "running tool", ('"a"', '"quoted"')),
    # OpenInference TOOL spans: input.value / output.value by their mime types
    ({"openinference.span.kind": "TOOL", "input.value": '{"city": "Paris"}', "input.mime_type": "application/json",
      "output.value": "sunny, 22 °C", "output.mime_type": "text/plain"}, "get_weather.run",
     ('{"city": "Paris"}', "sunny, 22 °C")),
    ({"openinference.span.kind": "TOOL", "input.value": "Paris", "output.value": _TOOL_MESSAGE,
      "output.mime_type": "application/json"}, "get_weather", ("Paris", "sunny")),  # LangChain
    ({"openinference.span.kind": "TOOL", "input.value": '{"kwargs": {"city": "Paris"}}',
      "input.mime_type": "application/json", "output.value": _TOOL_OUTPUT, "output.mime_type": "application/json"},
     "FunctionTool.acall", ('{"city":"Paris"}', "sunny")),  # LlamaIndex
    ({"openinference.span.kind": "TOOL", "output.value": '"quoted"', "output.mime_type": "application/json"}, "t",
     (None, "quoted")),
    ({"openinference.span.kind": "TOOL", "output.value": '"quoted"'}, "t", (None, '"quoted"')),  # text: as sent
    ({"openinference.span.kind": "TOOL", "input.value": "{bad", "input.mime_type": "application/json",
      "output.value": '{"raw_output": {"t": 22}, "tool_name": "w", "raw_input": {}}',
      "output.mime_type": "application/json"}, "t", ("{bad", '{"t":22}')),
    ({"openinference.span.kind": "TOOL", "input.value": '{"args": [1], "kwargs": {"a": 2}}',
      "input.mime_type": "application/json"}, "t", ('{"args": [1], "kwargs": {"a": 2}}', None)),
    ({"openinference.span.kind": "TOOL", "input.value": '{"args": ["x"], "kwargs": {}}',
      "input.mime_type": "application/json"}, "t", ('["x"]', None)),
    # only a TOOL span's input and output are a tool call's
    ({"openinference.span.kind": "CHAIN", "input.value": '{"city": "Paris"}', "output.value": "sunny"}, "t",
     (None, None)),
    # OpenLLMetry tool spans: traceloop.entity.input / output, always JSON
    ({"traceloop.span.kind": "tool", "traceloop.entity.name": "get_weather", "traceloop.entity.input": _KWARGS,
      "traceloop.entity.output": '"sunny, 22 \\u00b0C"'}, "get_weather.tool", ('{"city":"Paris"}', "sunny, 22 °C")),
    ({"traceloop.span.kind": "tool", "traceloop.entity.input": '{"inputs": "{\'city\': \'Paris\'}", "tags": [], '
      '"metadata": {}, "kwargs": {}}', "traceloop.entity.output": '{"outputs": {"t": 22}, "kwargs": {}}'}, "t",
     ("{'city': 'Paris'}", '{"t":22}')),  # its LangChain callback
    ({"traceloop.span.kind": "tool", "traceloop.entity.output": '{"t": 22}'}, "t", (None, '{"t": 22}')),
    ({"traceloop.span.kind": "task", "traceloop.entity.input": _KWARGS}, "t", (None, None)),
    ({}, "x", (None, None)),
]


CONVERSATIONS = [
    ({"gen_ai.conversation.id": "conv_1", "session.id": "s"}, "conv_1"),
    ({"session.id": "s"}, "s"),
    ({"gen_ai.conversation.id": 42}, "42"),
    ({}, None),
]

AGENT_CALLS = [  # pydantic-ai's one agent invocation
    ({"gen_ai.agent.call.id": "0196-abc", "gen_ai.conversation.id": "conv_1"}, "0196-abc"),
    ({"gen_ai.agent.call.id": 7}, "7"),
    ({"gen_ai.agent.id": "asst_1"}, None),  # the agent, not one call of it
]


TTFTS = [
    ({"gen_ai.server.time_to_first_token": 0.25}, [], 250.0),
    ({"gen_ai.response.time_to_first_chunk": "0.5"}, [], 500.0),
    ({"gen_ai.response.time_to_first_chunk": 1}, [], 1000.0),
    ({}, [event("First Token Stream Event", t=START + 120_000_000)], 120.0),
    # pydantic-ai / logfire: the current semconv name (seconds), as a span attribute
    ({"gen_ai.client.operation.time_to_first_chunk": 0.165}, [], 165.0),
    # OpenLLMetry: one event per streamed chunk, the first one counts
    ({}, [event("retry", t=START + 5_000_000), event("gen_ai.content.completion.chunk", t=START + 156_000_000),
          event("gen_ai.content.completion.chunk", t=START + 170_000_000)], 156.0),
    ({"gen_ai.server.time_to_first_token": 0.2}, [event("gen_ai.content.completion.chunk", t=START + 156_000_000)],
     200.0),  # an attribute wins over the events
    # a call that says it did not stream has none (OpenLIT times the whole call)
    ({"gen_ai.server.time_to_first_token": 0.013, "gen_ai.request.stream": False}, [], None),
    ({"gen_ai.server.time_to_first_token": 0.15, "gen_ai.request.stream": True}, [], 150.0),
    ({"gen_ai.is_streaming": False}, [event("gen_ai.content.completion.chunk", t=START + 1_000_000)], None),
    ({"gen_ai.server.time_to_first_token": 0.25, "gen_ai.request.stream": "false"}, [], 250.0),  # a boolean only
    ({"llm.ttft": 3}, [], None),
    ({}, [], None),
]


_OUT_STOP = '[{"role":"assistant","parts":[{"type":"text","content":"hi"}],"finish_reason":"stop"}]'


FINISH_REASONS = [
    ({"gen_ai.response.finish_reasons": ["stop", "length"]}, ["stop", "length"]),
    # one spelling for a tool call: the GenAI semconv's "tool_call" (conventions.FINISH_REASON_SPELLINGS)
    ({"gen_ai.response.finish_reasons": '["tool_calls"]'}, ["tool_call"]),
    ({"gen_ai.response.finish_reasons": ["tool_calls", "stop"]}, ["tool_call", "stop"]),
    ({"gen_ai.response.finish_reasons": "tool_calls"}, ["tool_call"]),
    ({"llm.finish_reason": "tool_use"}, ["tool_call"]),
    ({"gen_ai.response.finish_reasons": "function_call"}, ["tool_call"]),
    ({"gen_ai.response.finish_reasons": "stop"}, ["stop"]),
    ({"llm.finish_reason": "stop"}, ["stop"]),
    ({"gen_ai.completion.0.finish_reason": "stop", "gen_ai.completion.1.finish_reason": "length"},
     ["stop", "length"]),
    ({"gen_ai.output.messages": _OUT_STOP}, ["stop"]),
    ({}, None),
]


ERRORS = [
    ({"error.type": "timeout"}, [], Status(code=2, message="deadline"), ("timeout", "deadline")),
    ({}, [event("exception", {"exception.type": "ValueError", "exception.message": "bad"})],
     Status(code=2), ("ValueError", "bad")),
    ({"error.type": "RateLimit"}, [event("exception", {"exception.type": "E", "exception.message": "m"})],
     Status(code=2, message="429"), ("RateLimit", "429")),
    ({}, [], Status(code=1), (None, None)),
]


# -- messages --------------------------------------------------------------------------

def text(role: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}], **extra}


CALL = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'}
RESULT = {"type": "tool_call_response", "id": "call_1", "response": "cloudy"}
_OAI_CALL = {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}

MESSAGES = [
    # current GenAI: JSON strings + system instructions
    ("genai-json",
     {"gen_ai.system_instructions": '[{"type":"text","content":"be brief"}]',
      "gen_ai.input.messages": json.dumps([text("user", "hi")]),
      "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [CALL], "finish_reason": "tool_call"}])},
     [], [text("system", "be brief"), text("user", "hi")],
     [{"role": "assistant", "parts": [CALL], "finish_reason": "tool_call"}]),
    # current GenAI: structured AnyValue, plain-string system instructions
    ("genai-structured",
     {"gen_ai.system_instructions": "be brief",
      "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": "hi"}]},
                                {"role": "tool", "parts": [RESULT]}],
      "gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "reasoning", "content": "hmm"}]}]},
     [], [text("system", "be brief"), text("user", "hi"), {"role": "tool", "parts": [RESULT]}],
     [{"role": "assistant", "parts": [{"type": "reasoning", "content": "hmm"}]}]),
    # old-style {"role", "content"} in gen_ai.input.messages, OpenAI tool calls
    ("genai-old-shape",
     {"gen_ai.input.messages": json.dumps([{"role": "user", "content": "hi"},
                                           {"role": "assistant", "content": None, "tool_calls": [_OAI_CALL]},
                                           {"role": "tool", "tool_call_id": "call_1", "content": "cloudy"}])},
     [], [text("user", "hi"), {"role": "assistant", "parts": [CALL]}, {"role": "tool", "parts": [RESULT]}],
     None),
    # span events gen_ai.content.prompt / completion
    ("content-events", {},
     [event("gen_ai.content.prompt", {"gen_ai.prompt": json.dumps([{"role": "user", "content": "hi"}])}),
      event("gen_ai.content.completion", {"gen_ai.completion": json.dumps([{"role": "assistant", "content": "yo"}])})],
     [text("user", "hi")], [text("assistant", "yo")]),
    # span events in the older openai-v2 style
    ("role-events", {},
     [event("gen_ai.system.message", {"gen_ai.system": "openai", "content": "be brief"}),
      event("gen_ai.user.message", {"gen_ai.event.content": '{"content":"hi"}'}),
      event("gen_ai.tool.message", {"content": "cloudy", "id": "call_1"}),
      event("gen_ai.choice", {"index": 0, "finish_reason": "stop",
                              "message": '{"role":"assistant","content":"yo"}'})],
     [text("system", "be brief"), text("user", "hi"), {"role": "tool", "parts": [RESULT]}],
     [text("assistant", "yo", finish_reason="stop")]),
    # system instructions lead the input whichever source gave it, here span events
    ("system-instructions-and-events",
     {"gen_ai.system_instructions": '[{"type":"text","content":"be brief"}]'},
     [event("gen_ai.user.message", {"gen_ai.event.content": '{"content":"hi"}'})],
     [text("system", "be brief"), text("user", "hi")], None),
    # OpenLLMetry indexed attributes
    ("openllmetry",
     {"gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "be brief",
      "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "hi",
      "gen_ai.prompt.2.role": "assistant", "gen_ai.prompt.2.tool_calls.0.id": "call_1",
      "gen_ai.prompt.2.tool_calls.0.name": "get_weather",
      "gen_ai.prompt.2.tool_calls.0.arguments": '{"city":"Paris"}',
      "gen_ai.prompt.3.role": "tool", "gen_ai.prompt.3.content": "cloudy", "gen_ai.prompt.3.tool_call_id": "call_1",
      "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "yo",
      "gen_ai.completion.0.finish_reason": "stop"},
     [], [text("system", "be brief"), text("user", "hi"), {"role": "assistant", "parts": [CALL]},
          {"role": "tool", "parts": [RESULT]}],
     [text("assistant", "yo", finish_reason="stop")]),
    # OpenLLMetry multi-part content is a JSON array
    ("openllmetry-parts",
     {"gen_ai.prompt.0.role": "user",
      "gen_ai.prompt.0.content": '[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"u"}}]'},
     [], [{"role": "user", "parts": [{"type": "text", "content": "look"},
                                     {"type": "image_url", "image_url": {"url": "u"}}]}], None),
    # OpenInference indexed attributes (contents, tool calls, tool results)
    ("openinference",
     {"llm.input_messages.0.message.role": "user",
      "llm.input_messages.0.message.contents.0.message_content.type": "text",
      "llm.input_messages.0.message.contents.0.message_content.text": "hi",
      "llm.input_messages.1.message.role": "assistant",
      "llm.input_messages.1.message.tool_calls.0.tool_call.id": "call_1",
      "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "get_weather",
      "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments": '{"city":"Paris"}',
      "llm.input_messages.2.message.role": "tool", "llm.input_messages.2.message.content": "cloudy",
      "llm.input_messages.2.message.tool_call_id": "call_1",
      "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "yo",
      "input.value": "ignored: indexed messages win"},
     [], [text("user", "hi"), {"role": "assistant", "parts": [CALL]}, {"role": "tool", "parts": [RESULT]}],
     [text("assistant", "yo")]),
    # OpenInference input.value / output.value
    ("io-json-messages",
     {"input.value": json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
      "input.mime_type": "application/json",
      "output.value": json.dumps({"choices": [{"finish_reason": "stop",
                                               "message": {"role": "assistant", "content": "yo"}}]}),
      "output.mime_type": "application/json"},
     [], [text("user", "hi")], [text("assistant", "yo", finish_reason="stop")]),
    # text is a message; a JSON object of a shape not known is not, a JSON string is its text
    ("io-text", {"input.value": "what is 2+2?", "output.value": '{"answer": 4}', "output.mime_type": "application/json"},
     [], [text("user", "what is 2+2?")], None),
    ("io-json-string", {"input.value": '"what is 2+2?"', "input.mime_type": "application/json",
                        "output.value": "4", "output.mime_type": "application/json"},
     [], [text("user", "what is 2+2?")], [text("assistant", "4")]),
    # a bare array of messages (the Agents SDK's generation spans); the choices of an
    # OpenAI response without content are none (no message without parts)
    ("io-message-array",
     {"input.value": json.dumps([{"content": "be brief", "role": "system"}, {"role": "user", "content": "hi"}]),
      "input.mime_type": "application/json",
      "output.value": json.dumps({"choices": [{"finish_reason": "stop", "message": {"role": "assistant"}}]}),
      "output.mime_type": "application/json"},
     [], [text("system", "be brief"), text("user", "hi")], None),
    # LangChain 1.x / LangGraph (OpenInference): the graph's state, in as role/content, out as
    # messages_to_dict; the tools node's input (tool calls, not messages) is none
    ("langgraph-state",
     {"llm.input_messages.0.message.role": "user",  # a role alone is no message: input.value is read
      "input.value": json.dumps({"messages": [{"role": "user", "content": "What is the weather in Paris?"}]}),
      "input.mime_type": "application/json",
      "output.value": json.dumps({"messages": [
          {"type": "human", "data": {"content": "What is the weather in Paris?", "type": "human", "name": None}},
          {"type": "ai", "data": {"content": "", "type": "ai", "name": "weather_agent",
                                  "response_metadata": {"finish_reason": "tool_calls", "model_name": "m"},
                                  "tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1",
                                                  "type": "tool_call"}]}},
          {"type": "tool", "data": {"content": "cloudy", "type": "tool", "name": "get_weather",
                                    "tool_call_id": "call_1"}},
          {"type": "ai", "data": {"content": "It is cloudy.", "response_metadata": {"finish_reason": "stop"}}},
          {"type": "ai", "data": {"content": ""}},
          {"type": "remove", "data": {"id": "x"}}]}),
      "output.mime_type": "application/json"},
     [], [text("user", "What is the weather in Paris?")],
     [text("user", "What is the weather in Paris?"),
      {"role": "assistant", "parts": [{**CALL, "arguments": {"city": "Paris"}}], "name": "weather_agent"},
      {"role": "tool", "parts": [RESULT], "name": "get_weather"},
      text("assistant", "It is cloudy.")]),
    ("langchain-tools-node",
     {"input.value": json.dumps([{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1",
                                  "type": "tool_call"}]), "input.mime_type": "application/json"},
     [], None, None),
    # CrewAI: the crew's tasks in, its output's raw answer out (a TaskOutput's too, not its messages)
    ("crewai-crew",
     {"openinference.span.kind": "CHAIN",
      "crew_tasks": json.dumps([{"id": "t1", "description": "What is the weather in Paris?", "agent_role": "a"},
                                {"id": "t2", "description": ""}, "junk"]),
      "output.value": json.dumps({"raw": "It is cloudy.", "pydantic": None, "tasks_output": []}),
      "output.mime_type": "application/json"},
     [], [text("user", "What is the weather in Paris?")], [text("assistant", "It is cloudy.")]),
    ("crewai-task-output",
     {"input.value": json.dumps({"agent": {"role": "a"}, "context": "", "tools": []}),
      "input.mime_type": "application/json",
      "output.value": json.dumps({"description": "d", "expected_output": "e", "raw": "It is cloudy.",
                                  "messages": [{"role": "system", "content": "You are a."}]}),
      "output.mime_type": "application/json"},
     [], None, [text("assistant", "It is cloudy.")]),
    # LlamaIndex: the workflow's StopEvent repr, read exactly; other reprs and unknown JSON are none
    ("llamaindex-stop-event",
     {"input.value": json.dumps({"init_state": {"is_running": False}, "start_event": "AgentWorkflowStartEvent()"}),
      "input.mime_type": "application/json",
      "output.value": "StopEvent(result=AgentOutput(response=ChatMessage(role=<MessageRole.ASSISTANT: 'assistant'>, "
                      "additional_kwargs={}, blocks=[TextBlock(block_type='text', text='It is 22 °C in \\'Paris\\'.'), "
                      "TextBlock(block_type='text', text=\"It's sunny.\\n\")]), structured_response=None, curr...",
      "output.mime_type": "text/plain"},
     [], None, [{"role": "assistant", "parts": [{"type": "text", "content": "It is 22 °C in 'Paris'."},
                                                {"type": "text", "content": "It's sunny.\n"}]}]),
    ("llamaindex-cut-short",
     {"input.value": "AgentInput(input=[ChatMessage(role=<MessageRole.USER: 'user'>, additional_kwargs={}, "
                     "blocks=[TextBlock(block_type='text', text='hi')])], current_agent_name='a')",
      "input.mime_type": "text/plain",
      "output.value": "StopEvent(result=AgentOutput(response=ChatMessage(role=<MessageRole.ASSISTANT: 'assistant'>, "
                      "additional_kwargs={}, blocks=[TextBlock(block_type='text', text='It is a long ans...",
      "output.mime_type": "text/plain"},
     [], None, None),
    ("llamaindex-prepare-chat",
     {"input.value": json.dumps({"tools": ["<FunctionTool object>"], "chat_history": ["ChatMessage(role=...)"]}),
      "input.mime_type": "application/json",
      "output.value": json.dumps({"messages": ["ChatMessage(role=<MessageRole.USER: 'user'>, ...)"], "tools": []}),
      "output.mime_type": "application/json"},
     [], None, None),
    # OpenLLMetry: the decorated function's one argument and its return value, on workflow /
    # agent / task spans (a tool's are its arguments and result)
    ("traceloop-workflow",
     {"traceloop.span.kind": "workflow", "traceloop.entity.input": '{"args": ["What is the weather?"], "kwargs": {}}',
      "traceloop.entity.output": '"It is cloudy."'},
     [], [text("user", "What is the weather?")], [text("assistant", "It is cloudy.")]),
    ("traceloop-agent-messages",
     {"traceloop.span.kind": "agent",
      "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"messages": [{"role": "user", "content": "hi"}]}}),
      "traceloop.entity.output": json.dumps({"messages": [{"role": "assistant", "content": "yo"}]})},
     [], [text("user", "hi")], [text("assistant", "yo")]),
    ("traceloop-two-arguments",
     {"traceloop.span.kind": "task", "traceloop.entity.input": '{"args": ["a", "b"], "kwargs": {}}',
      "traceloop.entity.output": "null"},
     [], None, None),
    ("traceloop-tool",
     {"traceloop.span.kind": "tool", "traceloop.entity.input": '{"args": [], "kwargs": {"city": "Paris"}}',
      "traceloop.entity.output": '"cloudy"'},
     [], None, None),
    # pydantic-ai's agent run span: the conversation up to the first answer in, the last message out
    ("pydantic-ai-run",
     {"gen_ai.system_instructions": '[{"type":"text","content":"be brief"}]',
      "pydantic_ai.all_messages": json.dumps([text("user", "earlier"), text("assistant", "ok"), text("user", "hi"),
                                              {"role": "assistant", "parts": [CALL], "finish_reason": "tool_call"},
                                              {"role": "user", "parts": [RESULT]},
                                              text("assistant", "yo", finish_reason="stop")]),
      "pydantic_ai.new_message_index": 2, "final_result": "yo"},
     [], [text("system", "be brief"), text("user", "earlier"), text("assistant", "ok"), text("user", "hi")],
     [text("assistant", "yo", finish_reason="stop")]),
    ("pydantic-ai-output-tool",
     {"pydantic_ai.all_messages": json.dumps([text("user", "hi"), {"role": "assistant", "parts": [CALL]},
                                              {"role": "user", "parts": [RESULT]}]),
      "final_result": '{"city": "Paris"}'},
     [], [text("user", "hi")], [text("assistant", '{"city": "Paris"}')]),
    # Mastra's invoke_agent span: the user's string beside its instructions, {"text"} out
    ("mastra-run",
     {"gen_ai.system_instructions": '[{"type":"text","content":"be brief"}]',
      "mastra.agent_run.input": "What is the weather?",
      "mastra.agent_run.output": '{"text":"It is cloudy.","files":[]}'},
     [], [text("system", "be brief"), text("user", "What is the weather?")], [text("assistant", "It is cloudy.")]),
    ("mastra-run-messages",
     {"mastra.agent_run.input": json.dumps([{"role": "user", "content": "hi"}]), "mastra.agent_run.output": "yo"},
     [], [text("user", "hi")], [text("assistant", "yo")]),
    ("mastra-run-input-messages-win",
     {"gen_ai.input.messages": json.dumps([text("user", "hi")]), "mastra.agent_run.input": "other",
      "mastra.agent_run.output": '{"files":[]}'},
     [], [text("user", "hi")], None),
    # the Vercel AI SDK's ai.* spans: ai.prompt (what generateText was given), ai.response.text
    ("ai-sdk-prompt",
     {"ai.prompt": json.dumps({"system": "be brief", "prompt": "What is the weather?"}),
      "ai.response.text": "It is cloudy."},
     [], [text("system", "be brief"), text("user", "What is the weather?")], [text("assistant", "It is cloudy.")]),
    ("ai-sdk-prompt-messages",
     {"ai.prompt": json.dumps({"messages": [{"role": "user", "content": "hi"}]})},
     [], [text("user", "hi")], None),
    ("ai-sdk-prompt-not-json",
     {"ai.prompt": "{not json", "ai.response.text": ""},
     [], None, None),
    # a model call's span (doGenerate / doStream): its ai.response.toolCalls after its text,
    # the input as sent (ai 7: an object; ai 6: the JSON text)
    ("ai-sdk-call-tool-calls",
     {"ai.operationId": "ai.generateText.doGenerate", "ai.response.text": "",
      "ai.response.toolCalls": '[{"toolCallId":"call_1","toolName":"get_weather","input":{"city":"Paris"}}]'},
     [], None, [{"role": "assistant", "parts": [{**CALL, "arguments": {"city": "Paris"}}]}]),
    ("ai-sdk-stream-text-and-tool-calls",
     {"ai.operationId": "ai.streamText.doStream", "ai.response.text": "Let me check.",
      "ai.response.toolCalls": '[{"toolCallId":"call_1","toolName":"get_weather","input":"{\\"city\\":\\"Paris\\"}"}]'},
     [], None, [{"role": "assistant", "parts": [{"type": "text", "content": "Let me check."}, CALL]}]),
    # ai.generateText's toolCalls are every step's, not its answer: the text alone
    ("ai-sdk-run-tool-calls",
     {"ai.operationId": "ai.generateText", "ai.response.text": "It is cloudy.",
      "ai.response.toolCalls": '[{"toolCallId":"call_1","toolName":"get_weather","input":{}}]'},
     [], None, [text("assistant", "It is cloudy.")]),
    ("ai-sdk-call-tool-calls-not-json",
     {"ai.operationId": "ai.generateText.doGenerate", "ai.response.toolCalls": "[not json"},
     [], None, None),
    # OpenLIT: the system prompt in gen_ai.system_instructions and as the first input message: once
    ("system-once",
     {"gen_ai.system_instructions": '[{"type":"text","content":"be brief"}]',
      "gen_ai.input.messages": json.dumps([text("system", "be brief"), text("user", "hi")])},
     [], [text("system", "be brief"), text("user", "hi")], None),
    ("system-differs",
     {"gen_ai.system_instructions": '[{"type":"text","content":"be brief"}]',
      "gen_ai.input.messages": json.dumps([text("system", "be kind"), text("user", "hi")])},
     [], [text("system", "be brief"), text("system", "be kind"), text("user", "hi")], None),
    # Anthropic content blocks inside old-style messages
    ("anthropic-blocks",
     {"gen_ai.input.messages": json.dumps([
         {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"},
                                           {"type": "tool_use", "id": "call_1", "name": "get_weather",
                                            "input": {"city": "Paris"}}]},
         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "cloudy"}]}])},
     [], [{"role": "assistant", "parts": [{"type": "reasoning", "content": "hmm"},
                                          {**CALL, "arguments": {"city": "Paris"}}]},
          {"role": "user", "parts": [RESULT]}], None),
    # gen_ai.prompt as a plain-text span attribute
    ("prompt-attribute", {"gen_ai.prompt": "hello", "gen_ai.completion": "world"}, [],
     [text("user", "hello")], [text("assistant", "world")]),
    ("nothing", {"gen_ai.operation.name": "chat"}, [], None, None),
]


# -- log records -----------------------------------------------------------------------

LOG_EVENT_NAMES = [
    ("gen_ai.user.message", {}, "gen_ai.user.message"),
    ("", {"event.name": "gen_ai.choice"}, "gen_ai.choice"),
    ("a", {"event.name": "b"}, "a"),
    ("", {}, None),
]


LOG_EVENTS = [
    ("gen_ai.system.message", {"content": "be brief"}, {}, "input", [text("system", "be brief")]),
    ("gen_ai.user.message", {"content": "hi"}, {}, "input", [text("user", "hi")]),
    ("gen_ai.user.message", None, {}, "input", [{"role": "user", "parts": []}]),  # content capture off
    ("gen_ai.assistant.message", {"tool_calls": [_OAI_CALL]}, {}, "input",
     [{"role": "assistant", "parts": [CALL]}]),
    ("gen_ai.tool.message", {"content": "cloudy", "id": "call_1"}, {}, "input", [{"role": "tool", "parts": [RESULT]}]),
    ("gen_ai.user.message", {"role": "developer", "content": "x"}, {}, "input", [text("developer", "x")]),
    ("gen_ai.choice", {"index": 0, "finish_reason": "tool_calls",
                       "message": {"role": "assistant", "tool_calls": [_OAI_CALL]}}, {}, "output",
     [{"role": "assistant", "parts": [CALL], "finish_reason": "tool_calls"}]),
    ("gen_ai.choice", {"index": 0, "finish_reason": "stop", "message": {"content": "yo"}}, {}, "output",
     [text("assistant", "yo", finish_reason="stop")]),
    ("gen_ai.client.inference.operation.details", None,
     {"gen_ai.system_instructions": '[{"type":"text","content":"be brief"}]',
      "gen_ai.input.messages": json.dumps([text("user", "hi")]),
      "gen_ai.output.messages": json.dumps([text("assistant", "yo", finish_reason="stop")])},
     "details", {"input": [text("system", "be brief"), text("user", "hi")],
                 "output": [text("assistant", "yo", finish_reason="stop")]}),
    ("gen_ai.client.inference.operation.details", None,
     {"gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]},
     "details", {"input": [text("user", "hi")], "output": None}),
    ("gen_ai.evaluation.result", {"score": 1}, {}, None, None),
    ("", "just a log line", {}, None, None),
]


# -- bad input never raises ------------------------------------------------------------

MALFORMED = [
    {"gen_ai.input.messages": "[not json", "gen_ai.output.messages": 5},
    {"gen_ai.input.messages": [1, "two", None, {"role": 3, "parts": [1, {"type": {"x": 1}}]}]},
    {"gen_ai.input.messages": '[{"role":"tool","content":[1]}]', "gen_ai.system_instructions": [None]},
    {"gen_ai.output.messages": '{"choices": 1}', "gen_ai.response.finish_reasons": "[oops"},
    {"input.value": '{"messages": 3}', "input.mime_type": "application/json", "output.value": "[1,2"},
    {"gen_ai.prompt.0.content": {"type": ["x"]}, "gen_ai.prompt.0.tool_calls.0.name": 1},
    {"llm.input_messages.0.message.role": None, "llm.input_messages.0.message.contents.0.x": 1},
    {"gen_ai.operation.name": ["chat"], "gen_ai.provider.name": {"a": 1}, "llm.request.type": 7,
     "openinference.span.kind": True, "gen_ai.usage.input_tokens": float("nan"),
     "gen_ai.usage.cost": "free", "gen_ai.server.time_to_first_token": float("inf")},
]


# -- the tables whose cases build one span ---------------------------------------------

# the arguments of the row tests that go into the span (otelbench.testing.otlp.make_span)
SPAN_ARGS = frozenset({"attrs", "name", "parent", "events", "status", "kind"})
MESSAGE_ROWS, MESSAGE_IDS = [c[1:] for c in MESSAGES], [c[0] for c in MESSAGES]
# the row test that checks a table → (its argument names, its cases, their ids)
SPAN_TABLES: dict[str, tuple[tuple[str, ...], list[Any], list[str] | None]] = {
    "test_parent_span_id": (("parent", "expected"), PARENT_IDS, None),
    "test_kind_and_status_names": (("kind", "status", "want"), KINDS_AND_STATUSES, None),
    "test_operation_and_span_type": (("attrs", "name", "operation", "span_type"), OPERATIONS, None),
    "test_provider": (("attrs", "provider"), PROVIDERS, None),
    "test_token_usage": (("attrs", "want"), USAGE, None),
    "test_models": (("attrs", "want"), MODELS, None),
    "test_cost": (("attrs", "cost", "source"), COSTS, None),
    "test_agent": (("attrs", "name", "parent", "agent", "agent_id"), AGENTS, None),
    "test_tool": (("attrs", "name", "want"), TOOLS, None),
    "test_tool_io": (("attrs", "name", "want"), TOOL_IO, None),
    "test_conversation_id": (("attrs", "want"), CONVERSATIONS, None),
    "test_agent_call_id": (("attrs", "want"), AGENT_CALLS, None),
    "test_ttft": (("attrs", "events", "want"), TTFTS, None),
    "test_finish_reasons": (("attrs", "want"), FINISH_REASONS, None),
    "test_errors": (("attrs", "events", "status", "want"), ERRORS, None),
    "test_messages": (("attrs", "events", "inp", "out"), MESSAGE_ROWS, MESSAGE_IDS),
    "test_log_event_name": (("event_name", "attrs", "want"), LOG_EVENT_NAMES, None),
    "test_log_message_events": (("event_name", "body", "attrs", "direction", "messages"), LOG_EVENTS, None),
    "test_malformed_values_are_kept_not_fatal": (("attrs",), MALFORMED, None),
}
