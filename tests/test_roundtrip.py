"""What was sent reads back as sent (docs/schema.md: ``spans.attributes`` is "every span
attribute, as sent"), as a property: random attribute maps in every convention the
normalizer reads, mixed with plain attributes of every OTLP type
(otelbench.testing.attribute_maps), go through the real OTel SDK (OTLP/HTTP protobuf, gRPC,
OTLP/JSON) to a real collector, beside spans the SDK cannot make (bytes, key-value lists,
a key sent twice); the ``spans`` and ``logs`` views and the Parquet files read by the
documented rule must give back every span, event, link, log record, resource and scope
attribute, before and after a compaction, in a local lake and in a bucket, and in the lake of a collector that the
local one forwards to (exporters.otlp).

One collector per lake serves every example (module fixtures); each example sends a
batch of spans and log records with fresh ids and reads back only those."""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from otelbench.collector.wiring import Collector
from otelbench.testing import attribute_maps as am
from otelbench.testing.collector import collector_config
from otelbench.testing.roundtrip import (PROTOCOLS, SpanSpec, Target, send_logs, send_raw_spans, send_spans,
                                         span_specs)
from otelbench.storage.duckdb import open_lake

NO_COMPACTOR = {"compaction": {"enabled": False}}  # the test compacts, when it chooses to


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """A collector that ``local`` forwards every batch to (exporters.otlp)."""
    c = Collector(collector_config(tmp_path_factory.mktemp("upstream"), parquet=NO_COMPACTOR)).start()
    yield Target(c)
    c.stop()


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory, upstream: Target) -> Iterator[Target]:
    both = {"receivers": ["otlp"], "exporters": ["parquet", "otlp"]}
    c = Collector(collector_config(tmp_path_factory.mktemp("local"), parquet=NO_COMPACTOR,
                                   exporters={"otlp": {"endpoint": upstream.to.http}},
                                   service={"pipelines": {"traces": both, "logs": both}})).start()
    yield Target(c)
    c.stop()


@pytest.fixture(scope="module")
def bucket(s3_server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    with pytest.MonkeyPatch.context() as mp:
        for k, v in s3_server.env.items():
            mp.setenv(k, v)
        location = s3_server.make_bucket(f"roundtrip-{uuid.uuid4().hex[:8]}") + "/lake"
        c = Collector(collector_config(tmp_path_factory.mktemp("bucket"),
                                       parquet={"path": location, **NO_COMPACTOR})).start()
        yield Target(c)
        c.stop()


_DAYS = itertools.count()
_DAY_NS = 86_400 * 10**9
_Y2K_NS = 946_684_800 * 10**9


def round_trip(target: Target, seed: int, protocol: str, n_spans: int, n_logs: int,
               upstream: Target | None = None) -> None:
    """Send spans and log records in two halves, each flushed to a file of its own, on a
    day no other example uses (its own partition: the compaction merges exactly those two
    files); check before and after the compaction."""
    day = _Y2K_NS + next(_DAYS) * _DAY_NS
    rng = random.Random(seed)
    specs, resource, scope = span_specs(rng, n_spans), am.span_attributes(rng), am.span_attributes(rng)
    maps, log_resource = [am.any_attributes(rng) for _ in range(n_logs)], am.span_attributes(rng)
    tag = f"roundtrip-{uuid.uuid4().hex}"
    spans: dict = {}
    logs: dict = {}
    for half in (0, 1):
        some_specs = specs[:n_spans // 2] if half == 0 else specs[n_spans // 2:]
        some_maps = maps[:n_logs // 2] if half == 0 else maps[n_logs // 2:]
        spans |= send_spans(target.to, some_specs, resource, protocol, rng, start_ns=day + 3600 * 10**9, scope=scope)
        # and what OTLP carries beyond the SDK's spans (bytes, kvlists, an empty key ...)
        raw = [{"": am.any_value(rng), **am.any_attributes(rng)}, am.any_attributes(rng)]
        fmt = "json" if protocol == "http/json" else "protobuf"
        spans |= send_raw_spans(target.to, raw, am.any_attributes(rng), fmt, start_ns=day + 3600 * 10**9)
        logs |= send_logs(target.to, some_maps, log_resource, protocol, f"{tag}-{half}", time_ns=day)
        target.collector.wait_flushed()
    assert (found := target.differences(spans, logs)) == [], "\n".join(found[:50])
    merged = target.compact()
    assert merged["spans"] >= 2 and (merged["logs"] >= 2 or n_logs < 2), merged
    assert (found := target.differences(spans, logs)) == [], "after compaction:\n" + "\n".join(found[:50])
    if upstream is not None:
        assert (found := upstream.arrived(spans, logs)) == [], "forwarded:\n" + "\n".join(found[:50])


# An example is a seed of the generators (otelbench.testing.attribute_maps): a batch of
# spans draws more than hypothesis lets one example draw, and a failure reads best as the
# differences found, which the assertion lists. Shrinking a seed finds no simpler example
# (only another one, at a second or two each): not done.
_EXAMPLES = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow],
                 phases=[Phase.explicit, Phase.reuse, Phase.generate])
SEEDS = st.integers(0, 2**64 - 1)


@settings(max_examples=8, **_EXAMPLES)
@given(seed=SEEDS, protocol=st.sampled_from(PROTOCOLS), n_spans=st.sampled_from((2, 7, 24)),
       n_logs=st.integers(0, 8))
def test_a_local_lake_and_the_collector_it_forwards_to_give_back_what_was_sent(
        local: Target, upstream: Target, seed: int, protocol: str, n_spans: int, n_logs: int) -> None:
    round_trip(local, seed, protocol, n_spans, n_logs, upstream)


@settings(max_examples=2, **_EXAMPLES)
@given(seed=SEEDS, protocol=st.sampled_from(PROTOCOLS))
def test_a_lake_in_a_bucket_gives_back_what_was_sent(bucket: Target, seed: int, protocol: str) -> None:
    round_trip(bucket, seed, protocol, 24, 4)


def test_a_token_count_beyond_int64_is_stored_and_the_flusher_lives_on(collector) -> None:
    # a span the reference path reads (OpenInference's input.value sends it there) whose token
    # counts are numbers no BIGINT holds: null, or the batch's Arrow conversion would fail and
    # take the flusher process with it
    target = Target(collector)
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": "99999999999999999999",
             "gen_ai.usage.output_tokens": 1e19, "input.value": "hi"}
    spans = send_spans(target.to, [SpanSpec("chat gpt-4o", attrs)], {}, "http/protobuf", random.Random(0))
    assert target.differences(spans, {}) == []
    with open_lake(target.location) as gw:
        assert gw.query("SELECT input_tokens, output_tokens, total_tokens FROM spans").rows == [(None, None, None)]
