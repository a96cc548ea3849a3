"""Following the write-ahead log from another reader (collector/tail.py): only what is
durable, rows exactly as the row normalizer makes them, and never a crash when segments
are retired under it, the log restarts, or it falls far behind."""

from __future__ import annotations

import os

from otelbench.collector import tail, wal
from otelbench.normalize.rows import normalize_traces
from otelbench.testing.otlp import make_span, trace_request

COLUMNS = ("trace_id", "span_id", "name", "owner", "request_agent", "agent_name", "service_name")


def _payload(name: str, pad: int = 0) -> bytes:
    attrs = {"gen_ai.agent.name": "calc", **({"pad": "x" * pad} if pad else {})}
    return trace_request(make_span(attrs, name=name, span_id=os.urandom(8))).SerializeToString()


class _Log:
    """A writer and the durable position it publishes (as the committer does)."""

    def __init__(self, directory, segment_size: int = 1 << 20, first_seq: int = 1) -> None:
        self.writer = wal.WalWriter(directory, segment_size, first_seq=first_seq)
        self.durable = self.writer.head

    def write(self, *records: bytes, durable: bool = True) -> None:
        self.writer.append(b"".join(records))
        self.writer.sync()
        if durable:
            self.durable = self.writer.head


def test_only_acknowledged_trace_records_after_the_start_as_the_row_normalizer_makes_them(tmp_path) -> None:
    log = _Log(tmp_path)
    log.write(wal.encode_record("traces", "alice", _payload("before")))
    follower = tail.WalSpans(tmp_path, lambda: log.durable, COLUMNS)
    follower.start()  # what was logged before is not news
    assert not follower.due() and follower.poll() == []
    payload = _payload("after")
    log.write(wal.encode_record("traces", "alice", payload, "agent-x"), wal.encode_record("logs", None, b"\x00"),
              durable=False)
    assert not follower.due() and follower.poll() == []  # written, not yet fsynced: not acknowledged
    log.durable = log.writer.head
    assert follower.due()
    rows = follower.poll()
    request = trace_request()
    request.ParseFromString(payload)
    expected = normalize_traces(request, "alice", "agent-x")
    assert rows == [{c: expected[c][0] for c in COLUMNS}]
    assert rows[0]["name"] == "after" and rows[0]["request_agent"] == "agent-x" and rows[0]["agent_name"] == "calc"
    assert not follower.due() and follower.poll() == []


def test_segments_retired_under_it_and_a_restarted_log(tmp_path) -> None:
    log = _Log(tmp_path, segment_size=2048)
    follower = tail.WalSpans(tmp_path, lambda: log.durable, COLUMNS)
    follower.start()
    for i in range(20):  # two records a segment
        log.write(wal.encode_record("traces", None, _payload(f"s{i}", pad=700)))
    assert len(wal.list_segments(tmp_path)) > 5
    wal.retire_before(tmp_path, wal.position(wal.split(log.durable)[0] - 1, 0))  # the flusher went ahead
    rows = follower.poll()
    names = [r["name"] for r in rows]
    while follower.due():
        names += [r["name"] for r in follower.poll()]
    assert names and names == [f"s{i}" for i in range(20 - len(names), 20)]  # the rest, in order
    # a clean stop retires everything; the next start begins a new segment after the old ones
    seq = wal.split(log.durable)[0]
    log.writer.close()
    wal.retire_before(tmp_path, wal.position(seq + 1, 0))
    log = _Log(tmp_path, first_seq=seq + 3)
    log.write(wal.encode_record("traces", None, _payload("after restart")))
    follower.durable = lambda: log.durable
    got = []
    while follower.due():
        got += [r["name"] for r in follower.poll()]
    assert got == ["after restart"]


def test_far_behind_it_jumps_to_the_head_and_counts_what_it_skipped(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(tail, "MAX_BEHIND_BYTES", 4096)
    log = _Log(tmp_path)
    follower = tail.WalSpans(tmp_path, lambda: log.durable, COLUMNS)
    follower.start()
    log.write(*(wal.encode_record("traces", None, _payload(f"s{i}")) for i in range(30)))
    assert follower.poll() == [] and follower.skipped_bytes > 4096 and not follower.due()
    log.write(wal.encode_record("traces", None, _payload("now")))
    assert [r["name"] for r in follower.poll()] == ["now"]


def test_an_undecodable_record_is_counted_not_fatal(tmp_path) -> None:
    log = _Log(tmp_path)
    follower = tail.WalSpans(tmp_path, lambda: log.durable, COLUMNS)
    follower.start()
    log.write(wal.encode_record("traces", None, b"\xff\xff\xff"), wal.encode_record("traces", None, _payload("ok")))
    assert [r["name"] for r in follower.poll()] == ["ok"] and follower.undecodable == 1


def test_a_poll_reads_a_bounded_amount(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(tail, "MAX_POLL_BYTES", 1)  # reads go by 1 MiB: one 600 kB record a poll
    log = _Log(tmp_path, segment_size=64 << 20)
    follower = tail.WalSpans(tmp_path, lambda: log.durable, COLUMNS)
    follower.start()
    log.write(*(wal.encode_record("traces", None, _payload(f"s{i}", pad=600_000)) for i in range(3)))
    polls = []
    while follower.due():
        polls.append([r["name"] for r in follower.poll()])
    assert polls == [["s0"], ["s1"], ["s2"]]
