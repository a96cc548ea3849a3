"""Models and benchmarks in the web UI, on a lake the real collector wrote from the real
bench runner's spans (``run_model`` against the scripted OpenAI-compatible stub, exported
by the OTel SDK): every route and its twin, figures against plain SQL on the views and
against the runner's own result, 404/400, privacy, and hostile replies shown inert."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from markupsafe import escape
from starlette.testclient import TestClient

from otelbench.bench_runner import runner, servers
from otelbench.bench_runner.hardware import probe_hardware
from otelbench.bench_runner.spans import REPLY_CHARS, BenchSpans
from otelbench.testing.openai_stub import MARKUP_REPLY, StubServer
from otelbench.storage.privacy import Privacy
from otelbench.storage.duckdb import open_lake
from otelbench.storage.labels import model_label
from otelbench.web import text
from otelbench.web.app import create_app
from otelbench.web.errors import BadRequest
from otelbench.web.pages import compare, models

HOSTILE = "org/modèle-β"  # a slash, unicode; its server answers with MARKUP_REPLY + 5,000 x
BROKEN = "broken"  # every request answered HTTP 500
SECRET = "secret-model-x"  # sent with a private owner's key
OTHER_CPU = "Other CPU 9000"  # the second machine, as the runner describes it
PUBLIC_KEY, PRIVATE_KEY = "public-key-123", "private-key-123"


def _gguf(path: Path) -> Path:
    """A real GGUF header (written by the gguf package) that says Q8_0, llama."""
    import gguf
    import numpy as np

    path.parent.mkdir(parents=True)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_file_type(7)  # LlamaFileType.MOSTLY_Q8_0
    writer.add_tensor("output.weight", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Five model runs: the GGUF model (its id is the file's path, as llama-cpp-python
    names it) fully on this machine and --quick on a second; the hostile, the broken and
    the private model --quick."""
    from otelbench.collector.wiring import Collector
    from otelbench.testing.collector import collector_config

    tmp = tmp_path_factory.mktemp("web_models")
    gguf_model = str(_gguf(tmp / "models" / "org" / "smollm2-135m-instruct-q8_0.gguf"))
    keys = [{"key": PUBLIC_KEY, "owner": "alice"}, {"key": PRIVATE_KEY, "owner": "hush"}]
    collector = Collector(collector_config(tmp, auth={"keys": keys})).start()
    url = f"http://127.0.0.1:{collector.http_port}"
    try:
        with StubServer() as stub, pytest.MonkeyPatch.context() as mp:
            mp.setenv("HOME", str(tmp))  # no GGUF lookup in the developer's model folders
            here = probe_hardware(measure_bandwidth=False)
            there = dataclasses.replace(here, cpu=dataclasses.replace(here.cpu, model=OTHER_CPU))

            def server(script: str, **params: float) -> servers.ServerInfo:
                # it lists only "stub-model": say it lists none, so any name is benchmarked
                return dataclasses.replace(servers.probe(stub.base_url(script, **params)), models=())

            public, private = BenchSpans(url, {"X-Bench-Key": PUBLIC_KEY}), BenchSpans(url, {"X-Bench-Key": PRIVATE_KEY})
            quick = runner.Options(quick=True)
            runs = {"full": runner.run_model(gguf_model, server("normal"), here, public, runner.Options(runs=2)),
                    "elsewhere": runner.run_model(gguf_model, server("normal"), there, public, quick),
                    HOSTILE: runner.run_model(HOSTILE, server("markup", pad=5000), here, public, quick),
                    BROKEN: runner.run_model(BROKEN, server("http500"), here, public, quick),
                    SECRET: runner.run_model(SECRET, server("normal"), here, private, quick)}
            exported = [public.shutdown(), private.shutdown()]  # flushed: every span acknowledged
        collector.wait_flushed()
    finally:
        collector.stop()
    assert all(e["failures"] == 0 for e in exported)
    # the web names the GGUF model by its file name (model_label), never by its path
    return {"lake": tmp / "lake", "gguf": gguf_model, "label": model_label(gguf_model), "runs": runs,
            "cpu": here.cpu.model}


