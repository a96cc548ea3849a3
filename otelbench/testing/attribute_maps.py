"""Random attribute maps for round-trip tests and benchmarks, and what each reads back as.

The maps mix every convention the normalizer reads (GenAI current and deprecated,
OpenInference, OpenLLMetry / traceloop, pydantic-ai and logfire, CrewAI, the Vercel AI
SDK's ``ai.*`` keys) with plain attributes of every OTLP type, edge values over-weighted:
unicode with astral and control characters, escapes, empty strings, the int64 bounds,
NaN and the infinities, homogeneous arrays (with the ``None`` items the SDK allows), and
GenAI message JSON both in the canonical shape (stored once in its column, see
``storage.schema.MOVED_ATTRIBUTES``) and in shapes that are rewritten (kept as sent).

Every generator takes a ``random.Random``, seeded by the benchmark or by hypothesis
(tests/test_roundtrip.py draws the seed), so an example is reproduced by its seed.
``span_attributes`` is what the OTel SDK accepts on a span; ``any_attributes`` adds what
OTLP carries beyond it (bytes, key-value lists, arrays of maps; the SDK's log records
take those). ``expected`` is the documented reading of a
sent value (docs/normalization.md "Conventions of the output"), written independently of
the normalizer: bytes → base64, NaN and ±inf → null, arrays → lists, kvlists → objects.
"""

from __future__ import annotations

import base64
import json
import math
import random
import struct
from collections.abc import Callable
from typing import Any

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

EDGE_STRINGS = ("", " ", "\x00", "\x01\x1f\x7f", "\t\n\r", "é", "ß", "\u2028\u2029", "\ufeff", "\U0001d11e",
                "😀👩‍💻", "\U0010ffff", "\\", '"', "\\u0000", '"},{"', "</script>", "null", "{}", "[]", "NaN",
                '{"a":1}', "0", "-1e400", "x" * 2000)
EDGE_INTS = (0, 1, -1, INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1, 2**53, 2**53 + 1, -(2**53) - 1,
             2**31, -(2**31) - 1)
EDGE_FLOATS = (0.0, -0.0, math.nan, math.inf, -math.inf, 1e308, -1.7976931348623157e308, 5e-324,
               2.2250738585072014e-308, 0.1, 1 / 3, 1e16, 1e21, 1e-7, 123456789012345678.0, 2.0**53, 3.0, -2.5)
# A character from each range: ASCII, C0 controls, Latin-1, the rest of the BMP (no
# surrogates: a lone one is not a string the SDK can encode), the astral planes.
_RANGES = ((0x20, 0x7E), (0x00, 0x1F), (0x7F, 0xFF), (0x100, 0xD7FF), (0xE000, 0xFFFF), (0x10000, 0x10FFFF))


# -- plain values ---------------------------------------------------------------------------------


def text(rng: random.Random, max_len: int = 24) -> str:
    if rng.random() < 0.25:
        return rng.choice(EDGE_STRINGS)
    out = []
    for _ in range(rng.randint(0, max_len)):
        lo, hi = _RANGES[0] if rng.random() < 0.6 else rng.choice(_RANGES)
        out.append(chr(rng.randint(lo, hi)))
    return "".join(out)


def integer(rng: random.Random) -> int:
    r = rng.random()
    if r < 0.3:
        return rng.choice(EDGE_INTS)
    return rng.randint(-1000, 1000) if r < 0.6 else rng.randint(INT64_MIN, INT64_MAX)


def double(rng: random.Random) -> float:
    r = rng.random()
    if r < 0.35:
        return rng.choice(EDGE_FLOATS)
    if r < 0.7:
        return rng.uniform(-1e6, 1e6)
    return struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]  # NaN payloads, subnormals too


def raw_bytes(rng: random.Random) -> bytes:
    if rng.random() < 0.3:
        return rng.choice((b"", b"\x00", b"\xff\xfe", "é".encode()))
    return rng.randbytes(rng.randint(0, 40))


_SCALARS: dict[str, Callable[[random.Random], Any]] = {
    "str": text, "int": integer, "double": double, "bool": lambda rng: rng.random() < 0.5,
}


def scalar(rng: random.Random) -> Any:
    return _SCALARS[rng.choice(tuple(_SCALARS))](rng)


def array(rng: random.Random) -> tuple[Any, ...]:
    """A homogeneous array, as the SDK allows (``None`` items too)."""
    make = _SCALARS[rng.choice(tuple(_SCALARS))]
    return tuple(None if rng.random() < 0.1 else make(rng) for _ in range(rng.randint(0, 5)))


def sdk_value(rng: random.Random) -> Any:
    """A value the SDK puts on a span as it is."""
    return array(rng) if rng.random() < 0.2 else scalar(rng)


