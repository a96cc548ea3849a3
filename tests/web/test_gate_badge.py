"""The gate badge (``/gate/agent/{name}.svg``, ``/gate/suite/{suite}.svg``) against a lake
written the real way: verdicts of real comparisons (bench_runner/gate.py) recorded by the
gate's own recorder (bench_runner/gate_record.py) through a real collector, read back by
the ``gate_verdicts`` view and the real web app — the latest verdict, its colour, hostile
names escaped, a private agent's verdicts shown to nobody without a grant."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from otelbench.bench_runner import gate, gate_record
from otelbench.storage.duckdb import open_lake
from otelbench.storage.privacy import Privacy
from otelbench.web.app import create_app
from otelbench.web.badge import COLORS

HOSTILE = '<script>alert("gate")</script>'
VERSION = "tiny-v1+0123abcd"


def side(agent: str, key: str, passed: int, scored: int = 20) -> gate.Side:
    return gate.Side(f"suite run {key}", "pass rate", passed=passed, scored=scored, version=VERSION,
                     compared="suite_runs", key=key, suite="tiny", agent=agent)


# in the order recorded: calc first regresses, then improves; the private agent's
# regression is the suite's latest verdict, which only a reader granted it may see
VERDICTS = [("calc", 20, 5, "regression"), ("calc", 10, 20, "pass"), (HOSTILE, 10, 10, "no significant change"),
            ("payroll", 20, 2, "regression")]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from otelbench.collector.wiring import Collector
    from otelbench.testing.collector import collector_config

    tmp = tmp_path_factory.mktemp("gate_badge")
    collector = Collector(collector_config(tmp)).start()
    reports = []
    try:
        for i, (agent, base, cand, _) in enumerate(VERDICTS):
            report = gate.compare(side(agent, f"base{i}", base), side(agent, f"cand{i}", cand),
                                  gate.Tolerances(resamples=200))
            sent = gate_record.record(report, f"http://127.0.0.1:{collector.http_port}")
            assert sent == {"exported": 1, "failures": 0}
            reports.append(report)
        collector.wait_flushed()
    finally:
        collector.stop()
    return {"root": Path(collector.config.exporters.parquet.path), "reports": reports}


@pytest.fixture(scope="module")
def client(lake: dict[str, Any]) -> TestClient:
    return TestClient(create_app(lake["root"], Privacy(private_agents=("payroll",)), refresh_s=0))


def test_each_verdict_is_a_row_of_gate_verdicts(lake: dict[str, Any]) -> None:
    with open_lake(lake["root"]) as gw:
        r = gw.query("SELECT agent, verdict, regression, compared, baseline, candidate, suite, suite_version, "
                     "regressions, differs, metrics FROM gate_verdicts ORDER BY start_time", max_rows=None)
    rows = [dict(zip(r.columns, row)) for row in r.rows]
    assert [(x["agent"], x["verdict"]) for x in rows] == [(a, v) for a, _, _, v in VERDICTS]
    assert [x["verdict"] for x in rows] == [rep.verdict for rep in lake["reports"]]  # as the gate said it
    first = rows[0]
    assert first["regression"] is True and first["regressions"] == ["pass rate"] and first["differs"] == []
    assert (first["compared"], first["baseline"], first["candidate"]) == ("suite_runs", "base0", "cand0")
    assert (first["suite"], first["suite_version"]) == ("tiny", VERSION)
    assert '"pass rate": "regression"' in first["metrics"]
    assert rows[1]["regression"] is False and rows[1]["regressions"] == []


def svg(client: TestClient, path: str, **headers: str) -> Any:
    got = client.get(path, headers=headers)
    assert got.status_code == 200 and got.headers["content-type"].startswith("image/svg+xml"), got.text
    return got


def test_an_agents_badge_shows_its_latest_verdict(client: TestClient) -> None:
    got = svg(client, "/gate/agent/calc.svg")
    assert 'aria-label="gate: pass"' in got.text and COLORS["good"] in got.text  # not its earlier regression
    assert client.get("/gate/agent/calc.svg", headers={"If-None-Match": got.headers["etag"]}).status_code == 304


def test_a_hostile_agent_name_is_escaped_and_no_change_says_so(client: TestClient) -> None:
    got = svg(client, f"/gate/agent/{quote(HOSTILE, safe='')}.svg")
    assert 'aria-label="gate: no significant change"' in got.text and COLORS["info"] in got.text
    assert "<script" not in got.text


def test_a_private_agents_verdicts_are_seen_by_nobody_without_a_grant(client: TestClient) -> None:
    assert 'aria-label="gate: no verdict"' in svg(client, "/gate/agent/payroll.svg").text
    for suite in ("tiny", quote(VERSION, safe="")):  # by name or by version: the latest but payroll's
        got = svg(client, f"/gate/suite/{suite}.svg")
        assert 'aria-label="gate: no significant change"' in got.text and "regression" not in got.text


def test_a_private_agents_verdict_is_its_suites_latest_for_a_reader_who_may_see_it(lake: dict[str, Any]) -> None:
    everyone = TestClient(create_app(lake["root"], Privacy(), refresh_s=0))
    got = svg(everyone, "/gate/suite/tiny.svg")
    assert 'aria-label="gate: regression"' in got.text and COLORS["bad"] in got.text
    assert 'aria-label="gate: regression"' in svg(everyone, "/gate/agent/payroll.svg").text


def test_nothing_gated_has_no_verdict(client: TestClient) -> None:
    got = svg(client, "/gate/suite/nothing-here.svg")
    assert 'aria-label="gate: no verdict"' in got.text and COLORS["none"] in got.text