@pytest.fixture(scope="module")
def client(bench: dict[str, Any]) -> TestClient:
    return TestClient(create_app(bench["lake"], Privacy(private_owners=("hush",))))


def _model_id(bench: dict[str, Any], shown: str) -> str:
    """The id a model shown on a page has in the lake (the GGUF model's is its path)."""
    return bench["gguf"] if shown == bench["label"] else shown


def sql(bench: dict[str, Any], statement: str, params: Any = None) -> list[dict[str, Any]]:
    with open_lake(bench["lake"]) as gw:
        r = gw.query(statement, params, max_rows=None)
        return [dict(zip(r.columns, row)) for row in r.rows]


def enc(name: str) -> str:
    return quote(name, safe="")


FIGURES = ("decode_tps_median", "ttft_ms_median", "prefill_tps_median", "ability_score", "agent_fitness_score",
           "confidence", "quantization", "tests_passed", "tests_total")


def test_the_models_tab_is_each_models_standing_run_per_machine(client: TestClient, bench: dict[str, Any]) -> None:
    board = client.get("/api/leaderboard?tab=models").json()
    assert board["tab"] == "models" and board["evidence"] == "benchmark evidence"
    rows = board["models"] + board["unranked"]
    assert sorted((r["model"], r["machine"]) for r in rows) == sorted(
        [(bench["label"], bench["cpu"]), (bench["label"], OTHER_CPU), (HOSTILE, bench["cpu"]), (BROKEN, bench["cpu"])])
    for r in rows:  # the latest full run on that machine, else the latest --quick one: plain SQL
        (expected,) = sql(bench, f"SELECT trace_id, {', '.join(FIGURES)} FROM bench_results "
                                 "WHERE model = $m AND hardware_cpu = $cpu ORDER BY quick, start_time DESC LIMIT 1",
                          {"m": _model_id(bench, r["model"]), "cpu": r["machine"]})
        assert {k: r[k] for k in expected} == expected, r["model"]
    gguf_here = next(r for r in rows if r["model"] == bench["label"] and r["machine"] == bench["cpu"])
    assert (gguf_here["quantization"], gguf_here["architecture"], gguf_here["quick"]) == ("Q8_0", "llama", False)
    assert [r["model"] for r in board["unranked"]] == [BROKEN]  # no decode figure: listed, not ranked
    decode = [r["decode_tps_median"] for r in board["models"]]
    assert decode == sorted(decode, reverse=True) and len(decode) == 3
    ttft = [r["ttft_ms_median"] for r in client.get("/api/leaderboard?tab=models&sort=ttft").json()["models"]]
    assert ttft == sorted(ttft)  # lower is better


def test_the_two_tabs_are_labelled_and_kept_apart(client: TestClient, bench: dict[str, Any]) -> None:
    agents = client.get("/api/leaderboard?window=all").json()
    assert agents["tab"] == "agents" and agents["evidence"] == "self-reported telemetry"
    assert bench["gguf"] not in str(agents)  # no model's figure among the agents'
    page = client.get("/leaderboard?tab=models")
    assert page.status_code == 200 and "<strong>Benchmark evidence</strong>" in page.text
    assert "<strong>models</strong> <span class=\"muted\">(benchmark evidence)</span>" in page.text
    assert f'href="/models/{enc(HOSTILE)}"' in page.text and "Q8_0" in page.text
    assert "(self-reported telemetry)" in client.get("/leaderboard").text
    assert '<a href="/benchmarks">benchmarks</a>' in page.text  # the nav


def test_bad_parameters_are_named(client: TestClient) -> None:
    bad = client.get("/api/leaderboard?tab=models&sort=runs")
    assert bad.status_code == 400
    assert bad.json() == {"error": "sort must be one of decode, ttft, prefill, ability, fitness, confidence, "
                                   "got 'runs'"}
    assert "tab must be one of agents, models" in client.get("/api/leaderboard?tab=vibes").json()["error"]
    page = client.get("/leaderboard?tab=models&sort=vibes")
    assert page.status_code == 400 and "sort must be one of" in page.text
    assert "kind must be one of auto, agents, models" in client.get(f"/api/vs/{BROKEN}/{BROKEN}?kind=x").json()["error"]
    three = client.get("/api/vs/a/b/c")
    assert three.status_code == 400 and "%2F" in three.json()["error"]


