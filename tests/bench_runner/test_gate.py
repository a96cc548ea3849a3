"""``otelbench gate`` end to end: three real suite runs (the real ``otelbench suite run``
command, a scripted agent, a real collector writing a real lake), compared through the
CLI: a run as good as its baseline passes the gate, one that fails half the cases fails
it, and what differs between the runs is named; and an agent's telemetry in two time
windows. ~35 s on this 2-core machine, a third of it starting the CLI."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from otelbench.cli import main
from otelbench.storage.duckdb import open_lake
from otelbench.testing.agent_runs import Run, send_runs
from otelbench.testing.openai_stub import StubServer

ROOT = Path(__file__).resolve().parents[2]
CASES = 10
SUITE = "name: gated\nversion: 1\ndescription: Ten words to repeat\nrepeats: 6\ntime_limit_s: 20\ncases:\n" + "".join(
    f"  - id: c{i}\n    input: Say word{i}.\n    check: {{exact: word{i}}}\n" for i in range(CASES))
# ``agent.py good`` answers every case; ``agent.py bad`` only the first half of them
AGENT = """import os, sys
sys.stdin.read()
i = int(os.environ["OTELBENCH_CASE_ID"][1:])
print(f"word{i}" if sys.argv[1] == "good" or i < 5 else "no idea")
"""


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from otelbench.collector.wiring import Collector
    from otelbench.testing.collector import collector_config

    tmp = tmp_path_factory.mktemp("gate")
    (tmp / "suites" / "gated-v1").mkdir(parents=True)
    (tmp / "suites" / "gated-v1" / "suite.yaml").write_text(SUITE)
    (tmp / "agent.py").write_text(AGENT)
    collector = Collector(collector_config(tmp)).start()
    runs = {}
    stub = StubServer().__enter__()  # the candidate's server: one that answers (the baseline's does not)
    try:
        url = f"http://127.0.0.1:{collector.http_port}"
        for name, mode, server in (("base", "good", "127.0.0.1:9"), ("same", "good", "127.0.0.1:9"),
                                   ("worse", "bad", f"127.0.0.1:{stub.port}")):
            env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": url, "OPENAI_BASE_URL": f"http://{server}/v1"}
            done = subprocess.run(
                [sys.executable, "-m", "otelbench", "suite", "run", "gated", "--root", str(tmp / "suites"),
                 "--agent", f"{sys.executable} {tmp / 'agent.py'} {mode}", "--agent-name", "gated-agent",
                 "--concurrency", "4", "--judge", "none", "--out", str(tmp / "out"), "--json"],
                capture_output=True, text=True, env=env, cwd=ROOT, timeout=240)
            assert done.returncode == 0, done.stderr[-3000:]
            runs[name] = json.loads(done.stdout)["run_id"]
        # an agent's own telemetry: 40 runs of 100 s that all went well, then 40 of 1 s, on
        # another model, a quarter of them errors; every run of the first starts over 50 s
        # before ``split``, every run of the second after it
        send_runs(url, [Run("helper", "a task", "done", seconds=100, cost=0.01)] * 40)
        split = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=50)
        send_runs(url, [Run("helper", "a task", None if i % 4 == 0 else "done", error="boom" if i % 4 == 0 else None,
                            model="gpt-4o", seconds=1, cost=0.01) for i in range(40)])
        runs["split"] = split
        collector.wait_flushed()
    finally:
        stub.__exit__(None, None, None)
        collector.stop()
    return {"root": tmp / "lake", "stub_port": stub.port, **runs}


def gate(lake: dict[str, Any], *args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "otelbench", "gate", "--lake", str(lake["root"]), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "COLUMNS": str(columns)})


# The machine is shared: two runs' latencies can differ by real load, which the gate would
# rightly report; these tests are about the pass rate, so latency gets a wide tolerance.
WIDE = ("--max-slowdown", "3")


def test_the_runs_are_in_the_lake_with_their_manifest(lake: dict[str, Any]) -> None:
    with open_lake(lake["root"]) as gw:
        rows = gw.query("SELECT run_id, trials, passed FROM suite_runs ORDER BY passed").rows
        attrs = gw.query("SELECT json_extract_string(attributes, '$.\"bench.suite.manifest.agent_command_sha256\"') "
                         "FROM spans WHERE name = 'suite gated'").rows
    assert sorted(r[1:] for r in rows) == [(60, 30), (60, 60), (60, 60)]
    assert len({a[0] for a in attrs}) == 2 and all(len(a[0]) == 64 for a in attrs)


def test_a_run_as_good_as_its_baseline_passes_the_gate(lake: dict[str, Any]) -> None:
    done = gate(lake, "--suite-runs", lake["base"], lake["same"], *WIDE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "60/60 = 100.0%" in done.stdout and "no significant change" in done.stdout
    assert "same manifest" in done.stdout
    # "pass" should the shared machine's load make one run's latency significantly different
    assert re.search(r"result: (no significant change|pass), no regression beyond the tolerances \(exit 0\)",
                     done.stdout), done.stdout


def test_a_run_that_fails_half_the_cases_fails_the_gate_and_names_what_differs(lake: dict[str, Any]) -> None:
    done = gate(lake, "--suite-runs", lake["base"], lake["worse"], "--max-drop", "0.05", *WIDE, columns=200)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    line = next(x for x in out.splitlines() if x.startswith("│ pass rate "))  # a row of the table
    assert "60/60 = 100.0%" in line and "30/60 = 50.0%" in line and "-50.0 pts" in line and "REGRESSION" in line
    assert "Fisher p = " in line
    assert "differs: agent command sha256 " in out and "…" in out
    assert f"differs: server.address 127.0.0.1:9 → 127.0.0.1:{lake['stub_port']}" in out
    assert "differs: server.name unknown → openai_compatible" in out  # nobody at :9; the stub states no kind
    assert "differs: server.version" not in out  # neither states a version: "unknown" on both sides
    assert "result: REGRESSION (exit 1)" in out


@pytest.mark.parametrize("width", [80, 200])
def test_the_report_fits_the_terminal_and_cuts_nothing(lake: dict[str, Any], width: int) -> None:
    done = gate(lake, "--suite-runs", lake["base"], lake["worse"], *WIDE, columns=width)
    lines = done.stdout.splitlines()
    assert all(len(line.rstrip()) <= width for line in lines), done.stdout
    for whole in ("30/60 = 50.0%", "-50.0 pts [-62.3, -36.3]", "a drop of at most 5 points", "REGRESSION",
                  "latency median: bootstrap of the median, 2000 resamples, seed 0"):
        assert whole in done.stdout
    tables = sum(line.startswith("┏") for line in lines)
    assert tables == (1 if width == 200 else 3)  # what does not fit goes on to "(more columns)"


def test_json_for_ci_and_a_tolerance_wide_enough_passes(lake: dict[str, Any]) -> None:
    done = gate(lake, "--suite-runs", lake["base"], lake["worse"], "--max-drop", "0.9", "--json", *WIDE)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    rate = next(m for m in report["metrics"] if m["metric"] == "pass rate")
    assert rate["verdict"] == "worse" and rate["difference"]["estimate"] == pytest.approx(-0.5)
    assert rate["difference"]["high"] < 0 and rate["p_value"] < 1e-6
    assert report["regression"] is False
    differs = {d["key"]: (d["baseline"], d["candidate"]) for d in report["differs"]}
    assert set(differs) == {"agent command sha256", "server.address", "server.name"}  # and nothing else
    assert differs["server.name"] == ("unknown", "openai_compatible")
    both = report["baseline"]["manifest"], report["candidate"]["manifest"]
    assert all(m["server.version"] == "unknown" and m["suite version"].startswith("gated-v1") for m in both)
    again = gate(lake, "--suite-runs", lake["base"], lake["worse"], "--max-drop", "0.9", "--json", *WIDE)
    assert json.loads(again.stdout) == report  # the bootstrap's seed and the trials' order fix every interval


def test_an_agents_two_time_windows_compared_from_its_telemetry(lake: dict[str, Any]) -> None:
    split = lake["split"].isoformat()
    done = gate(lake, "--agent", "helper", "--baseline", f"2000-01-01..{split}", "--candidate", f"{split}..2100-01-01",
                columns=200)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    rate = next(x for x in out.splitlines() if x.startswith("│ runs without error "))
    assert "40/40 = 100.0%" in rate and "30/40 = 75.0%" in rate and "REGRESSION" in rate
    latency = next(x for x in out.splitlines() if x.startswith("│ latency median "))
    assert "better" in latency  # 100 s → 1 s
    assert "differs: models smollm2 (openai) → gpt-4o (openai)" in out


@pytest.mark.parametrize("args", [
    ("--suite-runs", "nope", "nada"),        # unknown runs
    ("--suite-runs", "a"),                   # one run
    ("--agent", "x"),                        # windows missing
    ("--agent", "helper", "--baseline", "2001-01-01..2000-01-01", "--candidate", "2000-01-01..2001-01-01"),
    ("--agent", "nobody", "--baseline", "2000-01-01..2001-01-01", "--candidate", "2001-01-01..2002-01-01"),
    ("--agent", "x", "--baseline", "yesterday", "--candidate", "2000-01-01..2001-01-01"),
    ("--suite-runs", "a", "b", "--confidence", "1.5"),
])
def test_usage_errors_exit_2(lake: dict[str, Any], args: tuple[str, ...], capsys: pytest.CaptureFixture[str],
                            monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("GRPC_VERBOSITY", "PYDANTIC_DISABLE_PLUGINS", "OTELBENCH_DEFAULTED"):  # what main() sets
        value = os.environ.get(key)
        monkeypatch.setenv(key, value or "")  # teardown puts back what was there (or nothing)
        if value is None:
            monkeypatch.delenv(key)
    try:
        code = main(["gate", "--lake", str(lake["root"]), *args])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert code == 2
    assert "error" in capsys.readouterr().err


def test_a_bench_result_compared_with_itself_passes_and_shows_its_tests(quick_bench) -> None:  # noqa: ANN001
    # one `otelbench bench --quick` of the embedded model (tests/model_fixture.py, shared)
    proc, _, tmp = quick_bench
    assert proc.returncode == 0, proc.stderr[-2000:]
    with open_lake(tmp / "lake") as gw:
        (trace_id,), = gw.query("SELECT trace_id FROM bench_results").rows
        (passed, total), = gw.query("SELECT tests_passed, tests_total FROM bench_results").rows
    done = gate({"root": tmp / "lake"}, "--bench", trace_id, trace_id, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    rows = {m["metric"]: m for m in report["metrics"]}
    assert rows["tests passed"]["baseline"].startswith(f"{passed}/{total} ")
    assert rows["tests passed"]["verdict"] == "no significant change"
    assert rows["latency median"]["verdict"] == "no significant change"
    assert report["differs"] == [] and report["baseline"]["manifest"]["quantization"] == "Q4_1"
    manifest = report["baseline"]["manifest"]
    with open_lake(tmp / "lake") as gw:
        (server_version, gguf_sha256), = gw.query("SELECT server_version, gguf_sha256 FROM bench_results").rows
    (result,) = [json.loads(p.read_text()) for p in quick_bench[1]]
    assert gguf_sha256 == manifest["gguf sha256"] == result["gguf"]["sha256"]
    assert gguf_sha256 == hashlib.sha256(Path(result["gguf"]["path"]).read_bytes()).hexdigest()
    assert server_version == manifest["server version"] == result["server"]["version"] != "unknown"


def test_two_bench_results_on_different_files_name_the_difference() -> None:
    from otelbench.bench_runner.gate import manifest_differences

    a = {"gguf sha256": "a" * 64, "server version": "b4567-1a2b3c", "model": "m"}
    b = {"gguf sha256": "b" * 64, "server version": "b4600-9f8e7d", "model": "m"}
    assert manifest_differences(a, b) == [("gguf sha256", "a" * 64, "b" * 64),
                                          ("server version", "b4567-1a2b3c", "b4600-9f8e7d")]


def test_the_manifest_hashes_the_command_and_model_file_and_keeps_no_credentials(tmp_path: Path) -> None:
    from otelbench.bench_runner.suite_run import manifest

    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF" + bytes(range(256)) * 100)
    got = manifest("python -m agent", {"OPENAI_BASE_URL": "http://user:secret@10.0.0.7:8080/v1?key=k"}, model)
    assert got["agent_command_sha256"] == hashlib.sha256(b"python -m agent").hexdigest()
    assert got["model_file"] == "tiny.gguf" and got["model_file_sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
    assert got["server.address"] == "10.0.0.7:8080" and "secret" not in json.dumps(got)
    assert got["hardware.ram_bytes"] > 0 and got["otelbench_version"] and got["python_version"]
    assert "server.address" not in manifest("x", {}) and "model_file" not in manifest("x", {})
    assert (got["server.name"], got["server.version"]) == ("unknown", "unknown")  # nobody answers at 10.0.0.7
    assert (manifest("x", {})["server.name"], manifest("x", {})["server.version"]) == ("unknown", "unknown")


def test_the_manifest_names_the_server_and_its_version(llama_server) -> None:  # noqa: ANN001
    # the embedded model's llama-server (tests/model_fixture.py), asked as the agent would reach it
    import httpx

    from otelbench.bench_runner.suite_run import manifest

    got = manifest("x", {"OPENAI_BASE_URL": llama_server.base_url})
    build = httpx.get(llama_server.root_url + "/props").json()["build_info"]
    assert (got["server.name"], got["server.version"]) == ("llama_cpp", build)


def test_a_run_that_never_arrives_is_waited_for_then_named(lake: dict[str, Any]) -> None:
    import time

    from otelbench.bench_runner.gate import GateError, suite_run_sides

    started = time.monotonic()
    with pytest.raises(GateError, match="no suite run 'late'"):
        suite_run_sides(str(lake["root"]), lake["base"], "late", wait_s=1.0)
    assert time.monotonic() - started >= 1.0  # read again until --wait ran out
    started = time.monotonic()
    base, same = suite_run_sides(str(lake["root"]), lake["base"], lake["same"], wait_s=60)
    assert (base.passed, same.passed) == (60, 60) and not base.notes
    assert time.monotonic() - started < 30  # both complete: no waiting for the 60 s


def test_suite_compare_is_the_gate_on_two_suite_runs(lake: dict[str, Any]) -> None:
    def compare(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "otelbench", "suite", "compare", *args, "--lake",
                               str(lake["root"]), *WIDE], capture_output=True, text=True, cwd=ROOT, timeout=120,
                              env={**os.environ, "COLUMNS": "200"})

    worse = compare(lake["base"], lake["worse"], "--json")
    assert worse.returncode == 1, worse.stdout + worse.stderr
    gated = gate(lake, "--suite-runs", lake["base"], lake["worse"], "--json", *WIDE)
    assert json.loads(worse.stdout) == json.loads(gated.stdout)  # one engine: the same report
    same = compare(lake["base"], lake["same"])
    assert same.returncode == 0 and ", no regression beyond the tolerances" in same.stdout, same.stdout + same.stderr
    unknown = compare(lake["base"], "nope", "--wait", "0")
    assert unknown.returncode == 2 and "otelbench suite compare: error: no suite run 'nope'" in unknown.stderr


def test_verdicts_are_recorded_through_the_collector_and_shown_as_badges(lake: dict[str, Any]) -> None:
    from starlette.testclient import TestClient

    from otelbench.collector.wiring import Collector
    from otelbench.testing.collector import collector_config
    from otelbench.web.app import create_app

    collector = Collector(collector_config(lake["root"].parent)).start()  # the same lake, receiving again
    endpoint = f"http://127.0.0.1:{collector.http_port}"
    split = lake["split"].isoformat()
    try:
        worse = subprocess.run([sys.executable, "-m", "otelbench", "suite", "compare", lake["base"], lake["worse"],
                                "--lake", str(lake["root"]), "--otlp-endpoint", endpoint, *WIDE],
                               capture_output=True, text=True, cwd=ROOT, timeout=120)
        window = gate(lake, "--agent", "helper", "--baseline", f"2000-01-01..{split}",
                      "--candidate", f"{split}..2100-01-01", "--otlp-endpoint", endpoint)
        same = gate(lake, "--suite-runs", lake["base"], lake["same"], "--otlp-endpoint", endpoint, *WIDE)
        collector.wait_flushed()
    finally:
        collector.stop()
    assert (worse.returncode, window.returncode, same.returncode) == (1, 1, 0), worse.stderr + same.stderr
    assert f"verdict 'regression' recorded at {endpoint}" in worse.stderr
    verdict = re.search(f"verdict '(.+)' recorded at {endpoint}", same.stderr)
    assert verdict and verdict[1] in ("no significant change", "pass"), same.stderr  # pass: the latencies' load
    with open_lake(lake["root"]) as gw:
        rows = gw.query("SELECT compared, baseline, candidate, suite, agent, verdict, regressions, differs "
                        "FROM gate_verdicts ORDER BY start_time").rows
    assert rows == [
        ("suite_runs", lake["base"], lake["worse"], "gated", "gated-agent", "regression", ["pass rate"],
         ["agent command sha256", "server.address", "server.name"]),
        ("agent", f"2000-01-01T00:00:00+00:00..{split}", f"{split}..2100-01-01T00:00:00+00:00", None, "helper",
         "regression", ["runs without error"], ["models"]),
        ("suite_runs", lake["base"], lake["same"], "gated", "gated-agent", verdict[1], [], []),
    ]
    client = TestClient(create_app(lake["root"], refresh_s=0))
    assert f'aria-label="gate: {verdict[1]}"' in client.get("/gate/agent/gated-agent.svg").text  # the latest
    assert 'aria-label="gate: regression"' in client.get("/gate/agent/helper.svg").text
    assert f'aria-label="gate: {verdict[1]}"' in client.get("/gate/suite/gated.svg").text
