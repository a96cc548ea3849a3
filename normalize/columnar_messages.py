"""GenAI messages in bulk: the ``input_messages``, ``output_messages`` and
``finish_reasons`` columns of ``normalize.columnar``.

Messages come in three tiers. A ``gen_ai.input.messages`` / ``gen_ai.output.messages``
string that a strict pattern proves to be JSON in the canonical GenAI shape is kept as
sent, as the reference keeps it (``gen_ai.system_instructions`` made of text parts is
prepended as a system message): vectorized, the common case. Other values of those
three keys (structured AnyValues, old shapes, JSON the pattern cannot vouch for) go
through ``normalize.message_sources.span_messages`` per span. Spans with any other message
source (OpenLLMetry / OpenInference indexed attributes, message span events, framework
documents) or a JSON document only the row path reads (``conventions.ROW_PATH_KEYS``)
are flagged for the reference's per-span ``genai_fields``.

The canonical check is ``normalize._messages`` (C, without Python's lock: a fifth of the
regex's time on agent traffic) where it is built, else the pattern below, which states
the grammar and which the compiled check is tested against. The first call in a
process compiles the pattern (~0.1 s).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import polars as pl

from otelbench.normalize import conventions as cv
from otelbench.normalize import message_sources as sources
from otelbench.normalize import messages as msgs
from otelbench.normalize.columnar_attributes import KV, K_NONE, K_STR, index, json_str

try:
    from otelbench.normalize._messages import canonical as _compiled
except ImportError:  # not built: the pattern
    _compiled = None

_MSG_FAST = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")
# spans with any of these go to the reference: other message sources, and the JSON
# documents only the row path reads (conventions.ROW_PATH_KEYS)
_TO_REFERENCE = (sources.MESSAGE_KEYS - set(_MSG_FAST)) | cv.ROW_PATH_KEYS


# A conservative grammar of "JSON that orjson parses into canonical GenAI messages"
# (normalize.messages.message returns every message unchanged): what it accepts, the
# reference stores verbatim; anything else takes the Python tier. Numbers are bounded
# so that none overflows a double (orjson rejects those), \u escapes exclude surrogates
# (orjson rejects lone ones), and the only message keys besides role and parts are
# spelled out, so that no (escaped) second "role" can hide among them. Values nest one
# level: deeper nesting makes the regex DFA thrash (100x slower), and is rare.
_WS = r"[ \t\n\r]*"
_SEP = rf"{_WS},{_WS}"
_CH = r'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u(?:[0-9a-cA-CefEF][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))'
_STRING = rf'"{_CH}*"'
_SCALAR = rf"(?:{_STRING}|-?(?:0|[1-9][0-9]{{0,19}})(?:\.[0-9]{{1,30}})?(?:[eE][+-]?[0-9]{{1,2}})?|true|false|null)"
_VALUE = (rf"(?:{_SCALAR}|\[{_WS}(?:{_SCALAR}(?:{_SEP}{_SCALAR})*{_WS})?\]"
          rf"|\{{{_WS}(?:{_STRING}{_WS}:{_WS}{_SCALAR}(?:{_SEP}{_STRING}{_WS}:{_WS}{_SCALAR})*{_WS})?\}})")
_MEMBER = rf"{_STRING}{_WS}:{_WS}{_VALUE}"
_PART = rf'\{{{_WS}(?:{_MEMBER}{_SEP})*"type"{_WS}:{_WS}{_VALUE}(?:{_SEP}{_MEMBER})*{_WS}\}}'
_EXTRA = rf'"(?:finish_reason|name)"{_WS}:{_WS}{_VALUE}'
_ROLE = rf'"role"{_WS}:{_WS}"{_CH}+"'
_PARTS = rf'"parts"{_WS}:{_WS}\[{_WS}(?:{_PART}(?:{_SEP}{_PART})*{_WS})?\]'
_MESSAGE = (rf"\{{{_WS}(?:{_EXTRA}{_SEP})*(?:{_ROLE}(?:{_SEP}{_EXTRA})*{_SEP}{_PARTS}"
            rf"|{_PARTS}(?:{_SEP}{_EXTRA})*{_SEP}{_ROLE})(?:{_SEP}{_EXTRA})*{_WS}\}}")
MESSAGES_RX = rf"^\[{_WS}{_MESSAGE}(?:{_SEP}{_MESSAGE})*{_WS}\]{_WS}$"
# system instructions made of parts that normalize.messages.part keeps as they are
_TEXT_PART = (rf'\{{{_WS}(?:"type"{_WS}:{_WS}"text"{_SEP}"content"{_WS}:{_WS}{_VALUE}'
              rf'|"content"{_WS}:{_WS}{_VALUE}{_SEP}"type"{_WS}:{_WS}"text"){_WS}\}}')
SYSTEM_RX = rf"^\[{_WS}{_TEXT_PART}(?:{_SEP}{_TEXT_PART})*{_WS}\]{_WS}$"
# canonical input messages with a system message (its role escaped or not): the system
# instructions are prepended unless the first message is that same one, which the
# Python tier decides (OpenLIT sends the system prompt both ways)
SYSTEM_ROLE_RX = (rf'"role"{_WS}:{_WS}"(?:s|\\u0073)(?:y|\\u0079)(?:s|\\u0073)(?:t|\\u0074)(?:e|\\u0065)'
                  rf'(?:m|\\u006[dD])"')


def message_columns(kv: KV, message_events: np.ndarray) -> tuple[pl.DataFrame, np.ndarray, dict[int, Any]]:
    """(input_messages and output_messages, mask of the spans left to the reference,
    {span: Python output messages} of the spans assembled in Python)."""
    n = kv.n
    which = kv.lut({k: i for i, k in enumerate(_MSG_FAST)}, -1, np.int64)
    reference = message_events.copy()
    reference[kv.own[kv.lut({k: True for k in _TO_REFERENCE}, False, bool)]] = True
    rows = {name: kv.last_row(which, w) for w, name in enumerate(("inp", "out", "sys"))}
    odd = np.zeros(n, bool)
    strings, canonical = {}, {}
    for name, r in rows.items():
        kind = np.where(r >= 0, kv.kind[np.maximum(r, 0)] if kv.m else K_NONE, K_NONE)
        odd |= (kind != K_STR) & (kind != K_NONE)  # e.g. a structured AnyValue message list
        strings[name] = pl.col("s").gather(pl.lit(index(np.where(kind == K_STR, r, -1)))).alias(name)
        if _compiled is not None and name != "sys":
            ok = np.zeros(n, bool)
            spans = np.flatnonzero(kind == K_STR)
            ok[spans] = _compiled(kv.strings, r[spans])
            canonical[name] = pl.lit(pl.Series(ok))
    c = pl.col

    def nonempty(name: str) -> pl.Expr:
        return (c(name).str.len_bytes() > 0).fill_null(False)

    def messages_ok(name: str) -> pl.Expr:
        if name in canonical:
            return canonical[name]
        return nonempty(name) & c(name).str.contains(MESSAGES_RX).fill_null(False)

    checks = kv.df.select(**strings).with_columns(  # one select: polars runs the patterns in parallel
        inp_ok=messages_ok("inp"),
        out_ok=messages_ok("out"),
        sys_parts=nonempty("sys") & c("sys").str.contains(SYSTEM_RX).fill_null(False),
        sys_text=nonempty("sys") & ~c("sys").str.contains(r"^[\[{]").fill_null(False),  # plain text: a text part
        sys_other=nonempty("sys"),
    ).select(  # (eager selects do not share subexpressions: each pattern runs once, above)
        "sys", "sys_parts", "sys_text", "sys_other",
        input_messages=pl.when(c("inp_ok")).then(c("inp")), output_messages=pl.when(c("out_ok")).then(c("out")),
        inp=nonempty("inp") & ~c("inp_ok"), out=nonempty("out") & ~c("out_ok"),  # present, not proven canonical
    )
    flag = {name: checks[name].to_numpy() for name in ("inp", "out", "sys_parts", "sys_text", "sys_other")}
    fast = ~odd & ~flag["inp"] & ~flag["out"] & (~flag["sys_other"] | flag["sys_parts"] | flag["sys_text"])
    input_messages, output_messages = checks["input_messages"], checks["output_messages"]
    both = np.flatnonzero(fast & flag["sys_other"] & input_messages.is_not_null().to_numpy())
    if len(both):  # (the pattern runs on these few only)
        fast[both[input_messages.gather(both).str.contains(SYSTEM_ROLE_RX).to_numpy()]] = False
    with_system = np.flatnonzero(fast & (flag["sys_parts"] | flag["sys_text"]))
    if len(with_system):
        parts = pl.when(c("parts")).then(c("sys")).otherwise(
            pl.concat_str([pl.lit('[{"type":"text","content":'), json_str(c("sys")), pl.lit("}]")]))
        system = pl.concat_str([pl.lit('{"role":"system","parts":'), parts, pl.lit("}")])
        joined = pl.DataFrame({"sys": checks["sys"].gather(with_system), "parts": flag["sys_parts"][with_system],
                               "inp": input_messages.gather(with_system)}).select(
            pl.when(c("inp").is_null()).then(pl.concat_str([pl.lit("["), system, pl.lit("]")]))
            .otherwise(pl.concat_str([pl.lit("["), system, pl.lit(","), c("inp").str.slice(1)]))).to_series()
        input_messages = input_messages.scatter(with_system, joined)
    outputs: dict[int, Any] = {}
    in_python = np.flatnonzero(~fast & ~reference)
    if len(in_python):
        names = ("inp", "out", "sys")
        values = {name: kv.py_list(np.maximum(rows[name][in_python], 0)) for name in names}
        ins, outs = [], []
        for j, i in enumerate(in_python.tolist()):
            attrs = {key: values[name][j] for key, name in zip(_MSG_FAST, names) if rows[name][i] >= 0}
            inp, out = sources.span_messages(attrs, [])
            ins.append(msgs.dump(inp))
            outs.append(msgs.dump(out))
            outputs[i] = out
        input_messages = input_messages.scatter(in_python, pl.Series(ins, dtype=pl.String))
        output_messages = output_messages.scatter(in_python, pl.Series(outs, dtype=pl.String))
    return pl.DataFrame({"input_messages": input_messages, "output_messages": output_messages}), reference, outputs


def finish_reasons(kv: KV, finish_row: pl.Series, output: pl.Series, outputs: dict[int, Any]) -> pl.Series:
    """A plain string value → [it] (in ``conventions.FINISH_REASON_SPELLINGS``' spelling),
    vectorized; a list, a JSON-looking string, or no usable value but output messages →
    ``conventions.finish_reasons``, as the reference does."""
    n = kv.n
    has = finish_row.is_not_null()
    rows = finish_row.fill_null(0)
    s = kv.df["s"].gather(rows) if kv.m else pl.Series([None] * n, dtype=pl.String)
    by = kv.df["by"].gather(rows) if kv.m else pl.Series([None] * n, dtype=pl.Binary)
    text = pl.select(pl.when(has).then(pl.coalesce(s, by.bin.encode("base64")))).to_series()
    simple = text.is_not_null() & (text != "") & ~text.str.starts_with("[")
    nested = np.zeros(max(kv.m, 1), bool)
    nested[kv.complex] = True
    is_list = has & pl.Series(nested).gather(rows)
    odd = is_list | (text.is_not_null() & text.str.starts_with("[")) | (~simple & ~is_list & output.is_not_null())
    spelled = text.replace(cv.FINISH_REASON_SPELLINGS)
    result = pl.select(pl.when(simple).then(pl.concat_list([spelled]))).to_series()
    odd_rows = odd.arg_true().to_list()
    if odd_rows:
        full: list[Any] = [None] * n
        found = finish_row.gather(odd_rows).to_list()
        values = kv.py_list(np.array([0 if r is None else r for r in found], np.int64))
        for i, r, v, o in zip(odd_rows, found, values, output.gather(odd_rows).to_list()):
            out = outputs[i] if i in outputs else None if o is None else orjson.loads(o)
            full[i] = cv.finish_reasons(None if r is None else v, {}, out)
        result = pl.select(pl.when(odd).then(pl.Series(full, dtype=pl.List(pl.String))).otherwise(result)).to_series()
    return result
