"""The doctor's fixes as data: for each gap, what turns it off, by instrumentation scope.

``FIXES`` maps a gap to a list of (scope name pattern, fix), the first pattern that
matches a scope's name (``fnmatch``, case-sensitive) wins; ``*`` is the fallback.
docs/doctor.md lists them. Sources: each instrumentation's own README (the environment
variables and settings named here), docs/frameworks-recorded.md for the stacks recorded.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

# the contrib instrumentations on opentelemetry-util-genai (openai-v2, google-genai,
# vertexai, langchain's contrib one) and what else reads the same variable
_UTIL_GENAI = ("opentelemetry.instrumentation.openai_v2*", "opentelemetry.util.genai*",
               "opentelemetry.instrumentation.google_genai*", "opentelemetry.instrumentation.vertexai*")
_CAPTURE = ("set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (messages as log events; with "
            "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental, SPAN_AND_EVENT puts them on the spans)")
_OPENINFERENCE = ("unset OPENINFERENCE_HIDE_INPUTS, OPENINFERENCE_HIDE_OUTPUTS, OPENINFERENCE_HIDE_INPUT_MESSAGES "
                  "and OPENINFERENCE_HIDE_OUTPUT_MESSAGES (or TraceConfig(hide_inputs=False, hide_outputs=False))")
_OPENLLMETRY = "set TRACELOOP_TRACE_CONTENT=true (or Traceloop.init(trace_content=True))"
_OPENLIT = "openlit.init(capture_message_content=True) (or OPENLIT_CAPTURE_MESSAGE_CONTENT=true)"
_ADK = ("set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_AND_EVENT with "
        "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental (ADK sends no content by default; "
        "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=true for its own gcp.vertex.agent.* attributes)")
_AI_SDK = "experimental_telemetry: { isEnabled: true, recordInputs: true, recordOutputs: true } on each call"
_PYDANTIC_AI = "Agent(instrument=InstrumentationSettings(include_content=True)) (logfire: the default)"

Fixes = list[tuple[str, str]]

FIXES: dict[str, Fixes] = {
    # llm calls without their messages
    "messages": [
        *((p, _CAPTURE) for p in _UTIL_GENAI),
        ("gcp.vertex.agent*", _ADK),
        ("openinference.instrumentation.*", _OPENINFERENCE),
        ("openlit*", _OPENLIT),
        ("traceloop.*", _OPENLLMETRY),
        ("opentelemetry.instrumentation.*", _OPENLLMETRY),  # OpenLLMetry's: openai.v1, anthropic, ...
        ("ai", _AI_SDK),
        ("pydantic-ai*", _PYDANTIC_AI),
        ("logfire*", _PYDANTIC_AI),
        ("*", _CAPTURE),
    ],
    # runs whose agent nothing names (the run falls back to the service's name)
    "agent": [
        ("*", "send the X-Bench-Agent: <name> header with the OTLP export (OTEL_EXPORTER_OTLP_HEADERS="
              "X-Bench-Agent=<name>), or set gen_ai.agent.name on the agent's span"),
    ],
    # runs without the user's task or the final answer
    "run_io": [
        ("gcp.vertex.agent*", _ADK),
        ("openinference.instrumentation.*", _OPENINFERENCE),
        ("openlit*", _OPENLIT),
        ("traceloop.*", _OPENLLMETRY),
        ("*", "capture message content (see the llm calls' fix), or put gen_ai.input.messages / "
              "gen_ai.output.messages on the agent's span"),
    ],
    # deprecated GenAI attribute names
    "deprecated": [
        *((p, "set OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental for the current names")
          for p in _UTIL_GENAI),
        ("*", "upgrade the instrumentation: these names still read, but are gone from the current semconv"),
    ],
    # llm calls without token counts
    "tokens": [
        ("*", "stream with stream_options={\"include_usage\": true} (OpenAI-compatible APIs send no usage "
              "in a stream otherwise)"),
    ],
    # llm calls without the response's model
    "response_model": [
        ("*", "not sent by this instrumentation: the request model is used for pricing"),
    ],
    # llm calls without finish reasons
    "finish_reasons": [
        ("*", "not sent by this instrumentation: upgrade it, or set gen_ai.response.finish_reasons"),
    ],
    # no llm call with a time to first token
    "ttft": [
        ("openinference.instrumentation.langchain*", "not sent by openinference-instrumentation-langchain: "
                                                     "instrument the model client beneath it too "
                                                     "(openinference-instrumentation-openai marks the first token)"),
        ("*", "only streamed calls have one: stream, with an instrumentation that marks the first chunk "
              "(gen_ai.server.time_to_first_token or a first-token span event)"),
    ],
    # llm calls asked for tools, and no span is a tool call
    "tools": [
        ("openlit*", "OpenLIT's @openlit.trace does not mark a tool: set gen_ai.operation.name=execute_tool and "
                     "gen_ai.tool.name on the tool function's span"),
        ("*", "give each tool execution a span with gen_ai.operation.name=execute_tool and gen_ai.tool.name"),
    ],
    # tool spans without their arguments or result: the same content capture as messages
    "tool_io": [
        *((p, _CAPTURE) for p in _UTIL_GENAI),
        ("gcp.vertex.agent*", _ADK),
        ("openinference.instrumentation.*", _OPENINFERENCE),
        ("openlit*", _OPENLIT),
        ("traceloop.*", _OPENLLMETRY),
        ("opentelemetry.instrumentation.*", _OPENLLMETRY),
        ("ai", _AI_SDK),
        ("pydantic-ai*", _PYDANTIC_AI),
        ("logfire*", _PYDANTIC_AI),
        ("*", "set gen_ai.tool.call.arguments and gen_ai.tool.call.result on the tool's span"),
    ],
    # tool spans without the call id
    "tool_call_id": [
        ("*", "set gen_ai.tool.call.id on the tool's span (the id of the model's tool call)"),
    ],
    # a service whose spans speak no GenAI convention
    "instrumentation": [
        ("*", "add a GenAI instrumentation (docs/frameworks-recorded.md lists those tested), or "
              "otelbench.sdk for your own spans"),
    ],
}


def fix(gap: str, scope_name: str | None) -> str:
    """The fix for ``gap`` of a scope named ``scope_name``."""
    for pattern, text in FIXES[gap]:
        if fnmatchcase(scope_name or "", pattern):
            return text
    return FIXES[gap][-1][1]
