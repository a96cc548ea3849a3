"""processors/clustering/ids.py: a cluster that mostly keeps its members keeps its id."""

from __future__ import annotations

from otelbench.processors.clustering.ids import match_ids


def ids(n: int, prefix: str = "t") -> set[str]:
    return {f"{prefix}{i}" for i in range(n)}


def test_the_same_clusters_keep_their_ids_whatever_hdbscan_numbers_them() -> None:
    a, b = ids(10, "a"), ids(20, "b")
    got, fresh = match_ids({0: b, 1: a}, {7: a, 3: b}, a | b, next_id=8)
    assert got == {0: 3, 1: 7} and fresh == 8


def test_growing_and_shrinking_keep_the_id() -> None:
    a = ids(10, "a")
    grown = a | ids(40, "new")
    assert match_ids({0: grown}, {5: a}, grown, 6)[0] == {0: 5}
    shrunk = set(sorted(a)[:6])                 # 6 of 10 stayed; the other 4 are now noise
    assert match_ids({0: shrunk}, {5: a}, a, 6)[0] == {0: 5}


def test_less_than_a_majority_is_a_new_cluster() -> None:
    a = ids(10, "a")
    half = set(sorted(a)[:5])
    got, fresh = match_ids({0: half}, {5: a}, a, 6)
    assert got == {0: 6} and fresh == 7


def test_a_split_keeps_the_id_on_the_majority_side() -> None:
    a = ids(10, "a")
    big, small = set(sorted(a)[:7]), set(sorted(a)[7:])
    got, fresh = match_ids({0: small, 1: big}, {2: a}, a, 3)
    assert got == {1: 2, 0: 3} and fresh == 4


def test_a_merge_keeps_the_id_of_the_larger_share_and_retires_the_other() -> None:
    a, b = ids(10, "a"), ids(30, "b")
    got, fresh = match_ids({0: a | b}, {1: a, 2: b}, a | b, 3)
    assert got == {0: 2} and fresh == 3
    got, _ = match_ids({0: ids(10, "a") | ids(10, "b")}, {4: ids(10, "a"), 1: ids(10, "b")}, ids(10, "a") | ids(10, "b"), 5)
    assert got == {0: 1}                        # a tie: the older (lower) id


def test_members_that_left_the_window_do_not_count() -> None:
    old = ids(100, "a")
    window = set(sorted(old)[:4]) | ids(50, "new")      # 96 of 100 left the window
    new = set(sorted(old)[:3]) | ids(50, "new")
    assert match_ids({0: new}, {9: old}, window, 10)[0] == {0: 9}


def test_nothing_left_in_the_window_is_a_new_id_and_retired_ids_are_never_reused() -> None:
    got, fresh = match_ids({0: ids(5, "x")}, {9: ids(5, "a")}, ids(5, "x"), next_id=12)
    assert got == {0: 12} and fresh == 13
    got, fresh = match_ids({0: ids(5, "x")}, {}, ids(5, "x"), next_id=0)
    assert got == {0: 0} and fresh == 1
    got, fresh = match_ids({0: ids(5, "x")}, {30: ids(5, "a")}, ids(5, "x"), next_id=0)  # no counter given
    assert got == {0: 31} and fresh == 32
