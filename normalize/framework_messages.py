"""A run's input and output where agent frameworks keep them → GenAI messages.

``normalize.message_sources`` reads these after the conventions' own message attributes
(its ``span_messages`` has the order). Each reader takes the value as sent and returns
messages in the one shape of ``normalize.messages``, or None for anything it does not
recognise: never a message without parts, never a guess. The raw value stays in the
span's ``attributes`` either way.

- JSON documents in OpenInference ``input.value`` / ``output.value`` (``json_messages``):
  a ``messages`` array (OpenAI/Anthropic requests, the LangGraph state) of OpenAI-style
  ``{"role", "content"}`` objects or LangChain's ``messages_to_dict`` form
  ``{"type": "human"|"ai"|"tool"|"system", "data": {...}}``; an OpenAI response's
  ``choices``; CrewAI's crew or task output (``raw``); an array of messages, or one.
- LlamaIndex's text ``output.value``: the repr of the workflow's ``StopEvent`` holding
  the agent's answer, read by an exact pattern (``llamaindex_answer``); any other
  Python repr (``ClassName(...)``) is not a message (``is_python_repr``).
- OpenLLMetry's ``traceloop.entity.input`` (``{"args": [...], "kwargs": {...}}``) and
  ``traceloop.entity.output`` (JSON) on workflow, agent and task spans.
- pydantic-ai's agent run span: ``pydantic_ai.all_messages`` (the whole conversation,
  already in the GenAI shape) and ``final_result``.
- CrewAI's crew span: ``crew_tasks`` (each task's ``description`` is what it was asked).
"""

from __future__ import annotations

import ast
import re
from typing import Any

import orjson

from otelbench.normalize.anyvalue import as_int
from otelbench.normalize.messages import Message, choice, from_value, maybe_json, message, system_message, text

# -- JSON documents ------------------------------------------------------------------------

# LangChain's message types (messages_to_dict's "type", chunks included) → GenAI roles
LANGCHAIN_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool",
                   "HumanMessageChunk": "user", "AIMessageChunk": "assistant", "SystemMessageChunk": "system",
                   "ToolMessageChunk": "tool"}
# keys that make a JSON object an OpenAI/GenAI-style message
_MESSAGE_KEYS = ("role", "content", "parts", "tool_calls")
# CrewAI: CrewOutput has tasks_output, TaskOutput expected_output; both hold the answer in raw
_CREWAI_OUTPUT_KEYS = ("tasks_output", "expected_output")


def langchain_message(m: dict[str, Any]) -> Message | None:
    """``{"type": "human"|"ai"|"tool"|"system", "data": {...}}`` (LangChain's
    ``messages_to_dict``) → a message; None for another shape."""
    kind, data = m.get("type"), m.get("data")
    role = LANGCHAIN_ROLES.get(kind) if isinstance(kind, str) else None
    if role is None or not isinstance(data, dict):
        return None
    oai: dict[str, Any] = {"role": role}
    content = data.get("content")
    if content not in (None, "", []):
        oai["content"] = content
    if role == "tool":
        oai["tool_call_id"] = data.get("tool_call_id")
    calls = data.get("tool_calls")
    if isinstance(calls, list):
        oai["tool_calls"] = [{"id": c.get("id"), "function": {"name": c.get("name"), "arguments": c.get("args")}}
                             for c in calls if isinstance(c, dict)]
    if data.get("name"):
        oai["name"] = data["name"]
    return message(oai, role)


def _messages(items: list[Any], role: str) -> list[Message] | None:
    """The items that are messages (OpenAI/GenAI style or LangChain's), those with parts."""
    out = []
    for m in items:
        if not isinstance(m, dict):
            continue
        if "data" in m and isinstance(m.get("type"), str) and m["type"] in LANGCHAIN_ROLES:
            n = langchain_message(m)
        elif any(k in m for k in _MESSAGE_KEYS):
            n = message(m, role)
        else:
            continue
        if n is not None and n.get("parts"):
            out.append(n)
    return out or None


def json_messages(doc: Any, role: str) -> list[Message] | None:
    """A parsed JSON document of a known shape → messages (``role``: the default)."""
    if isinstance(doc, list):
        return _messages(doc, role)
    if not isinstance(doc, dict):
        return None
    raw = doc.get("raw")
    if isinstance(raw, str) and raw and any(k in doc for k in _CREWAI_OUTPUT_KEYS):
        return [{"role": role, "parts": [text(raw)]}]  # before "messages": a TaskOutput has the agent's too
    items = doc.get("messages")
    if isinstance(items, list):
        out = _messages(items, role)
        system = system_message(doc["system"]) if doc.get("system") else None  # Anthropic's top-level system
        if out is not None and system is not None:
            out.insert(0, system)
        return out
    choices = doc.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return [m for m in (choice(c) for c in choices) if m.get("parts")] or None
    return _messages([doc], role)  # one message


