"""The processors: and privacy: sections, parsed strictly like the rest of the config."""

from __future__ import annotations

import copy

import pytest

from otelbench.collector.config import ConfigError, parse_config
from otelbench.processors.clustering.merge import MERGE_COSINE
from otelbench.processors.config import DEFAULT_MERGE_COSINE
from otelbench.storage.privacy import Privacy

BASE = {
    "receivers": {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:4318"}}}},
    "exporters": {"parquet": {"path": "/tmp/lake"}},
    "service": {"pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["parquet"]}}},
}


def _with(**sections):
    data = copy.deepcopy(BASE)
    data.update(sections)
    return parse_config(data, where="c.yaml")


def test_absent_processors_section_means_not_scheduled_and_nothing_private():
    cfg = _with()
    assert cfg.processors is None
    assert not cfg.privacy.restricted("any-agent", "any-owner")


def test_defaults_and_overrides():
    cfg = _with(processors={"interval_s": 60, "judge": {"endpoint": "http://10.0.0.5:8000/v1", "model": "qwen",
                                                        "api_key_env": "JUDGE_KEY", "concurrency": 6},
                            "clusters": {"score_below": 0.3, "min_cluster_size": 7, "merge_cosine": None}})
    p = cfg.processors
    assert p.interval_s == 60 and p.window_hours == 168
    assert p.judge.endpoint == "http://10.0.0.5:8000/v1" and p.judge.model == "qwen"
    assert p.judge.concurrency == p.judge.requests_at_once == 6
    assert p.judge.max_attempts == 3 and p.judge.sample == 1.0
    assert p.clusters.score_below == 0.3 and p.clusters.min_cluster_size == 7 and p.clusters.embedder == "local"
    assert p.clusters.merge_cosine is None                          # merging off
    assert _with(processors={}).processors.clusters.merge_cosine == MERGE_COSINE == DEFAULT_MERGE_COSINE


@pytest.mark.parametrize("judge, at_once", [
    ({}, 1),                                          # the embedded server: one at a time judges fastest
    ({"endpoint": "http://10.0.0.5:8000/v1"}, 4),     # a server of your own
    ({"concurrency": 3}, 3),
])
def test_judge_requests_at_once_default_by_endpoint(judge, at_once):
    assert _with(processors={"judge": judge}).processors.judge.requests_at_once == at_once


@pytest.mark.parametrize("endpoint, local, expected", [
    ("embedded", None, True),
    ("http://127.0.0.1:8080/v1", None, True),
    ("http://localhost:11434/v1", None, True),
    ("http://[::1]:8000/v1", None, True),
    ("https://api.openai.com/v1", None, False),
    ("http://10.0.0.5:8000/v1", None, False),
    ("http://10.0.0.5:8000/v1", True, True),  # the operator says the box is theirs
    ("embedded", False, False),
])
def test_which_endpoints_count_as_local(endpoint, local, expected):
    judge = {"endpoint": endpoint} if local is None else {"endpoint": endpoint, "local": local}
    assert _with(processors={"judge": judge}).processors.judge.is_local is expected


@pytest.mark.parametrize("sections, message", [
    ({"processors": {"judge": {"modle": "x"}}}, r"unknown key 'processors\.judge\.modle'"),
    ({"processors": {"clusters": {"score_below": 1.5}}}, r"processors\.clusters\.score_below"),
    ({"processors": {"judge": {"concurrency": 0}}}, r"processors\.judge\.concurrency"),
    ({"processors": {"clusters": {"merge_cosine": 1.5}}}, r"processors\.clusters\.merge_cosine"),
    ({"processors": {"judge": {"sample": 0}}}, r"processors\.judge\.sample"),
    ({"processors": {"interval_s": -1}}, r"processors\.interval_s"),
    ({"privacy": {"private_agents": [" "]}}, r"empty name"),
    ({"privacy": {"hidden_agents": ["a"]}}, r"unknown key 'privacy\.hidden_agents'"),
])
def test_bad_processor_settings_name_the_key(sections, message):
    with pytest.raises(ConfigError, match=message):
        _with(**sections)


def test_privacy_restricts_by_agent_or_owner():
    privacy = Privacy(private_agents=("payroll",), hide_io_owners=("acme",))
    assert privacy.restricted("payroll", None)
    assert privacy.restricted("support-bot", "acme")
    assert not privacy.restricted("support-bot", "globex")
    assert not privacy.restricted(None, None)
