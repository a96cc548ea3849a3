"""exporters.parquet.RecentKeys: the flusher's bounded memory of stored span keys."""

from __future__ import annotations

import numpy as np

from otelbench.exporters.parquet import RecentKeys, span_keys


def test_all_new_keys_are_kept_and_remembered() -> None:
    recent = RecentKeys(10)
    assert recent.keep_new([1, 2, 3]) is None  # None: keep every row
    assert len(recent) == 3 and 2 in recent and 4 not in recent


def test_keys_seen_before_or_twice_in_the_batch_are_dropped() -> None:
    recent = RecentKeys(10)
    recent.keep_new([1, 2])
    assert recent.keep_new([3, 1, 4, 3, 5]) == [0, 2, 4]  # 1 stored before; the second 3 repeats the first
    assert all(k in recent for k in (1, 2, 3, 4, 5)) and len(recent) == 5


def test_the_oldest_keys_are_forgotten_past_the_capacity() -> None:
    recent = RecentKeys(4)  # arrays of at most one key's quarter: every batch is its own array
    recent.keep_new([1, 2])
    recent.keep_new([3, 4])
    assert len(recent) == 4 and 1 in recent
    recent.keep_new([5, 6])
    assert len(recent) == 4 and 1 not in recent and 2 not in recent and all(k in recent for k in (3, 4, 5, 6))
    assert recent.keep_new([1]) is None  # forgotten: stored again (compaction drops the older copy)
    recent.keep_new([7, 7])  # the slow path forgets too
    assert 3 not in recent and 7 in recent


def test_at_least_the_capacity_is_remembered_in_a_few_arrays() -> None:
    recent = RecentKeys(1000)
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 2**64, size=5000, dtype=np.uint64)
    for i in range(0, 5000, 7):  # many small batches
        assert recent.keep_new(keys[i:i + 7]) is None
    assert 1000 <= len(recent) <= 1250
    assert len(recent._arrays) <= 5
    assert all(int(k) in recent for k in keys[-1000:])
    assert recent.keep_new(keys[-1000:]) == []  # every one a retry
    assert recent.keep_new(keys[:7]) is None  # long forgotten


def test_capacity_zero_keeps_everything() -> None:
    recent = RecentKeys(0)
    assert recent.keep_new([1, 1]) is None and len(recent) == 0


def test_span_keys_tell_spans_apart_and_repeat_for_the_same_span() -> None:
    import pyarrow as pa

    a = span_keys(["0af7651916cd43dd8448eb211c80319c"] * 2, ["b7ad6b7169203331", "b7ad6b7169203332"])
    b = span_keys(pa.chunked_array([["0af7651916cd43dd8448eb211c80319c"]]), pa.chunked_array([["b7ad6b7169203331"]]))
    assert a.dtype == np.uint64 and a[0] != a[1] and a[0] == b[0]
    # the pair, not the concatenation: ("ab", "c") and ("a", "bc") differ
    assert span_keys(["ab"], ["c"])[0] != span_keys(["a"], ["bc"])[0]
