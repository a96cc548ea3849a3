"""processors/clustering/cluster.py: planted failure families (otelbench.testing.failures)
through the real int8 MiniLM embedder and HDBSCAN, scored against the truth."""

from __future__ import annotations

import datetime as dt
import json

import polars as pl
import pytest
from sklearn.metrics import adjusted_rand_score  # scikit-learn comes with hdbscan

from otelbench.testing.failures import CORE, FAMILIES, MORE, START, planted_failures
from otelbench.processors.clustering import (CLUSTERS_SCHEMA, FAILURES_SCHEMA, MEMBERS_SCHEMA, NOISE, ClusterResult,
                                   MiniLMEmbedder, cluster_failures, default_min_cluster_size, insights_json)
from otelbench.processors.clustering.cluster import DISTANCE_FLOOR, SCORE_BELOW
from otelbench.processors.clustering.describe import BY_LLM, BY_TERMS, from_terms
from otelbench.processors.clustering.label import Prompt
from otelbench.processors.clustering.merge import MERGE_COSINE, Cause, merge_alike, tool_name
from otelbench.processors.clustering.multiset import hdbscan_multiset
from otelbench.processors.clustering.text import FailureParts, failure_frame, select_failures
from otelbench.processors.clustering.vectors import failure_vectors

UTC = dt.timezone.utc
NOW = dt.datetime(2025, 3, 20, tzinfo=UTC)


def _truth(result: ClusterResult, runs: pl.DataFrame) -> pl.DataFrame:
    return result.members.join(runs.select("trace_id", "family"), on="trace_id", how="left")


def _ari(result: ClusterResult, runs: pl.DataFrame) -> float:
    scored = _truth(result, runs)
    return float(adjusted_rand_score(scored["family"].to_list(), scored["cluster_id"].to_list()))


@pytest.fixture(scope="module")
def planted() -> pl.DataFrame:
    """10 families × 40 runs that share words in pairs, 15 one-off failures, 30 successes."""
    return planted_failures(CORE, 40, noise=15, successes=30, seed=1)


@pytest.fixture(scope="module")
def first(minilm: MiniLMEmbedder, planted: pl.DataFrame) -> ClusterResult:
    return cluster_failures(planted, embedder=minilm, describe=None, previous=None, now=NOW, min_cluster_size=None)


def test_planted_families_are_recovered(first: ClusterResult, planted: pl.DataFrame) -> None:
    """ARI >= 0.8 against the planted families (measured 0.99-1.00 over seeds
    0-5, 0.92-0.95 without merge.py: a family split by wording), the successes left out."""
    assert _ari(first, planted) >= 0.8
    scored = _truth(first, planted)
    assert "success" not in scored["family"].to_list()
    assert scored.height == planted.filter(pl.col("family") != "success").height
    # no cluster mixes families: each is at least 90 % one family
    purity = (scored.filter(pl.col("cluster_id") != NOISE).group_by("cluster_id", "family").len()
              .group_by("cluster_id").agg((pl.col("len").max() / pl.col("len").sum()).alias("purity")))
    assert purity["purity"].min() >= 0.9


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_six_families_are_six_clusters(minilm: MiniLMEmbedder, seed: int) -> None:
    """The first six planted families (two pairs share words: weather_timeout with
    flight_timeout and with weather_bad_json) are one cluster each, each >= 90 % one family.
    HDBSCAN alone splits the tool-less ones by wording (nine clusters; merge.py joins them)."""
    runs = planted_failures(CORE[:6], 40, seed=seed)
    result = cluster_failures(runs, embedder=minilm, now=NOW)
    scored = _truth(result, runs)
    assert result.clusters.height == 6
    per_family = scored.group_by("family").agg(pl.col("cluster_id").unique())
    assert sorted(per_family["family"]) == sorted(f.name for f in CORE[:6])
    assert all(len(ids) == 1 and ids[0] != NOISE for ids in per_family["cluster_id"])
    purity = (scored.group_by("cluster_id", "family").len().group_by("cluster_id")
              .agg((pl.col("len").max() / pl.col("len").sum()).alias("purity")))
    assert purity["purity"].min() >= 0.9
    params = json.loads(result.clusters["params"][0])
    assert params["hdbscan_clusters"] > 6 and params["clusters"] == 6 and params["merge_cosine"] == MERGE_COSINE
    unmerged = cluster_failures(runs, embedder=minilm, now=NOW, merge_cosine=None)
    assert unmerged.clusters.height == params["hdbscan_clusters"]


