"""``otelbench bench --goodput-*`` end to end: the CLI against the paced stub, spans exported
by the real OTel SDK to a real collector and read back from the lake by ``bench_goodput``;
the table, the JSON and the result file agree with the lake, step by step."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from otelbench.cli import main
from otelbench.storage.duckdb import open_lake
from otelbench.testing.openai_stub import StubServer

ARGS = ["--goodput-rates", "40,4", "--goodput-concurrency", "1", "--goodput-requests", "4",
        "--goodput-cases", "count_stars,json_book", "--slo", "ttft_p95<=2s,e2e_p95<=5s", "--min-pass", "0.5"]


@pytest.fixture(autouse=True)
def quiet_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "200")
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from otelbench.collector.wiring import Collector
    from otelbench.testing.collector import collector_config

    tmp = tmp_path_factory.mktemp("goodput")
    collector = Collector(collector_config(tmp)).start()
    try:
        with StubServer() as stub, pytest.MonkeyPatch.context() as mp:
            mp.setenv("HOME", str(tmp))
            mp.setenv("COLUMNS", "200")
            out, err = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                code = main(["bench", "--base-url", stub.base_url("by-model", ttft_ms=20, rate=1000), "stars",
                             "--json", "--out", str(tmp / "out"),
                             "--otlp-endpoint", f"http://127.0.0.1:{collector.http_port}", *ARGS])
        collector.wait_flushed()
    finally:
        collector.stop()
    yield {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue(), "lake": tmp / "lake",
           "files": sorted((tmp / "out").glob("*.json"))}


def test_the_sweep_prints_json_a_table_and_saves_it(swept: dict[str, Any]) -> None:
    assert swept["code"] == 0, swept["stderr"]
    result = json.loads(swept["stdout"])
    assert result["kind"] == "goodput" and result["model"] == "stars"
    assert [(s["mode"], s["load"]) for s in result["steps"]] == [("rate", 4), ("rate", 40), ("concurrency", 1)]
    for s in result["steps"]:  # alternate cases: count_stars right, json_book wrong
        assert (s["sent"], s["completed"], s["passed"], s["good"], s["holds"]) == (4, 4, 2, 2, True)
        assert s["goodput_rps"] == 2 / s["wall_s"]
    assert result["highest"] == {"rate": 40, "concurrency": 1}
    assert result["settings"]["slo"] == "ttft_p95<=2000ms,e2e_p95<=5000ms"
    [saved] = swept["files"]
    assert json.loads(saved.read_text())["steps"] == result["steps"]
    table = swept["stderr"]  # --json sends the report to stderr
    assert "goodput — stars" in table and "highest rate holding the SLO: 40 req/s" in table
    assert "highest concurrency holding the SLO: 1 client" in table


def test_bench_goodput_reads_every_step_back(swept: dict[str, Any]) -> None:
    result = json.loads(swept["stdout"])
    with open_lake(swept["lake"]) as gw:
        r = gw.query("SELECT mode, load, sent, completed, passed, good, goodput_rps, pass_share, ttft_p95_ms, "
                     "holds, slo, min_pass, seed, model, trace_id FROM bench_goodput ORDER BY start_time")
        rows = [dict(zip(r.columns, row)) for row in r.rows]
        chats = gw.query("SELECT count(*), count(DISTINCT trace_id) FROM llm_calls WHERE operation = 'chat'").rows
    assert len(rows) == 3 and len({row["trace_id"] for row in rows}) == 1  # one sweep, one trace
    for row, step in zip(rows, result["steps"]):
        assert (row["mode"], row["load"], row["sent"], row["completed"], row["passed"], row["good"], row["holds"]) == (
            step["mode"], step["load"], step["sent"], step["completed"], step["passed"], step["good"], step["holds"])
        assert row["goodput_rps"] == step["goodput_rps"] and row["pass_share"] == 0.5
        assert row["ttft_p95_ms"] == step["latency_ms"]["ttft"]["p95"]
        assert (row["slo"], row["min_pass"], row["seed"], row["model"]) == (
            "ttft_p95<=2000ms,e2e_p95<=5000ms", 0.5, 38, "stars")
    assert chats == [(12, 1)]  # every request a chat span in the sweep's trace


@pytest.mark.parametrize(("args", "says"), [
    (["--slo", "ttft<=1s"], "argument --slo: --slo: cannot read 'ttft<=1s'"),
    (["--goodput-rates", "1,x"], "argument --goodput-rates: want rates"),
    (["--goodput-concurrency", "0"], "argument --goodput-concurrency: want distinct client counts >= 1"),
    (["--min-pass", "1.5"], "argument --min-pass: want a share between 0 and 1"),
])
def test_bad_goodput_options_exit_2_naming_the_option(args: list[str], says: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "m", "--goodput-rates", "1", *args])
    assert exit_.value.code == 2
    assert says in capsys.readouterr().err


def test_an_unknown_case_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with StubServer() as stub:
        code = main(["bench", "--base-url", stub.base_url("by-model"), "stars", "--no-otel", "--out",
                     str(tmp_path), "--goodput-rates", "1", "--goodput-cases", "count_stars,nope"])
    assert code == 2 and "has no test 'nope'" in capsys.readouterr().out
