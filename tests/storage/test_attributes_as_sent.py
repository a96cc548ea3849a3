"""``spans.attributes`` gives back every attribute as sent (docs/schema.md), as a property
over attribute maps drawn by hypothesis's own strategies, so a failure shrinks to the
smallest map that shows it: keys of every convention the normalizer reads (the alias
table, the message keys, some that promote nothing) beside arbitrary ones, and values of
every OTLP kind — text with escapes and astral characters, int64 bounds, NaN and the
infinities, bytes, arrays, nested key-value lists — and message JSON in the canonical shape
(stored once, ``attributes_moved``) and others. Each example goes through the columnar
normalizer into a real lake and back through DuckDB's ``spans`` view and the files read
by the documented rule. tests/test_roundtrip.py does the same through a real collector
with seeded generators."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otelbench.normalize.columnar import normalize_traces_arrow
from otelbench.normalize.conventions import ALIASES
from otelbench.testing import attribute_maps as am
from otelbench.testing.otlp import make_span, trace_request
from otelbench.storage.duckdb import open_lake
from otelbench.storage.lake import Lake
from otelbench.storage.schema import MOVED_ATTRIBUTES

INT64 = st.integers(-(2**63), 2**63 - 1)
TEXT = st.text(st.characters(codec="utf-8"), max_size=20)
SCALARS = st.one_of(TEXT, st.booleans(), INT64, st.floats(allow_nan=True, allow_infinity=True))
# one kind per array, as the SDK sends them
ARRAYS = st.one_of(*(st.lists(s, max_size=4) for s in (TEXT, st.booleans(), INT64, st.floats())))
VALUES = st.recursive(st.one_of(SCALARS, st.binary(max_size=8), ARRAYS),
                      lambda inner: st.dictionaries(TEXT, inner, max_size=3), max_leaves=6)
KNOWN_KEYS = sorted({k for keys in ALIASES.values() for k in keys} | set(MOVED_ATTRIBUTES)
                    | {"gen_ai.system_instructions", "gen_ai.tool.definitions", "input.value", "output.value",
                       "llm.input_messages.0.message.role", "llm.input_messages.0.message.content",
                       "gen_ai.prompt.0.content", "gen_ai.completion.0.content", "traceloop.entity.input"})
PART = st.fixed_dictionaries({"type": st.just("text"), "content": TEXT})
MESSAGES = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system"]),
                                           "parts": st.lists(PART, min_size=1, max_size=2)}), min_size=1, max_size=2)
# canonical message JSON as compact text (moves into input/output_messages), or spaced, or another shape
MESSAGE_TEXT = st.one_of(MESSAGES.map(lambda m: json.dumps(m, separators=(",", ":"), ensure_ascii=False)),
                         MESSAGES.map(json.dumps), TEXT)
INSTRUCTIONS = st.lists(PART, min_size=1, max_size=2).map(json.dumps)
# the message keys, each present or not (system instructions beside them make the input differ)
MESSAGE_KEYS = st.fixed_dictionaries({}, optional={**{k: MESSAGE_TEXT for k in MOVED_ATTRIBUTES},
                                                   "gen_ai.system_instructions": INSTRUCTIONS})
# a JSON string literal: the tool columns decode it (conventions.JSON_TEXT_KEYS), the attribute keeps it
JSON_STRING = TEXT.map(lambda t: json.dumps(t, ensure_ascii=False))
ATTRIBUTES = st.tuples(st.dictionaries(st.one_of(st.sampled_from(KNOWN_KEYS), TEXT),
                                       st.one_of(VALUES, MESSAGE_TEXT, JSON_STRING),
                                       max_size=10), MESSAGE_KEYS).map(lambda t: {**t[0], **t[1]})
OPERATIONS = st.sampled_from([{}, {"gen_ai.operation.name": "chat"}, {"gen_ai.operation.name": "invoke_agent"},
                              {"gen_ai.operation.name": "execute_tool"}, {"openinference.span.kind": "LLM"}])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                   HealthCheck.function_scoped_fixture])
@given(maps=st.lists(st.tuples(OPERATIONS, ATTRIBUTES).map(lambda t: {**t[0], **t[1]}), min_size=1, max_size=6))
def test_every_attribute_reads_back_as_sent(tmp_path_factory: Any, maps: list[dict[str, Any]]) -> None:
    sent = [am.as_lists(m) for m in maps]
    spans = [make_span(m, name="chat m", span_id=(i + 1).to_bytes(8, "big")) for i, m in enumerate(sent)]
    table = normalize_traces_arrow([trace_request(*spans).SerializeToString()], [None])
    lake = Lake(Path(tmp_path_factory.mktemp("as_sent")) / "lake")
    lake.init()
    lake.write_batch(f"{1:020d}", {"spans": {c: table.column(c) for c in table.column_names}})
    with open_lake(lake.root) as gw:
        viewed = dict(gw.query("SELECT span_id, attributes FROM spans").rows)
    files = [r for f in lake.files("spans") for r in pq.read_table(f).to_pylist()]
    for i, want in enumerate(sent):
        span_id = (i + 1).to_bytes(8, "big").hex()
        assert am.differences(want, json.loads(viewed[span_id]), "view") == []
        (row,) = [r for r in files if r["span_id"] == span_id]
        stored = json.loads(row["attributes"])
        for key in row["attributes_moved"] or ():  # the files' rule (docs/schema.md)
            stored[key] = row[MOVED_ATTRIBUTES[key]]
        assert am.differences(want, stored, "files") == []