@pytest.mark.parametrize("seed", [2, 3])
def test_other_families_and_seeds(minilm: MiniLMEmbedder, seed: int) -> None:
    runs = planted_failures(MORE[:12], 30, noise=10, successes=10, seed=seed)
    result = cluster_failures(runs, embedder=minilm, now=NOW)
    assert _ari(result, runs) >= 0.8


def _fallback_against_exact(runs: pl.DataFrame, embedder: MiniLMEmbedder) -> tuple[float, float]:
    """ARI against the families of the exact path and of the k-d tree fallback, forced
    with a tiny dense_limit, on the same vectors, clusters of one cause merged (merge.py)."""
    failures = select_failures(runs, SCORE_BELOW)
    parts = failure_frame(failures).with_columns(failures["family", "error_type", "failing_tools"])
    distinct = parts.group_by("text", maintain_order=True).agg(
        pl.col("error", "tools", "output", "error_type", "failing_tools").first(), pl.len().alias("n"))
    causes = [Cause(e, tool_name(t)) for e, t in distinct.select("error_type", "failing_tools").iter_rows()]
    vectors, _ = failure_vectors([FailureParts(*r) for r in distinct.select("error", "tools", "output").iter_rows()],
                                 embedder)
    point = dict(zip(distinct["text"], range(distinct.height)))
    rows = [point[t] for t in parts["text"]]
    scores = []
    for dense_limit, method in ((100_000, "exact-multiset"), (10, "boruvka-kdtree-pca48")):
        fit = hdbscan_multiset(vectors, distinct["n"].to_numpy(), min_cluster_size=default_min_cluster_size(len(rows)),
                               min_samples=5, distance_floor=DISTANCE_FLOOR, single_cluster_fallback=True,
                               dense_limit=dense_limit)
        assert fit.method == method
        labels = merge_alike(fit.labels, vectors, distinct["n"].to_numpy(), causes, distinct["tools"].to_list())
        scores.append(adjusted_rand_score(parts["family"].to_list(), labels[rows].tolist()))
    return scores[0], scores[1]


def test_the_kdtree_fallback_keeps_the_families(minilm: MiniLMEmbedder, planted: pl.DataFrame) -> None:
    """Above 12,000 distinct texts multiset.py hands over to hdbscan's k-d tree on PCA rows:
    on real embeddings it stays close to the exact path (measured 1.00 and 1.00 after
    merge.py; 0.85 and 0.94 before it)."""
    exact, fallback = _fallback_against_exact(planted, minilm)
    assert exact >= 0.8 and fallback >= 0.75


@pytest.mark.slow
def test_the_kdtree_fallback_at_scale(minilm: MiniLMEmbedder) -> None:
    """20,000 failures of all 75 families (sizes as benchmarks/cluster.py draws them; 3,913
    distinct texts): the fallback within 0.05 of the exact path's ARI (measured 0.76 and
    0.76; with the floor itself as epsilon on PCA-32 rows, 0.08).
    ~30 s on the 2-core machine."""
    weights = [(rank + 1) ** -0.8 for rank in range(len(FAMILIES))]
    sizes = [int(19_400 * w / sum(weights)) for w in weights]
    exact, fallback = _fallback_against_exact(planted_failures(FAMILIES, sizes, noise=600, seed=0), minilm)
    assert fallback >= exact - 0.05, (exact, fallback)


def test_noise_stays_unclustered(first: ClusterResult, planted: pl.DataFrame, minilm: MiniLMEmbedder) -> None:
    """One-off failures are members with cluster_id -1, never forced into a cluster —
    among families, and alone (where HDBSCAN is asked again for a single cluster, which
    unrelated failures do not get)."""
    noise = _truth(first, planted).filter(pl.col("family") == "noise")
    assert noise.height == 15 and noise["cluster_id"].to_list() == [NOISE] * 15
    alone = cluster_failures(planted_failures(CORE, 0, noise=20, seed=4), embedder=minilm, now=NOW)
    assert alone.clusters.height == 0
    assert alone.members.height == 20 and set(alone.members["cluster_id"]) == {NOISE}
    assert insights_json(alone.clusters, alone.members)["agent"]["unclustered"] == 20