def test_a_model_page_holds_every_run_with_its_evidence(client: TestClient, bench: dict[str, Any]) -> None:
    data = client.get(f"/api/models/{enc(bench['gguf'])}").json()
    assert data["evidence"] == "benchmark evidence" and data["quantizations"] == ["Q8_0"]
    assert data["machines"] == sorted([bench["cpu"], OTHER_CPU])
    runs = sql(bench, "SELECT trace_id, hardware_cpu FROM bench_results WHERE model = $m ORDER BY start_time DESC",
               {"m": bench["gguf"]})
    assert [(r["trace_id"], r["machine"]) for r in data["runs"]] == [(r["trace_id"], r["hardware_cpu"]) for r in runs]
    full = next(r for r in data["runs"] if not r["quick"])
    result = bench["runs"]["full"].result
    # the speed cases, medians in SQL over the chat spans, agree with the runner's own summary
    cases = {c["case"]: c for c in full["speed_cases"]}
    assert list(cases) == ["short-50", "medium-200", "long-800", "prefill-2k"]
    for name, case in cases.items():
        summary = result["summary"]["cases"][name]
        assert (case["requests"], case["failed"]) == (summary["runs"], 0)  # the warm-up left out
        for metric in ("ttft_ms", "decode_tps", "prefill_tps", "e2e_ms"):
            assert case[f"{metric}_median"] == pytest.approx(summary[metric]["median"]), (name, metric)
    assert cases["medium-200"]["decode_tps_median"] == pytest.approx(full["decode_tps_median"])
    # every test: the runner's verdict and reason, and the reply it judged
    assert [(t["test"], t["category"], t["verdict"], t["reason"], t["answer"]) for t in full["tests"]] == [
        (t["name"], t["category"], t["verdict"], t["reason"], t["response"]) for t in result["tests"]]
    assert {t["category"] for t in full["tests"]} == {"ability", "agent"} and full["agent_fitness_score"] is not None
    assert full["confidence_reasons"] == [r["message"] for r in result["plausibility"]["reasons"]]
    page = client.get(f"/models/{enc(bench['gguf'])}").text
    for shown in ("Benchmark evidence", "Q8_0 · llama", OTHER_CPU, "prefill-2k", "syslog_grounded", "Hello world!",
                  str(escape(result["plausibility"]["reasons"][0]["message"])),
                  f'id="run-{full["trace_id"]}"'):
        assert shown in page, shown


def test_a_failed_run_shows_why(client: TestClient, bench: dict[str, Any]) -> None:
    (run,) = client.get(f"/api/models/{BROKEN}").json()["runs"]
    assert run["status"] == "error" and run["failures"] == len(bench["runs"][BROKEN].problems)
    assert run["error_message"].startswith("7 failures; first: short-50: http-status: HTTP 500")
    assert all(t["answer"] is None and "HTTP 500" in t["reply_error"] for t in run["tests"])
    assert all(c["failed"] == c["requests"] == 1 and c["decode_tps_median"] is None for c in run["speed_cases"])
    page = client.get(f"/models/{BROKEN}").text
    assert "no reply:" in page and "model crashed: out of memory" in page


@pytest.mark.parametrize("path", ["{}", "{enc}"])
def test_names_with_slashes_dots_and_unicode(client: TestClient, bench: dict[str, Any], path: str) -> None:
    for name in (bench["gguf"], bench["label"], HOSTILE):  # a GGUF model by its path too
        raw = quote(name, safe="/") if path == "{}" else enc(name)  # '/' as is, or as %2F
        for route in (f"/api/models/{raw}", f"/models/{raw}"):
            r = client.get(route)
            assert r.status_code == 200, route
        assert client.get(f"/api/models/{raw}").json()["model"] == model_label(name)


