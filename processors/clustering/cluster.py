"""Failure clustering: failed runs in, clusters per agent out.

``cluster_failures`` is the processor's one pure step: the runs of one or more agents
(already read from the lake) in, ``ClusterResult`` out (``result.py``), no I/O of its own,
the clock and the LLM passed in. Per agent:

1. the failures: ``status = 'error'`` or a score below ``score_below`` (text.py);
2. their normalized texts, each distinct text embedded once (for all agents together);
3. HDBSCAN over the distinct texts with their counts (multiset.py), ``min_cluster_size``
   by default ``max(5, 1% of the agent's failures)``; noise stays unclustered;
4. clusters of one cause merged: the same error type at the same failing tool, and
   centroids alike (merge.py);
5. ids kept from the previous run where a cluster mostly keeps its members (ids.py);
6. per cluster: size, share, first and last seen, examples, c-TF-IDF top terms (terms.py)
   and a label from the LLM, ``<what fails>: <why>.`` (label.py, describe.py).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from otelbench.processors.clustering.describe import BY_LLM, Describe, describe_cluster
from otelbench.processors.clustering.embed import Embedder
from otelbench.processors.clustering.ids import match_ids
from otelbench.processors.clustering.merge import MERGE_COSINE, Cause, cause_of, merge_alike, tool_name
from otelbench.processors.clustering.multiset import hdbscan_multiset
from otelbench.processors.clustering.result import (CLUSTERS_SCHEMA, FAILURES_SCHEMA, MEMBERS_SCHEMA, NOISE,
                                          ClusterResult, empty_clusters, empty_members)
from otelbench.processors.clustering.terms import TOP_TERMS, class_terms
from otelbench.processors.clustering.text import FailureParts, failure_frame, select_failures
from otelbench.processors.clustering.vectors import failure_vectors

SCORE_BELOW = 0.5             # processors.clusters.score_below's default
MIN_CLUSTER_SIZE_FLOOR = 5    # min_cluster_size = max(5, 1% of the agent's failures)
MIN_CLUSTER_SIZE_SHARE = 0.01
MIN_SAMPLES_CAP = 5           # min_samples = min(5, min_cluster_size): see default_min_samples
# Distances under 0.55 (cosine over 0.85) count as 0.55: below that, texts are one failure as
# far as density goes (multiset.py says why; docs/clustering.md has the floors tried on planted families).
DISTANCE_FLOOR = 0.55
# When HDBSCAN finds no cluster it is asked again allowing one cluster of everything (an
# agent with one way of failing); that cluster is kept only if its failures are alike on
# average. Measured on otelbench.testing.failures: one planted family alone has a mean
# pairwise cosine of 0.30-0.95 (all but the loosest, retrieval_empty, above 0.4), 8-60
# one-off failures 0.13-0.23; tests/processors/test_cluster.py holds both sides.
SINGLE_CLUSTER_MIN_COSINE = 0.4
EXAMPLES = 5
EXAMPLE_MAX_SIMILARITY = 0.98  # a further example must differ at least this much from those picked


def default_min_cluster_size(failures: int) -> int:
    """``max(5, 1% of N)``: small agents still need five alike failures to make a
    cluster; at 100,000 failures a cluster needs 1,000."""
    return max(MIN_CLUSTER_SIZE_FLOOR, math.floor(MIN_CLUSTER_SIZE_SHARE * failures))


def default_min_samples(min_cluster_size: int) -> int:
    """hdbscan's own default is ``min_samples = min_cluster_size``, which at 1,000 reads a
    failure family's density off its 1,000th neighbour and leaves the edges of each family
    as noise; 5 keeps families whole (tests/processors/test_cluster.py: planted families)."""
    return min(MIN_SAMPLES_CAP, min_cluster_size)


@dataclass(frozen=True)
class Settings:
    score_below: float = SCORE_BELOW
    min_cluster_size: int | None = None   # None: default_min_cluster_size
    min_samples: int | None = None        # None: default_min_samples
    distance_floor: float = DISTANCE_FLOOR
    examples: int = EXAMPLES
    top_terms: int = TOP_TERMS
    redescribe: bool = False              # ask the LLM again for clusters that kept their id
    merge_cosine: float | None = MERGE_COSINE  # None: HDBSCAN's clusters as they are


def cluster_failures(failures: pl.DataFrame, *, embedder: Embedder, now: dt.datetime,
                     describe: Describe | None = None, previous: ClusterResult | None = None,
                     min_cluster_size: int | None = None, min_samples: int | None = None,
                     score_below: float = SCORE_BELOW, distance_floor: float = DISTANCE_FLOOR,
                     examples: int = EXAMPLES, top_terms: int = TOP_TERMS, redescribe: bool = False,
                     merge_cosine: float | None = MERGE_COSINE) -> ClusterResult:
    """Cluster the failures of each agent in ``failures`` (columns: ``FAILURES_SCHEMA``;
    successes may be included, they are left out here).

    ``previous`` is the last result for these agents (``ClusterResult.from_tables`` of
    the lake's tables): ids, first-seen times and LLM descriptions carry over from it.
    ``describe`` writes a cluster's label (a ``Prompt`` in, the answer out); without it, or when
    it fails, the description is the top terms. ``now`` is the run's time (``run_at``).
    ``merge_cosine``: clusters of one cause whose centroids are at least this alike are
    merged (merge.py); None keeps HDBSCAN's clusters as they are.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    if previous is not None and not isinstance(previous, ClusterResult):
        raise TypeError(f"previous must be a ClusterResult (ClusterResult.from_tables(clusters, members)), "
                        f"got {type(previous).__name__}")
    settings = Settings(score_below, min_cluster_size, min_samples, distance_floor, examples, top_terms, redescribe,
                        merge_cosine)
    run_at = now.astimezone(dt.timezone.utc)
    rows = _conform(failures)
    rows = (select_failures(rows, settings.score_below)
            .unique(["agent", "trace_id"], keep="first", maintain_order=True)
            .sort(["agent", "start_time", "trace_id"], nulls_last=True))
    if rows.height == 0:
        return ClusterResult(empty_clusters(), empty_members(), {})
    parts = failure_frame(rows).with_columns(rows["error_type"], rows["failing_tools"])
    distinct_frame = parts.unique("text", keep="first", maintain_order=True)
    causes = [Cause(error_type, tool_name(tools))
              for error_type, tools in distinct_frame.select("error_type", "failing_tools").iter_rows()]
    distinct = distinct_frame["text"].to_numpy().astype(object)
    position = {text: i for i, text in enumerate(distinct)}
    index = np.fromiter((position[t] for t in parts["text"]), dtype=np.int64, count=parts.height)
    distinct_parts = [FailureParts(*row) for row in distinct_frame.select("error", "tools", "output").iter_rows()]
    vectors, _ = failure_vectors(distinct_parts, embedder)
    rows = rows.with_columns(pl.Series("_text", index))

    previous = previous or ClusterResult(empty_clusters(), empty_members(), {})
    cluster_frames, member_frames, params = [], [], {}
    for (agent,), group in rows.group_by(["agent"], maintain_order=True):
        c, m, p = _cluster_agent(agent, group, _Distinct(distinct, vectors, causes, distinct_frame["tools"].to_list()),
                                 previous.for_agent(agent), run_at, describe, settings, embedder.name)
        cluster_frames.append(c)
        member_frames.append(m)
        params[agent] = p
    clusters = pl.concat(cluster_frames).sort(["agent", "cluster_id"])
    members = pl.concat(member_frames).sort(["agent", "cluster_id", "trace_id"])
    return ClusterResult(clusters, members, params)


def _conform(failures: pl.DataFrame) -> pl.DataFrame:
    missing = [c for c in FAILURES_SCHEMA.names() if c not in failures.columns]
    if missing:
        raise ValueError(f"failures lack column(s): {', '.join(missing)}")
    start = failures.schema["start_time"]
    if not isinstance(start, pl.Datetime) or start.time_zone is None:
        raise ValueError(f"failures.start_time must be a timezone-aware datetime, got {start}")
    return failures.select(FAILURES_SCHEMA.names()).with_columns(
        pl.col("start_time").dt.convert_time_zone("UTC")).cast(FAILURES_SCHEMA)


@dataclass(frozen=True)
class _Distinct:
    """The distinct failure texts of all agents, and per text its vector, cause and tools part."""

    texts: np.ndarray
    vectors: np.ndarray
    causes: list[Cause]
    tools: list[str]


def _cluster_agent(agent: str, rows: pl.DataFrame, all_texts: _Distinct, previous: ClusterResult,
                   run_at: dt.datetime, describe: Describe | None,
                   settings: Settings, embedder_name: str) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Any]]:
    distinct, vectors = all_texts.texts, all_texts.vectors
    n = rows.height
    texts_of_rows = rows["_text"].to_numpy()
    used, inverse, counts = np.unique(texts_of_rows, return_inverse=True, return_counts=True)
    mcs = settings.min_cluster_size or default_min_cluster_size(n)
    ms = settings.min_samples or default_min_samples(mcs)
    fit = hdbscan_multiset(vectors[used], counts, min_cluster_size=mcs, min_samples=ms,
                           distance_floor=settings.distance_floor, single_cluster_fallback=True)
    labels = fit.labels
    if fit.single_cluster and _mean_cosine(vectors[used][labels != NOISE], counts[labels != NOISE]) \
            < SINGLE_CLUSTER_MIN_COSINE:
        labels = np.full_like(labels, NOISE)            # unrelated failures: no cluster is forced
    found = int((np.unique(labels) != NOISE).sum())
    if settings.merge_cosine is not None:
        labels = merge_alike(labels, vectors[used], counts, [all_texts.causes[t] for t in used],
                             [all_texts.tools[t] for t in used], settings.merge_cosine)
    point_labels = _by_size(labels, counts)             # 0 = the largest cluster
    row_labels = point_labels[inverse]

    trace_ids = rows["trace_id"].to_list()
    new = {int(label): [trace_ids[i] for i in np.flatnonzero(row_labels == label)]
           for label in np.unique(point_labels) if label != NOISE}
    old_members = previous.members.filter(pl.col("cluster_id") != NOISE)
    old = {cid: ids for cid, ids in old_members.group_by("cluster_id").agg("trace_id").iter_rows()}
    old_next = int(previous.params.get(agent, {}).get("next_cluster_id", 0))
    ids, next_id = match_ids(new, old, set(trace_ids), old_next)

    terms = class_terms([distinct[t] for t in used], point_labels, counts, top=settings.top_terms)
    params = {
        "algorithm": "hdbscan", "method": fit.method, "metric": "euclidean on unit vectors",
        "embedder": embedder_name, "min_cluster_size": int(mcs),
        "min_cluster_size_rule": "given" if settings.min_cluster_size else "max(5, 1% of failures)",
        "min_samples": int(fit.min_samples), "cluster_selection_method": "eom",
        "distance_floor": settings.distance_floor,
        "single_cluster": f"when nothing else is found and its mean cosine >= {SINGLE_CLUSTER_MIN_COSINE}",
        "merge_cosine": settings.merge_cosine, "hdbscan_clusters": found,
        "score_below": settings.score_below,
        "failures": n, "distinct_texts": int(used.shape[0]), "clusters": len(new),
        "unclustered": int((row_labels == NOISE).sum()), "next_cluster_id": next_id,
    }
    old_rows = {r["cluster_id"]: r for r in previous.clusters.iter_rows(named=True)}
    starts = rows["start_time"].to_list()
    out = []
    for label, members in sorted(new.items()):
        cid = ids[label]
        where = np.flatnonzero(row_labels == label)
        first = min(starts[i] for i in where)
        last = max(starts[i] for i in where)
        before = old_rows.get(cid)
        if before is not None:
            first = min(first, before["first_seen"]) if before["first_seen"] else first
            last = max(last, before["last_seen"]) if before["last_seen"] else last
        points = np.flatnonzero(point_labels == label)
        example_points = _examples(points, vectors[used], counts, settings.examples)
        example_traces = [_latest_trace(rows, used[p]) for p in example_points]
        cause = cause_of([all_texts.causes[used[p]] for p in points], counts[points])
        description, described_by = _description(before, [distinct[used[p]] for p in example_points],
                                                 terms.get(label, []), describe, settings.redescribe, cause)
        out.append({
            "agent": agent, "cluster_id": cid, "size": len(members), "share": len(members) / n,
            "first_seen": first, "last_seen": last, "example_trace_ids": example_traces,
            "top_terms": terms.get(label, []), "description": description,
            "params": json.dumps({**params, "described_by": described_by}, sort_keys=True), "run_at": run_at,
        })
    clusters = pl.DataFrame(out, schema=CLUSTERS_SCHEMA) if out else empty_clusters()
    member_ids = np.array([ids.get(int(label), NOISE) if label != NOISE else NOISE for label in point_labels],
                          dtype=np.int64)[inverse]
    members = pl.DataFrame({"trace_id": trace_ids, "agent": [agent] * n, "cluster_id": member_ids},
                           schema=MEMBERS_SCHEMA)
    return clusters, members, params


