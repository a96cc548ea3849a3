"""Chat messages in any GenAI convention → one shape, the OTel GenAI message shape.

Target (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/, JSON
schemas ``gen-ai-input-messages.json`` / ``gen-ai-output-messages.json``)::

    [{"role": "user", "parts": [PART, ...], "name"?: ..., "finish_reason"?: ...}]

    PART = {"type": "text", "content": str}
         | {"type": "tool_call", "id", "name", "arguments"}
         | {"type": "tool_call_response", "id", "response"}
         | {"type": "reasoning", "content"}
         | any other typed part (blob, uri, file, image_url...) kept as sent

Accepted input shapes, each converted by :func:`message` / :func:`part`:

- already canonical ``{"role", "parts"}`` (returned untouched: the fast path);
- OpenAI chat style ``{"role", "content": str | [parts], "tool_calls": [{"id",
  "function": {"name", "arguments"}}], "tool_call_id"}``, also the body of the
  older ``gen_ai.{system,user,assistant,tool}.message`` / ``gen_ai.choice``
  events (https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-events/,
  tool messages carry the call id as ``id``);
- Anthropic content blocks (``tool_use``, ``tool_result``, ``thinking``), OpenAI
  Responses items (``input_text``, ``output_text``, ``function_call``,
  ``function_call_output``), Gemini parts (``text``, ``functionCall``,
  ``functionResponse``);
- and, through ``normalize.message_sources``, OpenLLMetry's and OpenInference's
  indexed attributes.

Tool-call arguments and responses are kept as sent (a JSON string stays a string).
A value that is not JSON becomes one text message; an empty one is no messages.
Where a span or a log record keeps its messages: ``normalize.message_sources``.
Everything here is pure: plain Python values in, plain Python values out.
"""

from __future__ import annotations

from typing import Any

import orjson

Message = dict[str, Any]

_loads = orjson.loads
_JSONError = orjson.JSONDecodeError
ROLE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
CHOICE_EVENT = "gen_ai.choice"
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})


def text(content: Any) -> dict[str, Any]:
    return {"type": "text", "content": content}


def maybe_json(v: Any) -> Any:
    """Parse a string that looks like a JSON array or object; anything else as is."""
    if isinstance(v, str) and v[:1] in ("[", "{"):
        try:
            return _loads(v)
        except _JSONError:
            return v
    return v


def _tool_call(tc: Any) -> dict[str, Any]:
    if not isinstance(tc, dict):
        return {"type": "tool_call", "id": None, "name": None, "arguments": tc}
    fn = tc.get("function")
    if not isinstance(fn, dict):
        fn = tc
    return {"type": "tool_call", "id": tc.get("id"), "name": fn.get("name"),
            "arguments": fn.get("arguments")}


def part(p: Any) -> dict[str, Any]:
    """One content part (of any known vendor shape) → a GenAI part."""
    if not isinstance(p, dict):
        return text(p)
    t = p.get("type")
    if t == "text" and "content" in p:
        return p
    if t is not None and t.__class__ is not str:
        return p  # not a shape we know: keep as sent
    if t in _TEXT_TYPES:
        return text(p.get("text"))
    if t == "tool_use" or t == "function_call":
        return {"type": "tool_call", "id": p.get("id") or p.get("call_id"),
                "name": p.get("name"), "arguments": p.get("input", p.get("arguments"))}
    if t == "tool_result" or t == "function_call_output":
        return {"type": "tool_call_response", "id": p.get("tool_use_id") or p.get("call_id"),
                "response": p.get("content", p.get("output"))}
    if t == "thinking":
        return {"type": "reasoning", "content": p.get("thinking")}
    if t is None:
        if "text" in p:
            return text(p["text"])
        fc = p.get("functionCall")
        if isinstance(fc, dict):
            return {"type": "tool_call", "id": fc.get("id"), "name": fc.get("name"),
                    "arguments": fc.get("args")}
        fr = p.get("functionResponse")
        if isinstance(fr, dict):
            return {"type": "tool_call_response", "id": fr.get("id"),
                    "response": fr.get("response")}
    return p


