"""The read-only MCP server: tools an assistant (Claude Code, Codex, any MCP client) uses
to look agents, runs, models and benchmarks up, built with the official ``mcp`` SDK.

Served at ``/mcp`` by the web app (streamable HTTP, ``web.app``) and over stdio by
``otelbench mcp``. Every tool answers from the page functions (web/pages/) over the
web's ``Site``, so an assistant reads the same numbers as the pages and their JSON
twins, under the same ``privacy:`` rules (a private agent is as absent as an unknown one).
Each answer says what its figures are: ``self-reported telemetry`` (what agents sent) or
``benchmark evidence`` (what the bench runner measured). Bad arguments and unknown names
are tool errors with a message saying what was wrong, never a stack trace. docs/mcp.md.
"""

from __future__ import annotations

import functools
import logging
from typing import Annotated, Any, Literal
from urllib.parse import quote

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import Field

from otelbench.storage.values import json_value
from otelbench.web.access import Access, Denied
from otelbench.web.errors import BadRequest, NotFound
from otelbench.web.pages import TELEMETRY, benchmarks, models, replays
from otelbench.web.pages import compare as compare_page
from otelbench.web.pages.agent import profile, recent_failures
from otelbench.web.pages.doctor import doctor
from otelbench.web.pages.leaderboard import SORTS, agent_board
from otelbench.web.pages.run import run
from otelbench.web.pages.search import MAX_PER_PAGE
from otelbench.web.pages.search import search as search_page
from otelbench.web.site import WINDOWS, Site

PATH = "/mcp"  # where the web app serves it
TEXT_CHARS = 500  # of a task, an answer, a message or an attribute value in an answer
MAX_SPANS = 200  # of a run's spans in get_run
RECENT = 10  # runs and failures in get_agent

INSTRUCTIONS = """otelbench measures AI agents and local models. Agents' figures (runs, success rate, \
judge score, cost, latency, failure clusters) are self-reported telemetry: what the agents' \
OpenTelemetry spans said. Models' figures (tokens/s, time to first token, ability and agent \
fitness tests) are benchmark evidence: what otelbench's bench runner measured. So are agent \
suites' results (pass rate with its 95% interval on fixed tasks, per suite version: never \
compare or average two versions), and replays (get_replays: an agent's recorded llm calls sent again to a \
candidate model). Start with search_agents, search_runs (runs by words of their task or answer \
and filters) or list_benchmarks; names are \
exact for get_agent, get_model and compare."""

Sort = Literal["runs", "success", "score", "cost", "latency"]
Window = Literal["24h", "7d", "30d", "all"]
assert set(Sort.__args__) == set(SORTS) and set(Window.__args__) == set(WINDOWS)  # type: ignore[attr-defined]