def test_unknown_names_are_404s_that_say_what(client: TestClient) -> None:
    assert client.get("/api/models/no%2Fsuch.gguf").json() == {"error": "no model named 'no/such.gguf'"}
    page = client.get("/models/no-such-model")
    assert page.status_code == 404 and "no model named &#39;no-such-model&#39;" in page.text
    assert client.get("/api/benchmarks/core-v9").json() == {"error": "no benchmark suite named 'core-v9'"}
    assert client.get("/benchmarks/core-v9").status_code == 404
    both = client.get("/api/vs/nobody-a/nobody-b")
    assert both.status_code == 404
    assert both.json()["error"] == "no two agents and no two models named 'nobody-a' and 'nobody-b'"
    assert client.get(f"/api/vs/{BROKEN}/{BROKEN}?kind=agents").json() == {"error": f"no agent named {BROKEN!r}"}


def test_benchmarks_list_each_suite_version_with_results_per_model(client: TestClient, bench: dict[str, Any]) -> None:
    data = client.get("/api/benchmarks").json()
    suites = {s["suite"]: s for s in data["suites"]}
    assert data["evidence"] == "benchmark evidence" and list(suites) == ["core-v1", "speed-v1"]
    core, speed = suites["core-v1"], suites["speed-v1"]
    assert (core["kind"], core["name"], speed["kind"]) == ("ability", "core", "speed")
    # per model, its latest full run of the suite (the later --quick one does not replace it)
    by_model = {m["model"]: m for m in core["models"]}
    assert set(by_model) == {bench["label"], HOSTILE, BROKEN}
    assert by_model[bench["label"]]["tests_total"] == len(bench["runs"]["full"].result["tests"]) == 8
    counts = sql(bench, "SELECT model, count(*) AS n FROM bench_results WHERE owner <> 'hush' GROUP BY model")
    assert {m: r["model_runs"] for m, r in by_model.items()} == {model_label(c["model"]): c["n"] for c in counts}
    assert core["runs"] == sum(c["n"] for c in counts) == 4
    assert sorted((m["model"], m["machine"]) for m in speed["models"]) == sorted(
        [(bench["label"], bench["cpu"]), (bench["label"], OTHER_CPU), (HOSTILE, bench["cpu"]), (BROKEN, bench["cpu"])])
    page = client.get("/benchmarks").text
    assert 'href="/benchmarks/core-v1"' in page and 'href="/benchmarks/speed-v1"' in page
    assert f'href="/models/{enc(bench["label"])}#run-{by_model[bench["label"]]["trace_id"]}"' in page


def test_a_suite_page_sets_each_tests_verdicts_side_by_side(client: TestClient, bench: dict[str, Any]) -> None:
    data = client.get("/api/benchmarks/core-v1").json()
    standing = {m["model"]: m["trace_id"] for m in data["models"]}
    verdicts = sql(bench, "SELECT trace_id, test, verdict FROM bench_tests WHERE list_contains($t, trace_id)",
                   {"t": list(standing.values())})
    model_of = {t: m for m, t in standing.items()}
    assert {(t["test"], m, v) for t in data["tests"] for m, v in t["verdicts"].items()} == {
        (v["test"], model_of[v["trace_id"]], v["verdict"]) for v in verdicts}
    assert len(data["tests"]) == 8  # the full run's tests; the --quick ones are a subset
    page = client.get("/benchmarks/core-v1")
    assert page.status_code == 200 and "code_median" in page.text and "Verdicts" in page.text
    speed = client.get("/benchmarks/speed-v1")
    assert speed.status_code == 200 and "decode tok/s" in speed.text and "Verdicts" not in speed.text


def test_two_models_side_by_side(client: TestClient, bench: dict[str, Any]) -> None:
    data = client.get(f"/api/vs/{enc(bench['gguf'])}/{enc(HOSTILE)}").json()
    assert data["kind"] == "models" and data["evidence"] == "benchmark evidence"
    # both ran on this machine: the GGUF model's full run there, not its later run elsewhere
    assert (data["a"]["machine"], data["b"]["machine"]) == (bench["cpu"], bench["cpu"])
    (full,) = sql(bench, "SELECT trace_id FROM bench_results WHERE model = $m AND NOT quick", {"m": bench["gguf"]})
    assert data["a"]["trace_id"] == full["trace_id"]
    lines = {line["figure"]: line for line in data["lines"]}
    decode = lines["decode_tps_median"]
    assert decode["winner"] == ("a" if decode["a"] > decode["b"] else "b")
    ttft = lines["ttft_ms_median"]
    assert ttft["winner"] == ("a" if ttft["a"] < ttft["b"] else "b")  # lower is better
    # a full run against a --quick one: different tests, so no winner on the scores
    assert lines["ability_score"]["winner"] is None and any("test sets" in n for n in data["notes"])
    assert {t["test"] for t in data["tests"]} == {t["name"] for t in bench["runs"]["full"].result["tests"]}
    page = client.get(f"/vs/{enc(bench['gguf'])}/{enc(HOSTILE)}")
    assert page.status_code == 200 and "decode tok/s" in page.text and f'href="/models/{enc(HOSTILE)}"' in page.text
    # a model without figures wins nothing
    assert all(line["winner"] is None for line in client.get(f"/api/vs/{BROKEN}/{enc(HOSTILE)}").json()["lines"]
               if line["figure"] != "tests_passed")