# -- Python reprs (LlamaIndex) -----------------------------------------------------------------

# A Python string literal as repr() writes it: one line, quotes and backslashes escaped.
_PY_STR = r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*\""""
_TEXT_BLOCK = rf"TextBlock\(block_type='text', text=({_PY_STR})\)"
_TEXT_BLOCKS = rf"TextBlock\(block_type='text', text=(?:{_PY_STR})\)"
# The workflow's result: an assistant ChatMessage without extra kwargs (no tool calls)
# whose blocks are all text, written out in full (LlamaIndex cuts long reprs with "...").
_STOP_EVENT = re.compile(
    r"StopEvent\(result=AgentOutput\(response=ChatMessage\(role=<MessageRole\.ASSISTANT: 'assistant'>, "
    rf"additional_kwargs=\{{\}}, blocks=\[({_TEXT_BLOCKS}(?:, {_TEXT_BLOCKS})*)\]\)")
_REPR = re.compile(r"[A-Z][A-Za-z0-9_]*\(")


def llamaindex_answer(value: str) -> list[Message] | None:
    """The answer in the repr of LlamaIndex's ``StopEvent(result=AgentOutput(response=
    ChatMessage(...)))`` → an assistant message; None unless the blocks are complete
    text blocks. The string literals are read with ``ast.literal_eval``, which parses
    literals only and evaluates nothing."""
    found = _STOP_EVENT.match(value)
    if found is None:
        return None
    parts = []
    for block in re.finditer(_TEXT_BLOCK, found.group(1)):
        content = ast.literal_eval(block.group(1))
        if not isinstance(content, str):  # pragma: no cover - the pattern admits string literals only
            return None
        parts.append(text(content))
    return [{"role": "assistant", "parts": parts}]


def is_python_repr(value: str) -> bool:
    """``ClassName(...)`` (or cut short with "..."): an object's repr, not a message."""
    return _REPR.match(value) is not None and (value.endswith(")") or value.endswith("..."))


# -- OpenLLMetry: traceloop.entity.input / output --------------------------------------------

# the traceloop.span.kind values whose entity input/output are a run's (a tool's are its
# arguments and result, not messages)
TRACELOOP_RUN_KINDS = frozenset({"workflow", "agent", "task"})