def message(m: Any, role: str) -> Message:
    """One message of any known shape → ``{"role", "parts", ...}``; ``role`` is the default."""
    if not isinstance(m, dict):
        return {"role": role, "parts": [] if m is None else [text(m)]}
    parts = m.get("parts")
    if isinstance(parts, list):
        for p in parts:
            if not isinstance(p, dict) or "type" not in p:
                break
        else:
            if m.get("role"):
                return m  # already canonical: the common case for current GenAI
            return {**m, "role": role}
        out: Message = {"role": m.get("role") or role, "parts": [part(p) for p in parts]}
    else:
        r = m.get("role") or role
        new: list[dict[str, Any]] = []
        content = m.get("content")
        if content is not None:
            if r == "tool":
                new.append({"type": "tool_call_response",
                            "id": m.get("tool_call_id", m.get("id")), "response": content})
            elif isinstance(content, str):
                new.append(text(content))
            elif isinstance(content, list):
                new.extend(part(p) for p in content)
            else:
                new.append(part(content))
        tool_calls = m.get("tool_calls")
        if isinstance(tool_calls, list):
            new.extend(_tool_call(tc) for tc in tool_calls)
        fc = m.get("function_call")  # legacy OpenAI functions API
        if isinstance(fc, dict):
            new.append({"type": "tool_call", "id": None, "name": fc.get("name"),
                        "arguments": fc.get("arguments")})
        out = {"role": r, "parts": new}
    name = m.get("name")
    if name:
        out["name"] = name
    fr = m.get("finish_reason")
    if fr is not None:
        out["finish_reason"] = fr
    return out


class _Verbatim(list):
    """Messages parsed from a JSON string that was already in the target shape:
    :func:`dump` returns that string instead of serializing them again."""

    __slots__ = ("source",)


def dump(msgs: Any) -> str | None:
    """Messages (or the log ``details`` object) → JSON text; None stays None."""
    if msgs is None:
        return None
    if msgs.__class__ is _Verbatim:
        return msgs.source
    return orjson.dumps(msgs).decode()


def from_value(v: Any, role: str) -> list[Message] | None:
    """A messages value (JSON string, list, one message, or plain text) → messages."""
    if v is None:
        return None
    src = v
    v = maybe_json(v)
    if isinstance(v, list):
        if not v:
            return None
        out = _Verbatim() if src.__class__ is str else []
        for m in v:
            n = message(m, role)
            if n is not m:
                out = list(out) if out.__class__ is _Verbatim else out
            out.append(n)
        if out.__class__ is _Verbatim:
            out.source = src
        return out
    if isinstance(v, str) and not v:
        return None
    return [message(v, role)]


def system_message(v: Any) -> Message | None:
    """``gen_ai.system_instructions`` (parts, or a plain string) → a leading system message."""
    v = maybe_json(v)
    if v is None or v == "" or v == []:
        return None
    parts = [part(p) for p in v] if isinstance(v, list) else [part(v)]
    return {"role": "system", "parts": parts}


def choice(body: Any) -> Message:
    """A ``gen_ai.choice`` body ``{"index", "finish_reason", "message": {...}}`` → message."""
    body = maybe_json(body)
    if not isinstance(body, dict):
        return message(body, "assistant")
    inner = maybe_json(body.get("message"))
    msg = message(inner if isinstance(inner, dict) else body, "assistant")
    fr = body.get("finish_reason")
    if fr is not None and "finish_reason" not in msg:
        msg = {**msg, "finish_reason": fr}
    return msg


def role_event(name: str, body: Any) -> Message:
    """A ``gen_ai.{role}.message`` body → message; the role comes from the event name
    unless the body names one."""
    return message(maybe_json(body), ROLE_EVENTS[name])


def finish_reasons(msgs: list[Message] | None) -> list[str] | None:
    if not msgs:
        return None
    out = [str(m["finish_reason"]) for m in msgs
           if isinstance(m, dict) and m.get("finish_reason") is not None]
    return out or None
