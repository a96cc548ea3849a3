"""processors/pipeline.py: one run at a time per lake, the sample, the privacy rule."""

from __future__ import annotations

import json

import polars as pl
import pytest

from otelbench.processors import pipeline
from otelbench.processors.config import Clusters, Judge, Processors
from otelbench.storage.privacy import Privacy
from otelbench.storage.lake import Lake


def test_a_second_run_on_a_busy_lake_is_refused_clearly(tmp_path):
    lake = Lake(tmp_path)
    lake.init()
    idle = Processors(judge=Judge(enabled=False), clusters=Clusters(enabled=False))
    with lake.fs.lock(lake.fs.path(pipeline.LOCK_NAME), wait=False):
        with pytest.raises(pipeline.ProcessorError, match="another otelbench process is running"):
            pipeline.run(idle, Privacy(), tmp_path, llm=None)
    # released: the next run goes ahead
    assert pipeline.run(idle, Privacy(), tmp_path, llm=None).judged == 0


def test_the_sample_is_the_same_runs_every_time_and_about_the_share():
    runs = pl.DataFrame({"trace_id": [f"{i:032x}" for i in range(4000)]})
    first = pipeline.sample(runs, 0.25)
    assert first.equals(pipeline.sample(runs.reverse(), 0.25).reverse())
    assert 0.22 < first.height / runs.height < 0.28
    assert pipeline.sample(runs, 1.0).height == 4000


def test_restricted_runs_go_only_to_a_local_judge():
    runs = pl.DataFrame({"trace_id": ["a", "b", "c"], "agent": ["payroll", "bot", "bot"],
                         "owner": [None, "acme", "globex"]})
    privacy = Privacy(private_agents=("payroll",), hide_io_owners=("acme",))
    kept, withheld = pipeline.withhold_private(runs, privacy, local=False)
    assert kept["trace_id"].to_list() == ["c"] and withheld == 2
    kept, withheld = pipeline.withhold_private(runs, privacy, local=True)
    assert kept.height == 3 and withheld == 0


def test_only_runs_in_the_window_are_judged_and_clustered(tmp_path):
    import datetime as dt
    import json

    import openai

    from otelbench.testing.judge_stub import JudgeStub
    from otelbench.testing.rows import DAY, agent, batch
    from otelbench.storage.duckdb import open_lake

    def msg(role, text):
        return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])

    lake = Lake(tmp_path)
    lake.init()
    week = 7 * 86_400
    lake.write_batch("01", batch(spans=[
        agent(1, 1, name="a", at=0, status_code="error", status_message="boom",
              input_messages=msg("user", "old task"), output_messages=msg("assistant", "old answer")),
        agent(2, 1, name="a", at=week + 3600, status_code="error", status_message="boom",
              input_messages=msg("user", "new task"), output_messages=msg("assistant", "new answer")),
    ]))
    day = dt.datetime.fromisoformat(DAY) if isinstance(DAY, str) else DAY
    if day.tzinfo is None:
        day = day.replace(tzinfo=dt.timezone.utc)
    now = day + dt.timedelta(seconds=week + 7200)
    settings = Processors(window_hours=24 * 7, clusters=Clusters(describe=False))
    with JudgeStub() as stub:
        llm = pipeline.Llm(openai.OpenAI(base_url=stub.base_url, api_key="x", max_retries=0), "stub-judge", True)
        report = pipeline.run(settings, Privacy(), tmp_path, llm=llm, now=lambda: now)
        assert "old task" not in stub.prompts() and "new task" in stub.prompts()
    assert report.judged + report.judge_errors == 1 and report.failures == 1
    with open_lake(tmp_path) as gw:
        assert gw.query("SELECT trace_id[-1:] FROM evals").rows == [("2",)]
        assert gw.query("SELECT trace_id[-1:], cluster_id FROM cluster_members").rows == [("2", -1)]


def test_shards_split_the_runs_without_overlap_or_gaps():
    runs = pl.DataFrame({"trace_id": [f"{i:032x}" for i in range(3000)]})
    parts = [pipeline.in_shard(runs, (i, 3)) for i in (1, 2, 3)]
    ids = [set(p["trace_id"]) for p in parts]
    assert sum(map(len, ids)) == 3000 and set().union(*ids) == set(runs["trace_id"])
    assert all(800 < len(i) < 1200 for i in ids)
    assert pipeline.in_shard(runs.reverse(), (2, 3))["trace_id"].sort().equals(parts[1]["trace_id"].sort())
    assert pipeline.in_shard(runs, None).height == 3000