def build(site: Site, base_url: str | None = None, access: Access | None = None, key: str | None = None) -> Any:
    """An ``MCPServer`` over ``site``. ``base_url``: where the web UI is, for links to its
    pages in the answers (None: the links are paths on the web UI that served the answer).
    ``access``: who may see what (web/access.py): over HTTP a call's ``X-Bench-Key`` /
    ``Authorization: Bearer`` header, over stdio ``key`` (``otelbench mcp --key``), sees
    what that read key's grants add to public data; without one, public data only."""
    access = access or Access(site.privacy)

    def seen(ctx: Context) -> Site:
        headers = dict(ctx.headers or {}) if ctx is not None else {}
        if key and not headers:
            headers = {"x-bench-key": key}
        return site.viewing(access.privacy_of({k.lower(): v for k, v in headers.items()}))

    server = MCPServer("otelbench", instructions=INSTRUCTIONS, log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=False)

    def tool(fn: Any) -> Any:
        return server.tool(annotations=read_only, structured_output=True)(_answering(fn))

    def link(path: str) -> str:
        return f"{(base_url or '').rstrip('/')}{quote(path)}"

    @tool
    def search_agents(query: Annotated[str, Field(description="part of an agent's name, any case; empty: all")] = "",
                      sort: Annotated[Sort, Field(description="what ranks them (rates rank only agents with enough "
                                                              "runs)")] = "runs",
                      window: Annotated[Window, Field(description="the runs counted: the last 24 h, 7 d, 30 d "
                                                                  "or all")] = "7d",
                      limit: Annotated[int, Field(ge=1, le=200, description="at most this many agents")] = 20,
                      ctx: Context = None) -> dict[str, Any]:
        """Find agents by name and rank them by runs, success rate, mean judge score (with
        its 95 % interval over the judged runs: score_low, score_high), cost per run or
        latency (p50), over a time window: the leaderboard. Figures are self-reported telemetry."""
        board = agent_board(seen(ctx), {"sort": sort, "window": window})
        wanted = query.casefold()
        found = [{**a, "ranked": ranked} for ranked, rows in ((True, board["agents"]), (False, board["unranked"]))
                 for a in rows if wanted in a["agent"].casefold()]
        return {"evidence": TELEMETRY, "window": window, "sort": sort,
                "min_runs_ranked": board["min_runs_ranked"], "matched": len(found),
                "agents": [_agent_line(a, link(f"/agents/{a['agent']}")) for a in found[:limit]]}

    @tool
    def get_agent(name: Annotated[str, Field(description="the agent's exact name")],
                  ctx: Context = None) -> dict[str, Any]:
        """One agent: its figures over all its runs (runs, success rate, mean judge score
        with its 95 % interval, cost labelled reported or computed, latency p50/p95), its latest runs and
        failures, and its recurring failure clusters with descriptions and sizes."""
        reader = seen(ctx)
        data = profile(reader, name, base_url or "")
        failures = recent_failures(reader, name, RECENT)
        return {"evidence": TELEMETRY, "agent": _agent_line(data["agent"], link(f"/agents/{name}")),
                "cost": data["cost"], "latency": {k: data["latency"][k] for k in ("p50_ms", "p95_ms")},
                "io_hidden": data["io_hidden"],
                "recent_runs": [_clip(r) for r in data["recent_runs"][:RECENT]],
                "recent_failures": [_clip(r) for r in failures],
                "clusters": [{k: c[k] for k in ("cluster_id", "size", "share", "description", "top_terms",
                                                "first_seen", "last_seen", "example_trace_ids")}
                             for c in data["clusters"]]}

    @tool
    def get_run(trace_id: Annotated[str, Field(description="the run's trace id (32 hex digits)")],
                ctx: Context = None) -> dict[str, Any]:
        """One agent run: its status, task and answer, cost, duration, the judge's score and
        reasoning, its failure cluster, and its spans in start order (LLM calls, tool
        calls) with their messages, each LLM call with the tool calls it asked for (their
        arguments and results), texts shortened."""
        data = run(seen(ctx), trace_id)
        spans = data["spans"]
        return {"evidence": TELEMETRY, "run": _clip(data["run"]), "link": link(f"/runs/{trace_id}"),
                "eval": _clip(data["eval"]) if data["eval"] else None, "cluster": data["cluster"],
                "io_hidden": data["io_hidden"], "spans_shown": min(len(spans), MAX_SPANS), "spans": len(spans),
                "span_list": [{**_clip(s), "tool_calls": [_clip(t) for t in s["tool_calls"]]} for s in spans[:MAX_SPANS]],
                "unasked_tool_calls": [_clip(t) for t in data["unasked_tool_calls"]]}

    @tool
    def search_runs(
            q: Annotated[str, Field(description="words of the run's task or answer, each required (any case); "
                                                "empty: any run")] = "",
            agent: Annotated[str, Field(description="only this agent's runs (exact name); empty: every agent")] = "",
            status: Annotated[Literal["", "ok", "error"], Field(description="only runs that succeeded or failed")] = "",
            model: Annotated[str, Field(description="only runs whose agent asked this model (exact)")] = "",
            cluster: Annotated[int | None, Field(description="only this failure cluster's runs (with agent: "
                                                             "get_agent lists its clusters)")] = None,
            window: Annotated[Window, Field(description="runs started in the last 24 h, 7 d, 30 d or all")] = "all",
            since: Annotated[str, Field(description="runs started at or after this ISO date or time")] = "",
            until: Annotated[str, Field(description="runs started before this ISO date or time")] = "",
            min_score: Annotated[float | None, Field(description="judge score at least")] = None,
            max_score: Annotated[float | None, Field(description="judge score at most")] = None,
            min_cost: Annotated[float | None, Field(description="cost in USD at least")] = None,
            max_cost: Annotated[float | None, Field(description="cost in USD at most")] = None,
            min_ms: Annotated[float | None, Field(description="duration in ms at least")] = None,
            max_ms: Annotated[float | None, Field(description="duration in ms at most")] = None,
            sort: Annotated[Literal["", "relevance", "newest", "oldest", "slowest", "fastest", "costliest", "cheapest",
                                    "best", "worst"],
                            Field(description="relevance (to the words), time, duration, cost or judge score; "
                                              "empty: relevance with words, else newest")] = "",
            page: Annotated[int, Field(ge=1, description="which page of results")] = 1,
            per_page: Annotated[int, Field(ge=1, le=MAX_PER_PAGE, description="runs per page")] = 20,
            ctx: Context = None) -> dict[str, Any]:
        """Find agent runs by words of their task or answer and by filters (agent, status,
        model, failure cluster, time, judge score, cost, latency), sorted and paged: each
        with its status, time, duration, cost, score, task and answer (texts shortened;
        withheld where the agent hides them) and a link to its page. Self-reported telemetry."""
        params = {k: v for k, v in {"q": q, "agent": agent, "status": status, "model": model, "cluster": cluster,
                                    "window": window, "since": since, "until": until, "min_score": min_score,
                                    "max_score": max_score, "min_cost": min_cost, "max_cost": max_cost,
                                    "min_ms": min_ms, "max_ms": max_ms, "sort": sort, "page": page,
                                    "per_page": per_page}.items() if v not in (None, "")}
        found = search_page(seen(ctx), params)
        found.pop("links")
        found["runs"] = [{**_clip(r), "link": link(f"/runs/{r['trace_id']}")} for r in found["runs"]]
        return found

    @tool
    def list_benchmarks(ctx: Context = None) -> dict[str, Any]:
        """The benchmark suites and their versions, with each model's results, and the
        agent suites (``agent_suites``): per suite version, each agent's latest complete
        run — pass rate with its Wilson 95% interval, trials, cost, latency. What the bench
        runner measured on fixed tasks (benchmark evidence, never mixed with telemetry)."""
        return benchmarks.benchmarks(seen(ctx))

    @tool
    def get_replays(replay_id: Annotated[str, Field(description="one replay's id (from the list); empty: the "
                                                                  "list of replays")] = "",
                    agent: Annotated[str, Field(description="with no replay_id, only this agent's replays (exact "
                                                            "name); empty: every agent's")] = "",
                    ctx: Context = None) -> dict[str, Any]:
        """What ``otelbench replay`` found when an agent's recorded llm calls were sent again
        to a candidate model (open loop). Without ``replay_id``: every replay, newest first,
        per agent — runs, share whose behaviour matches the recording, share at least as
        good, share of calls with the same tool calls, TTFT, model time and output tokens
        recorded vs candidate with their ratio. With it: that replay's runs, most divergent
        first, each recorded task and final answer beside the candidate's answer (texts
        cut at 1,000 characters; withheld where the agent hides them). Benchmark evidence
        (``/api/replays``, ``/api/replays/{replay_id}``)."""
        reader = seen(ctx)
        return replays.replay(reader, replay_id) if replay_id else replays.listing(reader, agent)

    @tool
    def get_model(name: Annotated[str, Field(description="the model's exact name as the pages show it (a GGUF "
                                                               "model: its file name)")],
                  ctx: Context = None) -> dict[str, Any]:
        """One benchmarked model: its bench runs across machines — speed (time to first
        token, decode and prefill tokens/s), every ability and agent-fitness test with its
        evidence, confidence and plausibility reasons; and its goodput sweeps (requests/s
        that met a latency SLO and passed their check, per load step)."""
        data = models.model(seen(ctx), name)
        for sweep in data["goodput"]:
            sweep.pop("charts")  # SVG for the page; the steps hold every figure drawn
        return data

    @tool
    def compare(a: Annotated[str, Field(description="the first agent's or model's exact name")],
                b: Annotated[str, Field(description="the second one's")],
                kind: Annotated[Literal["auto", "agents", "models"],
                                Field(description="auto: two agents if both are agents, else two models")] = "auto",
                ctx: Context = None) -> dict[str, Any]:
        """Two agents (or two models) side by side: each figure, and which one is better on
        each line where that can be said."""
        return compare_page.versus(seen(ctx), a, b, {"kind": kind})

    @tool
    def get_instrumentation_report(
            agent: Annotated[str, Field(description="only this agent's spans and runs (exact name); empty: "
                                                    "every agent")] = "",
            service: Annotated[str, Field(description="only this service (service.name); empty: all")] = "",
            since: Annotated[str, Field(description="how far back: 24h, 7d, 2w or all (whole UTC days)")] = "7d",
            ctx: Context = None) -> dict[str, Any]:
        """What each service's instrumentation sends (``otelbench doctor``): per
        instrumentation scope, the conventions its spans speak and the semconv version, the
        share of runs and llm calls with an agent name, input, output, models, tokens, cost
        and messages, deprecated attributes and attribute keys nothing reads (keys and
        counts, never values); each gap with the setting that closes it."""
        return doctor(seen(ctx), {"agent": agent, "service": service, "since": since})

    return server