def test_one_way_of_failing_is_one_cluster(minilm: MiniLMEmbedder) -> None:
    """The other side of the single-cluster retry: twelve timeouts differing only in their
    numbers are one cluster, though HDBSCAN alone finds none in a single group."""
    runs = planted_failures(CORE, 0, noise=12, seed=5).with_columns(
        error_type=pl.lit("TimeoutError"),
        error_message=pl.format("get_weather timed out after {}s", pl.int_range(12)),
        failing_tools=pl.lit("get_weather: timed out"))
    result = cluster_failures(runs, embedder=minilm, now=NOW)
    assert result.clusters["size"].to_list() == [12]
    assert set(result.members["cluster_id"]) == {0}


def test_tables_match_the_lake(first: ClusterResult, planted: pl.DataFrame) -> None:
    clusters, members = first.clusters, first.members
    assert clusters.schema == CLUSTERS_SCHEMA and members.schema == MEMBERS_SCHEMA
    failures = planted.filter(pl.col("family") != "success")
    assert sorted(members["trace_id"]) == sorted(failures["trace_id"])
    assert clusters["cluster_id"].to_list() == list(range(clusters.height))   # first run: 0, 1, … by size
    assert clusters["size"].to_list() == sorted(clusters["size"], reverse=True)
    sizes = members.filter(pl.col("cluster_id") != NOISE).group_by("cluster_id").len()
    assert dict(sizes.iter_rows()) == dict(clusters.select("cluster_id", "size").iter_rows())
    assert clusters["share"].to_list() == pytest.approx([s / failures.height for s in clusters["size"]])
    starts = dict(failures.select("trace_id", "start_time").iter_rows())
    for row in clusters.iter_rows(named=True):
        mine = set(members.filter(pl.col("cluster_id") == row["cluster_id"])["trace_id"])
        assert row["first_seen"] == min(starts[t] for t in mine)
        assert row["last_seen"] == max(starts[t] for t in mine)
        assert 1 <= len(row["example_trace_ids"]) <= 5 and set(row["example_trace_ids"]) <= mine
        assert 1 <= len(row["top_terms"]) <= 8
        assert row["description"] == from_terms(row["top_terms"])        # no LLM was given
        assert row["run_at"] == NOW
        params = json.loads(row["params"])
        assert params["algorithm"] == "hdbscan" and params["min_cluster_size"] == 5
        assert params["min_cluster_size_rule"] == "max(5, 1% of failures)" and params["min_samples"] == 5
        assert params["embedder"] == "all-MiniLM-L6-v2-onnx-int8" and params["described_by"] == BY_TERMS
        assert params["failures"] == failures.height and params["unclustered"] == 15


