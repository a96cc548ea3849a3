"""exporters.parquet.RecentKeys: the flusher's bounded memory of stored span keys."""

from __future__ import annotations

from exporters.parquet import RecentKeys


def test_all_new_keys_are_kept_and_remembered() -> None:
    recent = RecentKeys(10)
    assert recent.keep_new([1, 2, 3]) is None  # None: keep every row
    assert len(recent) == 3 and 2 in recent


def test_keys_seen_before_or_twice_in_the_batch_are_dropped() -> None:
    recent = RecentKeys(10)
    recent.keep_new([1, 2])
    assert recent.keep_new([3, 1, 4, 3, 5]) == [0, 2, 4]  # 1 stored before; the second 3 repeats the first
    assert all(k in recent for k in (1, 2, 3, 4, 5))


def test_the_oldest_keys_are_forgotten_past_the_capacity() -> None:
    recent = RecentKeys(3)
    recent.keep_new([1, 2, 3])
    recent.keep_new([4, 5])
    assert len(recent) == 3 and 1 not in recent and 2 not in recent
    assert recent.keep_new([1]) is None  # forgotten: stored again (compaction drops the older copy)
    recent.keep_new([6, 6])  # the slow path forgets too
    assert len(recent) == 3


def test_capacity_zero_keeps_everything() -> None:
    recent = RecentKeys(0)
    assert recent.keep_new([1, 1]) is None and len(recent) == 0
