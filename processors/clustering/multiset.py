"""HDBSCAN over a multiset: distinct points, each with a count of identical rows.

Failures repeat: 100,000 failures of one agent read as ~11,000 distinct normalized texts
(benchmarks/cluster.py). HDBSCAN's densities must count every run (a failure seen 500
times is a cluster, not one point), but hdbscan's own algorithms work on rows, and on
100,000 rows of 384 dimensions the fastest of them (Borůvka on a k-d tree) needed the
vectors cut to 16-48 dimensions and then 15-37 s here, and clustered worse. This computes
the same clustering from the distinct points (~1 s for 3,000 of them, ~4 s for 11,000):

- the core distance of a row is the distance to its ``min_samples``-th neighbour other
  than itself (hdbscan's definition); for a point with ``count`` copies, the copies are
  neighbours at distance 0, so it is 0 once ``count > min_samples``, else the distance at
  which the running count of the nearest distinct points reaches ``min_samples + 1``;
- the minimum spanning tree of the rows' mutual reachability graph is the distinct
  points' tree (Prim on a dense distance matrix) plus, for each point, a chain joining its
  copies at its core distance (an edge between two copies weighs ``max(core, core, 0)``,
  no more than any edge leaving them, so Kruskal joins the copies first);
- that tree, sorted, goes through hdbscan's own single-linkage labelling, condensing and
  excess-of-mass selection (``hdbscan_._tree_to_labels``), so the selection rules,
  ``allow_single_cluster`` and the noise are exactly hdbscan's.

``tests/processors/test_multiset.py`` checks the tree's weights against hdbscan's on the
expanded rows, and the labels where no tie decides. The dense matrix costs 8 bytes per
pair of distinct points up to ``EXACT_LIMIT`` and 4 above; beyond ``DENSE_LIMIT`` distinct
points (576 MB) the rows go to hdbscan's Borůvka k-d tree after a PCA to
``FALLBACK_DIMS`` dimensions instead, and the result says which method ran.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DENSE_LIMIT = 12_000   # distinct points: the float32 distance matrix is 576 MB at this size
FALLBACK_DIMS = 48     # PCA dimensions for hdbscan's k-d tree above DENSE_LIMIT
# cluster_selection_epsilon = this x distance_floor on the fallback path (_fallback says why)
FALLBACK_EPSILON_SHARE = 0.75
CHUNK = 1024           # rows of the distance matrix handled at once for core distances
EXACT_LIMIT = 4_096    # distinct points up to which distances are float64 (134 MB)


@dataclass(frozen=True)
class MultisetLabels:
    labels: np.ndarray  # int64, one per distinct point; -1 is noise
    method: str         # "exact-multiset" or "boruvka-kdtree-pca48"
    min_samples: int    # as applied (hdbscan caps it at rows - 1)
    single_cluster: bool = False  # the labels come from the allow_single_cluster retry


def hdbscan_multiset(points: np.ndarray, counts: np.ndarray, *, min_cluster_size: int, min_samples: int,
                     distance_floor: float = 0.0, single_cluster_fallback: bool = False,
                     dense_limit: int = DENSE_LIMIT) -> MultisetLabels:
    """HDBSCAN labels (euclidean) of ``points`` where point ``i`` stands for ``counts[i]``
    identical rows; with the defaults, the labels ``hdbscan.HDBSCAN`` gives the expanded
    rows (ties aside, see ``rows_spanning_tree``).

    ``distance_floor``: distances below it count as equal to it — HDBSCAN on the metric
    ``max(d, floor)``. Without a floor, ``min_cluster_size`` copies of one text are a
    cluster of infinite density (``lambda = 1/0``) that excess-of-mass always keeps apart
    from its paraphrases, so every frequent wording of one failure became a cluster of
    its own. ``single_cluster_fallback``: when no cluster is found, try again with
    hdbscan's ``allow_single_cluster`` (an agent with one way of failing gets one cluster;
    allowing it always makes the whole set win over real families)."""
    points = np.asarray(points)
    counts = np.asarray(counts, dtype=np.int64)
    n = points.shape[0]
    if n != counts.shape[0] or (counts < 1).any():
        raise ValueError("one count of at least 1 per point")
    total = int(counts.sum())
    if min_cluster_size < 2:
        raise ValueError("min_cluster_size must be at least 2")
    samples = max(1, min(total - 1, min_samples))
    if total < 2 or total < min_cluster_size:
        return MultisetLabels(np.full(n, -1, dtype=np.int64), "too-few", samples)
    if n > dense_limit:
        return _fallback(points, counts, min_cluster_size, samples, distance_floor, single_cluster_fallback)

    mst = rows_spanning_tree(points, counts, samples)
    np.maximum(mst[:, 2], distance_floor, out=mst[:, 2])
    from hdbscan._hdbscan_linkage import label

    single_linkage = label(np.ascontiguousarray(mst))
    labels = _labels(single_linkage, min_cluster_size, False)
    single = single_cluster_fallback and labels.max(initial=-1) < 0
    if single:
        labels = _labels(single_linkage, min_cluster_size, True)
    return MultisetLabels(labels[_first_rows(counts)].astype(np.int64), "exact-multiset", samples, single)


def rows_spanning_tree(points: np.ndarray, counts: np.ndarray, min_samples: int) -> np.ndarray:
    """A minimum spanning tree of the expanded rows' mutual reachability graph, as
    (rows - 1) x 3 float64 (row a, row b, weight) sorted by weight; point i's copies are
    rows ``first[i] .. first[i] + counts[i] - 1`` with ``first`` the running count.

    Every minimum spanning tree of a graph has the same multiset of weights, which is what
    the tests compare with hdbscan's; ties (many, where core distances dominate) may join
    different pairs, and hdbscan's own algorithms break them differently from each other.
    """
    counts = np.asarray(counts, dtype=np.int64)
    # float64 while the matrix is small (exact to the last digit against hdbscan's), float32
    # above: 12,000 points take 576 MB so; centring keeps the float32 products small
    dtype = np.float64 if points.shape[0] <= EXACT_LIMIT else np.float32
    points = np.asarray(points, dtype=np.float64)
    points = np.ascontiguousarray(points - points.mean(axis=0), dtype=dtype)
    dist = _distances(points)
    core = _core_distances(dist, counts, min_samples)
    edges = _prim(dist, core)
    del dist
    return _expand(edges, core, counts)


def _first_rows(counts: np.ndarray) -> np.ndarray:
    first = np.zeros(counts.shape[0], dtype=np.int64)
    np.cumsum(counts[:-1], out=first[1:])
    return first


def _distances(points: np.ndarray) -> np.ndarray:
    """Euclidean distances in the points' dtype, computed in place from one matrix product."""
    sq = np.einsum("ij,ij->i", points, points)
    dist = points @ points.T
    dist *= -2.0
    dist += sq[:, None]
    dist += sq[None, :]
    np.maximum(dist, 0.0, out=dist)
    np.sqrt(dist, out=dist)
    np.fill_diagonal(dist, 0.0)
    return dist