def test_the_bench_runners_own_traces_are_evidence_not_an_agents_runs(client: TestClient) -> None:
    # its traces name the agent "otelbench-bench" (bench_runner/spans.py); agent_runs leaves
    # them out (benchmark evidence is never counted as telemetry), so it is no agent here
    board = client.get("/api/leaderboard?window=all").json()
    assert "otelbench-bench" not in {a["agent"] for a in board["agents"] + board["unranked"]}
    assert client.get("/api/agents/otelbench-bench").status_code == 404
    assert client.get("/api/vs/otelbench-bench/otelbench-bench").status_code == 404


def test_a_private_owners_model_appears_nowhere(client: TestClient, bench: dict[str, Any]) -> None:
    assert sql(bench, "SELECT owner FROM bench_results WHERE model = $m", {"m": SECRET}) == [{"owner": "hush"}]
    routes = ["/leaderboard?tab=models", "/api/leaderboard?tab=models", "/benchmarks", "/api/benchmarks",
              "/benchmarks/core-v1", "/api/benchmarks/core-v1", "/benchmarks/speed-v1", "/api/benchmarks/speed-v1",
              f"/models/{BROKEN}", f"/api/vs/{BROKEN}/{enc(HOSTILE)}"]
    for route in routes:
        assert SECRET not in client.get(route).text, route
    for route in ("/models/{}", "/api/models/{}", f"/api/vs/{{}}/{BROKEN}", f"/vs/{{}}/{BROKEN}"):
        private, unknown = client.get(route.format(SECRET)), client.get(route.format("nobody-model"))
        assert private.status_code == unknown.status_code == 404, route
        assert private.text.replace(SECRET, "nobody-model") == unknown.text, route
    assert client.get("/api/benchmarks").json()["suites"][0]["runs"] == 4  # its run not counted


def test_hostile_replies_are_inert_and_cut(client: TestClient, bench: dict[str, Any]) -> None:
    data = client.get(f"/api/models/{enc(HOSTILE)}").json()
    (run,) = data["runs"]
    answers = {t["answer"] for t in run["tests"]}
    kept = (MARKUP_REPLY + "x" * 5000)[:REPLY_CHARS]  # what the runner keeps of the reply
    assert answers == {kept[:models.TEXT_CHARS]}
    assert all(t["answer_chars"] == REPLY_CHARS and t["answer_truncated"] for t in run["tests"])
    for route in (f"/models/{enc(HOSTILE)}", f"/vs/{enc(bench['gguf'])}/{enc(HOSTILE)}", "/benchmarks/core-v1",
                  "/leaderboard?tab=models"):
        body = client.get(route).text
        assert "<script>alert(1)" not in body and "<img src=x" not in body and 'href="javascript:' not in body, route
        assert "\u202e" not in body, route  # shown as its code point, never applied
    page = client.get(f"/models/{enc(HOSTILE)}").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&#34;&gt;&lt;img src=x onerror=alert(2)&gt;" in page
    assert "[U+202E]gnp.exe" in page
    assert f"… {REPLY_CHARS - models.TEXT_CHARS} more characters not shown" in page
    assert "x" * (models.TEXT_CHARS + 1) not in page


