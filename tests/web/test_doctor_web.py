"""The doctor on the web: ``/doctor`` (and per agent, linked from its profile), its JSON
twin ``/api/doctor`` and the MCP tool ``get_instrumentation_report`` — one answer, under
the privacy rules (a private agent's spans and runs are left out, asking for it is a 404),
with attribute keys escaped and attribute values never shown. On a lake the real collector
wrote from real OTel SDK spans."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from otelbench.testing.agent_runs import Run, send_runs
from otelbench.testing.wait import wait_for
from otelbench.storage.privacy import Privacy
from otelbench.storage import conventions
from tests.web.lakes import collector, fold, runs_in
from tests.web.test_mcp import answer, error
from otelbench.web import mcp_server
from otelbench.web.app import create_app
from otelbench.web.site import Site

SECRET = "TOP-SECRET-PAYROLL-FIGURES"
VALUE = "an-attribute-value-never-shown"
EVIL_KEY = "<img src=x onerror=alert(1)>"
EVIL_SCOPE = "<b>evil-scope</b>"
PRIVACY = Privacy(private_agents=("payroll",))


def _odd_span(url: str) -> None:
    """A chat span of a scope and with an attribute key that are HTML, by the real SDK."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "odd-service"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    with provider.get_tracer(EVIL_SCOPE, "1.0").start_as_current_span("chat gpt-4o") as span:
        span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.system": "openai",
                             "gen_ai.request.model": "gpt-4o", EVIL_KEY: VALUE})
    provider.shutdown()


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with collector(tmp_path_factory.mktemp("doctor")) as (url, root):
        send_runs(url, [Run("calc", f"What is {i} + 1?", f"{i + 1}") for i in range(3)])
        send_runs(url, [Run("payroll", SECRET, SECRET)] * 2, service="payroll-service")
        _odd_span(url)
        wait_for(lambda: runs_in(root) == 6, what="the runs in the lake")
    fold(root)
    conventions.refresh(root)
    return root


@pytest.fixture(scope="module")
def web(lake: Path) -> TestClient:
    return TestClient(create_app(lake, PRIVACY, refresh_s=0))


def test_the_page_and_its_twin_agree_and_leave_the_private_agent_out(web: TestClient) -> None:
    data = web.get("/api/doctor").json()
    assert data["source"] == "rollup"
    services = {s["service"]: s for s in data["services"]}
    assert set(services) == {"demo-agent", "odd-service"}  # payroll-service: only the private agent's
    assert services["demo-agent"]["agents"] == ["calc"] and services["demo-agent"]["runs"] == 3
    page = web.get("/doctor")
    assert page.status_code == 200
    for svc in data["services"]:
        assert f'data-service="{svc["service"]}"' in page.text
        for sc in svc["scopes"]:
            for f in sc["findings"]:
                assert f'data-gap="{f["gap"]}"' in page.text
    for text in (page.text, web.get("/api/doctor").text):
        assert "payroll" not in text and SECRET not in text


def test_keys_are_escaped_and_values_never_shown(web: TestClient) -> None:
    data = web.get("/api/doctor", params={"service": "odd-service"}).json()
    (svc,) = data["services"]
    (sc,) = svc["scopes"]
    assert sc["scope"] == EVIL_SCOPE and {"key": EVIL_KEY, "spans": 1} in sc["unread"]
    assert sc["deprecated"] == [{"key": "gen_ai.system", "current": "gen_ai.provider.name", "spans": 1}]
    page = web.get("/doctor", params={"service": "odd-service"}).text
    assert EVIL_KEY not in page and EVIL_SCOPE not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "&lt;b&gt;evil-scope&lt;/b&gt;" in page
    assert VALUE not in page and VALUE not in web.get("/api/doctor").text


def test_per_agent_from_its_profile(web: TestClient) -> None:
    profile = web.get("/agents/calc").text
    assert 'href="/doctor?agent=calc"' in profile
    one = web.get("/api/doctor", params={"agent": "calc"}).json()
    assert one["agent"] == "calc" and [s["service"] for s in one["services"]] == ["demo-agent"]
    assert web.get("/doctor", params={"agent": "calc"}).status_code == 200
    for path in ("/doctor", "/api/doctor"):
        assert web.get(path, params={"agent": "payroll"}).status_code == 404
        assert web.get(path, params={"since": "soon"}).status_code == 400


def test_the_owner_sees_the_private_agent(lake: Path) -> None:
    data = TestClient(create_app(lake, Privacy(), refresh_s=0)).get("/api/doctor").json()
    assert "payroll-service" in {s["service"] for s in data["services"]}


def test_the_mcp_tool_answers_as_the_json_twin(lake: Path, web: TestClient) -> None:
    server = mcp_server.build(Site(lake, PRIVACY, refresh_s=0))
    got: dict[str, Any] = answer(server, "get_instrumentation_report", {})
    assert got == web.get("/api/doctor").json()
    assert answer(server, "get_instrumentation_report", {"agent": "calc"}) == \
        web.get("/api/doctor", params={"agent": "calc"}).json()
    assert "payroll" in error(server, "get_instrumentation_report", {"agent": "payroll"})
