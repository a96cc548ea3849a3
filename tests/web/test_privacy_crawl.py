"""Nothing private leaks, on any surface: every route of the app's route table (pages, JSON
twins, badges, embeds, share images, signed links, the live feeds and every MCP tool),
walked for four readers — no key, a read key granting nothing, one granting one private
agent, one granting a private owner — on a lake the real collector wrote from real OTel
SDK spans (judged and clustered by the real processors), with a distinct canary word in
every text field of private data.

Three groups of private data, each a set of canaries: ``a``, a private agent that also
runs as a sub-agent inside a public agent's run (granted to ``AGENT_KEY``); ``b``, a
private agent nobody is granted; ``c``, a private owner's failed runs of a public agent
(clustered with the public ones) and its benchmarked model (granted to ``OWNER_KEY``). A
reader's answers must hold no canary of a group it is not granted, and every canary of a
group it is granted must show somewhere, so the test fails both ways. A route the walker
cannot fill or does not know fails the test: a new route cannot slip by.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.testclient import TestClient

from otelbench.collector.config import ApiKey
from otelbench.collector.keys import Keyring
from otelbench.testing.agent_runs import Run, send_runs
from otelbench.testing.live import LiveViewer
from otelbench.testing.serve import free_port
from otelbench.testing.wait import wait_for
from otelbench.storage.privacy import Privacy
from otelbench.storage.queries.web import PRIVATE_AGENT
from tests.web.lakes import collector, judge_and_cluster, rows, runs_in
from tests.web.test_home import send_bench_run
from otelbench.web.app import create_app

FIELDS = ("name", "task", "answer", "error", "tool", "model", "status")  # of a run (sub-agent: more below)
SUB_AGENT_FIELDS = ("subtask", "subanswer", "attr", "args", "suberror")
ORCHESTRATED = 5  # runs of the public agent whose private sub-agent fails: a cluster of theirs


def canary(group: str, field: str) -> str:
    """One word (lowercase letters: it survives tokenizing into cluster terms)."""
    return f"zzq{group}{field}zz"


A_AGENT, B_AGENT = canary("a", "name"), canary("b", "name")
C_OWNER, C_MODEL = "hush", canary("c", "bench")
PUBLIC_MODEL = "smollm2-360m"
INGEST, INGEST_HUSH = "ingest-team-01", "ingest-hush-01"
NOTHING_KEY, AGENT_KEY, OWNER_KEY = "read-none-0001", "read-agent-001", "read-owner-001"
PRIVACY = Privacy(private_agents=(A_AGENT, B_AGENT), private_owners=(C_OWNER,))
READERS = {"no key": None, "a key granting nothing": NOTHING_KEY, "a key granting one agent": AGENT_KEY,
           "a key granting an owner": OWNER_KEY}
GRANTED = {None: set(), NOTHING_KEY: set(), AGENT_KEY: {"a"}, OWNER_KEY: {"c"}}
FAILURE = "the fetch tool timed out reading the ledger"

# every route the app has, by path: what kind of answer it gives (a route missing here fails)
KINDS = {
    "/": "html", "/leaderboard": "html", "/agents/{name:path}": "html", "/runs/{trace_id}": "html",
    "/embed/{name:path}": "html", "/vs/{pair:path}": "html", "/models/{name:path}": "html",
    "/benchmarks": "html", "/benchmarks/{suite:path}": "html",
    "/api/leaderboard": "json", "/api/agents/{name:path}/insights": "json", "/api/agents/{name:path}": "json",
    "/api/home": "json", "/api/runs/{trace_id}": "json", "/api/vs/{pair:path}": "json",
    "/api/models/{name:path}": "json", "/api/benchmarks": "json", "/api/benchmarks/{suite:path}": "json",
    "/api/links/{name:path}": "json", "/badge/{name:path}.svg": "svg", "/og/{name:path}.png": "image",
    "/gate/agent/{name:path}.svg": "svg", "/gate/suite/{suite:path}.svg": "svg",
    "/doctor": "html", "/api/doctor": "json", "/search": "html", "/api/search": "json",
    "/replays": "html", "/replays/{replay_id}": "html", "/api/replays": "json", "/api/replays/{replay_id}": "json",
    "/live/leaderboard": "live", "/live/agents/{name:path}": "live", "/mcp": "mcp",
    # routes that take no data at all: checked for canaries all the same
    "/healthz": "no data", "/metrics": "no data", "/static/live.js": "no data",
}
QUERIES = {"/": ("", "?window=all"), "/leaderboard": ("", "?window=all", "?tab=models"),
           "/api/leaderboard": ("", "?window=all", "?tab=models"), "/badge/{name:path}.svg": ("", "?metric=runs"),
           **{p: ("", "?since=all", *(f"?since=all&agent={a}" for a in ("calc", A_AGENT, B_AGENT)))
              for p in ("/doctor", "/api/doctor")},
           **{p: ("", *(f"?agent={a}" for a in ("calc", A_AGENT, B_AGENT))) for p in ("/replays", "/api/replays")},
           **{p: ("", "?per_page=100", *(f"?q={canary(g, f)}&per_page=100" for g in "abc" for f in ("task", "answer")),
                  *(f"?agent={a}&per_page=100" for a in ("calc", A_AGENT, B_AGENT)))
              for p in ("/search", "/api/search")}}
TOOLS = {"search_agents", "get_agent", "get_run", "list_benchmarks", "get_model", "compare",
         "get_instrumentation_report", "search_runs", "get_replays"}


def keys() -> list[dict[str, Any]]:
    return [{"key": INGEST, "owner": "team"}, {"key": INGEST_HUSH, "owner": C_OWNER},
            {"key": NOTHING_KEY, "owner": "nobody", "scopes": ["read"]},
            {"key": AGENT_KEY, "owner": "auditor", "scopes": ["read"], "grants": [{"agents": [A_AGENT], "io": True}]},
            {"key": OWNER_KEY, "owner": "hush-lead", "scopes": ["read"], "grants": [{"owners": [C_OWNER], "io": True}]}]


def private_run(group: str, agent: str) -> Run:
    return Run(agent, canary(group, "task"), canary(group, "answer"), error=f"{FAILURE} {canary(group, 'error')}",
               tool=canary(group, "tool"), tool_error=canary(group, "status"), model=canary(group, "model"))


def send_replays(url: str, traces: dict[str, list[str]], public: list[str]) -> list[str]:
    """``otelbench replay``'s results as its exporter sends them (bench_runner/replay_spans.py),
    with the team's key: one replay of public runs and every group's (``a`` and ``b``
    private agents, ``c`` the private owner's runs of a public agent), the candidate's
    answer a canary of the run's group; and one of ``b``'s runs alone. Their replay ids."""
    from otelbench.bench_runner.replay import Report
    from otelbench.bench_runner.replay_compare import RunComparison
    from otelbench.bench_runner.replay_spans import export

    def compared(trace_id: str, group: str | None) -> RunComparison:
        agent = {"a": A_AGENT, "b": B_AGENT}.get(group or "", "calc")
        return RunComparison(trace_id, agent, "cand", 1, 0, "recorded", canary(group, "answer") if group else "fine",
                             None, False, False, True, 1.0, 10.0, 5.0, 20.0, 9.0, 12, 8, 0.001, None)

    mixed = [compared(t, None) for t in public] + [compared(t, g) for g in "abc" for t in traces[g]]
    ids = []
    for runs in (mixed, [compared(traces["b"][0], "b")]):
        done = export(Report("cand", "http://127.0.0.1:9/v1", runs, [], [], []), url, {"X-Bench-Key": INGEST})
        assert done["failures"] == 0
        ids.append(done["replay_id"])
    return ids


def send_with_sub_agent(url: str) -> str:
    """A public agent's run that invokes private agent ``a`` as a sub-agent (an
    ``invoke_agent`` span naming it, its chat and tool calls below), which fails, and so
    does the run: its trace id."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import Status, StatusCode

    def messages(role: str, text: str) -> str:
        return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])

    provider = TracerProvider(resource=Resource.create({"service.name": "orchestra"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces",
                                                                     headers={"X-Bench-Key": INGEST})))
    tracer = provider.get_tracer("privacy-crawl")
    with tracer.start_as_current_span("invoke_agent orchestrator") as root:
        root.set_attributes({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "orchestrator",
                             "gen_ai.input.messages": messages("user", "plan the week"),
                             "gen_ai.output.messages": messages("assistant", "planned")})
        with tracer.start_as_current_span(f"invoke_agent {A_AGENT}") as sub:
            sub.set_attributes({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": A_AGENT,
                                "gen_ai.input.messages": messages("user", canary("a", "subtask")),
                                "gen_ai.output.messages": messages("assistant", canary("a", "subanswer")),
                                "app.note": canary("a", "attr")})
            with tracer.start_as_current_span(f"chat {canary('a', 'model')}") as call:
                call.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                                     "gen_ai.request.model": canary("a", "model"), "gen_ai.usage.input_tokens": 7})
            with tracer.start_as_current_span(f"execute_tool {canary('a', 'tool')}", record_exception=False,
                                              set_status_on_exception=False) as tool:
                tool.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": canary("a", "tool"),
                                     "gen_ai.tool.call.arguments": json.dumps({"q": canary("a", "args")})})
                tool.set_status(Status(StatusCode.ERROR, canary("a", "status")))
            sub.set_status(Status(StatusCode.ERROR, canary("a", "suberror")))
        trace_id = format(root.get_span_context().trace_id, "032x")
    provider.shutdown()
    return trace_id


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The lake, and the collector that wrote it, still running (the live feeds' spans)."""
    tmp = tmp_path_factory.mktemp("privacy_crawl")
    with collector(tmp, auth={"keys": keys()}) as (url, root):
        team = {"X-Bench-Key": INGEST}
        public = [Run("calc", f"What is {i} + 1?", f"{i + 1}") for i in range(2)]
        public += [Run("calc", f"fetch record {i}", None, error=FAILURE) for i in range(6)]
        public_traces = send_runs(url, public, headers=team)
        traces = {"a": send_runs(url, [private_run("a", A_AGENT)] * 2, headers=team),
                  "b": send_runs(url, [private_run("b", B_AGENT)] * 2, headers=team),
                  "c": send_runs(url, [private_run("c", "calc")] * 6, headers={"X-Bench-Key": INGEST_HUSH})}
        orchestrated = [send_with_sub_agent(url) for _ in range(ORCHESTRATED)][0]
        send_bench_run(url, PUBLIC_MODEL, team)
        send_bench_run(url, C_MODEL, {"X-Bench-Key": INGEST_HUSH})
        wait_for(lambda: runs_in(root) == 8 + 10 + ORCHESTRATED, what="every run in the lake")
        wait_for(lambda: rows(root, "SELECT count(*) FROM bench_results")[0][0] == 2, what="the bench runs")
        send_replays(url, traces, public_traces[:2])
        wait_for(lambda: rows(root, "SELECT count(*) FROM replay_runs")[0][0] == 2 + 2 + 2 + 6 + 1,
                 what="the replays")
        judge_and_cluster(root, privacy=PRIVACY)  # the processors run under the config's privacy, as the web does
        yield {"url": url, "root": root, "traces": traces, "orchestrated": orchestrated}


@pytest.fixture(scope="module")
def app(lake: dict[str, Any]) -> Any:
    return create_app(lake["root"], PRIVACY, refresh_s=0, keyring=Keyring([ApiKey(**k) for k in keys()]))


@pytest.fixture(scope="module")
def client(app: Any) -> Iterator[TestClient]:
    with TestClient(app, base_url="http://127.0.0.1") as c:  # its lifespan runs the MCP session manager
        yield c


def canaries(lake: dict[str, Any]) -> dict[str, set[str]]:
    """Every group's canaries: its words and the trace ids of its runs."""
    out = {g: {canary(g, f) for f in FIELDS} | set(lake["traces"][g]) for g in "abc"}
    out["a"] |= {canary("a", f) for f in SUB_AGENT_FIELDS}
    out["c"] = (out["c"] - {canary("c", "name")}) | {C_MODEL}  # its runs are of a public agent
    return out


def routes(app: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    for r in app.routes:
        if isinstance(r, Mount):
            yield from routes(r, prefix + r.path)
        elif isinstance(r, (Route, WebSocketRoute)):
            yield prefix + r.path, r
        else:
            pytest.fail(f"a route the walker does not know: {r!r}")


def fillers(lake: dict[str, Any], client: TestClient) -> dict[str, list[str]]:
    """Values for each path parameter, from the lake's real names, public and private."""
    agents = [r[0] for r in rows(lake["root"], "SELECT DISTINCT agent FROM agent_runs ORDER BY 1")]
    models = [r[0] for r in rows(lake["root"], "SELECT DISTINCT model FROM bench_results ORDER BY 1")]
    traces = [r[0] for r in rows(lake["root"], "SELECT trace_id FROM agent_runs ORDER BY 1")]
    suites = [s["suite_version"] for s in client.get("/api/benchmarks").json().get("suites", [])] or ["core-v1"]
    assert {A_AGENT, B_AGENT, "calc", "orchestrator"} <= set(agents) and C_MODEL in models
    names = [quote(n, safe="") for n in agents + models]
    pairs = [f"{quote(a, safe='')}/{quote(b, safe='')}" for a, b in
             [*(("calc", n) for n in agents), *((PUBLIC_MODEL, m) for m in models)]]
    replays = [r[0] for r in rows(lake["root"], "SELECT DISTINCT replay_id FROM replay_runs ORDER BY 1")]
    assert len(replays) == 2
    return {"name": names, "trace_id": traces, "pair": pairs, "suite": suites, "replay_id": replays}


def urls(path: str, filled: dict[str, list[str]]) -> list[str]:
    params = re.findall(r"\{(\w+)(?::\w+)?\}", path)
    unknown = [p for p in params if p not in filled]
    assert not unknown, f"{path}: the walker cannot fill {unknown}"
    out = []
    for values in itertools.product(*(filled[p] for p in params)):
        url = path
        for p, v in zip(params, values):
            url = re.sub(r"\{" + p + r"(?::\w+)?\}", v, url, count=1)
        out += [url + q for q in QUERIES.get(path, ("",))]
    return out


def forbidden(lake: dict[str, Any], key: str | None) -> set[str]:
    return {c for g, words in canaries(lake).items() if g not in GRANTED[key] for c in words}


def leaks(text: str, asked: str, words: set[str]) -> set[str]:
    """The ``words`` in an answer, but for those it only echoes from what was asked
    (an unknown name's 404 names it)."""
    return {w for w in words if w in text and w not in asked}


def crawl(client: TestClient, app: Any, lake: dict[str, Any], key: str | None) -> dict[str, str]:
    """Every HTTP route's answers to ``key``, by URL; image routes checked here (a private
    agent's image is not drawn for a reader not granted it)."""
    filled, headers = fillers(lake, client), ({"X-Bench-Key": key} if key else {})
    hidden, answers = forbidden(lake, key), {}
    for path, route in routes(app):
        assert path in KINDS, f"{path}: a route the privacy crawl does not know (add it to KINDS)"
        kind = KINDS[path]
        if kind in ("live", "mcp"):
            continue  # below: test_live_feeds..., test_mcp_tools...
        for url in urls(path, filled):
            r = client.get(url, headers=headers)
            assert r.status_code in (200, 400, 401, 404), (url, r.status_code, r.text[:300])
            if kind == "image":
                assert r.status_code != 200 or not any(w in url for w in hidden), (url, "drawn")
                continue
            answers[url] = r.text
    return answers


@pytest.mark.parametrize("reader", list(READERS))
def test_every_route_shows_a_reader_exactly_what_it_may_see(client: TestClient, app: Any, lake: dict[str, Any],
                                                            reader: str) -> None:
    key = READERS[reader]
    answers = crawl(client, app, lake, key)
    hidden = forbidden(lake, key)
    leaked = {url: found for url, text in answers.items() if (found := leaks(text, url, hidden))}
    assert not leaked, f"{reader} sees private data: {leaked}"
    seen = " ".join(answers.values())
    for group in GRANTED[key]:
        missing = {w for w in canaries(lake)[group] if w not in seen}
        assert not missing, f"{reader} is granted {group} but never sees {missing}"


@pytest.mark.parametrize("reader", list(READERS))
def test_a_private_sub_agent_inside_a_public_run_is_redacted(client: TestClient, lake: dict[str, Any],
                                                             reader: str) -> None:
    key = READERS[reader]
    headers = {"X-Bench-Key": key} if key else {}
    run = client.get(f"/api/runs/{lake['orchestrated']}", headers=headers).json()
    sub = [s for s in run["spans"] if s["span_type"] in ("agent", "llm", "tool") and s["agent"] != "orchestrator"]
    assert len(sub) == 3  # the sub-agent's span and its two calls
    if "a" in GRANTED[key]:
        assert {s["agent"] for s in sub} == {A_AGENT} and not any(s["redacted"] for s in sub)
    else:
        assert all(s["redacted"] and s["name"] == s["agent"] == PRIVATE_AGENT for s in sub)
        assert all(s[f] is None for s in sub for f in ("input_messages", "output_messages", "attributes",
                                                       "status_message", "request_model", "tool_name"))
        assert all(s["duration_ms"] is not None for s in sub)  # its times stay: they are the run's


def test_counts_count_only_what_the_reader_sees(client: TestClient, lake: dict[str, Any]) -> None:
    public = client.get("/api/home").json()["instance"]
    assert public["models_benchmarked"] == 1 and public["agents"] == 2 and public["runs"] == 8 + ORCHESTRATED
    assert client.get("/api/home", headers={"X-Bench-Key": OWNER_KEY}).json()["instance"]["models_benchmarked"] == 2
    # calc's failures: the private owner's six are clustered apart from the team's six, and
    # shown (counted, named in terms) only to its key
    seen = {key: client.get("/api/agents/calc/insights", headers=h).json()["clusters"]
            for key, h in ((None, {}), (OWNER_KEY, {"X-Bench-Key": OWNER_KEY}))}
    clustered = rows(lake["root"], "SELECT count(*) FROM cluster_members "
                                   "WHERE agent = 'calc' AND cluster_id >= 0")[0][0]
    members = dict(rows(lake["root"], "SELECT r.owner, count(*) FROM cluster_members AS m JOIN agent_runs AS r "
                                      "USING (trace_id) WHERE m.agent = 'calc' GROUP BY ALL"))
    assert clustered == 12 and [c["size"] for c in seen[None]] == [6] and len(seen[OWNER_KEY]) == 2
    assert seen[None][0]["top_terms"] and seen[None][0]["share"] == 6 / members["team"]  # the team's runs alone
    assert any(canary("c", "tool") in c["top_terms"] for c in seen[OWNER_KEY])


def test_mcp_tools_show_a_reader_exactly_what_it_may_see(client: TestClient, lake: dict[str, Any]) -> None:
    filled = fillers(lake, client)
    names = [n.replace("%2F", "/") for n in filled["name"]]
    args = {"search_agents": [{"window": "all"}], "list_benchmarks": [{}],
            "get_agent": [{"name": n} for n in names], "get_model": [{"name": n} for n in names],
            "get_run": [{"trace_id": t} for t in filled["trace_id"]],
            "compare": [{"a": "calc", "b": n} for n in names] + [{"a": PUBLIC_MODEL, "b": n} for n in names],
            "get_instrumentation_report": [{"since": "all"}] + [{"agent": n, "since": "all"} for n in names],
            "search_runs": [{"per_page": 100}] + [{"q": canary(g, "task"), "per_page": 100} for g in "abc"]
            + [{"agent": n, "per_page": 100} for n in names],
            "get_replays": [{}] + [{"agent": n} for n in names] + [{"replay_id": r} for r in filled["replay_id"]]}

    def post(body: dict[str, Any], key: str | None) -> dict[str, Any]:
        headers = {"accept": "application/json, text/event-stream", **({"X-Bench-Key": key} if key else {})}
        return client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, **body}, headers=headers).json()["result"]

    listed = {t["name"] for t in post({"method": "tools/list"}, None)["tools"]}
    assert listed == TOOLS == set(args), f"an MCP tool the crawl does not fill: {listed ^ set(args)}"
    for reader, key in READERS.items():
        hidden, seen = forbidden(lake, key), []
        for tool, calls in args.items():
            for a in calls:
                text = json.dumps(post({"method": "tools/call", "params": {"name": tool, "arguments": a}}, key))
                assert not (found := leaks(text, json.dumps(a), hidden)), f"{reader}: {tool}({a}) shows {found}"
                seen.append(text)
        for group in GRANTED[key]:
            missing = {w for w in canaries(lake)[group] if w not in " ".join(seen)}
            assert not missing, f"{reader} is granted {group} but MCP never shows {missing}"


