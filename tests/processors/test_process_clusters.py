"""``otelbench process --only clusters`` end to end: failed runs sent by the real OTel SDK
through the real collector, clustered from the lake by the real CLI, read back by SQL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml
from sklearn.metrics import adjusted_rand_score  # scikit-learn comes with hdbscan

from otelbench.testing.agent_runs import Run, send_runs
from otelbench.testing.failures import CORE, as_agent_runs, planted_failures
from otelbench.testing.wait import wait_for
from otelbench.storage.duckdb import open_lake

ROOT = Path(__file__).resolve().parents[2]


def rows(lake: Path, sql: str) -> list[tuple]:
    with open_lake(lake) as gw:
        return gw.query(sql, max_rows=None).rows


def process(cfg: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "otelbench", "process", "--config", str(cfg), "--only", "clusters"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, env=dict(os.environ))


def test_failures_sent_through_the_collector_come_back_as_their_families_with_stable_ids(tmp_path, collector):
    families = [f for f in CORE if f.error_type is not None][:4]
    planted = planted_failures(families, 15, noise=4, successes=0, seed=3)
    later = planted_failures(families, 2, seed=4, first_trace=10_000)
    url = f"http://127.0.0.1:{collector.http_port}"
    ids = send_runs(url, as_agent_runs(planted)) + send_runs(url, [Run("support-bot", "Weather in Oslo?", "Sunny, 12 C.")])
    truth = dict(zip(ids, [*planted["family"].to_list(), "success"]))
    lake = Path(collector.config.exporters.parquet.path)
    wait_for(lambda: rows(lake, "SELECT count(*) FROM agent_runs")[0][0] == len(ids), what="runs in the lake")
    cfg = tmp_path / "otel-config.yaml"
    cfg.write_text(yaml.safe_dump({
        "receivers": {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:0"}}}},
        "exporters": {"parquet": {"path": str(lake)}},
        "service": {"pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["parquet"]}}},
        "processors": {"clusters": {"describe": False}},
    }))

    first = process(cfg)
    assert first.returncode == 0, first.stderr
    assert "clusters: 64 failed or low-scored runs; clusters per agent: support-bot" in first.stdout
    members = dict(rows(lake, "SELECT trace_id, cluster_id FROM cluster_members"))
    assert set(members) == set(ids) - {ids[-1]}  # every failure, clustered or noise (-1); not the success
    failed = sorted(members)
    assert adjusted_rand_score([truth[t] for t in failed], [members[t] for t in failed]) >= 0.8
    clusters = rows(lake, "SELECT cluster_id, size, share, description, len(example_trace_ids), len(top_terms) "
                          "FROM failure_clusters ORDER BY cluster_id")
    assert len(clusters) == len(families)
    for cluster_id, size, share, description, examples, terms in clusters:
        assert size == sum(1 for c in members.values() if c == cluster_id)
        assert abs(share - size / len(members)) < 1e-9 and description and examples > 0 and terms > 0

    # a second pass with a few more failures keeps every family's id
    more = send_runs(url, as_agent_runs(later))
    wait_for(lambda: rows(lake, "SELECT count(*) FROM agent_runs")[0][0] == len(ids) + len(more), what="more runs")
    assert process(cfg).returncode == 0
    again = dict(rows(lake, "SELECT trace_id, cluster_id FROM cluster_members"))
    for family in {truth[t] for t in failed} - {"noise"}:
        before = {members[t] for t in failed if truth[t] == family}
        after = {again[t] for t in failed if truth[t] == family}
        assert before == after, family
    assert len(rows(lake, "SELECT * FROM failure_clusters")) == len(families)
