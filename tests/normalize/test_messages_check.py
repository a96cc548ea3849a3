"""normalize._messages.canonical against MESSAGES_RX: the same language, string by string.

The regex (normalize.columnar_messages) is the statement of which message JSON is kept
as sent; the compiled check must accept exactly what it accepts. Compared on the
normalization fuzz's message JSON (canonical and wild), on every single-character
mutation of canonical messages (structure, numbers, escapes, whitespace: where a hand
written parser and a regex disagree), and on hand-picked edge cases. An install without
the compiled module fails here (setup.py builds it; normalize.columnar_messages would fall
back to the regex).
"""

from __future__ import annotations

import json
import random

import polars as pl
import pyarrow as pa
import pytest

from otelbench.normalize.columnar_messages import MESSAGES_RX
from tests.normalize.test_columnar import _messages_json

def regex(texts: list[str]) -> list[bool]:
    return pl.Series(texts, dtype=pl.String).str.contains(MESSAGES_RX).fill_null(False).to_list()


def compiled(texts: list[str]) -> list[bool]:
    from otelbench.normalize._messages import canonical

    return canonical(pa.array(texts, pa.string()), list(range(len(texts)))).tolist()


def assert_same(texts: list[str]) -> int:
    want, got = regex(texts), compiled(texts)
    for text, w, g in zip(texts, want, got):
        assert g == w, f"regex {w}, compiled {g}: {text!r}"
    return sum(want)


EDGES = [
    "", "[]", " []", "[ ]", "null", "{}", "[{}]",
    '[{"role":"user","parts":[]}]', '[{"role":"user","parts":[]}] \n', ' [{"role":"user","parts":[]}]',
    '[{"parts":[],"role":"u"}]', '[{"role":"","parts":[]}]', '[{"role":"u"}]', '[{"parts":[]}]',
    '[{"role":"u","role":"u","parts":[]}]', '[{"role":"u","parts":[],"parts":[]}]',
    '[{"name":"n","role":"u","finish_reason":"stop","parts":[],"name":null}]',
    '[{"role":"u","parts":[],"other":1}]', '[{"r\\u006fle":"u","parts":[]}]',
    '[{"role":"\\u0075","parts":[]}]', '[{"role":"\\n","parts":[]}]',
    '[{"role":"u","parts":[{"type":"text"}]}]', '[{"role":"u","parts":[{"text":"x"}]}]',
    '[{"role":"u","parts":[{}]}]', '[{"role":"u","parts":[{"a":1,"type":2,"type":3}]}]',
    '[{"role":"u","parts":[{"typ\\u0065":"text"}]}]',
    '[{"role":"u","parts":[{"type":"t","v":[1,"a",true,false,null,{"x":1}]}]}]',
    '[{"role":"u","parts":[{"type":"t","v":{"a":[1]}}]}]', '[{"role":"u","parts":[{"type":"t","v":{"a":{}}}]}]',
    '[{"role":"u","parts":[{"type":"t","v":[[]]}]}]', '[{"role":"u","parts":[{"type":"t","v":{}}]}]',
    '[{"role":"u","parts":[{"type":"t","v":[ ]}]}]', '[{"role":"u","parts":[{"type":"t","v":{ }}]}]',
    *(f'[{{"role":"u","parts":[{{"type":"t","v":{n}}}]}}]' for n in [
        "0", "-0", "01", "-", "1.", ".5", "1.5", "1e5", "1E+05", "1e-5", "1e", "1e+", "1e123", "1.5e10",
        "1" * 20, "1" * 21, "0." + "1" * 30, "0." + "1" * 31, "-" + "9" * 20, "1ee1", "+1", "1.5.5", "0x1",
        "true", "tru", "truee", "nul", "False"]),
    *(f'[{{"role":"u","parts":[{{"type":"t","v":"{s}"}}]}}]' for s in [
        "\\u0041", "\\u00e9", "\\ud800", "\\uD83D", "\\udfff", "\\ue000", "\\uDBFF", "\\u12", "\\u12g4", "\\x41",
        "\\/", "\\b\\f\\n\\r\\t", "\\a", "\\", "é", "日本", "😀", "\x01", "\x1f", "\x7f", "tab\there"]),
    '[{"role":"u","parts":[]},{"role":"a","parts":[]}]', '[{"role":"u","parts":[]},]', '[,{"role":"u","parts":[]}]',
    '[{"role":"u","parts":[]}\n,\r\n{"role":"a","parts":[]}\t]', '[{"role":"u","parts":[]}]]',
    '[{"role":"u","parts":[]} x]', '[{"role":"u","parts":[]}]\u00a0', '[{"role" : "u" , "parts" : [ ] }]',
]


def test_edge_cases() -> None:
    assert 10 < assert_same(EDGES) < len(EDGES) - 10  # both kinds are exercised


@pytest.mark.parametrize("seed", range(6))
def test_the_normalization_fuzz(seed: int) -> None:
    rng = random.Random(seed)
    texts = [_messages_json(rng, rng.choice(["user", "assistant"]), wild=rng.random() < 0.5) for _ in range(600)]
    accepted = assert_same(texts)
    assert 100 < accepted < len(texts)


_ALPHABET = list('[]{}",:\\ \t\n\r0123456789.eE+-truefalsnlu/bfx\x01é') + ['\\u', '\\ud8', '"type"', '"role"']


@pytest.mark.parametrize("seed", range(4))
def test_every_mutation_of_canonical_messages(seed: int) -> None:
    rng = random.Random(100 + seed)
    bases = [json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi é"},
                                                    {"type": "tool_call", "arguments": {"a": [1, 2.5e-3, None]},
                                                     "n": -12}]},
                         {"finish_reason": "stop", "parts": [], "role": "assistant", "name": "x"}],
                        separators=rng.choice([(",", ":"), (", ", ": ")]))]
    bases += [_messages_json(rng, "user", wild=False) for _ in range(3)]
    texts = []
    for base in bases:
        for i in range(len(base) + 1):
            op = rng.random()
            if op < 0.4:
                texts.append(base[:i] + base[i + 1:])  # delete
            elif op < 0.7:
                texts.append(base[:i] + rng.choice(_ALPHABET) + base[i:])  # insert
            else:
                texts.append(base[:i] + rng.choice(_ALPHABET) + base[i + 1:])  # replace
    accepted = assert_same(texts)
    assert 0 < accepted < len(texts)


def test_rows_select_from_a_sliced_array() -> None:
    from otelbench.normalize._messages import canonical

    good, bad = '[{"role":"u","parts":[]}]', "[x]"
    arr = pa.array([bad, good, bad, good, None, ""], pa.string()).slice(1)
    assert canonical(arr, [0, 1, 2, 2, 0]).tolist() == [True, False, True, True, True]
    assert canonical(arr, []).tolist() == []
    assert canonical(pa.array(["", ""], pa.string()), [0, 1]).tolist() == [False, False]
