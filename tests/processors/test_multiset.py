"""processors/clustering/multiset.py: HDBSCAN over distinct points with counts, checked
against hdbscan's own implementation on the expanded rows."""

from __future__ import annotations

import hdbscan
import numpy as np
import pytest
from hdbscan._hdbscan_linkage import mst_linkage_core
from hdbscan._hdbscan_reachability import mutual_reachability
from sklearn.metrics import adjusted_rand_score, pairwise_distances

from otelbench.processors.clustering.multiset import hdbscan_multiset, rows_spanning_tree


def _data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n, dims = int(rng.integers(20, 200)), int(rng.integers(2, 8))
    centres = rng.normal(size=(int(rng.integers(1, 5)), dims)) * 3
    points = centres[rng.integers(0, len(centres), n)] + rng.normal(size=(n, dims))
    counts = rng.choice([1, 1, 1, 2, 3, 8, 20], n)
    return points, counts


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("floor", [0.0, 0.8])
def test_the_spanning_tree_is_hdbscans(seed: int, floor: float) -> None:
    """Every minimum spanning tree of a graph has the same weights: ours (distinct points,
    copies chained) against hdbscan's Prim on the expanded rows' mutual reachability —
    with a floor, on the distances max(d, floor) (copies are then ``floor`` apart)."""
    points, counts = _data(seed)
    min_samples = 1 + seed
    rows = np.repeat(points, counts, axis=0)
    distances = np.maximum(pairwise_distances(rows), floor)
    np.fill_diagonal(distances, 0.0)
    reference = mst_linkage_core(mutual_reachability(distances, min_samples))
    ours = rows_spanning_tree(points, counts, min_samples)
    ours[:, 2] = np.maximum(ours[:, 2], floor)
    assert ours.shape == reference.shape
    np.testing.assert_allclose(np.sort(ours[:, 2]), np.sort(reference[:, 2]), rtol=1e-5, atol=1e-5)
    assert np.all(np.diff(ours[:, 2]) >= 0)  # sorted, as hdbscan's labelling needs


def _blobs(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [20.0, 0.0], [0.0, 20.0]])
    truth = rng.integers(0, 3, 150)
    points = centres[truth] + rng.normal(size=(150, 2))
    counts = rng.choice([1, 1, 2, 3], 150)  # fewer copies than min_samples: no ties of zero distance
    return points, counts, truth


@pytest.mark.parametrize("seed", range(4))
def test_labels_match_hdbscan_on_clear_clusters(seed: int) -> None:
    """Where no tie decides anything, the labels are hdbscan's (up to numbering)."""
    points, counts, truth = _blobs(seed)
    ours = hdbscan_multiset(points, counts, min_cluster_size=15, min_samples=5)
    theirs = hdbscan.HDBSCAN(min_cluster_size=15, min_samples=5).fit(np.repeat(points, counts, axis=0)).labels_
    assert ours.method == "exact-multiset"
    assert adjusted_rand_score(theirs, np.repeat(ours.labels, counts)) == 1.0
    assert adjusted_rand_score(np.repeat(truth, counts), np.repeat(ours.labels, counts)) == 1.0


def test_the_dense_limit_hands_over_to_hdbscans_kdtree() -> None:
    points, counts, truth = _blobs(0)
    fallback = hdbscan_multiset(points, counts, min_cluster_size=15, min_samples=5, dense_limit=50)
    assert fallback.method == "boruvka-kdtree-pca48"
    assert adjusted_rand_score(np.repeat(truth, counts), np.repeat(fallback.labels, counts)) == 1.0


def test_copies_of_one_point_are_counted() -> None:
    """One point seen 30 times is a cluster of 30 (min_cluster_size 10), not one point."""
    points = np.array([[0.0, 0.0], [50.0, 1000.0], [100.0, 0.0]])
    found = hdbscan_multiset(points, np.array([30, 1, 30]), min_cluster_size=10, min_samples=5)
    assert found.labels[0] != found.labels[2] and min(found.labels[[0, 2]]) >= 0
    assert found.labels[1] == -1


def test_the_floor_joins_frequent_wordings_of_one_failure() -> None:
    """Without a floor, min_cluster_size copies of one text are infinitely dense, and
    excess-of-mass keeps each frequent wording of a failure as a cluster of its own; with
    a floor, the wordings and their paraphrases are one cluster, and a far family another."""
    rng = np.random.default_rng(3)
    wordings = np.array([[0.0, 0.0], [0.5, 0.0], [0.0, 0.5], [10.0, 0.0], [10.5, 0.0]])
    scatter = np.vstack([rng.normal(scale=0.3, size=(20, 2)), rng.normal(loc=(10.0, 0.0), scale=0.3, size=(20, 2))])
    points = np.vstack([wordings, scatter])
    counts = np.concatenate([[40, 40, 40, 40, 40], np.ones(40, dtype=np.int64)])
    family = np.array([0, 0, 0, 1, 1] + [0] * 20 + [1] * 20)
    plain = hdbscan_multiset(points, counts, min_cluster_size=10, min_samples=5)
    floored = hdbscan_multiset(points, counts, min_cluster_size=10, min_samples=5, distance_floor=1.0)
    assert len(set(plain.labels[:3])) == 3          # three wordings, three clusters
    assert adjusted_rand_score(np.repeat(family, counts), np.repeat(floored.labels, counts)) == 1.0


def test_one_way_of_failing_is_one_cluster() -> None:
    """hdbscan without allow_single_cluster finds no cluster in a single blob; the
    fallback then allows one."""
    rng = np.random.default_rng(1)
    points = rng.normal(scale=0.2, size=(60, 3))
    counts = np.ones(60, dtype=np.int64)
    without = hdbscan_multiset(points, counts, min_cluster_size=10, min_samples=5, distance_floor=0.5)
    assert set(without.labels) == {-1} and not without.single_cluster
    single = hdbscan_multiset(points, counts, min_cluster_size=10, min_samples=5, distance_floor=0.5,
                              single_cluster_fallback=True)
    assert set(single.labels) <= {-1, 0} and (single.labels == 0).mean() > 0.9
    assert single.single_cluster  # said, so that the caller can judge that one cluster
    points, counts, _ = _blobs(0)   # clusters found: no retry
    assert not hdbscan_multiset(points, counts, min_cluster_size=15, min_samples=5,
                                single_cluster_fallback=True).single_cluster


def test_too_few_rows_are_noise() -> None:
    found = hdbscan_multiset(np.zeros((2, 3)), np.array([1, 2]), min_cluster_size=5, min_samples=5)
    assert found.labels.tolist() == [-1, -1] and found.method == "too-few"
    with pytest.raises(ValueError):
        hdbscan_multiset(np.zeros((2, 3)), np.array([1, 0]), min_cluster_size=5, min_samples=5)