def any_value(rng: random.Random, depth: int = 0) -> Any:
    """A value of any ``AnyValue`` kind: the SDK's log attributes carry all of these."""
    r = rng.random()
    if r < 0.1:
        return raw_bytes(rng)
    if r < 0.15:
        return None
    if depth < 2 and r < 0.25:
        return {key(rng): any_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if depth < 2 and r < 0.35:  # an array of maps, or of arrays (the SDK wants one kind per array)
        items = [any_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
        return [x for x in items if type(x) is type(items[0])]
    return sdk_value(rng)


def key(rng: random.Random) -> str:
    """A non-empty key (the SDK drops an empty one)."""
    k = text(rng, 12) if rng.random() < 0.5 else rng.choice(("app.user", "http.route", "a.b.c", "k"))
    return k or "empty"


_SAME_KIND: dict[type, Callable[[random.Random], Any]] = {
    bool: lambda rng: rng.random() < 0.5, int: integer, float: double, str: text, bytes: raw_bytes}


def same_kind(rng: random.Random, v: Any) -> Any:
    """Another value of ``v``'s kind: maps of one layout (the same keys and value kinds)."""
    make = _SAME_KIND.get(type(v))
    return v if make is None else make(rng)


# -- GenAI message JSON -----------------------------------------------------------------------


def _part(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(("text", "text", "tool_call", "tool_call_response", "reasoning"))
    if kind == "tool_call":
        return {"type": kind, "id": f"call_{rng.randint(0, 99)}", "name": text(rng, 8),
                "arguments": {"q": text(rng), "n": rng.randint(-5, 5)}}
    if kind == "tool_call_response":
        return {"type": kind, "id": f"call_{rng.randint(0, 99)}", "response": text(rng)}
    return {"type": kind, "content": text(rng)}


def _messages(rng: random.Random, role: str) -> list[dict[str, Any]]:
    out = []
    for i in range(rng.randint(1, 3)):
        m: dict[str, Any] = {"role": role if i == 0 else rng.choice(("user", "assistant", "tool", role)),
                             "parts": [_part(rng) for _ in range(rng.randint(0, 2))]}
        if role == "assistant" and rng.random() < 0.5:
            m["finish_reason"] = rng.choice(("stop", "length", "tool_call"))
        out.append(m)
    return out


def messages_json(rng: random.Random, role: str) -> Any:
    """Messages as instrumentations send them: the canonical compact JSON (stored once),
    the same spaced out or escaped to ASCII, older shapes, text, invalid JSON, an array."""
    msgs = _messages(rng, role)
    shape = rng.randrange(9)
    if shape <= 2:
        return json.dumps(msgs, ensure_ascii=False, separators=(",", ":"))
    if shape == 3:
        return json.dumps(msgs, indent=rng.choice((None, 1)))
    if shape == 4:
        return json.dumps([{"role": m["role"], "content": text(rng)} for m in msgs])  # rewritten: stays
    if shape == 5:
        return text(rng)
    if shape == 6:
        return rng.choice(("[", "[]", "{}", '[{"role":"user"}]', '[{"parts":[{"type":"text"}]}]', "null"))
    if shape == 7:
        return tuple(text(rng) for _ in range(rng.randint(0, 2)))
    return json.dumps(msgs[0], separators=(",", ":"))  # one message, not a list


# -- conventions ------------------------------------------------------------------------------


def _tokens(rng: random.Random) -> Any:
    return rng.choice((rng.randint(0, 5000), str(rng.randint(0, 5000)), "many", double(rng)))


def genai_current(rng: random.Random) -> dict[str, Any]:
    op = rng.choice(("chat", "invoke_agent", "execute_tool", "text_completion", "embeddings", "generate_content"))
    a: dict[str, Any] = {"gen_ai.operation.name": op, "gen_ai.provider.name": rng.choice(("openai", "anthropic")),
                         "gen_ai.request.model": rng.choice(("gpt-4o", "claude-3-5-sonnet", "smollm2")),
                         "gen_ai.usage.input_tokens": _tokens(rng), "gen_ai.usage.output_tokens": _tokens(rng)}
    if rng.random() < 0.8:
        a["gen_ai.input.messages"] = messages_json(rng, "user")
    if rng.random() < 0.8:
        a["gen_ai.output.messages"] = messages_json(rng, "assistant")
    if rng.random() < 0.3:
        a["gen_ai.system_instructions"] = json.dumps([{"type": "text", "content": text(rng)}])
    if rng.random() < 0.3:
        a["gen_ai.tool.definitions"] = json.dumps([{"type": "function", "name": text(rng, 8), "parameters": {}}])
    if rng.random() < 0.3:
        a["gen_ai.response.finish_reasons"] = ("stop",)
    if op in ("invoke_agent", "execute_tool"):
        a["gen_ai.agent.name" if op == "invoke_agent" else "gen_ai.tool.name"] = text(rng, 10)
    if op == "execute_tool":  # raw text, a JSON string literal (the JS SDKs), an object's JSON
        for key in ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result"):
            t = text(rng)
            a[key] = rng.choice((t, json.dumps(t, ensure_ascii=rng.random() < 0.5), json.dumps({"q": t})))
    return a


def genai_deprecated(rng: random.Random) -> dict[str, Any]:
    a: dict[str, Any] = {"gen_ai.system": rng.choice(("openai", "az.ai.inference", "xai")),
                         "gen_ai.usage.prompt_tokens": _tokens(rng), "gen_ai.usage.completion_tokens": _tokens(rng),
                         "llm.request.type": "chat"}
    for i in range(rng.randint(0, 3)):
        a[f"gen_ai.prompt.{i}.role"] = rng.choice(("system", "user", "tool"))
        a[f"gen_ai.prompt.{i}.content"] = rng.choice((text(rng), json.dumps([{"type": "text", "text": text(rng)}])))
    for i in range(rng.randint(0, 2)):
        a[f"gen_ai.completion.{i}.role"] = "assistant"
        a[f"gen_ai.completion.{i}.content"] = text(rng)
        a[f"gen_ai.completion.{i}.finish_reason"] = "stop"
        if rng.random() < 0.3:
            a[f"gen_ai.completion.{i}.tool_calls.0.name"] = text(rng, 8)
            a[f"gen_ai.completion.{i}.tool_calls.0.arguments"] = json.dumps({"q": text(rng)})
    if rng.random() < 0.2:
        a["gen_ai.prompt"] = text(rng)
        a["gen_ai.completion"] = messages_json(rng, "assistant")
    return a


def openinference(rng: random.Random) -> dict[str, Any]:
    a: dict[str, Any] = {"openinference.span.kind": rng.choice(("LLM", "CHAIN", "TOOL", "AGENT")),
                         "llm.model_name": "gpt-4o", "llm.provider": "openai",
                         "llm.token_count.prompt": _tokens(rng), "llm.token_count.completion": _tokens(rng),
                         "session.id": text(rng, 8)}
    for side, role in (("input", "user"), ("output", "assistant")):
        for i in range(rng.randint(0, 2)):
            p = f"llm.{side}_messages.{i}.message."
            a[p + "role"] = role
            if rng.random() < 0.7:
                a[p + "content"] = text(rng)
            else:
                a[p + "contents.0.message_content.type"] = "text"
                a[p + "contents.0.message_content.text"] = text(rng)
            if side == "output" and rng.random() < 0.3:
                a[p + "tool_calls.0.tool_call.function.name"] = text(rng, 8)
                a[p + "tool_calls.0.tool_call.function.arguments"] = json.dumps({"x": integer(rng)})
        if rng.random() < 0.6:
            json_doc = rng.random() < 0.5
            a[f"{side}.value"] = (json.dumps({"messages": [{"role": role, "content": text(rng)}]}) if json_doc
                                  else text(rng))
            a[f"{side}.mime_type"] = "application/json" if json_doc else "text/plain"
    return a


def traceloop(rng: random.Random) -> dict[str, Any]:
    return {"traceloop.span.kind": rng.choice(("workflow", "task", "agent", "tool")),
            "traceloop.entity.name": text(rng, 10), "traceloop.workflow.name": text(rng, 10),
            "traceloop.entity.input": json.dumps({"args": [text(rng)], "kwargs": {}}),
            "traceloop.entity.output": rng.choice((json.dumps(text(rng)), text(rng), "null")),
            "llm.usage.total_tokens": _tokens(rng)}


def pydantic_ai(rng: random.Random) -> dict[str, Any]:
    msgs = _messages(rng, "user") + _messages(rng, "assistant")
    return {"logfire.msg": f"agent run: {text(rng, 10)}", "logfire.msg_template": "agent run: {prompt}",
            "logfire.span_type": "span", "logfire.json_schema": json.dumps({"type": "object", "properties": {}}),
            "agent_name": text(rng, 8), "model_name": "gpt-4o", "code.lineno": integer(rng),
            "pydantic_ai.all_messages": json.dumps(msgs, ensure_ascii=rng.random() < 0.5),
            "pydantic_ai.new_message_index": rng.choice((0, 1, -1, 99)), "final_result": text(rng),
            "gen_ai.system_instructions": rng.choice((text(rng), '[{"type":"text","content":"Be brief."}]'))}


def crewai(rng: random.Random) -> dict[str, Any]:
    return {"crew_tasks": json.dumps([{"description": text(rng), "agent": text(rng, 8)}]), "crew_key": text(rng, 8)}


def vercel_ai(rng: random.Random) -> dict[str, Any]:
    """The AI SDK sends its own ``ai.*`` keys beside the GenAI ones (its chat spans carry
    both the system instructions and the messages)."""
    a = {"ai.operationId": rng.choice(("ai.generateText", "ai.generateText.doGenerate", "ai.streamText")),
         "ai.model.id": "gpt-4o", "ai.model.provider": "openai.chat",
         "ai.prompt": json.dumps({"system": text(rng), "messages": [{"role": "user", "content": text(rng)}]}),
         "ai.prompt.messages": json.dumps([{"role": "user", "content": [{"type": "text", "text": text(rng)}]}]),
         "ai.response.text": text(rng), "ai.response.finishReason": "stop",
         "ai.usage.promptTokens": _tokens(rng), "ai.usage.completionTokens": _tokens(rng),
         "ai.telemetry.functionId": text(rng, 8), f"ai.telemetry.metadata.{key(rng)}": text(rng),
         "ai.settings.maxRetries": 2, "operation.name": "ai.generateText"}
    return {**a, **genai_current(rng)}


CONVENTIONS: tuple[Callable[[random.Random], dict[str, Any]], ...] = (
    genai_current, genai_deprecated, openinference, traceloop, pydantic_ai, crewai, vercel_ai)


def span_attributes(rng: random.Random, plain: Callable[[random.Random], Any] = sdk_value) -> dict[str, Any]:
    """Zero to two conventions' keys, then plain attributes (``plain`` values); a plain key
    may take over a convention's key with a value of another kind."""
    if rng.random() < 0.04:  # the message text alone: every key may move, leaving the files' object empty
        return {k: json.dumps(_messages(rng, role), separators=(",", ":"))
                for k, role in (("gen_ai.input.messages", "user"), ("gen_ai.output.messages", "assistant"))
                if rng.random() < 0.7}
    a: dict[str, Any] = {}
    for _ in range(rng.choice((0, 1, 1, 1, 2))):
        a.update(rng.choice(CONVENTIONS)(rng))
    known = list(a)
    for _ in range(rng.randint(0, 8)):
        k = rng.choice(known) if known and rng.random() < 0.15 else key(rng)
        a[k] = plain(rng)
    return a


def any_attributes(rng: random.Random) -> dict[str, Any]:
    return span_attributes(rng, any_value)


def one_layout(rng: random.Random, template: dict[str, Any]) -> dict[str, Any]:
    """A map of ``template``'s layout with other values (many spans of one layout take the
    normalizer's bulk JSON writer)."""
    return {k: same_kind(rng, v) for k, v in template.items()}


def as_lists(v: Any) -> Any:
    """Arrays as lists (the SDK gives tuples), which otelbench.testing.otlp.av sends as arrays."""
    if isinstance(v, (list, tuple)):
        return [as_lists(x) for x in v]
    return {k: as_lists(x) for k, x in v.items()} if isinstance(v, dict) else v


# -- what reads back ------------------------------------------------------------------------


def expected(v: Any) -> Any:
    """A sent value as the lake's JSON reads back (docs/normalization.md)."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, (list, tuple)):
        return [expected(x) for x in v]
    if isinstance(v, dict):
        return {k: expected(x) for k, x in v.items()}
    raise TypeError(f"not an attribute value: {v!r}")


def differences(sent: Any, got: Any, where: str = "") -> list[str]:
    """Where ``got`` (parsed JSON) differs from ``expected(sent)``: key for key, value for
    value, and kind for kind (a double read back as an int, or a bool as 1, differs)."""
    want = expected(sent)
    return _diff(want, got, where)


def _diff(want: Any, got: Any, where: str) -> list[str]:
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{where}.{k!r}: missing (sent {want[k]!r})" for k in want if k not in got]
        out += [f"{where}.{k!r}: not sent (read {got[k]!r})" for k in got if k not in want]
        for k in want.keys() & got.keys():
            out += _diff(want[k], got[k], f"{where}.{k!r}")
        return out
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return [d for i, (w, g) in enumerate(zip(want, got)) for d in _diff(w, g, f"{where}[{i}]")]
    same = type(want) is type(got) and (want == got or (isinstance(want, float) and math.isnan(want)
                                                      and math.isnan(got)))
    if isinstance(want, float) and isinstance(got, float) and same:
        same = math.copysign(1, want) == math.copysign(1, got)
    return [] if same else [f"{where}: sent {want!r}, read {got!r}"]
