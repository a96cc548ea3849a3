"""A collector config for tests and benchmarks: free ports, the lake and the log in one folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from collector.config import Config, parse_config


def collector_config(tmp_path: Path, **overrides: Any) -> Config:
    """A config on ephemeral ports with the lake and WAL under tmp_path.

    ``overrides``: ``receivers`` (replaces them), ``auth`` (the OTLP receiver's), ``parquet``
    (merged into the Parquet exporter's), ``exporters`` (more exporters), ``service``
    (merged into the service section, e.g. ``limits`` or ``pipelines``).
    """
    receivers = overrides.pop("receivers", None) or {
        "otlp": {
            "protocols": {"grpc": {"endpoint": "127.0.0.1:0"}, "http": {"endpoint": "127.0.0.1:0"}},
            **({"auth": overrides.pop("auth")} if "auth" in overrides else {}),
        }
    }
    parquet = {"path": str(tmp_path / "lake"), "flush": {"interval_s": 0.2}}
    parquet.update(overrides.pop("parquet", {}))
    data = {
        "receivers": receivers,
        "exporters": {"parquet": parquet, **overrides.pop("exporters", {})},
        "service": {
            "wal": {"dir": str(tmp_path / "wal")},
            "pipelines": {
                s: {"receivers": ["otlp"], "exporters": ["parquet"]} for s in ("traces", "logs", "metrics")
            },
            **overrides.pop("service", {}),
        },
    }
    assert not overrides, overrides
    return parse_config(data, where="test")
