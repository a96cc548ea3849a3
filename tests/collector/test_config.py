from __future__ import annotations

import re
from pathlib import Path

import pytest

from otelbench.collector.config import Config, ConfigError, load_config, parse_config

ROOT = Path(__file__).resolve().parents[2]

MINIMAL = {
    "receivers": {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:4318"}}}},
    "exporters": {"parquet": {"path": "/tmp/lake"}},
    "service": {"pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["parquet"]}}},
}


def test_repo_config_parses():
    cfg = load_config(ROOT / "otel-config.yaml", environ={})
    assert cfg.receivers.otlp.protocols.grpc.endpoint == "127.0.0.1:4317"
    assert cfg.receivers.otlp.protocols.http.endpoint == "127.0.0.1:4318"
    assert cfg.exporters.parquet.path == "./data/lake"
    assert set(cfg.service.pipelines) == {"traces", "logs", "metrics"}


def test_env_expansion_with_and_without_default(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text(
        "receivers: {otlp: {protocols: {http: {endpoint: '${env:EP}'}}}}\n"
        "exporters: {parquet: {path: '${env:LAKE:-/srv/lake}'}}\n"
        "service: {pipelines: {traces: {receivers: [otlp], exporters: [parquet]}}}\n"
    )
    cfg = load_config(p, environ={"EP": "0.0.0.0:9999"})
    assert cfg.receivers.otlp.protocols.http.endpoint == "0.0.0.0:9999"
    assert cfg.exporters.parquet.path == "/srv/lake"
    with pytest.raises(ConfigError, match=r"c\.yaml: environment variable EP is not set"):
        load_config(p, environ={})


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["service"]["pipelines"]["traces"].update(exporter=["x"]),
         r"unknown key 'service\.pipelines\.traces\.exporter'"),
        (lambda d: d["exporters"]["parquet"].update(pth="x"), r"unknown key 'exporters\.parquet\.pth'"),
        (lambda d: d.update(extensions={}), r"unknown key 'extensions'"),
        (lambda d: d["service"]["pipelines"].update(traces={"receivers": ["otlp"], "exporters": ["otlp"]}),
         r"uses exporter 'otlp', which is not configured"),
        (lambda d: d["service"]["pipelines"].update(spans={"receivers": ["otlp"], "exporters": ["parquet"]}),
         r"'service\.pipelines\.spans"),
        (lambda d: d["receivers"]["otlp"]["protocols"].update(http={"endpoint": "x:1", "max_request_body_size_mib": 0}),
         r"max_request_body_size_mib"),
        (lambda d: d.update(exporters={"parquet": {}, "otlp": {"endpoint": "upstream:4318"}}), r"http:// or https://"),
        (lambda d: d.pop("service"), r"missing required key 'service'"),
        # DuckDB needs 16 MiB of the budget to plan a merge at all
        (lambda d: d["exporters"]["parquet"].update(compaction={"memory_mib": 16}),
         r"exporters\.parquet\.compaction\.memory_mib"),
    ],
)
def test_config_errors_name_the_key_and_file(mutate, message):
    import copy

    data = copy.deepcopy(MINIMAL)
    mutate(data)
    with pytest.raises(ConfigError, match=message) as info:
        parse_config(data, where="my.yaml")
    assert str(info.value).startswith("my.yaml:")


def test_config_is_frozen():
    cfg = parse_config(MINIMAL)
    with pytest.raises(Exception):
        cfg.exporters.parquet.path = "elsewhere"  # type: ignore[misc]


def test_keys_map_to_owners():
    import copy

    data = copy.deepcopy(MINIMAL)
    data["receivers"]["otlp"]["auth"] = {"keys": [{"key": "k" * 16, "owner": "alice"}]}
    (key,) = parse_config(data).keys
    assert (key.key, key.owner, key.agent, key.scopes, key.revoked) == ("k" * 16, "alice", None, ("ingest",), False)


def _model_keys(model: type, prefix: str = "") -> set[str]:
    from typing import get_args

    from pydantic import BaseModel

    keys = set()
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        keys.add(path)
        for arg in (field.annotation, *get_args(field.annotation)):
            for inner in (arg, *get_args(arg)):
                if isinstance(inner, type) and issubclass(inner, BaseModel):
                    keys |= _model_keys(inner, path + ".")
    return keys


def test_every_config_key_is_documented():
    doc = (ROOT / "docs" / "config.md").read_text()
    documented = {k.replace("[]", "") for k in re.findall(r"`([a-z_][a-z0-9_.\[\]]*)`", doc)}
    keys = {k for k in _model_keys(Config) if not k.startswith("service.pipelines.")}
    missing = sorted(k for k in keys if k not in documented)
    assert not missing, f"config keys missing from docs/config.md: {missing}"