def _answering(fn: Any) -> Any:
    """``fn`` with its answer made JSON (dates as ISO text) and its failures as tool errors
    with a message: what was not found or what argument was wrong; anything else says the
    lake could not answer, without internals."""
    @functools.wraps(fn)
    def answer(*args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return json_value(fn(*args, **kwargs))
        except (NotFound, BadRequest, Denied) as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - an assistant gets a message, the log the rest
            logging.getLogger(__name__).warning("MCP tool %s failed: %r", fn.__name__, exc)
            raise ToolError(f"{fn.__name__} failed: the lake could not answer ({type(exc).__name__})") from None

    return answer


def _agent_line(a: dict[str, Any], url: str) -> dict[str, Any]:
    keep = ("agent", "runs", "success_rate", "score", "score_low", "score_high", "judged", "cost_per_run", "costed", "p50_ms", "p95_ms",
            "last_run", "ranked")
    return {**{k: a[k] for k in keep if k in a}, "url": url}


def _clip(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with long texts shortened to TEXT_CHARS (an assistant follows the link for more)."""
    def short(v: Any) -> Any:
        if isinstance(v, str) and len(v) > TEXT_CHARS:
            return v[:TEXT_CHARS] + f"… ({len(v):,} characters)"
        return v

    return {k: short(v) for k, v in row.items()}


def http_app(server: Any, hosts: Any = ()) -> Any:
    """``server`` over streamable HTTP at ``PATH``, stateless, JSON answers: an ASGI app for
    the web app's route there (whose lifespan must run ``server.session_manager.run()``).
    Host headers other than loopback ones (DNS-rebinding protection) must be in ``hosts``."""
    loopback = ["127.0.0.1", "localhost", "[::1]"]
    allowed = [h for name in [*loopback, *hosts] for h in (name, f"{name}:*")]
    security = TransportSecuritySettings(allowed_hosts=allowed,
                                         allowed_origins=[f"http://{h}" for h in allowed] +
                                                         [f"https://{h}" for h in allowed])
    return server.streamable_http_app(streamable_http_path=PATH, stateless_http=True, json_response=True,
                                      transport_security=security)