def _json(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return None


def _value_messages(value: Any, role: str) -> list[Message] | None:
    if isinstance(value, str):
        return [{"role": role, "parts": [text(value)]}] if value else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [{"role": role, "parts": [text(orjson.dumps(value).decode())]}]
    return json_messages(value, role)


def traceloop_input(value: Any) -> list[Message] | None:
    """``{"args": [...], "kwargs": {...}}`` (the decorated function's arguments, JSON) →
    messages, when there is exactly one argument: a string (a user message) or a messages
    document; None otherwise (which of several arguments is the input is not said)."""
    doc = _json(value)
    if not isinstance(doc, dict) or not set(doc) <= {"args", "kwargs"}:
        return None
    args, kwargs = doc.get("args") or [], doc.get("kwargs") or {}
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        return None
    values = [*args, *kwargs.values()]
    return _value_messages(values[0], "user") if len(values) == 1 else None


def traceloop_output(value: Any) -> list[Message] | None:
    """The decorated function's return value (JSON) → an assistant message (a string or a
    number) or the messages of a known document; None for anything else."""
    return _value_messages(_json(value), "assistant")


# -- pydantic-ai: pydantic_ai.all_messages, final_result ------------------------------------

PYDANTIC_AI_MESSAGES = "pydantic_ai.all_messages"
PYDANTIC_AI_NEW_INDEX = "pydantic_ai.new_message_index"
PYDANTIC_AI_RESULT = "final_result"


def pydantic_ai_input(all_messages: Any, new_index: Any) -> list[Message] | None:
    """The run's input: the messages before the first model response of this run (the
    history, and the new request from ``pydantic_ai.new_message_index`` on)."""
    msgs = from_value(all_messages, "user")
    if not msgs:
        return None
    i = min(max(as_int(new_index) or 0, 0), len(msgs))
    while i < len(msgs) and not (isinstance(msgs[i], dict) and msgs[i].get("role") == "assistant"):
        i += 1
    return list(msgs[:i]) or None


def pydantic_ai_output(all_messages: Any, final_result: Any) -> list[Message] | None:
    """The run's output: the conversation's last message when the model wrote it, else
    ``final_result`` (text, or the output as JSON) as an assistant message."""
    msgs = from_value(all_messages, "user")
    last = msgs[-1] if msgs else None
    if isinstance(last, dict) and last.get("role") == "assistant" and last.get("parts"):
        return [last]
    if isinstance(final_result, str) and final_result:
        return [{"role": "assistant", "parts": [text(final_result)]}]
    return None


# -- CrewAI: crew_tasks ------------------------------------------------------------------------

CREWAI_TASKS = "crew_tasks"


def crewai_tasks(value: Any) -> list[Message] | None:
    """``crew_tasks`` (JSON: the crew's tasks) → one user message per task description."""
    doc = maybe_json(value)
    if not isinstance(doc, list):
        return None
    out: list[Message] = [{"role": "user", "parts": [text(t["description"])]} for t in doc
                          if isinstance(t, dict) and isinstance(t.get("description"), str) and t["description"]]
    return out or None


# -- Mastra: mastra.agent_run.input / output on its invoke_agent span ------------------------

MASTRA_RUN_INPUT, MASTRA_RUN_OUTPUT = "mastra.agent_run.input", "mastra.agent_run.output"


def mastra_input(value: Any) -> list[Message] | None:
    """The agent's input as Mastra sends it: the user's string, or a messages document."""
    if isinstance(value, str) and not value.lstrip().startswith(("[", "{")):
        return _value_messages(value, "user")
    return _value_messages(_json(value), "user")


def mastra_output(value: Any) -> list[Message] | None:
    """``{"text": …, "files": […]}`` → the assistant's text; a plain string as it is."""
    doc = _json(value) if isinstance(value, str) and value.lstrip().startswith("{") else value
    if isinstance(doc, dict):
        return _value_messages(doc.get("text"), "assistant") if isinstance(doc.get("text"), str) else None
    return _value_messages(doc, "assistant")


# -- the Vercel AI SDK's ai.* spans (ai 6 experimental_telemetry, AI SDK 7 legacy) ----------

AI_PROMPT, AI_RESPONSE_TEXT = "ai.prompt", "ai.response.text"
AI_RESPONSE_TOOL_CALLS, AI_OPERATION = "ai.response.toolCalls", "ai.operationId"
# the ai.* spans of one model call (ai.generateText.doGenerate, ai.streamText.doStream...):
# their ai.response.toolCalls are that call's; ai.generateText's list every step's
AI_CALL_OPERATIONS = (".doGenerate", ".doStream")


def ai_sdk_prompt(value: Any) -> list[Message] | None:
    """``ai.prompt`` (JSON ``{"system"?, "prompt"?, "messages"?}``, what generateText was
    given) → the system message, then the prompt as a user message or the messages."""
    doc = _json(value)
    if not isinstance(doc, dict):
        return None
    out: list[Message] = []
    if isinstance(doc.get("system"), str) and doc["system"]:
        out.append({"role": "system", "parts": [text(doc["system"])]})
    if isinstance(doc.get("prompt"), str) and doc["prompt"]:
        out.append({"role": "user", "parts": [text(doc["prompt"])]})
    elif doc.get("messages") is not None:
        out += json_messages(doc["messages"], "user") or []
    return out or None


def ai_sdk_response(text_value: Any, tool_calls: Any, operation: Any) -> list[Message] | None:
    """``ai.response.text`` (the model's answer; on ``ai.generateText``: the run's last)
    and, on a model call's span (``ai.operationId`` ``….doGenerate`` / ``….doStream``),
    ``ai.response.toolCalls`` (JSON ``[{"toolCallId", "toolName", "input"}]``) → one
    assistant message: its text, then a tool_call part per call (input as sent)."""
    parts: list[dict[str, Any]] = []
    if isinstance(text_value, str) and text_value:
        parts.append(text(text_value))
    if isinstance(operation, str) and operation.endswith(AI_CALL_OPERATIONS):
        calls = _json(tool_calls)
        if isinstance(calls, list):
            parts += [{"type": "tool_call", "id": c.get("toolCallId"), "name": c.get("toolName"),
                       "arguments": c.get("input")} for c in calls if isinstance(c, dict)]
    return [{"role": "assistant", "parts": parts}] if parts else None
