"""A recorded llm call as the OpenAI chat request that sends it again (``otelbench replay``).

The lake stores messages in one shape, the OTel GenAI message shape (docs/normalization.md,
system instructions first); an OpenAI-compatible server wants chat messages. Both are
pure conversions:

- text parts → ``content`` (joined), reasoning parts left out (a server does not take a
  model's past thinking back), other typed parts (images, files) left out and counted;
- ``tool_call`` parts → the assistant's ``tool_calls`` (arguments as JSON text);
- ``tool_call_response`` parts (whatever the message's role: pydantic-ai sends them as a
  user message) → one ``tool`` message each, the recorded result fed back as its content;
- ``gen_ai.tool.definitions`` (the semconv's flat ``{"type", "name", "parameters"}`` or
  OpenAI's ``{"type": "function", "function": {...}}``) → OpenAI's ``tools``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Request:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    dropped: list[str] = field(default_factory=list)  # part types left out, one entry each


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def openai_messages(canonical: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """GenAI-shaped messages → OpenAI chat messages, and the part types left out."""
    out: list[dict[str, Any]] = []
    dropped: list[str] = []
    for m in canonical:
        role = str(m.get("role") or "user")
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for p in m.get("parts") or []:
            kind = p.get("type") if isinstance(p, dict) else None
            if kind == "text":
                texts.append(str(p.get("content") or ""))
            elif kind == "tool_call":
                arguments = _json_text(p.get("arguments") or {})
                calls.append({"id": p.get("id") or f"call_{len(calls)}", "type": "function",
                              "function": {"name": p.get("name") or "", "arguments": arguments}})
            elif kind == "tool_call_response":
                result = p.get("response", p.get("result"))
                results.append({"role": "tool", "tool_call_id": p.get("id") or "",
                                "content": _json_text(result if result is not None else "")})
            else:
                dropped.append(str(kind))
        if role == "tool" or (results and not texts and not calls):
            out.extend(results)
            continue
        message: dict[str, Any] = {"role": role, "content": "".join(texts) if texts or not calls else None}
        if calls:
            message["tool_calls"] = calls
        out.append(message)
        out.extend(results)
    return out, dropped


def openai_tools(definitions: str | None) -> list[dict[str, Any]] | None:
    """``gen_ai.tool.definitions`` (JSON text) → OpenAI's ``tools``; None when absent or unreadable."""
    if not definitions:
        return None
    try:
        value = json.loads(definitions)
    except ValueError:
        return None
    tools = []
    for d in value if isinstance(value, list) else []:
        if not isinstance(d, dict):
            continue
        fn = d.get("function") if isinstance(d.get("function"), dict) else d
        if not fn.get("name"):
            continue
        spec: dict[str, Any] = {"name": fn["name"]}
        if fn.get("description"):
            spec["description"] = fn["description"]
        spec["parameters"] = fn.get("parameters") or fn.get("input_schema") or {"type": "object", "properties": {}}
        tools.append({"type": "function", "function": spec})
    return tools or None


def build(input_messages: str, tool_definitions: str | None) -> Request:
    """The request for one recorded call: its input messages (JSON text) and tool definitions."""
    messages, dropped = openai_messages(json.loads(input_messages))
    return Request(messages, openai_tools(tool_definitions), dropped)