def _mean_cosine(vectors: np.ndarray, counts: np.ndarray) -> float:
    """Mean cosine over all pairs of distinct rows (copies count) of unit ``vectors``:
    ``(|sum c_i v_i|^2 - N) / (N^2 - N)``, without the N x N matrix."""
    n = float(counts.sum())
    if n < 2:
        return 1.0
    total = (vectors.astype(np.float64) * counts[:, None]).sum(axis=0)
    return float((total @ total - n) / (n * n - n))


def _by_size(labels: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Labels renumbered 0, 1, … by falling size (rows), ties by old label; noise stays."""
    found = [int(x) for x in np.unique(labels) if x != NOISE]
    sizes = {label: int(counts[labels == label].sum()) for label in found}
    order = sorted(found, key=lambda label: (-sizes[label], label))
    mapping = {old: new for new, old in enumerate(order)}
    return np.array([mapping.get(int(x), NOISE) for x in labels], dtype=np.int64)


def _examples(points: np.ndarray, vectors: np.ndarray, counts: np.ndarray, k: int) -> list[int]:
    """Up to ``k`` of a cluster's distinct texts: nearest its centre first (the centre
    weighs each text by its count), skipping near-repeats of one already picked."""
    members = vectors[points]
    centre = (members * counts[points][:, None]).sum(axis=0)
    centre /= max(float(np.linalg.norm(centre)), 1e-12)
    picked: list[int] = []
    for j in np.argsort(-(members @ centre), kind="stable"):
        if len(picked) == k:
            break
        if all(float(members[j] @ vectors[p]) < EXAMPLE_MAX_SIMILARITY for p in picked):
            picked.append(int(points[j]))
    return picked


def _latest_trace(rows: pl.DataFrame, text: int) -> str:
    """The most recent run whose failure reads as distinct text ``text``."""
    return rows.filter(pl.col("_text") == text).sort(["start_time", "trace_id"])["trace_id"][-1]


def _description(before: dict[str, Any] | None, examples: list[str], top_terms: list[str],
                 describe: Describe | None, redescribe: bool, cause: Cause) -> tuple[str, str]:
    """A cluster that kept its id keeps the sentence an LLM wrote for it (stable wording,
    no LLM call per cluster per run), unless ``redescribe``."""
    if before is not None and not redescribe and json.loads(before["params"]).get("described_by") == BY_LLM:
        return before["description"], BY_LLM
    return describe_cluster(examples, top_terms, describe, cause.tool, cause.error_type)
