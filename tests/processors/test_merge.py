"""processors/clustering/merge.py: clusters of one cause merged, others kept apart.

Table tests on hand-made vectors, and properties: merging only joins whole clusters,
noise stays noise, and a second pass changes nothing. Planted families through the real
embedder are in test_cluster.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbench.processors.clustering.merge import MERGE_COSINE, NOISE, Cause, cause_of, merge_alike, tool_name


def unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


CLOSE = [unit(1, 0.3, 0), unit(1, 0, 0.3)]   # cosine ~0.92
FAR = [unit(1, 0, 0), unit(0, 1, 0)]         # cosine 0
RATE = Cause("RateLimitError", None)
TIMEOUT_WEATHER = Cause("TimeoutError", "get_weather")


def merged(vectors: list[np.ndarray], causes: list[Cause], tools: list[str] | None = None,
           labels: list[int] | None = None) -> list[int]:
    labels = labels if labels is not None else list(range(len(vectors)))
    return merge_alike(np.array(labels), np.stack(vectors), np.ones(len(vectors), dtype=np.int64), causes,
                       tools or [""] * len(vectors)).tolist()


@pytest.mark.parametrize(("vectors", "causes", "tools", "expected"), [
    # one error type, no tool, alike: the pieces of one family
    (CLOSE, [RATE, RATE], None, [0, 0]),
    # the same error type at another tool: weather_timeout and flight_timeout
    (CLOSE, [TIMEOUT_WEATHER, Cause("TimeoutError", "search_flights")], None, [0, 1]),
    # another error type at the same tool: weather_timeout and weather_bad_json
    (CLOSE, [TIMEOUT_WEATHER, Cause("JSONDecodeError", "get_weather")], None, [0, 1]),
    # low-scored answers: no error type, nothing to agree on
    (CLOSE, [Cause(None, None), Cause(None, None)], None, [0, 1]),
    # one cause, unlike texts
    (FAR, [RATE, RATE], None, [0, 1]),
    # one cause at the tool, but the tool fails in disjoint ways (HTTP 404 against 403)
    (CLOSE, [Cause("HTTPStatusError", "fetch_url")] * 2,
     ["fetch_url: HTTP Status Error: 404 Not Found", "fetch_url: HTTP Status Error: 403 Forbidden"], [0, 1]),
    # ... and one tool text in common: merged
    (CLOSE, [TIMEOUT_WEATHER] * 2, ["get_weather: timed out", "get_weather: timed out"], [0, 0]),
    # one side without tool texts (its failures' tool calls were not recorded): merged
    (CLOSE, [TIMEOUT_WEATHER] * 2, ["get_weather: timed out", ""], [0, 0]),
])
def test_which_clusters_merge(vectors: list[np.ndarray], causes: list[Cause], tools: list[str] | None,
                              expected: list[int]) -> None:
    assert merged(vectors, causes, tools) == expected


def test_the_threshold() -> None:
    a, b = unit(1, 0, 0), unit(np.cos(1.2), np.sin(1.2), 0)   # cosine 0.36
    assert merged([a, b], [RATE, RATE]) == [0, 1]
    assert merge_alike(np.array([0, 1]), np.stack([a, b]), np.ones(2, dtype=np.int64), [RATE, RATE], ["", ""],
                       min_cosine=0.3).tolist() == [0, 0]
    assert 0.36 < MERGE_COSINE


def test_a_cluster_takes_the_cause_most_of_its_failures_have() -> None:
    """Cluster 0 is mostly RateLimitError (counts weigh): it merges with cluster 1."""
    labels = np.array([0, 0, 1])
    vectors = np.stack([unit(1, 0.2, 0), unit(1, 0.3, 0), unit(1, 0, 0.3)])
    causes = [RATE, Cause("APIError", None), RATE]
    out = merge_alike(labels, vectors, np.array([5, 1, 3]), causes, ["", "", ""])
    assert out.tolist() == [0, 0, 0]
    out = merge_alike(labels, vectors, np.array([1, 5, 3]), causes, ["", "", ""])
    assert out.tolist() == [0, 0, 1]


def test_the_closest_pair_merges_first_and_noise_stays() -> None:
    vectors = np.stack([unit(1, 0, 0), unit(1, 0.1, 0), unit(0, 1, 0), unit(1, 0.05, 0)])
    labels = np.array([2, 5, 7, NOISE])
    out = merge_alike(labels, vectors, np.ones(4, dtype=np.int64), [RATE] * 4, [""] * 4)
    assert out.tolist() == [2, 2, 7, NOISE]


@pytest.mark.parametrize(("failing_tools", "name"), [
    (None, None), ("", None), ("  ", None), ("get_weather: timed out", "get_weather"),
    ("search: timed out after 3s; fetch: 404", "search"), ("git", "git"),
])
def test_tool_name(failing_tools: str | None, name: str | None) -> None:
    assert tool_name(failing_tools) == name


@st.composite
def clusterings(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[Cause], list[str]]:
    n = draw(st.integers(1, 12))
    labels = np.array(draw(st.lists(st.integers(-1, 4), min_size=n, max_size=n)))
    vectors = np.array(draw(st.lists(st.lists(st.floats(-1, 1), min_size=3, max_size=3), min_size=n, max_size=n)))
    vectors = vectors + np.array([1e-3, 0, 0])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    counts = np.array(draw(st.lists(st.integers(1, 5), min_size=n, max_size=n)))
    causes = draw(st.lists(st.sampled_from([RATE, TIMEOUT_WEATHER, Cause(None, None)]), min_size=n, max_size=n))
    tools = draw(st.lists(st.sampled_from(["", "a", "b"]), min_size=n, max_size=n))
    return labels, vectors, counts, causes, tools


@settings(max_examples=200, deadline=None)
@given(clusterings())
def test_merging_joins_whole_clusters_and_is_done_in_one_pass(case) -> None:
    labels, vectors, counts, causes, tools = case
    out = merge_alike(labels, vectors, counts, causes, tools, min_cosine=0.0)
    assert ((labels == NOISE) == (out == NOISE)).all()                 # noise stays noise, nothing joins it
    for label in set(labels.tolist()) - {NOISE}:
        assert len(set(out[labels == label].tolist())) == 1            # a cluster is never cut
        assert out[labels == label][0] <= label                        # it takes the smallest label merged
    assert set(out.tolist()) - {NOISE} <= set(labels.tolist())
    assert (merge_alike(out, vectors, counts, causes, tools, min_cosine=0.0) == out).all()


def test_the_cause_of_a_cluster() -> None:
    timeout, json_error = Cause("TimeoutError", "get_weather"), Cause("JSONDecodeError", "get_weather")
    assert cause_of([timeout, json_error, Cause("TimeoutError", None)], [2, 3, 2]) == timeout
    assert cause_of([timeout, json_error], [1, 1]) == json_error          # a tie: the first in sort order
    assert cause_of([Cause(None, None), timeout], [1, 1]) == Cause(None, "get_weather")
    assert cause_of([], []) == Cause(None, None)
