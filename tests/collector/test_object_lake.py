"""Collectors writing a lake in a bucket (moto_server, a real S3-compatible server): what is
acknowledged is there once after kill -9, and several collectors share one lake."""

from __future__ import annotations

import random
import signal
import threading
from collections import Counter
from pathlib import Path

import httpx
import pytest
import yaml

from otelbench.collector.wiring import Collector
from otelbench.testing.collector import collector_config
from otelbench.testing.otlp import agent_request
from otelbench.testing.wait import wait_for
from otelbench.storage.duckdb import open_lake
from otelbench.storage.files import data_files, owner_of
from otelbench.storage.lake import Lake
from otelbench.storage.schema import SPANS
from tests.collector.test_durability import PB, Load, Server, _span_ids


def _truth(reqs) -> tuple[set[tuple[str, str]], Counter, Counter]:
    """What was sent: span keys, and per agent its chat calls and their input tokens."""
    keys: set[tuple[str, str]] = set()
    calls: Counter = Counter()
    tokens: Counter = Counter()
    for req in reqs:
        for s in req.resource_spans[0].scope_spans[0].spans:
            keys.add((s.trace_id.hex(), s.span_id.hex()))
            attrs = {a.key: a.value for a in s.attributes}
            if attrs.get("gen_ai.operation.name") and attrs["gen_ai.operation.name"].string_value == "chat":
                agent = attrs["gen_ai.agent.name"].string_value
                calls[agent] += 1
                tokens[agent] += attrs["gen_ai.usage.input_tokens"].int_value
    return keys, calls, tokens


def _lake_answers(location: str) -> tuple[tuple[int, int], Counter, Counter]:
    with open_lake(location) as gw:
        counts = gw.query("SELECT count(*), count(DISTINCT (trace_id, span_id)) FROM spans").rows[0]
        rows = gw.query("SELECT agent, count(*), sum(input_tokens) FROM llm_calls GROUP BY 1", max_rows=None).rows
    return tuple(counts), Counter({a: n for a, n, _ in rows}), Counter({a: t for a, _, t in rows})


def test_a_collector_writes_a_bucket_and_the_views_answer(s3_lake: str, tmp_path: Path) -> None:
    c = Collector(collector_config(tmp_path, parquet={"path": s3_lake})).start()
    rng = random.Random(3)
    reqs = [agent_request(rng, 60, agent=f"agent-{i % 2}") for i in range(4)]
    try:
        with httpx.Client(timeout=30) as http:
            for req in reqs:
                assert http.post(f"http://127.0.0.1:{c.http_port}/v1/traces", content=req.SerializeToString(),
                                 headers=PB).status_code == 200
        keys, calls, tokens = _truth(reqs)
        wait_for(lambda: _lake_answers(s3_lake)[0] == (len(keys), len(keys)), timeout_s=60, what="the spans in the bucket")
        assert _lake_answers(s3_lake)[1:] == (calls, tokens)
    finally:
        c.stop()
    owner = (tmp_path / "wal" / "collector-id").read_text()
    assert owner.startswith("c") and {owner_of(f.batch_id) for f in data_files(Lake(s3_lake).fs, SPANS)} == {owner}
    assert not (tmp_path / "lake").exists()  # nothing of the lake on local disk


@pytest.mark.slow
def test_two_collectors_on_one_bucket_under_load_from_four_clients(s3_lake: str, tmp_path: Path) -> None:
    collectors = [
        Collector(collector_config(tmp_path / name, parquet={
            "path": s3_lake, "collector_id": name, "flush": {"interval_s": 0.2},
            "compaction": {"interval_s": 0.5, "min_files": 2}})).start()
        for name in ("east", "west")
    ]
    urls = [f"http://127.0.0.1:{c.http_port}/v1/traces" for c in collectors]
    sent: list = []
    lock = threading.Lock()

    def client(seed: int) -> None:
        rng = random.Random(seed)
        with httpx.Client(timeout=30) as http:
            for i in range(25):
                req = agent_request(rng, 80, agent=f"agent-{seed}")
                # whole traces to one collector (as the loadbalancing exporter routes them), spread
                r = http.post(urls[(seed + i) % 2], content=req.SerializeToString(), headers=PB)
                assert r.status_code == 200
                with lock:
                    sent.append(req)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    try:
        [t.start() for t in threads]
        [t.join() for t in threads]
        # a client that never heard back re-sends to the other collector: the same spans twice
        resent = sent[:6]
        with httpx.Client(timeout=30) as http:
            for k, req in enumerate(resent):
                assert http.post(urls[k % 2], content=req.SerializeToString(), headers=PB).status_code == 200
        keys, calls, tokens = _truth(sent)
        assert len(keys) == 4 * 25 * 80

        def settled() -> bool:
            (n, distinct), *_ = _lake_answers(s3_lake)
            return n == distinct == len(keys)

        wait_for(settled, timeout_s=240, what="both collectors' files compacted without repeats")
        assert _lake_answers(s3_lake) == ((len(keys), len(keys)), calls, tokens)
    finally:
        for c in collectors:
            c.stop()
    owners = Counter(owner_of(f.batch_id) for f in data_files(Lake(s3_lake).fs, SPANS))
    assert set(owners) == {"east", "west"}
    assert _lake_answers(s3_lake) == ((len(keys), len(keys)), calls, tokens)


def _config(tmp_path: Path, lake: str) -> Path:
    cfg = {
        "receivers": {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:0"}}}},
        "exporters": {"parquet": {"path": lake, "flush": {"interval_s": 0.3},
                                  "compaction": {"interval_s": 0.5, "min_files": 2}}},
        "service": {"wal": {"dir": str(tmp_path / "wal")},
                    "pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["parquet"]}}},
    }
    path = tmp_path / "otel-config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.mark.slow
def test_kill_9_with_the_lake_in_a_bucket_loses_and_repeats_nothing(s3_lake: str, tmp_path: Path) -> None:
    """Killed twice under load — mid-batch and, with compaction every half second, likely
    mid-compaction — then restarted: every acknowledged span is in the bucket once."""
    config = _config(tmp_path, s3_lake)
    load = Load()
    for round_ in range(2):
        assert load.kill_under_load(Server(config), 6_000, range(round_ * 10, round_ * 10 + 4), timeout=30), \
            f"only {len(load.acked)} spans acknowledged"
    acked, unacked = load.acked, load.unacked
    server = Server(config)
    with httpx.Client(timeout=30) as http:  # the clients retry what was never acknowledged
        for req in unacked:
            assert http.post(server.url + "/v1/traces", content=req.SerializeToString(), headers=PB).status_code == 200
            acked.extend(_span_ids(req))
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(120) == 0
    expected = set(acked)
    with open_lake(s3_lake) as gw:
        assert gw.query("SELECT count(*), count(DISTINCT (trace_id, span_id)) FROM spans").rows == [
            (len(expected), len(expected))]
        assert set(gw.query("SELECT trace_id, span_id FROM spans", max_rows=None).rows) == expected
