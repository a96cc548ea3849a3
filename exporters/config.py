"""The exporters' settings, as they appear under ``exporters:`` in ``otel-config.yaml``.

Each exporter owns its config model, as each component of the OpenTelemetry Collector
does; ``collector/config.py`` composes them with the receivers' and the service's into
the one strict parse of the file. Every key: docs/config.md.
"""

from __future__ import annotations

from typing import Literal, Mapping

from pydantic import Field, field_validator

from otelbench.storage import DEFAULT_LAKE
from otelbench.storage.config_base import Strict

DEFAULT_FLUSH_INTERVAL_S = 1.0
DEFAULT_FLUSH_MAX_ROWS = 200_000
DEFAULT_MAX_BATCH_MIB = 7  # 100 k spans/s within 300 MB on 2 cores (docs/performance.md)
DEFAULT_DEDUPE_WINDOW = 500_000
DEFAULT_FLUSH_WORKERS = 1
DEFAULT_COMPACT_MIN_FILES = 8
DEFAULT_COMPACT_INTERVAL_S = 30.0
DEFAULT_COMPACT_MEMORY_MIB = 48  # storage.compaction.MEMORY_MIB
DEFAULT_FORWARD_QUEUE = 256
DEFAULT_FORWARD_TIMEOUT_S = 10.0
DEFAULT_FORWARD_MAX_ELAPSED_S = 300.0
DEFAULT_DEBUG_INTERVAL_S = 10.0


# -- parquet -----------------------------------------------------------------------------


class Flush(Strict):
    interval_s: float = Field(DEFAULT_FLUSH_INTERVAL_S, gt=0)
    max_rows: int = Field(DEFAULT_FLUSH_MAX_ROWS, gt=0)
    max_batch_mib: int = Field(DEFAULT_MAX_BATCH_MIB, gt=0)


class Compaction(Strict):
    enabled: bool = True
    min_files: int = Field(DEFAULT_COMPACT_MIN_FILES, ge=2)
    interval_s: float = Field(DEFAULT_COMPACT_INTERVAL_S, gt=0)
    memory_mib: int = Field(DEFAULT_COMPACT_MEMORY_MIB, ge=32, le=65536)


class S3(Strict):
    """Where a lake at ``s3://`` is served, over the AWS variables of the environment
    (credentials only ever come from there: storage/objectstore.py)."""

    endpoint: str | None = Field(None, pattern=r"^https?://[^/\s]+/?$")
    region: str | None = None
    path_style: bool | None = None

    def environment(self) -> dict[str, str]:
        """The AWS variables these settings stand for: the collector sets them for itself
        and its processes, so that every reader of the lake finds the same server."""
        env = {}
        if self.endpoint:
            env["AWS_ENDPOINT_URL_S3"] = self.endpoint
        if self.region:
            env["AWS_REGION"] = self.region
        if self.path_style is not None:
            env["AWS_S3_ADDRESSING_STYLE"] = "path" if self.path_style else "virtual"
        return env


class ParquetExporter(Strict):
    path: str = DEFAULT_LAKE  # a folder, or s3://bucket/prefix
    s3: S3 = S3()
    # names this collector's files in a lake several collectors share (storage/files.py)
    collector_id: str | None = Field(None, pattern=r"^[a-z][a-z0-9]{0,31}$")
    flush: Flush = Flush()
    compaction: Compaction = Compaction()
    dedupe_window: int = Field(DEFAULT_DEDUPE_WINDOW, ge=0)
    workers: int = Field(DEFAULT_FLUSH_WORKERS, ge=1, le=8)

    @field_validator("path")
    @classmethod
    def _a_folder_or_a_bucket(cls, v: str) -> str:
        scheme, sep, rest = v.partition("://")
        if sep and scheme not in ("s3", "file"):
            raise ValueError(f"{v!r}: a lake is a folder or s3://bucket/prefix")
        if scheme == "s3" and not rest.strip("/"):
            raise ValueError(f"{v!r}: no bucket (s3://bucket/prefix)")
        return v


# -- otlp --------------------------------------------------------------------------------


class OtlpExporter(Strict):
    endpoint: str
    headers: Mapping[str, str] = Field(default_factory=dict)
    compression: Literal["gzip", "none"] = "gzip"
    timeout_s: float = Field(DEFAULT_FORWARD_TIMEOUT_S, gt=0)
    queue_size: int = Field(DEFAULT_FORWARD_QUEUE, gt=0)
    max_elapsed_s: float = Field(DEFAULT_FORWARD_MAX_ELAPSED_S, gt=0)

    @field_validator("endpoint")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL (OTLP/HTTP)")
        return v.rstrip("/")


# -- debug -------------------------------------------------------------------------------


class DebugExporter(Strict):
    interval_s: float = Field(DEFAULT_DEBUG_INTERVAL_S, gt=0)