def test_two_shards_judge_every_run_once_on_a_lake_in_a_bucket(s3_lake):
    """Two workers (shards 1/2 and 2/2) share the judging of a lake in a bucket: every run
    scored exactly once."""
    import json

    import openai

    from otelbench.testing.judge_stub import JudgeStub
    from otelbench.testing.rows import agent, batch
    from otelbench.storage.duckdb import open_lake

    def msg(role, text):
        return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])

    lake = Lake(s3_lake)
    lake.init()
    lake.write_batch("01", batch(spans=[
        agent(n, 1, name="a", at=60.0 * n, input_messages=msg("user", f"task {n}"),
              output_messages=msg("assistant", f"answer {n}")) for n in range(1, 13)]))
    settings = Processors(window_hours=24 * 365 * 50, clusters=Clusters(describe=False))
    reports = []
    with JudgeStub() as stub:
        llm = pipeline.Llm(openai.OpenAI(base_url=stub.base_url, api_key="x", max_retries=0), "stub-judge", True)
        for shard in ((1, 2), (2, 2), (1, 2)):  # the third: shard 1 again, nothing left to judge
            reports.append(pipeline.run(settings, Privacy(), s3_lake, llm=llm, only="judge", shard=shard))
    assert [r.judged + r.judge_errors for r in reports][2] == 0
    assert sum(r.judged + r.judge_errors for r in reports) == 12 and all(r.judged for r in reports[:2])
    with open_lake(s3_lake) as gw:
        assert gw.query("SELECT count(*), count(DISTINCT trace_id) FROM evals").rows == [(12, 12)]


def test_a_private_owners_failures_are_clustered_apart_with_ids_of_their_own(minilm):
    """The same failures, sent by a public owner and by a private one: clustered together
    while the owner was public, then apart — each cluster one owner's, the public ones
    keeping their ids, the private owner's with fresh ones, the public terms made from the
    public runs alone."""
    import datetime as dt

    from otelbench.testing.failures import CORE, planted_failures
    from otelbench.processors.clustering import ClusterResult, cluster_failures

    now = dt.datetime(2025, 3, 20, tzinfo=dt.timezone.utc)
    team = planted_failures(CORE[:2], 12, agent="bot", seed=3).with_columns(owner=pl.lit("team"))
    hush = team.with_columns(owner=pl.lit("hush"), trace_id=pl.col("trace_id").str.replace("^0", "f"))

    def cluster(mine: pl.DataFrame, before: ClusterResult) -> ClusterResult:
        return cluster_failures(mine, embedder=minilm, previous=before, now=now)

    def owners(result: ClusterResult, runs: pl.DataFrame) -> dict[int, list[str]]:
        found = result.members.filter(pl.col("cluster_id") >= 0).join(runs.select("trace_id", "owner"), on="trace_id")
        return {c: sorted(set(o)) for c, o in found.group_by("cluster_id").agg("owner").iter_rows()}

    together = pipeline.cluster_apart(pl.concat([team, hush]), "bot", Privacy(), ClusterResult.from_tables(None, None),
                                      cluster)
    assert together.clusters.height >= 1 and set(map(tuple, owners(together, pl.concat([team, hush])).values())) == \
        {("hush", "team")}  # mixed
    marked = hush.with_columns(error_message=pl.col("error_message") + " zzqhushwordzz")  # words of its own, now
    runs = pl.concat([team, marked])
    apart = pipeline.cluster_apart(runs, "bot", Privacy(private_owners=("hush",)), together, cluster)
    by_owner = owners(apart, runs)
    assert set(map(tuple, by_owner.values())) == {("hush",), ("team",)}  # each cluster one owner's
    public = {c for c, o in by_owner.items() if o == ["team"]}
    assert public == set(together.clusters["cluster_id"])  # the public ones keep their ids ...
    fresh = together.params["bot"]["next_cluster_id"]
    assert all(c >= fresh for c, o in by_owner.items() if o == ["hush"])  # ... the private owner's are new
    assert apart.clusters["cluster_id"].n_unique() == apart.clusters.height
    terms = apart.clusters.filter(pl.col("cluster_id").is_in(list(public)))["top_terms"].to_list()
    assert not any("zzqhushwordzz" in t for ts in terms for t in ts)


def test_a_pass_leaves_a_running_compaction_alone(tmp_path):
    """The collector's compactor may be mid-merge when a processors pass starts: its journal
    names two outputs, one renamed into place, the other still a temp file, and the inputs
    are all there. The pass must not settle it — undoing it would delete the output the
    merge goes on to rely on when it deletes its inputs. The collector's own start settles
    it (here: rolls it back, the inputs kept)."""
    from otelbench.testing.rows import agent, batch, llm

    lake = Lake(tmp_path)
    lake.init()
    for i in range(4):
        lake.write_batch(f"{i:020d}", batch(spans=[llm(i, 2, 1), agent(i, 1)]))
    part = lake.table_dir("spans") / next(p.name for p in lake.table_dir("spans").iterdir()
                                          if p.name != "date=1970-01-01")
    inputs = sorted(p.name for p in part.glob("part-*.parquet"))
    top = f"{7:020d}"
    (part / f"compact-{top}-0.parquet").write_bytes((part / inputs[0]).read_bytes())
    (part / f".compact-{top}-1.parquet.tmp").write_bytes(b"being written")
    (part / f"_journal-{top}.json").write_text(
        json.dumps({"inputs": inputs, "outputs": [f"compact-{top}-0.parquet", f"compact-{top}-1.parquet"]}))
    in_flight = sorted(p.name for p in part.iterdir())
    idle = Processors(judge=Judge(enabled=False), clusters=Clusters(enabled=False))
    pipeline.run(idle, Privacy(), tmp_path, llm=None)
    assert sorted(p.name for p in part.iterdir()) == in_flight
    Lake(tmp_path).init()  # the collector starting: nothing is running now, so it is settled
    assert sorted(p.name for p in part.iterdir() if not p.name.startswith(".")) == inputs