def _core_distances(dist: np.ndarray, counts: np.ndarray, min_samples: int) -> np.ndarray:
    """Distance from each point to its ``min_samples``-th other row (copies count)."""
    n = dist.shape[0]
    need = min_samples + 1                      # the row itself is the first neighbour
    k = min(need, n)                            # every point holds at least one row
    core = np.zeros(n, dtype=dist.dtype)
    for start in range(0, n, CHUNK):
        block = dist[start:start + CHUNK]
        if k < n:
            nearest = np.argpartition(block, k - 1, axis=1)[:, :k]
        else:
            nearest = np.broadcast_to(np.arange(n), block.shape)
        near_d = np.take_along_axis(block, nearest, axis=1)
        order = np.argsort(near_d, axis=1, kind="stable")
        near_d = np.take_along_axis(near_d, order, axis=1)
        running = np.cumsum(counts[np.take_along_axis(nearest, order, axis=1)], axis=1)
        reach = (running >= need).argmax(axis=1)  # the first neighbour at which enough rows are near
        core[start:start + CHUNK] = near_d[np.arange(block.shape[0]), reach]
    return core


def _prim(dist: np.ndarray, core: np.ndarray) -> np.ndarray:
    """Minimum spanning tree of the mutual reachability graph ``max(d, core_i, core_j)``,
    as (n - 1) x 3 rows (a, b, weight)."""
    n = dist.shape[0]
    edges = np.zeros((max(n - 1, 0), 3), dtype=np.float64)
    best = np.full(n, np.inf, dtype=dist.dtype)
    parent = np.zeros(n, dtype=np.int64)
    done = np.zeros(n, dtype=bool)
    current = 0
    done[0] = True
    row = np.empty(n, dtype=dist.dtype)
    for step in range(n - 1):
        np.maximum(dist[current], core[current], out=row)
        np.maximum(row, core, out=row)
        row[done] = np.inf
        better = row < best
        best[better] = row[better]
        parent[better] = current
        current = int(np.argmin(best))
        edges[step] = (parent[current], current, best[current])
        done[current] = True
        best[current] = np.inf
    return edges


