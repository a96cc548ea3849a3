from __future__ import annotations

import os
import threading

import pytest

from otelbench.collector import wal


def _records(tmp_path, start, until, want=None):
    return [r for _, r in wal.read_records(tmp_path, start, until, 1 << 30, want) if r is not None]


def test_round_trip_and_positions(tmp_path):
    w = wal.WalWriter(tmp_path, 1 << 20)
    start = w.head
    end = w.append(wal.encode_record("traces", "alice", b"abc") + wal.encode_record("logs", None, b"x" * 10))
    w.sync()
    recs = _records(tmp_path, start, end)
    assert [(r.signal, r.owner, r.payload) for r in recs] == [("traces", "alice", b"abc"), ("logs", None, b"x" * 10)]
    assert recs[-1].end == end
    # reading from the middle starts at the second record
    assert [r.payload for r in _records(tmp_path, recs[0].end, end)] == [b"x" * 10]


def test_a_reader_that_stops_early_pays_nothing_for_the_records_after(tmp_path):
    w = wal.WalWriter(tmp_path, 1 << 20)
    start = w.head
    end = w.append(b"".join(wal.encode_record("traces", None, bytes([i]) * 100) for i in range(10)))
    w.sync()
    asked = []
    for pos, rec in wal.read_records(tmp_path, start, end, 1 << 30, lambda crc: asked.append(crc) or True):
        break  # a full batch
    assert rec.payload == bytes([0]) * 100 and pos == rec.end
    assert len(asked) == 1  # the other nine were neither verified nor copied
    # skipped records at the end still move the reader's position past them
    assert [pos for pos, _ in wal.read_records(tmp_path, start, end, 1 << 30, lambda crc: False)] == [end]


def test_segments_roll_and_retire(tmp_path):
    w = wal.WalWriter(tmp_path, 100)
    start = w.head
    ends = [w.append(wal.encode_record("traces", None, bytes([i]) * 60)) for i in range(5)]
    w.sync()
    assert len(wal.list_segments(tmp_path)) == 5
    assert [r.payload[0] for r in _records(tmp_path, start, ends[-1])] == [0, 1, 2, 3, 4]
    freed = wal.retire_before(tmp_path, ends[2])
    assert freed > 0 and len(wal.list_segments(tmp_path)) == 3
    # bounded reads still return at least one (large) record
    assert len([r for _, r in wal.read_records(tmp_path, ends[2], ends[-1], 1) if r]) == 1


def test_torn_tail_is_cut_on_reopen(tmp_path):
    w = wal.WalWriter(tmp_path, 1 << 20)
    start = w.head
    good = w.append(wal.encode_record("traces", None, b"good"))
    w.close()
    seg = wal.segment_path(tmp_path, 1)
    with open(seg, "ab") as f:  # a crash in the middle of the next record
        f.write(wal.encode_record("traces", None, b"torn-record")[:9])
    w2 = wal.WalWriter(tmp_path, 1 << 20)
    assert w2.head == good
    end = w2.append(wal.encode_record("traces", None, b"after"))
    w2.sync()
    assert [r.payload for r in _records(tmp_path, start, end)] == [b"good", b"after"]


def test_corrupt_record_is_not_returned(tmp_path):
    w = wal.WalWriter(tmp_path, 1 << 20)
    start = w.head
    end = w.append(wal.encode_record("traces", None, b"payload"))
    w.close()
    seg = wal.segment_path(tmp_path, 1)
    data = bytearray(seg.read_bytes())
    data[-1] ^= 0xFF
    seg.write_bytes(bytes(data))
    assert _records(tmp_path, start, end) == []


def test_group_commit_shares_fsyncs(tmp_path, monkeypatch):
    syncs = []
    real = os.fdatasync
    monkeypatch.setattr(wal.os, "fdatasync", lambda fd: (syncs.append(fd), real(fd)))
    durable = []
    c = wal.GroupCommitter(wal.WalWriter(tmp_path, 1 << 30), max_pending_bytes=1 << 30,
                           on_durable=lambda pos, n: durable.append(pos))
    futures = []
    barrier = threading.Barrier(8)

    def client():
        barrier.wait()
        for _ in range(50):
            futures.append(c.submit(wal.encode_record("traces", None, b"y" * 100)))

    threads = [threading.Thread(target=client) for _ in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    positions = [f.result(10) for f in futures]
    c.close()
    assert len(positions) == 400
    assert len(syncs) < 400  # grouped
    assert max(positions) == durable[-1]
    assert len(_records(tmp_path, wal.position(1, 0), durable[-1])) == 400


def test_pending_bound_refuses(tmp_path):
    c = wal.GroupCommitter(wal.WalWriter(tmp_path, 1 << 30), max_pending_bytes=10)
    with c._cv:  # hold the committer so submissions pile up
        c._pending.append((b"x" * 10, wal.Future()))
        c._pending_bytes = 10
        with pytest.raises(wal.WalFull):
            c.submit(wal.encode_record("traces", None, b"z"))
        c._pending.clear()
        c._pending_bytes = 0
    c.close()


def test_want_filter_splits_the_log_and_positions_still_advance(tmp_path):
    w = wal.WalWriter(tmp_path, 1 << 20)
    start = w.head
    payloads = [f"p{i}".encode() for i in range(20)]
    end = w.append(b"".join(wal.encode_record("traces", None, p) for p in payloads))
    w.sync()
    halves = [_records(tmp_path, start, end, lambda crc, k=k: crc % 2 == k) for k in (0, 1)]
    assert sorted(r.payload for h in halves for r in h) == sorted(payloads)
    assert all(halves)
    # a reader that wants nothing still reaches the end
    last = [pos for pos, _ in wal.read_records(tmp_path, start, end, 1 << 30, lambda crc: False)]
    assert last[-1] == end
