"""The home page (``/`` and ``/api/home``): what the instance holds as SQL counts it, how to
point an OTel SDK at the collector (its endpoints from the config when given), and the
latest runs, private agents and hidden inputs left out; on a lake written by the real
collector from real OTel SDK spans (agent runs and a bench model run)."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from otelbench.testing.agent_runs import Run
from otelbench.testing.wait import wait_for
from otelbench.storage.privacy import Privacy
from tests.web.lakes import collector, fold, rows, send
from otelbench.web.app import create_app
from otelbench.web.receivers import DEFAULT_GRPC_ENDPOINT, DEFAULT_HTTP_ENDPOINT, Receivers

SECRET = "TOP-SECRET-PAYROLL-FIGURES"
HIDDEN_INPUT = "the-hidden-input-text"
PRIVACY = Privacy(private_agents=("payroll",), hide_io_agents=("quiet",))


def send_bench_run(url: str, model: str, headers: dict[str, str] | None = None) -> None:
    """A model run as ``otelbench bench`` exports it: a root span of its scope, bench.kind
    model_run (bench_runner/spans.py), with the model asked for (``headers``: an ingest key's)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from opentelemetry.sdk.resources import Resource

    from otelbench.storage.queries.bench import BENCH_SCOPE
    from otelbench.storage.queries.views import BENCH_SERVICE

    provider = TracerProvider(resource=Resource.create({"service.name": BENCH_SERVICE}))  # as the runner names itself
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces", headers=headers)))
    with provider.get_tracer(BENCH_SCOPE).start_as_current_span(f"bench {model}") as span:
        span.set_attributes({"bench.kind": "model_run", "gen_ai.request.model": model})
    provider.shutdown()


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> Path:
    runs = [Run("calc", f"What is {i} + 1?", f"{i + 1}") for i in range(3)]
    runs += [Run("payroll", SECRET, SECRET)] * 2 + [Run("quiet", HIDDEN_INPUT, "a hidden answer")] * 2
    with collector(tmp_path_factory.mktemp("home")) as (url, root):
        send(url, root, runs)
        send_bench_run(url, "smollm2-360m")
        wait_for(lambda: rows(root, "SELECT count(*) FROM bench_results")[0][0] == 1, what="the bench run in the lake")
        fold(root)
    return root


@pytest.fixture(scope="module")
def client(lake: Path) -> TestClient:
    return TestClient(create_app(lake, PRIVACY))


def test_what_the_instance_holds_is_what_sql_counts(client: TestClient, lake: Path) -> None:
    got = client.get("/api/home").json()["instance"]
    visible = "FROM agent_runs WHERE agent <> 'payroll'"
    agents, runs, first, last = rows(lake, f"SELECT count(DISTINCT agent), count(*), min(start_time), max(start_time) "
                                          f"{visible}")[0]
    calls = rows(lake, f"SELECT sum(llm_calls), sum(tool_calls) {visible}")[0]
    assert (got["agents"], got["runs"], got["llm_calls"], got["tool_calls"]) == (agents, runs, *calls)
    assert got["models_benchmarked"] == rows(lake, "SELECT count(DISTINCT model) FROM bench_results")[0][0] == 1
    assert (got["first_run"], got["last_run"]) == (first.isoformat(), last.isoformat())
    assert calls[0] < rows(lake, "SELECT sum(llm_calls) FROM agent_runs")[0][0]  # payroll's are not counted
    page = client.get("/").text
    assert f"<strong>{runs}</strong> runs" in page and f"<strong>{calls[0]}</strong> llm calls" in page


def test_recent_activity_is_the_latest_visible_runs_without_their_text(client: TestClient, lake: Path) -> None:
    recent = client.get("/api/home").json()["recent_runs"]
    expected = rows(lake, "SELECT trace_id FROM agent_runs WHERE agent <> 'payroll' ORDER BY start_time DESC, trace_id")
    assert [r["trace_id"] for r in recent] == [t for (t,) in expected][:15]
    assert "input" not in recent[0] and "output" not in recent[0]
    page = client.get("/").text
    for r in recent:
        assert f'href="/runs/{r["trace_id"]}"' in page


def test_private_agents_and_hidden_text_appear_nowhere(client: TestClient) -> None:
    for route in ("/", "/api/home"):
        body = client.get(route).text
        assert "payroll" not in body and SECRET not in body
        assert HIDDEN_INPUT not in body and "a hidden answer" not in body
        assert "quiet" in body  # its runs are listed, not quoted


def test_sdk_setup_defaults_to_the_collectors_default_endpoints(client: TestClient) -> None:
    from otelbench.collector import DEFAULT_GRPC_ENDPOINT as COLLECTOR_GRPC
    from otelbench.collector import DEFAULT_HTTP_ENDPOINT as COLLECTOR_HTTP

    assert (DEFAULT_HTTP_ENDPOINT, DEFAULT_GRPC_ENDPOINT) == (COLLECTOR_HTTP, COLLECTOR_GRPC)
    setup = {s["protocol"]: s for s in client.get("/api/home").json()["setup"]}
    assert setup["http/protobuf"]["env"]["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://127.0.0.1:4318"
    assert setup["grpc"]["env"]["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://127.0.0.1:4317"
    page = client.get("/").text
    for line in ("export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318", "export OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
                 "opentelemetry-instrument python",
                 "node --require @opentelemetry/auto-instrumentations-node/register"):
        assert line in page


def test_sdk_setup_follows_the_configured_receivers(lake: Path) -> None:
    only_http = Receivers(http="0.0.0.0:14318", grpc=None, auth=True)
    page = TestClient(create_app(lake, PRIVACY, only_http)).get("/").text
    assert "OTEL_EXPORTER_OTLP_ENDPOINT=http://testserver:14318" in page  # every interface: the host asked for
    assert "4317" not in page and "OTEL_EXPORTER_OTLP_HEADERS=x-bench-key=YOUR_KEY" in page


def test_the_web_command_reads_the_receivers_from_the_config() -> None:
    from otelbench.collector.config import parse_config
    from otelbench.runtime.web import receivers_of

    config = parse_config({
        "receivers": {"otlp": {"protocols": {"http": {"endpoint": "0.0.0.0:5318"}, "grpc": {"endpoint": "10.0.0.2:0"}},
                               "auth": {"keys": [{"key": "k" * 12, "owner": "me"}]}}},
        "service": {"pipelines": {"traces": {"receivers": ["otlp"], "exporters": []}}},
    }, where="test")
    assert receivers_of(config) == Receivers(http="0.0.0.0:5318", grpc="10.0.0.2:0", auth=True)
    assert receivers_of(config, 5318, 41317) == Receivers(http="0.0.0.0:5318", grpc="10.0.0.2:41317", auth=True)