@pytest.fixture
def served(app: Any) -> Iterator[str]:
    """The same app on a real port (the live feeds are WebSockets)."""
    import uvicorn

    port = free_port()
    # the TestClient ran the app's lifespan already (the MCP session manager runs once)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, what="the web on its port")
    yield f"ws://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_live_feeds_show_a_reader_exactly_what_it_may_see(served: str, lake: dict[str, Any],
                                                           client: TestClient) -> None:
    from websockets.exceptions import InvalidStatus

    viewers: dict[str | None, list[tuple[LiveViewer, str]]] = {}  # viewer, the run it waits for
    for key in READERS.values():
        headers = {"X-Bench-Key": key} if key else {}
        viewers[key] = [(LiveViewer(f"{served}/live/leaderboard", headers), "marker"),
                        (LiveViewer(f"{served}/live/agents/calc", headers), "marker")]
        if "a" in GRANTED[key]:
            viewers[key].append((LiveViewer(f"{served}/live/agents/{A_AGENT}", headers), "a"))
        else:  # refused before the handshake, as an unknown agent is
            with pytest.raises(InvalidStatus) as refused:
                LiveViewer(f"{served}/live/agents/{A_AGENT}", headers)
            assert refused.value.response.status_code == 404
    with pytest.raises(InvalidStatus) as bad:
        LiveViewer(f"{served}/live/leaderboard", {"X-Bench-Key": "no-such-key-0"})
    assert bad.value.response.status_code == 401 and b"no-such-key-0" not in bad.value.response.body
    wait_for(lambda: "otelbench_web_live_pump_running 1" in client.get("/metrics").text, what="the live pump")
    try:
        before = runs_in(lake["root"])
        sent = {"a": send_runs(lake["url"], [private_run("a", A_AGENT)], headers={"X-Bench-Key": INGEST})[0],
                "c": send_runs(lake["url"], [private_run("c", "calc")], headers={"X-Bench-Key": INGEST_HUSH})[0],
                "marker": send_runs(lake["url"], [Run("calc", "the last one", "done")],
                                    headers={"X-Bench-Key": INGEST})[0]}
        wait_for(lambda: runs_in(lake["root"]) == before + 3, what="the live runs in the lake")
        # what a granted reader must see live: names, models, tools, trace ids (no message carries texts)
        shown = {"a": {A_AGENT, canary("a", "model"), canary("a", "tool"), sent["a"]},
                 "c": {canary("c", "model"), canary("c", "tool"), sent["c"]}}
        hidden_words = {g: canaries(lake)[g] | {sent[g]} for g in "ac"} | {"b": canaries(lake)["b"]}
        for key, watching in viewers.items():
            for viewer, waits_for in watching:
                viewer.wait(lambda v: [m for m in v.of("run", trace_id=sent[waits_for]) if m["status"] != "running"],
                            what=f"the last run live ({key}, {viewer.ws.request.path})")
            text = json.dumps([m for viewer, _ in watching for _, m in viewer.messages])
            hidden = {w for g, words in hidden_words.items() if g not in GRANTED[key] for w in words}
            assert not (found := {w for w in hidden if w in text}), f"{key}: the live feed shows {found}"
            for group in GRANTED[key]:
                missing = {w for w in shown[group] if w not in text}
                assert not missing, f"{key} is granted {group} but the live feed never shows {missing}"
    finally:
        for watching in viewers.values():
            for viewer, _ in watching:
                viewer.close()
