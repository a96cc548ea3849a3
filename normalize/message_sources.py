"""Where a span or a log record keeps its messages, in every convention → messages.

``span_messages`` finds a span's input and output messages in the first source
present (its docstring has the order), ``log_messages`` those of a GenAI log event;
``MESSAGE_KEYS`` lets callers skip spans that have none. The sources besides the
current ``gen_ai.input.messages`` / ``gen_ai.output.messages``:

- OpenLLMetry indexed attributes ``gen_ai.prompt.{i}.role/content/tool_call_id/
  tool_calls.{j}.id|name|arguments`` and ``gen_ai.completion.{i}...finish_reason``
  (https://github.com/traceloop/openllmetry, packages/opentelemetry-semantic-conventions-ai);
- OpenInference indexed attributes ``llm.input_messages.{i}.message.role/content/
  contents.{j}.message_content.type|text|image.image.url/tool_calls.{j}.tool_call.
  id|function.name|function.arguments/tool_call_id`` and ``input.value`` /
  ``output.value`` (https://github.com/Arize-ai/openinference, spec/semantic_conventions.md);
- span events ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` and the older
  ``gen_ai.{system,user,assistant,tool}.message`` / ``gen_ai.choice`` events
  (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-events/).

Each message found is converted to the one shape by ``normalize.messages``. Pure:
plain Python values in, plain Python values out.
"""

from __future__ import annotations

from typing import Any

import orjson

from otelbench.normalize import framework_messages as fw
from otelbench.normalize.messages import (CHOICE_EVENT, DETAILS_EVENT, ROLE_EVENTS, Message, choice, from_value, maybe_json,
                                message, role_event, system_message, text)

# -- indexed (flattened) attributes ---------------------------------------------------


