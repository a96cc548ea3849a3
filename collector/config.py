"""``otel-config.yaml``: parsed once, strictly, into frozen models.

The file has the OpenTelemetry Collector's shape (receivers / exporters /
service.pipelines). Unknown keys are errors naming the key and the file;
``${env:VAR}`` and ``${env:VAR:-default}`` expand in any string value. The
receivers' and the service's models are here; each exporter's is in
``exporters/config.py``, composed below into the one ``Config``. Every default is a
named constant, and every key is documented in ``docs/config.md`` (checked by
``tests/collector/test_config.py``).
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path
from typing import Any, Literal, Mapping

import yaml
from pydantic import Field, ValidationError, model_validator

from otelbench.collector import DEFAULT_GRPC_ENDPOINT, DEFAULT_HTTP_ENDPOINT, DEFAULT_WAL_DIR
from otelbench.exporters.config import DebugExporter, OtlpExporter, ParquetExporter
from otelbench.processors.config import Processors
from otelbench.storage import DEFAULT_LAKE
from otelbench.storage.config_base import Strict
from otelbench.storage.privacy import Privacy
from otelbench.web.config import Web

DEFAULT_CONFIG_PATH = "otel-config.yaml"
DEFAULT_MAX_REQUEST_MIB = 64  # the OTLP spec's recommended limit, after decompression
DEFAULT_SEGMENT_MIB = 64
DEFAULT_MAX_UNFLUSHED_MIB = 1024
DEFAULT_MAX_PENDING_MIB = 64
DEFAULT_MAX_INFLIGHT = 64
DEFAULT_RETRY_AFTER_S = 1

SIGNALS = ("traces", "logs", "metrics")

_ENV_REF = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the file and key."""


class GrpcProtocol(Strict):
    endpoint: str = DEFAULT_GRPC_ENDPOINT
    max_recv_msg_size_mib: int = Field(DEFAULT_MAX_REQUEST_MIB, gt=0)


class HttpProtocol(Strict):
    endpoint: str = DEFAULT_HTTP_ENDPOINT
    max_request_body_size_mib: int = Field(DEFAULT_MAX_REQUEST_MIB, gt=0)


class Protocols(Strict):
    grpc: GrpcProtocol | None = None
    http: HttpProtocol | None = None

    @model_validator(mode="after")
    def _one_protocol(self) -> "Protocols":
        if self.grpc is None and self.http is None:
            raise ValueError("at least one of grpc or http must be configured")
        return self


class KeyQuotas(Strict):
    """Per key; none by default (collector/keys.py counts them)."""

    requests_per_minute: int | None = Field(None, ge=1)
    spans_per_day: int | None = Field(None, ge=1)  # items: spans, log records and metric points
    bytes_per_day: int | None = Field(None, ge=1)  # request bytes, as received


class ReadGrant(Strict):
    """What a ``read`` key may see beyond public data: agents by name, or the runs of key
    owners, with their inputs and outputs (``io``) or their figures only (web/access.py)."""

    agents: tuple[str, ...] = ()
    owners: tuple[str, ...] = ()
    io: bool = False

    @model_validator(mode="after")
    def _grants_something(self) -> "ReadGrant":
        if not self.agents and not self.owners:
            raise ValueError("a grant names agents or owners")
        return self