def _renumbered(result: ClusterResult, offset: int) -> ClusterResult:
    """``result`` with its ids reversed and shifted (cluster i of k is offset + k - 1 - i):
    an earlier history, so that ids kept are not the size order a fresh run would give."""
    k = result.clusters.height

    def ids(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.with_columns(pl.when(pl.col("cluster_id") == NOISE).then(NOISE)
                                  .otherwise(offset + k - 1 - pl.col("cluster_id")).alias("cluster_id"))

    return ClusterResult(ids(result.clusters), ids(result.members))


def test_ids_stay_stable_when_a_second_pass_adds_runs(minilm: MiniLMEmbedder, first: ClusterResult,
                                                      planted: pl.DataFrame) -> None:
    """A second run over the same window plus a few new failures (later in time) keeps each
    cluster's id, first_seen and LLM sentence; read back as the lake gives it (extra
    columns), as the pipeline does."""
    later = planted_failures(CORE, 3, noise=3, seed=9, first_trace=10_000, start=START + dt.timedelta(days=8),
                             days=1)
    runs = pl.concat([planted, later])
    before = _renumbered(first, 20)
    stored_clusters = before.clusters.with_columns(committed_at=pl.lit(NOW), date=pl.lit(NOW.date()))
    previous = ClusterResult.from_tables(stored_clusters, before.members)
    asked: list[str] = []
    second = cluster_failures(runs, embedder=minilm, describe=lambda p: asked.append(p) or "Something fails.",
                              previous=previous, now=NOW + dt.timedelta(hours=1), min_cluster_size=None)

    new_of = dict(second.members.select("trace_id", "cluster_id").iter_rows())
    kept = 0
    for old_id, trace_ids in before.members.filter(pl.col("cluster_id") != NOISE).group_by("cluster_id") \
            .agg("trace_id").iter_rows():
        now_in = pl.Series([new_of[t] for t in trace_ids]).value_counts(sort=True)
        majority_id, count = now_in.row(0)
        if 2 * count > len(trace_ids):
            assert majority_id == old_id
            kept += 1
    assert kept == first.clusters.height                    # every cluster mostly kept its members
    old = {r["cluster_id"]: r for r in before.clusters.iter_rows(named=True)}
    top = max(old)
    for row in second.clusters.iter_rows(named=True):
        if row["cluster_id"] in old:
            assert row["first_seen"] == old[row["cluster_id"]]["first_seen"]
            assert row["size"] >= old[row["cluster_id"]]["size"] - 2
        else:                                               # a fresh id is never an old one
            assert row["cluster_id"] > top
    assert second.clusters["last_seen"].max() > first.clusters["last_seen"].max()
    assert {json.loads(p)["described_by"] for p in second.clusters["params"]} == {BY_LLM}

    # a third pass keeps the LLM's sentences without asking again
    asked.clear()
    third = cluster_failures(runs, embedder=minilm, describe=lambda p: asked.append(p) or "Other words.",
                             previous=ClusterResult.from_tables(second.clusters, second.members),
                             now=NOW + dt.timedelta(hours=2), min_cluster_size=None)
    assert asked == [] and set(third.clusters["description"]) == {"Something fails."}
    assert third.clusters["cluster_id"].to_list() == second.clusters["cluster_id"].to_list()


def test_descriptions_come_from_the_llm_or_fall_back_to_top_terms(minilm: MiniLMEmbedder) -> None:
    runs = planted_failures(CORE[:3], 15, seed=6)
    prompts: list[Prompt] = []

    def llm(prompt: Prompt) -> str:
        prompts.append(prompt)
        return "The agent's tool calls fail. Extra words."

    def down(prompt: str) -> str:
        raise ConnectionError("endpoint down")

    described = cluster_failures(runs, embedder=minilm, describe=llm, now=NOW)
    assert len(prompts) == described.clusters.height >= 2
    assert set(described.clusters["description"]) == {"The agent's tool calls fail."}
    assert all("- error: " in p.messages[-1][1] for p in prompts)  # the examples are in the prompt
    # the cluster's own cause is what the label may name first
    assert {p.subjects[:2] for p in prompts} == {("get_weather", "Timeout Error"), ("get_weather", "JSON Decode Error"),
                                                 ("search_flights", "Timeout Error")}
    fallback = cluster_failures(runs, embedder=minilm, describe=down, now=NOW)
    for row in fallback.clusters.iter_rows(named=True):
        assert row["description"] == from_terms(row["top_terms"])
        assert json.loads(row["params"])["described_by"] == BY_TERMS
    silent = cluster_failures(runs, embedder=minilm, describe=lambda p: None, now=NOW)
    assert silent.clusters["description"].to_list() == fallback.clusters["description"].to_list()


def test_insights_json(first: ClusterResult) -> None:
    out = insights_json(first.clusters, first.members)
    assert list(out) == ["agent"]
    agent = out["agent"]
    assert set(agent) == {"agent", "run_at", "failures", "clustered", "unclustered", "unclustered_trace_ids",
                          "params", "clusters"}
    assert agent["run_at"] == "2025-03-20T00:00:00Z"
    assert agent["failures"] == first.members.height and agent["unclustered"] == 15
    assert agent["clustered"] == sum(c["size"] for c in agent["clusters"])
    assert len(agent["unclustered_trace_ids"]) == 10 and agent["params"]["min_cluster_size"] == 5
    assert [c["size"] for c in agent["clusters"]] == sorted((c["size"] for c in agent["clusters"]), reverse=True)
    cluster = agent["clusters"][0]
    assert set(cluster) == {"cluster_id", "size", "share", "first_seen", "last_seen", "example_trace_ids",
                            "top_terms", "description", "described_by"}
    assert cluster["first_seen"].endswith("Z") and isinstance(cluster["example_trace_ids"], list)
    assert json.loads(json.dumps(out)) == out                  # JSON as it is


def test_agents_are_clustered_apart(minilm: MiniLMEmbedder) -> None:
    runs = pl.concat([planted_failures(CORE[:3], 12, agent="a", seed=7),
                      planted_failures(CORE[3:5], 12, agent="b", seed=8, first_trace=1_000)])
    result = cluster_failures(runs, embedder=minilm, now=NOW)
    assert set(result.clusters["agent"]) == {"a", "b"} and set(result.params) == {"a", "b"}
    for agent, n in (("a", 36), ("b", 24)):
        mine = result.clusters.filter(pl.col("agent") == agent)
        assert mine["cluster_id"].min() == 0                   # ids are per agent
        assert result.members.filter(pl.col("agent") == agent).height == n
        assert mine["share"].sum() <= 1.0 + 1e-9


def test_failures_are_errors_and_low_scores(minilm: MiniLMEmbedder) -> None:
    runs = pl.DataFrame({
        "trace_id": ["e", "low", "mid", "good", "unscored"], "agent": ["x"] * 5,
        "start_time": [NOW] * 5, "status": ["error", "ok", "ok", "ok", "ok"],
        "error_type": ["ValueError", None, None, None, None], "error_message": ["bad", None, None, None, None],
        "failing_tools": [None] * 5, "output": [None, "wrong", "so-so", "right", "?"],
        "score": [None, 0.2, 0.6, 0.9, None]}, schema=FAILURES_SCHEMA)
    assert sorted(cluster_failures(runs, embedder=minilm, now=NOW).members["trace_id"]) == ["e", "low"]
    assert sorted(cluster_failures(runs, embedder=minilm, now=NOW, score_below=0.7).members["trace_id"]) == \
        ["e", "low", "mid"]


def test_empty_input(minilm: MiniLMEmbedder) -> None:
    for runs in (pl.DataFrame(schema=FAILURES_SCHEMA), planted_failures(CORE, 0, successes=5)):
        result = cluster_failures(runs, embedder=minilm, describe=None, previous=None, now=NOW,
                                  min_cluster_size=None)
        assert result.clusters.schema == CLUSTERS_SCHEMA and result.clusters.height == 0
        assert result.members.schema == MEMBERS_SCHEMA and result.members.height == 0
        assert insights_json(result.clusters, result.members) == {}
    empty = ClusterResult.from_tables(None, None)
    assert empty.clusters.height == 0 and empty.params == {}


def test_min_cluster_size() -> None:
    assert [default_min_cluster_size(n) for n in (0, 100, 599, 1_000, 100_000)] == [5, 5, 5, 10, 1_000]


def test_a_given_min_cluster_size_is_applied_and_recorded(first: ClusterResult, minilm: MiniLMEmbedder,
                                                          planted: pl.DataFrame) -> None:
    result = cluster_failures(planted, embedder=minilm, now=NOW, min_cluster_size=30)
    assert result.clusters["size"].min() >= 30 and result.clusters.height < first.clusters.height
    params = json.loads(result.clusters["params"][0])
    assert params["min_cluster_size"] == 30 and params["min_cluster_size_rule"] == "given"


def test_bad_input_is_refused(minilm: MiniLMEmbedder, planted: pl.DataFrame) -> None:
    with pytest.raises(ValueError, match="score"):
        cluster_failures(planted.drop("score"), embedder=minilm, now=NOW)
    with pytest.raises(ValueError, match="timezone"):
        cluster_failures(planted, embedder=minilm, now=dt.datetime(2025, 3, 20))
    with pytest.raises(ValueError, match="start_time"):
        cluster_failures(planted.with_columns(pl.col("start_time").dt.replace_time_zone(None)), embedder=minilm,
                         now=NOW)
    with pytest.raises(TypeError, match="from_tables"):
        cluster_failures(planted, embedder=minilm, now=NOW, previous=(planted, planted))  # type: ignore[arg-type]