def _indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``{prefix}{i}.{rest}`` keys → list (ordered by i) of ``{rest: value}``."""
    n = len(prefix)
    groups: dict[int, dict[str, Any]] = {}
    for k, v in attrs.items():
        if k.startswith(prefix):
            idx, _, rest = k[n:].partition(".")
            if idx.isdigit():
                groups.setdefault(int(idx), {})[rest] = v
    return [groups[i] for i in sorted(groups)]


def _openllmetry_parts(content: Any) -> Any:
    # OpenLLMetry serializes multi-part content as a JSON array of typed parts.
    parsed = maybe_json(content)
    if isinstance(parsed, list) and all(isinstance(p, dict) and "type" in p for p in parsed):
        return parsed
    return content


def openllmetry(attrs: dict[str, Any], prefix: str, role: str) -> list[Message] | None:
    """``gen_ai.prompt.{i}.*`` / ``gen_ai.completion.{i}.*`` → messages."""
    out = []
    for d in _indexed(attrs, prefix):
        m: dict[str, Any] = {"role": d.get("role") or role}
        if "content" in d:
            m["content"] = _openllmetry_parts(d["content"])
        for key in ("tool_call_id", "finish_reason", "name"):
            if key in d:
                m[key] = d[key]
        calls = _indexed(d, "tool_calls.")
        if calls:
            m["tool_calls"] = [{"id": c.get("id"), "function": c} for c in calls]
        if "function_call.name" in d:
            m["function_call"] = {"name": d["function_call.name"],
                                  "arguments": d.get("function_call.arguments")}
        out.append(message(m, role))
    return out or None


def _oi_content(c: dict[str, Any]) -> dict[str, Any]:
    t = c.get("message_content.type", "text")
    if t == "text":
        return text(c.get("message_content.text"))
    if t == "image":
        return {"type": "uri", "modality": "image", "uri": c.get("message_content.image.image.url")}
    return {"type": t, **{k.removeprefix("message_content."): v for k, v in c.items()}}


def openinference(attrs: dict[str, Any], prefix: str, role: str) -> list[Message] | None:
    """``llm.input_messages.{i}.message.*`` / ``llm.output_messages.{i}.message.*`` → messages
    (those with content; none: None, so that the next source is read)."""
    out = []
    for d in _indexed(attrs, prefix):
        r = d.get("message.role") or role
        parts: list[dict[str, Any]] = []
        content = d.get("message.content")
        call_id = d.get("message.tool_call_id")
        if content is not None:
            if r == "tool":
                parts.append({"type": "tool_call_response", "id": call_id, "response": content})
            else:
                parts.append(text(content))
        parts.extend(_oi_content(c) for c in _indexed(d, "message.contents."))
        n_parts = len(parts)
        for c in _indexed(d, "message.tool_calls."):
            parts.append({"type": "tool_call", "id": c.get("tool_call.id"),
                          "name": c.get("tool_call.function.name"),
                          "arguments": c.get("tool_call.function.arguments")})
        if "message.function_call_name" in d and len(parts) == n_parts:  # legacy; tool_calls win
            parts.append({"type": "tool_call", "id": None, "name": d["message.function_call_name"],
                          "arguments": d.get("message.function_call_arguments_json")})
        if not parts:
            continue  # a role alone (LangChain's graph span: llm.input_messages.0.message.role = user)
        m: Message = {"role": r, "parts": parts}
        if d.get("message.name"):
            m["name"] = d["message.name"]
        out.append(m)
    return out or None


def io_value(v: Any, mime: Any, role: str) -> list[Message] | None:
    """OpenInference ``input.value`` / ``output.value``.

    JSON (by its mime type, or a structured value): the messages of a known document
    (``framework_messages.json_messages``: a request's ``messages``, a response's
    ``choices``, LangChain's and CrewAI's shapes), else none: an object or array of
    another shape is not a message. A JSON string or number → one text message of it.
    Text: LlamaIndex's ``StopEvent`` repr → its answer; another Python repr → none;
    anything else → one text message holding the value as sent.
    """
    if v is None or v == "":
        return None
    if mime == "application/json" or isinstance(v, (dict, list)):
        doc = maybe_json(v)
        if isinstance(doc, (dict, list)):
            return fw.json_messages(doc, role)
        if isinstance(v, str):
            try:
                doc = orjson.loads(v)
            except orjson.JSONDecodeError:
                doc = v  # not JSON after all: text
            if isinstance(doc, str):
                v = doc
    if not isinstance(v, str):
        v = orjson.dumps(v).decode()
    if fw.is_python_repr(v):
        return fw.llamaindex_answer(v)
    return [{"role": role, "parts": [text(v)]}] if v else None


# -- where a span or a log record keeps its messages ----------------------------------

_OLLM_IN = ("gen_ai.prompt.0.role", "gen_ai.prompt.0.content")
_OLLM_OUT = ("gen_ai.completion.0.role", "gen_ai.completion.0.content",
             "gen_ai.completion.0.finish_reason", "gen_ai.completion.0.tool_calls.0.name")
_OI_IN = ("llm.input_messages.0.message.role", "llm.input_messages.0.message.content")
_OI_OUT = ("llm.output_messages.0.message.role", "llm.output_messages.0.message.content")
# A span carrying none of these keys (and no events) has no messages: callers skip
# span_messages() for it, which keeps tool and plain spans cheap.
_TL_IN, _TL_OUT, _TL_KIND = "traceloop.entity.input", "traceloop.entity.output", "traceloop.span.kind"
MESSAGE_KEYS = frozenset({
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
    "gen_ai.prompt", "gen_ai.completion", "input.value", "output.value",
    *_OLLM_IN, *_OLLM_OUT, *_OI_IN, *_OI_OUT, _TL_IN, _TL_OUT,
    fw.PYDANTIC_AI_MESSAGES, fw.CREWAI_TASKS, fw.MASTRA_RUN_INPUT, fw.MASTRA_RUN_OUTPUT,
    fw.AI_PROMPT, fw.AI_RESPONSE_TEXT, fw.AI_RESPONSE_TOOL_CALLS,
})


def _has_any(attrs: dict[str, Any], keys: tuple[str, ...]) -> bool:
    for k in keys:
        if k in attrs:
            return True
    return False


def _event_body(a: dict[str, Any]) -> Any:
    # Span-event flavour of the message events: the log body serialized into
    # `gen_ai.event.content`, or its fields spread over the event's attributes.
    body = a.get("gen_ai.event.content")
    return a if body is None else body


def _from_events(events: list[dict[str, Any]]) -> tuple[list[Message] | None, list[Message] | None]:
    prompt = completion = None
    ins: list[Message] = []
    outs: list[Message] = []
    for e in events:
        n = e["name"]
        a = e["attributes"]
        if n == "gen_ai.content.prompt":
            prompt = from_value(a.get("gen_ai.prompt"), "user")
        elif n == "gen_ai.content.completion":
            completion = from_value(a.get("gen_ai.completion"), "assistant")
        elif n in ROLE_EVENTS:
            ins.append(role_event(n, _event_body(a)))
        elif n == CHOICE_EVENT:
            outs.append(choice(_event_body(a)))
    return prompt or ins or None, completion or outs or None


def span_messages(
    attrs: dict[str, Any], events: list[dict[str, Any]]
) -> tuple[list[Message] | None, list[Message] | None]:
    """(input, output) messages of one span; each side takes the first source present:

    1. ``gen_ai.input.messages``, else pydantic-ai's ``pydantic_ai.all_messages`` up to
       the run's first model response /
       ``gen_ai.output.messages``, else pydantic-ai's last message or ``final_result``;
    2. span events ``gen_ai.content.prompt`` / ``gen_ai.content.completion``;
    3. span events ``gen_ai.{system,user,assistant,tool}.message`` / ``gen_ai.choice``;
    4. ``gen_ai.prompt`` / ``gen_ai.completion`` attributes, then OpenLLMetry's
       indexed ``gen_ai.prompt.{i}.*`` / ``gen_ai.completion.{i}.*``;
    5. OpenInference ``llm.input_messages.{i}.*`` / ``llm.output_messages.{i}.*``;
    6. OpenInference ``input.value`` / ``output.value``;
    7. OpenLLMetry's ``traceloop.entity.input`` / ``traceloop.entity.output`` on a
       workflow, agent or task span;
    8. (input) CrewAI's ``crew_tasks``;
    9. Mastra's ``mastra.agent_run.input`` / ``mastra.agent_run.output``, on its agent span;
    10. the Vercel AI SDK's ``ai.prompt`` / ``ai.response.text``, and on a model call's
        span ``ai.response.toolCalls`` (its ai.* spans).

    Whichever source gave the input, ``gen_ai.system_instructions`` leads it as a system
    message (unless it already starts with that one).
    """
    g = attrs.get
    inp = from_value(g("gen_ai.input.messages"), "user")
    if inp is None and fw.PYDANTIC_AI_MESSAGES in attrs:
        inp = fw.pydantic_ai_input(g(fw.PYDANTIC_AI_MESSAGES), g(fw.PYDANTIC_AI_NEW_INDEX))
    out = from_value(g("gen_ai.output.messages"), "assistant")
    if out is None and fw.PYDANTIC_AI_MESSAGES in attrs:
        out = fw.pydantic_ai_output(g(fw.PYDANTIC_AI_MESSAGES), g(fw.PYDANTIC_AI_RESULT))
    if inp is not None and out is not None:
        return _led(inp, g("gen_ai.system_instructions")), out
    if events:
        ev_in, ev_out = _from_events(events)
        inp = inp or ev_in
        out = out or ev_out
    if inp is None:
        inp = from_value(g("gen_ai.prompt"), "user")
        if inp is None and _has_any(attrs, _OLLM_IN):
            inp = openllmetry(attrs, "gen_ai.prompt.", "user")
        if inp is None and _has_any(attrs, _OI_IN):
            inp = openinference(attrs, "llm.input_messages.", "user")
        if inp is None:
            inp = io_value(g("input.value"), g("input.mime_type"), "user")
        if inp is None and _TL_IN in attrs and _traceloop_run(attrs):
            inp = fw.traceloop_input(g(_TL_IN))
        if inp is None and fw.CREWAI_TASKS in attrs:
            inp = fw.crewai_tasks(g(fw.CREWAI_TASKS))
        if inp is None and fw.MASTRA_RUN_INPUT in attrs:
            inp = fw.mastra_input(g(fw.MASTRA_RUN_INPUT))
        if inp is None and fw.AI_PROMPT in attrs:
            inp = fw.ai_sdk_prompt(g(fw.AI_PROMPT))
    if out is None:
        out = from_value(g("gen_ai.completion"), "assistant")
        if out is None and _has_any(attrs, _OLLM_OUT):
            out = openllmetry(attrs, "gen_ai.completion.", "assistant")
        if out is None and _has_any(attrs, _OI_OUT):
            out = openinference(attrs, "llm.output_messages.", "assistant")
        if out is None:
            out = io_value(g("output.value"), g("output.mime_type"), "assistant")
        if out is None and _TL_OUT in attrs and _traceloop_run(attrs):
            out = fw.traceloop_output(g(_TL_OUT))
        if out is None and fw.MASTRA_RUN_OUTPUT in attrs:
            out = fw.mastra_output(g(fw.MASTRA_RUN_OUTPUT))
        if out is None and (fw.AI_RESPONSE_TEXT in attrs or fw.AI_RESPONSE_TOOL_CALLS in attrs):
            out = fw.ai_sdk_response(g(fw.AI_RESPONSE_TEXT), g(fw.AI_RESPONSE_TOOL_CALLS), g(fw.AI_OPERATION))
    return _led(inp, g("gen_ai.system_instructions")), out


def _led(inp: list[Message] | None, system: Any) -> list[Message] | None:
    """The input led by ``gen_ai.system_instructions`` as a system message, whichever source
    gave it (unless it already starts with that one)."""
    sm = system_message(system) if system is not None else None
    if sm is None or _starts_with(inp, sm):
        return inp
    return [sm, *(inp or ())]


def _traceloop_run(attrs: dict[str, Any]) -> bool:
    kind = attrs.get(_TL_KIND)
    return isinstance(kind, str) and kind in fw.TRACELOOP_RUN_KINDS


def _starts_with(msgs: list[Message] | None, first: Message) -> bool:
    """Do the messages already start with this (system) message? OpenLIT sends the
    system prompt in gen_ai.system_instructions and as the first input message."""
    return bool(msgs) and isinstance(msgs[0], dict) and msgs[0].get("role") == first["role"] \
        and msgs[0].get("parts") == first["parts"]


def log_messages(event_name: str | None, body: Any, attrs: dict[str, Any]) -> tuple[str | None, Any]:
    """(message_direction, messages) of one log record; (None, None) for other events.

    - ``gen_ai.{system,user,assistant,tool}.message`` → ``"input"``, ``[message]``
    - ``gen_ai.choice`` → ``"output"``, ``[message with finish_reason]``
    - ``gen_ai.client.inference.operation.details`` → ``"details"``,
      ``{"input": [...] | None, "output": [...] | None}`` where ``input`` leads with
      ``gen_ai.system_instructions`` as a system message, exactly like
      ``spans.input_messages``.
    """
    if not event_name:
        return None, None
    if event_name in ROLE_EVENTS:
        return "input", [role_event(event_name, body)]
    if event_name == CHOICE_EVENT:
        return "output", [choice(body)]
    if event_name == DETAILS_EVENT:
        # The spec puts the messages in attributes; accept them in a map body too.
        src = attrs if ("gen_ai.input.messages" in attrs or "gen_ai.output.messages" in attrs
                        or not isinstance(body, dict)) else body
        inp, out = span_messages(
            {k: src[k] for k in ("gen_ai.input.messages", "gen_ai.system_instructions",
                                 "gen_ai.output.messages") if k in src}, [])
        return "details", {"input": inp, "output": out}
    return None, None