def _expand(edges: np.ndarray, core: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The rows' spanning tree: point i's copies are rows first[i] .. first[i]+counts[i]-1,
    chained at core[i]; the points' edges join their first copies. Sorted by weight, the
    chains first among equal weights (copies join before anything else at their level)."""
    first = _first_rows(counts)
    total = int(counts.sum())
    chain_of = np.repeat(np.arange(counts.shape[0]), counts - 1)        # the point of each chain edge
    # point i's chain edges are numbered from first[i] - i on (each earlier point has one
    # edge fewer than rows), and edge e joins rows e + i and e + i + 1
    row = np.arange(chain_of.shape[0]) + chain_of
    chain = np.column_stack([row, row + 1, core[chain_of].astype(np.float64)])
    points = np.column_stack([first[edges[:, 0].astype(np.int64)], first[edges[:, 1].astype(np.int64)], edges[:, 2]])
    mst = np.concatenate([chain, points]).astype(np.float64)
    assert mst.shape[0] == total - 1
    return mst[np.argsort(mst[:, 2], kind="stable")]


def _labels(single_linkage: np.ndarray, min_cluster_size: int, allow_single_cluster: bool) -> np.ndarray:
    from hdbscan.hdbscan_ import _tree_to_labels

    labels, *_ = _tree_to_labels(None, single_linkage, min_cluster_size=min_cluster_size,
                                 allow_single_cluster=allow_single_cluster)
    return labels


def _fallback(points: np.ndarray, counts: np.ndarray, min_cluster_size: int, min_samples: int,
              distance_floor: float, single_cluster_fallback: bool) -> MultisetLabels:
    """Above DENSE_LIMIT distinct points: hdbscan's Borůvka k-d tree on the expanded rows
    after a PCA to FALLBACK_DIMS dimensions. hdbscan has no distance floor; its
    ``cluster_selection_epsilon`` (clusters split below it are merged back) stands in for
    it, at ``FALLBACK_EPSILON_SHARE`` of the floor: it merges more than a floor does, and
    distances shrink in the projection. An approximation on both counts, named in the
    result's ``method``; it is reached only when failures are mostly unique, where
    embedding them dominates the time anyway (benchmarks/cluster.py --all-distinct).

    Chosen on 20,000 planted failures (3,913 distinct texts) forced onto this path, ARI
    against the families: the exact path 0.76; here PCA-32 with epsilon at the floor
    (0.55) 0.08, PCA-32 0.46-0.67 and PCA-48 0.50-0.76 for epsilon 0.2-0.4, PCA-48 with
    0.4 0.76 in ~6 s, PCA-64 0.79 in ~9 s (docs/clustering.md)."""
    import hdbscan

    centred = points - (counts[:, None] * points).sum(axis=0) / counts.sum()
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    rows = np.repeat(centred @ vt[:FALLBACK_DIMS].T, counts, axis=0)
    labels, allow = None, False
    for allow in (False, True) if single_cluster_fallback else (False,):
        fitted = hdbscan.HDBSCAN(min_cluster_size=min_cluster_size, min_samples=min_samples,
                                 algorithm="boruvka_kdtree", core_dist_n_jobs=1, allow_single_cluster=allow,
                                 cluster_selection_epsilon=FALLBACK_EPSILON_SHARE * distance_floor).fit(rows)
        labels = fitted.labels_
        if labels.max(initial=-1) >= 0:
            break
    assert labels is not None
    return MultisetLabels(labels[_first_rows(counts)].astype(np.int64), f"boruvka-kdtree-pca{FALLBACK_DIMS}",
                          min_samples, allow)
