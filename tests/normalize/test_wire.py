"""normalize.wire: the compiled OTLP decoder against ptars and protobuf's own parser.

ptars is the oracle for the shape and the values (``decode`` must return its record
batch, equal column by column). For bytes that only a parser's rules decide — fields out
of order, unknown fields and groups, a singular field or message sent twice, a oneof
member set after another — protobuf is the oracle: what ``FromString`` makes of the
bytes, serialized again canonically, is what ptars gets. Broken payloads must raise
``ValueError`` (the flusher then decodes request by request), never crash.
test_columnar.py checks the whole normalization, this decoder included, against the
row-by-row reference.
"""

from __future__ import annotations

import math
import random
import struct
import threading
import time

import pyarrow as pa
import pytest
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from otelbench.normalize import wire
from otelbench.testing.otlp import agent_request
from tests.normalize.test_columnar import RECORDED_STACKS, _fuzz_request
from tests.testdata.loader import recorded

def ptars(payloads: list[bytes]) -> pa.RecordBatch:
    return wire._ptars().list_to_record_batch(payloads)


def _bits(x: object, elements: bool = False) -> object:
    """A decoded value with each float as its bits (NaN equals NaN, -0.0 differs from 0.0);
    with ``elements``, each array / kvlist element as protobuf serializes it again (an
    element is kept as sent, and protobuf moves unknown fields to the end)."""
    if isinstance(x, float):
        return struct.pack("<d", x)
    if isinstance(x, dict):
        out = {k: _bits(v, elements) for k, v in x.items()}
        for key, message in (("array_value", AnyValue), ("kvlist_value", KeyValue)):
            if elements and out.get(key) is not None:
                out[key] = [message.FromString(e).SerializeToString() for e in out[key]["values"]]
        return out
    if isinstance(x, list):
        return [_bits(v, elements) for v in x]
    return x


def _assert_equal(got: pa.RecordBatch, want: pa.RecordBatch, elements: bool = False) -> None:
    if got.equals(want):
        return
    for i, (x, y) in enumerate(zip(got.to_pylist(), want.to_pylist())):  # (NaN is unequal to itself)
        assert _bits(x, elements) == _bits(y, elements), f"payload {i}"


def assert_as_ptars(payloads: list[bytes]) -> pa.RecordBatch:
    got = wire.decode(payloads)
    got.validate(full=True)
    want = ptars(payloads)
    assert got.schema == want.schema
    assert got.num_rows == want.num_rows == len(payloads)
    _assert_equal(got, want)
    return got


def assert_as_protobuf(payloads: list[bytes]) -> None:
    """Decoded as protobuf reads the bytes: ptars on their canonical serialization."""
    canonical = [ExportTraceServiceRequest.FromString(p).SerializeToString() for p in payloads]
    got = wire.decode(payloads)
    got.validate(full=True)
    _assert_equal(got, ptars(canonical), elements=True)


def test_this_install_is_compiled() -> None:
    """scripts/setup.sh builds the extension (setup.py); a missing compiler must not pass
    unseen, or every flusher would quietly decode with ptars."""
    import importlib

    importlib.import_module("otelbench.normalize._wire")
    importlib.import_module("otelbench.normalize._messages")
    assert wire.COMPILED


def test_the_schema_is_ptars() -> None:
    assert wire.SCHEMA == ptars([b""]).schema
    assert wire.decode([]).schema == wire.SCHEMA
    assert wire.decode([]).num_rows == 0


def test_empty_and_small_requests() -> None:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.scope_spans.add().spans.add()
    assert_as_ptars([b"", req.SerializeToString(), b"", ExportTraceServiceRequest().SerializeToString()])


# -- every field, every value kind ---------------------------------------------------------

TEXT = ["", "a", "é", "日本", "😀 x", "\x00", "line\nbreak", "k" * 300]


