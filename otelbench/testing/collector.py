"""A collector config for tests and benchmarks: free ports, the lake and the log in one folder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otelbench.collector.config import Config, parse_config

if TYPE_CHECKING:
    from otelbench.testing.agent_runs import Run


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


def lake_of_runs(tmp_path: Path, runs: Sequence[Run]) -> Path:
    """A lake holding ``runs``, written the real way: a collector (config as above) receives
    them from the OTel SDK over OTLP/HTTP and flushes them; returns the lake's folder."""
    from otelbench.collector.wiring import Collector
    from otelbench.testing.agent_runs import send_runs
    from otelbench.testing.wait import wait_for
    from otelbench.storage.duckdb import open_lake

    def runs_in_lake() -> int:
        with open_lake(lake) as gw:
            return gw.query("SELECT count(*) FROM agent_runs", max_rows=None).rows[0][0]

    collector = Collector(collector_config(tmp_path)).start()
    lake = Path(collector.config.exporters.parquet.path)
    try:
        send_runs(f"http://127.0.0.1:{collector.http_port}", runs)
        wait_for(lambda: runs_in_lake() == len(runs), what="the runs in the lake")
    finally:
        collector.stop()
    return lake