@pytest.mark.parametrize(("raw", "names"), [
    (b"/vs/a/b", ("a", "b")),
    (b"/api/vs/org%2Fm.gguf/b", ("org/m.gguf", "b")),
    (b"/vs/mod%C3%A8le-%CE%B2/%2Fabs%2Fpath.gguf", ("modèle-β", "/abs/path.gguf")),
    (b"/vs/a%2F/b%20c", ("a/", "b c")),
])
def test_vs_names_come_from_the_raw_path(raw: bytes, names: tuple[str, str]) -> None:
    assert compare.vs_names(raw) == names


@pytest.mark.parametrize("raw", [b"/vs/a/b/c", b"/vs/a/", b"/vs//b", b"/api/vs/onlyone"])
def test_vs_needs_exactly_two_names(raw: bytes) -> None:
    with pytest.raises(BadRequest, match="two names"):
        compare.vs_names(raw)


def test_bidirectional_controls_are_shown_not_applied() -> None:
    assert text.visible("a\u202egnp.exe\u2066b\u200f") == "a[U+202E]gnp.exe[U+2066]b[U+200F]"
    assert text.visible("plain <b>") == "plain <b>"  # escaping is the template's (autoescape)


@pytest.mark.slow
@pytest.mark.model
def test_the_real_embedded_model_on_its_page(llama_server, quick_bench) -> None:
    """SmolLM2 behind the real llama.cpp server, benchmarked by the real CLI
    (tests/model_fixture.py): its GGUF header's facts and its own answers on its page (its
    id is the file's path: slashes and dots)."""
    import json

    proc, files, tmp = quick_bench
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(files[0].read_text())
    client = TestClient(create_app(tmp / "lake"))
    data = client.get(f"/api/models/{enc(llama_server.model_id)}").json()
    (shown,) = data["runs"]
    assert (shown["quantization"], shown["architecture"], shown["status"]) == ("Q4_1", "llama", "ok")
    assert [t["answer"] for t in shown["tests"]] == [
        t["response"][:REPLY_CHARS][:models.TEXT_CHARS] for t in result["tests"]]
    assert all(t["answer"].strip() for t in shown["tests"])
    assert shown["decode_tps_median"] == pytest.approx(result["summary"]["cases"]["medium-200"]["decode_tps"]["median"])
    page = client.get(f"/models/{enc(llama_server.model_id)}").text
    assert "Q4_1 · llama" in page and str(escape(shown["tests"][0]["answer"][:40])) in page


def test_a_gguf_model_reads_as_its_file_name_everywhere(bench: dict[str, Any]) -> None:
    """Its id in the lake is the GGUF's path (as llama-cpp-python names it): every page,
    JSON twin, link and MCP answer names it by its file name, and none holds the folder."""
    folder, label = str(Path(bench["gguf"]).parent), bench["label"]
    assert bench["gguf"].startswith("/") and label == "smollm2-135m-instruct-q8_0.gguf"
    hidden = (folder, quote(folder, safe=""), quote(folder), folder.replace("/", "%2F"))
    pages = ["/leaderboard?tab=models", "/api/leaderboard?tab=models", "/benchmarks", "/api/benchmarks",
             "/benchmarks/core-v1", "/api/benchmarks/core-v1", "/benchmarks/speed-v1", "/api/benchmarks/speed-v1",
             f"/models/{enc(label)}", f"/api/models/{enc(label)}", f"/vs/{enc(label)}/{enc(HOSTILE)}",
             f"/api/vs/{enc(label)}/{enc(HOSTILE)}", f"/models/{enc(bench['gguf'])}"]
    with TestClient(create_app(bench["lake"], Privacy(private_owners=("hush",))), base_url="http://127.0.0.1") as c:
        for route in pages:
            r = c.get(route)
            assert r.status_code == 200 and label in r.text, route
            assert not any(h in r.text for h in hidden), route
        assert f'href="/models/{enc(label)}"' in c.get("/leaderboard?tab=models").text
        for tool, args in (("get_model", {"name": label}), ("list_benchmarks", {}),
                           ("compare", {"a": label, "b": HOSTILE, "kind": "models"})):
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}
            result = c.post("/mcp", json=body, headers={"accept": "application/json, text/event-stream"}).json()
            text = json.dumps(result["result"])
            assert not result["result"]["isError"] and label in text, tool
            assert not any(h in text for h in hidden), tool