def _value(rng: random.Random, depth: int = 0) -> AnyValue:
    kind = rng.randrange(10 if depth < 2 else 7)
    if kind == 0:
        return AnyValue(string_value=rng.choice(TEXT))
    if kind == 1:
        return AnyValue(bool_value=rng.random() < 0.5)
    if kind == 2:
        return AnyValue(int_value=rng.choice([0, -1, 1, 2**63 - 1, -2**63, rng.randrange(-10**6, 10**6)]))
    if kind == 3:
        return AnyValue(double_value=rng.choice([0.0, -0.0, 1.5, -2.25e300, math.inf, -math.inf, 1e-310, math.nan]))
    if kind == 4:
        return AnyValue(bytes_value=rng.randbytes(rng.randrange(5)))
    if kind == 5:
        return AnyValue(string_value_strindex=rng.choice([0, 3, -1]))
    if kind == 6:
        return AnyValue()  # no member set
    if kind in (7, 8):
        v = AnyValue()
        v.array_value.values.extend(_value(rng, depth + 1) for _ in range(rng.randrange(4)))
        return v
    v = AnyValue()
    v.kvlist_value.values.extend(_kv(rng, depth + 1) for _ in range(rng.randrange(4)))
    return v


def _kv(rng: random.Random, depth: int = 0) -> KeyValue:
    kv = KeyValue(key=rng.choice(["k", "gen_ai.x", "é", ""]), key_strindex=rng.choice([0, 0, 7, -2]))
    if rng.random() < 0.9:  # a key-value without a value too
        kv.value.CopyFrom(_value(rng, depth))
    return kv


def _kvs(rng: random.Random) -> list[KeyValue]:
    return [_kv(rng) for _ in range(rng.choice([0, 1, 3, 8]))]


def _everything(rng: random.Random) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    for _ in range(rng.randrange(4)):
        rs = req.resource_spans.add(schema_url=rng.choice(["", "https://x/1.0"]))
        if rng.random() < 0.8:
            rs.resource.SetInParent()
            rs.resource.attributes.extend(_kvs(rng))
            rs.resource.dropped_attributes_count = rng.choice([0, 1, 2**32 - 1])
            for _ in range(rng.randrange(3)):
                ref = rs.resource.entity_refs.add(schema_url=rng.choice(TEXT), type=rng.choice(["host", ""]))
                ref.id_keys.extend(rng.choice(TEXT) for _ in range(rng.randrange(3)))
                ref.description_keys.extend(rng.choice(TEXT) for _ in range(rng.randrange(3)))
        for _ in range(rng.randrange(3)):
            ss = rs.scope_spans.add(schema_url=rng.choice(["", "s"]))
            if rng.random() < 0.7:
                ss.scope.SetInParent()
                ss.scope.name, ss.scope.version = rng.choice(TEXT), rng.choice(["", "1.2"])
                ss.scope.attributes.extend(_kvs(rng))
                ss.scope.dropped_attributes_count = rng.randrange(3)
            for _ in range(rng.randrange(6)):
                span = ss.spans.add(
                    trace_id=rng.choice([b"", rng.randbytes(16)]), span_id=rng.choice([b"", rng.randbytes(8)]),
                    parent_span_id=rng.choice([b"", rng.randbytes(8)]), trace_state=rng.choice(["", "a=b"]),
                    name=rng.choice(TEXT), kind=rng.choice([0, 1, 3, 5, 99, -1]),
                    start_time_unix_nano=rng.choice([0, 2**64 - 1, 1_700_000_000_000_000_000]),
                    end_time_unix_nano=rng.randrange(2**64), flags=rng.choice([0, 1, 0x301, 2**32 - 1]),
                    dropped_attributes_count=rng.randrange(3), dropped_events_count=rng.randrange(3),
                    dropped_links_count=rng.randrange(3))
                span.attributes.extend(_kvs(rng))
                if rng.random() < 0.6:
                    span.status.SetInParent()
                    span.status.message, span.status.code = rng.choice(TEXT), rng.choice([0, 1, 2, 7])
                for _ in range(rng.randrange(3)):
                    ev = span.events.add(time_unix_nano=rng.randrange(2**64), name=rng.choice(TEXT),
                                         dropped_attributes_count=rng.randrange(2))
                    ev.attributes.extend(_kvs(rng))
                for _ in range(rng.randrange(3)):
                    link = span.links.add(trace_id=rng.randbytes(16), span_id=rng.randbytes(8),
                                          trace_state=rng.choice(["", "x=y"]), flags=rng.choice([0, 257]),
                                          dropped_attributes_count=rng.randrange(2))
                    link.attributes.extend(_kvs(rng))
    return req


@pytest.mark.parametrize("seed", range(12))
def test_every_field_and_value_kind(seed: int) -> None:
    rng = random.Random(seed)
    assert_as_ptars([_everything(rng).SerializeToString() for _ in range(rng.randrange(1, 6))])


