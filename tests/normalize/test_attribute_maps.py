"""The two normalizers agree on random attribute maps of every convention and OTLP type
(otelbench.testing.attribute_maps), and the attributes they store, put back by the rule
of docs/schema.md, are the ones sent: the in-process half of tests/test_roundtrip.py,
cheap enough for many examples."""

from __future__ import annotations

import json
import random
import secrets

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otelbench.testing import attribute_maps as am
from otelbench.testing.otlp import event, kv, kvs, make_span, trace_request
from otelbench.testing.roundtrip import span_specs
from otelbench.storage.schema import MOVED_ATTRIBUTES
from tests.normalize.test_columnar import same_as_reference


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**64 - 1), n=st.sampled_from((1, 5, 24)), any_kind=st.booleans())
def test_both_normalizers_store_what_was_sent(seed: int, n: int, any_kind: bool) -> None:
    rng = random.Random(seed)
    specs = span_specs(rng, n)
    if any_kind:  # beyond what the SDK makes: bytes, kvlists, an empty key, a key sent twice
        for s in specs:
            s.attributes = {"": am.any_value(rng), **am.any_attributes(rng)}
    spans = []
    for i, s in enumerate(specs):
        attrs = am.as_lists(s.attributes)
        span = make_span(name=s.name, span_id=(i + 1).to_bytes(8, "big"),
                         events=[event(name, am.as_lists(a)) for name, a in s.events],
                         links=[Span.Link(trace_id=secrets.token_bytes(16), span_id=secrets.token_bytes(8),
                                          attributes=kvs(am.as_lists(a))) for a in s.links])
        span.attributes.extend([kv(k, "sent before") for k in list(attrs)[:i % 2]] + kvs(attrs))
        spans.append(span)
    resource = am.as_lists(am.any_attributes(rng))
    table = same_as_reference(trace_request(*spans, resource=resource))
    for s, row in zip(specs, table.to_pylist()):
        stored = json.loads(row["attributes"])
        for k in row["attributes_moved"] or ():
            assert k not in stored
            stored[k] = row[MOVED_ATTRIBUTES[k]]
        assert am.differences(s.attributes, stored) == []
        assert am.differences([a for _, a in s.events], [e["attributes"] for e in json.loads(row["events"])]) == []
        assert am.differences(s.links, [ln["attributes"] for ln in json.loads(row["links"])]) == []
        assert am.differences(resource, json.loads(row["resource_attributes"])) == []
