"""Clusters that are one root cause, merged after HDBSCAN.

HDBSCAN keeps apart whatever is denser apart: a family whose error message is worded three
ways, each wording seen a dozen times, comes out as three pure clusters (HDBSCAN alone
makes nine of six planted families of 40 runs, three of them the rate limit family's). What the pieces of
one family share, and two families that share words do not, is structure: the same error
type raised at the same failing tool. Two clusters are merged when

- their *cause* is the same: the error type most of their failures carry (weighted by
  count), and the failing tool most of those with a failing tool name (or none at all);
- a failure has an error type: low-scored answers have no structure to agree on, and
  their clusters' centroids are no guide (two families of wrong answers lie closer
  together, cosine up to 0.72, than the pieces of one, down to 0.28);
- their centroids' cosine is at least ``MERGE_COSINE``;
- they do not fail at the tool in disjoint ways: when both have failing tool texts, the
  two sets share at least one (``HTTPStatusError`` at ``fetch_url`` is 404 in one
  family and 403 in another; their centroids are as close as one family's pieces).

Merging goes pair by pair, the closest first, centroids recomputed after each merge. The
threshold was measured on the planted families (otelbench.testing.failures, all 75 at 40
runs, three seeds): pieces of one family with the same cause have centroids at cosine
0.46-0.78; two families with the same cause 0.74-0.78 (all three pairs split by their
tool texts). docs/clustering.md has the figures.

Pure: arrays in, labels out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MERGE_COSINE = 0.4
NOISE = -1


@dataclass(frozen=True)
class Cause:
    """What a failure says about its cause: its error type and its (first) failing tool."""

    error_type: str | None
    tool: str | None


def tool_name(failing_tools: str | None) -> str | None:
    """The first failing tool's name of ``failing_tools`` (``"get_weather: timed out; …"``)."""
    if not failing_tools or not failing_tools.strip():
        return None
    name = failing_tools.split(";", 1)[0].split(":", 1)[0].strip()
    return name or None


@dataclass
class _Cluster:
    total: np.ndarray                          # the sum of its points' vectors, each times its count
    errors: Counter[str | None] = field(default_factory=Counter)
    tools: Counter[str] = field(default_factory=Counter)
    tool_texts: set[str] = field(default_factory=set)

    @property
    def cause(self) -> Cause:
        return Cause(_mode(self.errors), _mode(self.tools) if self.tools else None)

    def centre(self) -> np.ndarray:
        return self.total / max(float(np.linalg.norm(self.total)), 1e-12)

    def absorb(self, other: _Cluster) -> None:
        self.total = self.total + other.total
        self.errors.update(other.errors)
        self.tools.update(other.tools)
        self.tool_texts |= other.tool_texts


def _mode(counter: Counter[Any]) -> Any:
    """The most frequent key; among equals None first, then the first in sort order."""
    if not counter:
        return None
    return min(counter.items(), key=lambda kv: (-kv[1], kv[0] is not None, "" if kv[0] is None else str(kv[0])))[0]


def cause_of(causes: Sequence[Cause], counts: Sequence[int]) -> Cause:
    """The cause most of these failures share: the most frequent error type, and the most
    frequent failing tool among those naming one (the way merge_alike judges a cluster)."""
    errors: Counter[str | None] = Counter()
    tools: Counter[str] = Counter()
    for cause, count in zip(causes, counts):
        errors[cause.error_type] += int(count)
        if cause.tool is not None:
            tools[cause.tool] += int(count)
    return Cause(_mode(errors), _mode(tools) if tools else None)


def mergeable(a: _Cluster, b: _Cluster, cosine: float, min_cosine: float) -> bool:
    cause = a.cause
    return (cause.error_type is not None and cause == b.cause and cosine >= min_cosine
            and not (a.tool_texts and b.tool_texts and a.tool_texts.isdisjoint(b.tool_texts)))


def _closest_mergeable(clusters: dict[int, _Cluster], min_cosine: float) -> tuple[int, int] | None:
    """The two labels, lower first, of the closest pair that may merge; None when none may.
    Cosines come from one matrix product; only pairs of one cause above the threshold are
    judged one by one (hundreds of clusters stay cheap)."""
    alive = sorted(clusters)
    centres = np.stack([clusters[label].centre() for label in alive])
    cosines = centres @ centres.T
    causes = [clusters[label].cause for label in alive]
    rows, cols = np.nonzero(np.triu(cosines >= min_cosine, k=1))
    pairs = sorted(zip(rows.tolist(), cols.tolist()), key=lambda rc: (-cosines[rc[0], rc[1]], rc[0], rc[1]))
    for i, j in pairs:
        if causes[i] == causes[j] and mergeable(clusters[alive[i]], clusters[alive[j]], float(cosines[i, j]),
                                                 min_cosine):
            return alive[i], alive[j]
    return None


def merge_alike(labels: np.ndarray, vectors: np.ndarray, counts: np.ndarray, causes: Sequence[Cause],
                tool_texts: Sequence[str], min_cosine: float = MERGE_COSINE) -> np.ndarray:
    """``labels`` (one per distinct point, -1 noise) with clusters of one cause merged:
    each merged cluster takes its smallest label; noise stays noise. ``vectors`` are the
    points' unit vectors, ``counts`` how many failures each stands for, ``causes`` and
    ``tool_texts`` (the normalized failing tools part, "" when none) each point's."""
    labels = np.asarray(labels, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    found = sorted(int(x) for x in np.unique(labels) if x != NOISE)
    if len(found) < 2:
        return labels.copy()
    clusters: dict[int, _Cluster] = {}
    for label in found:
        where = np.flatnonzero(labels == label)
        cluster = _Cluster((vectors[where].astype(np.float64) * counts[where][:, None]).sum(axis=0))
        for i in where:
            cluster.errors[causes[i].error_type] += int(counts[i])
            if causes[i].tool is not None:
                cluster.tools[causes[i].tool] += int(counts[i])
            if tool_texts[i]:
                cluster.tool_texts.add(tool_texts[i])
        clusters[label] = cluster
    into = {label: label for label in found}
    while True:
        pair = _closest_mergeable(clusters, min_cosine)
        if pair is None:
            break
        a, b = pair
        clusters[a].absorb(clusters.pop(b))
        for label, target in into.items():
            if target == b:
                into[label] = a
    return np.array([into[int(x)] if x != NOISE else NOISE for x in labels], dtype=np.int64)