@pytest.mark.parametrize("instrumentation", RECORDED_STACKS)
def test_recorded_fixtures(instrumentation: str) -> None:
    assert_as_ptars([r.SerializeToString() for r in recorded(instrumentation, "traces")])


@pytest.mark.parametrize("seed", range(4))
def test_the_normalization_fuzz_and_agent_traffic(seed: int) -> None:
    rng = random.Random(seed)
    payloads = [_fuzz_request(rng, wild=True).SerializeToString() for _ in range(3)]
    payloads += [agent_request(rng, rng.randint(1, 200), agent="a").SerializeToString() for _ in range(3)]
    assert_as_ptars(payloads)


def test_many_payloads_grow_every_buffer() -> None:
    rng = random.Random(5)
    payloads = [_everything(rng).SerializeToString() for _ in range(300)]
    assert_as_ptars(payloads)


# -- what only the parser's rules decide ----------------------------------------------------

_VARINT, _I64, _LEN, _SGROUP, _EGROUP, _I32 = range(6)


def _varint(v: int) -> bytes:
    v &= 2**64 - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _tag(field: int, wt: int) -> bytes:
    return _varint(field << 3 | wt)


def _read_varint(b: bytes, i: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        v |= (b[i] & 0x7F) << shift
        shift += 7
        i += 1
        if b[i - 1] < 0x80:
            return v, i


def _past(b: bytes, i: int) -> int:
    """The offset just past the field whose tag is at ``i`` (a group: past its end)."""
    tag, i = _read_varint(b, i)
    wt = tag & 7
    if wt == _VARINT:
        return _read_varint(b, i)[1]
    if wt in (_I64, _I32):
        return i + (8 if wt == _I64 else 4)
    if wt == _LEN:
        n, i = _read_varint(b, i)
        return i + n
    end = _tag(tag >> 3, _EGROUP)
    while not b.startswith(end, i):
        i = _past(b, i)
    return i + len(end)


def _fields(b: bytes) -> list[tuple[int, int, bytes]]:
    """A message's fields as (number, wire type, encoded value after the tag)."""
    out, i = [], 0
    while i < len(b):
        tag, start = _read_varint(b, i)
        i = _past(b, i)
        out.append((tag >> 3, tag & 7, b[start:i]))
    return out


def _payload(value: bytes) -> bytes:
    n, i = _read_varint(value, 0)
    return value[i:i + n]


# which length-delimited fields are messages to descend into (field → message name);
# an array / kvlist element stays as it is: decoded, it is kept as its bytes
_MESSAGES = {
    "request": {1: "rs"}, "rs": {1: "resource", 2: "ss"}, "resource": {1: "kv", 3: "entity"}, "entity": {},
    "ss": {1: "scope", 2: "span"}, "scope": {3: "kv"}, "span": {9: "kv", 11: "event", 13: "link", 15: "status"},
    "event": {3: "kv"}, "link": {4: "kv"}, "status": {}, "kv": {2: "any"}, "any": {},
}


def _unknown(rng: random.Random) -> bytes:
    f = rng.choice([17, 100, 536870911])
    wt = rng.choice([_VARINT, _I64, _LEN, _I32, _SGROUP])
    if wt == _VARINT:
        return _tag(f, wt) + _varint(rng.randrange(2**64))
    if wt == _I64:
        return _tag(f, wt) + rng.randbytes(8)
    if wt == _I32:
        return _tag(f, wt) + rng.randbytes(4)
    if wt == _LEN:
        data = rng.randbytes(rng.randrange(6))
        return _tag(f, wt) + _varint(len(data)) + data
    inner = _tag(3, _VARINT) + _varint(5) + _tag(4, _SGROUP) + _tag(4, _EGROUP)  # a group, one nested
    return _tag(f, _SGROUP) + inner + _tag(f, _EGROUP)


def _scramble(rng: random.Random, b: bytes, kind: str) -> bytes:
    """The same message as protobuf reads it, spelled otherwise: fields of different
    numbers moved around (same-numbered fields keep their order), unknown fields and
    groups inserted, a singular message split in two (merged again), and the fields
    within each message scrambled alike."""
    fields = []
    for f, wt, value in _fields(b):
        sub = _MESSAGES[kind].get(f) if wt == _LEN else None
        if sub is not None:
            body = _scramble(rng, _payload(value), sub)
            parts = [body]
            if sub in ("resource", "scope", "status", "any") and rng.random() < 0.3:
                cut = [0] + [off for off in _boundaries(body)]
                at = rng.choice(cut)
                parts = [body[:at], body[at:]]  # two occurrences: protobuf merges them
            fields.extend((f, _len(f, p)) for p in parts)
        else:
            fields.append((f, _tag(f, wt) + value))
    order = sorted(range(len(fields)), key=lambda i: (rng.random(), i))
    by_number: dict[int, list[bytes]] = {}
    for f, enc in fields:
        by_number.setdefault(f, []).append(enc)
    out = []
    for i in order:  # the i-th field's slot gets its number's next occurrence, in order
        out.append(by_number[fields[i][0]].pop(0))
        if rng.random() < 0.15:
            out.append(_unknown(rng))
    return b"".join(out)


def _boundaries(body: bytes) -> list[int]:
    """The offset after each field of a message."""
    offs, i = [], 0
    while i < len(body):
        i = _past(body, i)
        offs.append(i)
    return offs


@pytest.mark.parametrize("seed", range(12))
def test_field_order_unknown_fields_and_merged_messages(seed: int) -> None:
    rng = random.Random(seed)
    originals = [_everything(rng).SerializeToString() for _ in range(4)]
    scrambled = [_scramble(rng, p, "request") for p in originals]
    assert scrambled != originals
    assert_as_protobuf(scrambled)


def _span_request(span: bytes) -> bytes:
    return _len(1, _len(2, _len(2, span)))


def _len(field: int, body: bytes) -> bytes:
    return _tag(field, _LEN) + _varint(len(body)) + body


def _attribute(value_fields: list[bytes], key: bytes = b"k") -> bytes:
    return _len(9, _len(1, key) + b"".join(_len(2, v) for v in value_fields))


ELEMENT = _len(1, _tag(3, _VARINT) + _varint(7))  # an array element: int_value 7


@pytest.mark.parametrize("value_fields", [
    [_len(1, b"a") + _tag(3, _VARINT) + _varint(5)],  # string, then int: the int
    [_tag(3, _VARINT) + _varint(5) + _len(1, b"a")],  # int, then string: the string
    [_len(5, ELEMENT) + _len(1, b"s")],  # an array, then a string: the array's elements go
    [_len(5, ELEMENT) + _len(5, ELEMENT + ELEMENT)],  # an array twice: merged, three elements
    [_len(5, ELEMENT), _len(6, _len(1, _len(1, b"x")))],  # a kvlist in a second value: it wins
    [_len(5, ELEMENT), b""],  # a second, empty value: the array stays
    [_len(1, b"a") + _len(7, b"\x00") + _tag(2, _VARINT) + _varint(2)],  # string, bytes, bool
    [_tag(4, _I64) + struct.pack("<d", 2.5) + _tag(8, _VARINT) + _varint(2**64 - 3)],  # double, strindex
    [_len(6, _len(1, b"\x0a\x01x")) + _len(5, b"") + _len(5, ELEMENT)],  # kvlist, empty array, array
])
def test_a_oneof_member_set_after_another(value_fields: list[bytes]) -> None:
    before = _attribute([_len(1, b"before")], b"a")
    after = _attribute([_len(5, ELEMENT + ELEMENT)], b"z")  # the next row's elements after the cleared ones
    assert_as_protobuf([_span_request(before + _attribute(value_fields) + after)])


def test_singular_fields_sent_twice_the_last_wins() -> None:
    span = (_len(5, b"first") + _len(5, b"second") + _tag(6, _VARINT) + _varint(2) + _tag(6, _VARINT) + _varint(3)
            + _tag(7, _I64) + struct.pack("<Q", 1) + _tag(7, _I64) + struct.pack("<Q", 2)
            + _len(1, b"\x01" * 16) + _len(1, b"\x02" * 16) + _tag(16, _I32) + struct.pack("<I", 9)
            + _len(15, _len(2, b"m1") + _tag(3, _VARINT) + _varint(2)) + _len(15, _len(2, b"m2"))
            + _tag(6, _VARINT) + _varint(2**64 - 1))  # kind -1, as a ten-byte varint
    assert_as_protobuf([_span_request(span)])


# -- broken payloads --------------------------------------------------------------------------


def test_every_truncation_is_refused_or_read_as_protobuf_reads_it() -> None:
    rng = random.Random(3)
    whole = _everything(rng).SerializeToString() or b"\x0a\x00"
    good = ExportTraceServiceRequest(resource_spans=[{}]).SerializeToString()
    for cut in range(len(whole)):
        bad = whole[:cut]
        try:
            ExportTraceServiceRequest.FromString(bad)
        except DecodeError:
            with pytest.raises(ValueError, match="failed to decode Protobuf message") as info:
                wire.decode([good, bad])
            assert info.value.args[1] == 1  # which payload
        else:
            assert_as_protobuf([good, bad])


@pytest.mark.parametrize("bad, reason", [
    (b"\xff", "unexpected EOF"),
    (b"\x0a\x05\x00", "unexpected EOF"),
    (b"\x08" + b"\xff" * 10 + b"\x01", "invalid varint"),
    (b"\x0f", "invalid wire type"),  # field 1, wire type 7
    (b"\x00\x00", "invalid wire type"),  # field 0
    (b"\x0c", "invalid wire type"),  # an end group without a start
    (b"\x0b\x10\x01", "unmatched group"),
    (_span_request(_len(5, b"\xff\xfe")), "invalid UTF-8"),
    (_span_request(_len(5, b"\xed\xa0\x80")), "invalid UTF-8"),  # a surrogate
    (_span_request(_len(5, b"\xc0\xaf")), "invalid UTF-8"),  # an overlong form
    (_span_request(_len(5, b"\xf4\x90\x80\x80")), "invalid UTF-8"),  # above U+10FFFF
    (_span_request(_attribute([_len(1, b"ok " * 20 + b"\xe2\x82")])), "invalid UTF-8"),  # cut in a character
])
def test_broken_payloads_are_refused_with_the_reason(bad: bytes, reason: str) -> None:
    with pytest.raises(DecodeError):
        ExportTraceServiceRequest.FromString(bad)
    with pytest.raises(ValueError, match=reason):
        wire.decode([bad])


def test_payloads_must_be_bytes() -> None:
    with pytest.raises(TypeError, match="payload 1 is bytearray"):
        wire.decode([b"", bytearray(b"\x0a\x00")])


def test_random_corruption_never_crashes() -> None:
    """Flipped and inserted bytes: refused, or read as protobuf reads them. (An array or
    kvlist element is kept as bytes, unparsed, so it may hold what protobuf refuses.)"""
    rng = random.Random(11)
    seeds = [_everything(rng).SerializeToString() for _ in range(20)]
    refused = read = 0
    for _ in range(1500):
        b = bytearray(rng.choice(seeds) or b"\x0a\x00")
        for _ in range(rng.randrange(1, 4)):
            i = rng.randrange(len(b))
            if rng.random() < 0.5:
                b[i] = rng.randrange(256)
            else:
                b.insert(i, rng.randrange(256))
        bad = bytes(b)
        try:
            got = wire.decode([bad])
        except ValueError:
            refused += 1
            continue
        got.validate(full=True)
        try:
            ExportTraceServiceRequest.FromString(bad)
        except DecodeError:
            continue
        read += 1
        assert_as_protobuf([bad])
    assert refused > 100 and read > 100


# -- the lock ---------------------------------------------------------------------------------


def test_the_walk_lets_other_threads_run() -> None:
    """While the C walk reads a big batch, this thread keeps running Python (a walk
    holding the lock would stop it for the whole walk)."""
    rng = random.Random(2)
    payloads = [agent_request(rng, 512, agent="a").SerializeToString() for _ in range(30)]
    from otelbench.normalize import _wire

    for _ in range(3):
        done = threading.Event()
        spans = {}

        def walk() -> None:
            t = time.perf_counter()
            _wire.walk(payloads)
            spans["walk"] = (t, time.perf_counter())
            done.set()

        ticks = []
        thread = threading.Thread(target=walk)
        thread.start()
        while not done.is_set():
            ticks.append(time.perf_counter())
        thread.join()
        start, end = spans["walk"]
        inside = sum(start < t < end for t in ticks)
        if inside > 1000:
            return
    pytest.fail(f"this thread ran {inside} times during a {1e3 * (end - start):.1f} ms walk")
