"""Spark reads the lake as it is on disk: hive-partitioned Parquet, no otelbench code.

pyspark in local mode (Java 17 from the machine) against a lake a real collector wrote,
after compaction: the same GROUP BY answers as DuckDB's views over the same files.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import httpx
import pytest

from otelbench.testing.otlp import agent_request
from otelbench.testing.wait import wait_for
from otelbench.storage.duckdb import open_lake
from tests.collector.test_durability import PB

pyspark = pytest.importorskip("pyspark", reason="the spark extra (scripts/setup.sh installs it)")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java 17 on the machine")]

# Spark SQL over the raw table folder; the lake's own columns mean the same in both engines.
SPARK_BY_AGENT = """
SELECT resolved_agent AS agent, count(*) AS calls, sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens
FROM spans WHERE span_type = 'llm' GROUP BY resolved_agent ORDER BY agent"""
DUCKDB_BY_AGENT = """
SELECT agent, count(*) AS calls, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens
FROM llm_calls GROUP BY agent ORDER BY agent"""
BY_DAY = "SELECT CAST(date AS STRING) AS day, span_type, count(*) AS n FROM spans GROUP BY 1, 2 ORDER BY 1, 2"


def test_spark_reads_the_lake_and_agrees_with_duckdb(make_collector, tmp_path: Path) -> None:
    c = make_collector(parquet={"flush": {"interval_s": 0.1}, "compaction": {"interval_s": 0.3, "min_files": 2}})
    rng = random.Random(11)
    sent = 0
    with httpx.Client(timeout=30) as http:
        for i in range(12):
            req = agent_request(rng, 90, agent=f"agent-{i % 3}")
            assert http.post(f"http://127.0.0.1:{c.http_port}/v1/traces", content=req.SerializeToString(),
                             headers=PB).status_code == 200
            sent += 90
            # Flushed in three waves at least: compaction merges the first into a file
            # that (tiers: storage.compaction) is merged again only with as much newer
            # data, so the rest must make two part files of their own, or one would stay.
            if i in (5, 8):
                wait_for(lambda: open_lake(tmp_path / "lake").query("SELECT count(*) FROM spans").rows[0][0] == sent,
                         timeout_s=60, what=f"the first {sent} spans flushed")
    lake = tmp_path / "lake"

    def settled() -> bool:
        return (not list(lake.glob("spans/*/part-*.parquet"))
                and open_lake(lake).query("SELECT count(*) FROM spans").rows[0][0] == sent)

    # A last wave that flushes into a single part file stays one (min_files 2: a lone
    # small file beside a bigger compacted one waits for company), so while one is left
    # a small request more gives it a partner; the waves above make that rare.
    for _ in range(6):
        try:
            wait_for(settled, timeout_s=20, what="every span flushed and compacted")
            break
        except TimeoutError:
            req = agent_request(rng, 10, agent="agent-0")
            assert httpx.post(f"http://127.0.0.1:{c.http_port}/v1/traces", content=req.SerializeToString(),
                              headers=PB, timeout=30).status_code == 200
            sent += 10
    else:
        wait_for(settled, timeout_s=20, what="every span flushed and compacted")
    c.stop()
    with open_lake(lake) as gw:
        duck_agents = gw.query(DUCKDB_BY_AGENT).rows
        duck_days = gw.query(BY_DAY).rows
    assert [a for a, *_ in duck_agents] == ["agent-0", "agent-1", "agent-2"]

    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[1]").appName("otelbench-lake")
             .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    try:
        spark.read.option("mergeSchema", "true").parquet(str(lake / "spans")).createOrReplaceTempView("spans")
        spark_agents = [tuple(r) for r in spark.sql(SPARK_BY_AGENT).collect()]
        spark_days = [tuple(r) for r in spark.sql(BY_DAY).collect()]
    finally:
        spark.stop()
    assert spark_agents == duck_agents
    assert spark_days == duck_days