class ApiKey(Strict):
    # the key itself, or its SHA-256 (hex) so the config holds no key in clear; one of the two
    key: str | None = Field(None, min_length=8)
    key_sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    owner: str = Field(min_length=1, pattern=r"^[^\x00-\x1f\x7f]+$")
    # names the agent of every span sent with this key that names none (below an agent
    # span's own name, above the service name); an X-Bench-Agent header overrides it
    agent: str | None = Field(None, min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")
    scopes: tuple[Literal["ingest", "read"], ...] = Field(("ingest",), min_length=1)
    quotas: KeyQuotas = KeyQuotas()
    expires: dt.datetime | None = None  # ISO 8601 with a zone; refused from then on
    revoked: bool = False
    grants: tuple[ReadGrant, ...] = ()  # a read key's: what it sees beyond public data (default: nothing)

    @model_validator(mode="after")
    def _one_key(self) -> "ApiKey":
        if (self.key is None) == (self.key_sha256 is None):
            raise ValueError("give either key or key_sha256")
        if self.expires is not None and self.expires.tzinfo is None:
            raise ValueError("expires needs a time zone (e.g. 2027-01-01T00:00:00Z)")
        if self.grants and "read" not in self.scopes:
            raise ValueError("grants need the read scope")
        return self


class Auth(Strict):
    keys: tuple[ApiKey, ...] = ()


class OtlpReceiver(Strict):
    protocols: Protocols = Protocols(grpc=GrpcProtocol(), http=HttpProtocol())
    auth: Auth = Auth()


class Receivers(Strict):
    otlp: OtlpReceiver | None = None


class Exporters(Strict):
    parquet: ParquetExporter | None = None
    otlp: OtlpExporter | None = None
    debug: DebugExporter | None = None


class Pipeline(Strict):
    receivers: tuple[Literal["otlp"], ...]
    exporters: tuple[Literal["parquet", "otlp", "debug"], ...]


class Wal(Strict):
    dir: str = DEFAULT_WAL_DIR
    segment_size_mib: int = Field(DEFAULT_SEGMENT_MIB, gt=0)
    fsync: bool = True


class Limits(Strict):
    max_inflight_requests: int = Field(DEFAULT_MAX_INFLIGHT, gt=0)
    max_pending_mib: int = Field(DEFAULT_MAX_PENDING_MIB, gt=0)
    max_unflushed_mib: int = Field(DEFAULT_MAX_UNFLUSHED_MIB, gt=0)
    retry_after_s: int = Field(DEFAULT_RETRY_AFTER_S, ge=1)


class Telemetry(Strict):
    metrics: bool = True
    log_level: Literal["debug", "info", "warning", "error"] = "info"


class Service(Strict):
    pipelines: Mapping[Literal["traces", "logs", "metrics"], Pipeline]
    wal: Wal = Wal()
    limits: Limits = Limits()
    telemetry: Telemetry = Telemetry()


class Config(Strict):
    receivers: Receivers
    exporters: Exporters = Exporters()
    service: Service
    processors: Processors | None = None  # the judge and failure clustering (processors/config.py)
    privacy: Privacy = Privacy()
    web: Web | None = None  # otelbench serve also serves the web UI (web/config.py)

    @property
    def lake_path(self) -> str:
        """The lake the Parquet exporter writes, where the processors and the web read."""
        return self.exporters.parquet.path if self.exporters.parquet else DEFAULT_LAKE

    @model_validator(mode="after")
    def _pipelines_refer_to_configured_components(self) -> "Config":
        for signal, pipeline in self.service.pipelines.items():
            for name in pipeline.receivers:
                if getattr(self.receivers, name) is None:
                    raise ValueError(f"pipeline {signal!r} uses receiver {name!r}, which is not configured")
            for name in pipeline.exporters:
                if getattr(self.exporters, name) is None:
                    raise ValueError(f"pipeline {signal!r} uses exporter {name!r}, which is not configured")
        return self

    # -- conveniences used by the wiring (collector/wiring.py) ------------------------------------
    def signals_to(self, exporter: str) -> frozenset[str]:
        return frozenset(s for s, p in self.service.pipelines.items() if exporter in p.exporters)

    @property
    def keys(self) -> tuple[ApiKey, ...]:
        """The configured keys (collector.keys.Keyring holds them as digests)."""
        otlp = self.receivers.otlp
        return otlp.auth.keys if otlp else ()


def expand_env(value: Any, environ: Mapping[str, str], where: str = "") -> Any:
    """Expand ``${env:VAR}`` / ``${env:VAR:-default}`` in every string of a parsed YAML tree."""
    if isinstance(value, str):

        def repl(m: re.Match[str]) -> str:
            name, default = m.group(1), m.group(2)
            if name in environ:
                return environ[name]
            if default is not None:
                return default
            raise ConfigError(f"{where}: environment variable {name} is not set and has no default")

        return _ENV_REF.sub(repl, value)
    if isinstance(value, dict):
        return {k: expand_env(v, environ, where) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, environ, where) for v in value]
    return value


def _describe(err: ValidationError, where: str) -> str:
    lines = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(top level)"
        if e["type"] == "extra_forbidden":
            lines.append(f"{where}: unknown key '{key}'")
        elif e["type"] == "missing":
            lines.append(f"{where}: missing required key '{key}'")
        else:
            lines.append(f"{where}: '{key}': {e['msg']}")
    return "\n".join(lines)


def parse_config(data: Any, *, where: str = "<config>", environ: Mapping[str, str] | None = None) -> Config:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: the top level must be a mapping")
    data = expand_env(data, os.environ if environ is None else environ, where)
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, where)) from exc


def load_config(path: str | Path = DEFAULT_CONFIG_PATH, *, environ: Mapping[str, str] | None = None) -> Config:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from exc
    return parse_config(data, where=str(path), environ=environ)
