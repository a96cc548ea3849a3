"""The read-only web UI: one route table, jinja2 pages (autoescape on) and a JSON twin for
every page (``/api/...``), all answering from ``storage/queries/web.py`` through the lake's
read gateway. Only GET and HEAD; nothing a visitor sends changes data.

Built so far (docs/web.md): ``/``, ``/leaderboard``, ``/agents/{name}``, ``/runs/{trace_id}``,
``/vs/{a}/{b}``, their JSON twins, ``/embed/{agent}``,
``/api/agents/{name}/insights``, ``/badge/{agent}.svg``, ``/healthz``. Private agents
(``privacy:``) are 404 everywhere, like unknown ones; ``hide_io`` agents show figures
but no input or output.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import threading
import time
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from processors.config import Privacy
from storage.values import json_value
from web.badge import badge

TEMPLATES = Path(__file__).parent / "templates"
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                               "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
BADGE_METRICS = ("success", "runs", "score", "cost", "latency")
WINDOWS = {"24h": 24, "7d": 24 * 7, "30d": 24 * 30, "all": None}
SORTS = {"runs": "runs", "success": "success_rate", "score": "score", "cost": "cost_per_run", "latency": "p50_ms"}
MIN_RUNS_RANKED = 5  # agents with fewer runs are listed, not ranked by a rate
EMBED_SIZES = ("sm", "md", "lg")
# the lines of /vs/{a}/{b}: (figure, label, which way is better)
COMPARE_LINES = (("runs", "runs", "higher"), ("success_rate", "success rate", "higher"),
                 ("score", "mean judge score", "higher"), ("cost_per_run", "cost per run (USD)", "lower"),
                 ("p50_ms", "latency p50 (ms)", "lower"), ("p95_ms", "latency p95 (ms)", "lower"))


class BadRequest(ValueError):
    """A query parameter that cannot be used; the message names it."""


class NotFound(LookupError):
    """No such agent (or a private one): the message says what was not found."""


def create_app(lake_root: str | Path, privacy: Privacy | None = None) -> Starlette:
    from storage.duckdb import open_lake

    privacy = privacy or Privacy()
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(default=True))
    opened: list[Any] = []  # the lake's gateway, opened by the first request (thread-safe)
    opening = threading.Lock()

    def gateway() -> Any:
        with opening:
            if not opened:
                opened.append(open_lake(lake_root))
        return opened[0]

    def params(**more: Any) -> dict[str, Any]:
        return {"private_agents": list(privacy.private_agents), "private_owners": list(privacy.private_owners), **more}

    def rows(sql: str, **more: Any) -> list[dict[str, Any]]:
        given = {k: v for k, v in params(**more).items() if f"${k}" in sql}
        result = gateway().query(sql, given, max_rows=None)
        return [dict(zip(result.columns, r)) for r in result.rows]


    # -- the data behind each page (its JSON twin is this, as JSON) ------------------------

    def leaderboard_data(request: Request) -> dict[str, Any]:
        from storage.queries import web as q

        window = request.query_params.get("window", "7d")
        sort = request.query_params.get("sort", "runs")
        if window not in WINDOWS:
            raise BadRequest(f"window must be one of {', '.join(WINDOWS)}, got {window!r}")
        if sort not in SORTS:
            raise BadRequest(f"sort must be one of {', '.join(SORTS)}, got {sort!r}")
        hours = WINDOWS[window]
        since = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=hours) if hours
                 else dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc))
        agents = rows(q.LEADERBOARD, since=since)
        key = SORTS[sort]
        ranked = [a for a in agents if sort == "runs" or (a["runs"] >= MIN_RUNS_RANKED and a[key] is not None)]
        ranked.sort(key=lambda a: (a[key] if sort not in ("cost", "latency") else -a[key], a["agent"]), reverse=True)
        unranked = sorted((a for a in agents if a not in ranked), key=lambda a: a["agent"])
        return {"window": window, "sort": sort, "min_runs_ranked": MIN_RUNS_RANKED, "agents": ranked,
                "unranked": unranked}

    def agent_data(name: str) -> dict[str, Any]:
        from storage.queries import web as q

        found = rows(q.AGENT, agent=name)
        if not found:
            raise NotFound(f"no agent named {name!r}")
        recent = rows(q.RECENT_RUNS, agent=name, limit=20)
        for r in recent:
            if name in privacy.hide_io_agents or r["owner"] in privacy.hide_io_owners:
                r["input"] = r["output"] = None
            del r["owner"]
        clusters = rows(q.CLUSTERS, agent=name)
        if name in privacy.hide_io_agents:  # descriptions and terms quote the failures
            for c in clusters:
                c["description"], c["top_terms"] = None, []
        return {"agent": found[0], "recent_runs": recent, "clusters": clusters,
                "io_hidden": name in privacy.hide_io_agents}

    def run_data(trace_id: str) -> dict[str, Any]:
        from storage.queries import web as q

        found = rows(q.RUN, trace_id=trace_id)
        if not found:
            raise NotFound(f"no agent run with trace id {trace_id!r}")
        run = found[0]
        hidden = run["agent"] in privacy.hide_io_agents or run.pop("owner") in privacy.hide_io_owners
        spans = rows(q.RUN_SPANS, trace_id=trace_id)
        evals = rows(q.RUN_EVAL, trace_id=trace_id)
        if hidden:
            run["input"] = run["output"] = None
            for s in spans:
                s["input_messages"] = s["output_messages"] = s["attributes"] = None
            for e in evals:  # the reasoning quotes the run
                e["reasoning"] = None
        start = min((s["start_time"] for s in spans), default=None)
        total = max((s["duration_ms"] or 0) + (s["start_time"] - start).total_seconds() * 1000 for s in spans) if spans else 0
        for s in spans:
            s["offset_ms"] = (s["start_time"] - start).total_seconds() * 1000
        return {"run": run, "spans": spans, "total_ms": total or 1.0, "eval": evals[0] if evals else None,
                "cluster": (rows(q.RUN_CLUSTER, trace_id=trace_id) or [None])[0], "io_hidden": hidden}

    # -- rendering ------------------------------------------------------------------------

    def page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(env.get_template(template).render(**context), status_code=status)

    metrics = RouteMetrics()

    def errors(handler: Any, *, json: bool) -> Any:
        async def endpoint(request: Request) -> Response:
            started = time.perf_counter()
            try:  # DuckDB work off the event loop: one slow query does not stall the others
                response = await run_in_threadpool(handler, request)
            except BadRequest as exc:
                response = _error(400, str(exc), json)
            except NotFound as exc:
                response = _error(404, str(exc), json)
            metrics.observe(handler.__name__, response.status_code, time.perf_counter() - started)
            return response

        def _error(status: int, message: str, json: bool) -> Response:
            if json:
                return JSONResponse({"error": message}, status_code=status)
            return page("error.html", status=status, status_code=status, message=message)

        return endpoint

    def metrics_text(request: Request) -> Response:
        return Response(metrics.text(), media_type="text/plain; version=0.0.4")

    def home(request: Request) -> Response:
        return page("home.html", board=leaderboard_data(request))

    def leaderboard(request: Request) -> Response:
        return page("leaderboard.html", board=leaderboard_data(request), sorts=SORTS, windows=WINDOWS)

    def agent(request: Request) -> Response:
        return page("agent.html", data=agent_data(request.path_params["name"]), metrics=BADGE_METRICS)

    def run_page(request: Request) -> Response:
        return page("run.html", data=run_data(request.path_params["trace_id"]))

    def api_run(request: Request) -> Response:
        return JSONResponse(json_value(run_data(request.path_params["trace_id"])))

    def embed(request: Request) -> Response:
        size = request.query_params.get("size", "md")
        theme = request.query_params.get("theme", "light")
        if size not in EMBED_SIZES:
            raise BadRequest(f"size must be one of {', '.join(EMBED_SIZES)}, got {size!r}")
        if theme not in ("light", "dark"):
            raise BadRequest(f"theme must be light or dark, got {theme!r}")
        response = page("embed.html", data=agent_data(request.path_params["name"]), size=size, theme=theme)
        # the one route other sites may frame
        response.headers["Content-Security-Policy"] = SECURITY_HEADERS["Content-Security-Policy"].replace(
            "frame-ancestors 'none'", "frame-ancestors *")
        return response

    def compare_data(request: Request) -> dict[str, Any]:
        a, b = agent_data(request.path_params["a"]), agent_data(request.path_params["b"])
        lines = []
        for key, label, better in COMPARE_LINES:
            va, vb = a["agent"][key], b["agent"][key]
            winner = None
            if va is not None and vb is not None and va != vb:
                winner = "a" if (va > vb) == (better == "higher") else "b"
            lines.append({"figure": key, "label": label, "a": va, "b": vb, "better": better, "winner": winner})
        return {"a": a["agent"], "b": b["agent"], "lines": lines,
                "clusters": {"a": a["clusters"], "b": b["clusters"]}}

    def compare(request: Request) -> Response:
        return page("compare.html", data=compare_data(request))

    def api_compare(request: Request) -> Response:
        return JSONResponse(json_value(compare_data(request)))

    def api_leaderboard(request: Request) -> Response:
        return JSONResponse(json_value(leaderboard_data(request)))

    def api_agent(request: Request) -> Response:
        return JSONResponse(json_value(agent_data(request.path_params["name"])))

    def api_insights(request: Request) -> Response:
        data = agent_data(request.path_params["name"])
        return JSONResponse(json_value({"agent": data["agent"]["agent"], "clusters": data["clusters"]}))

    def badge_svg(request: Request) -> Response:
        metric = request.query_params.get("metric", "success")
        if metric not in BADGE_METRICS:
            raise BadRequest(f"metric must be one of {', '.join(BADGE_METRICS)}, got {metric!r}")
        name = request.path_params["name"]
        try:
            label, value, color = _badge_value(agent_data(name)["agent"], metric)
        except NotFound:
            label, value, color = "agent", "not found", "none"  # never echo a private name
        svg = badge(label, value, color)
        etag = '"' + hashlib.sha256(svg.encode()).hexdigest()[:16] + '"'
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers={"ETag": etag, "Cache-Control": "max-age=60"})
        return Response(svg, media_type="image/svg+xml", headers={"ETag": etag, "Cache-Control": "max-age=60"})

    def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    def get(path: str, handler: Any, *, json: bool = False) -> Route:
        return Route(path, errors(handler, json=json), methods=["GET", "HEAD"])

    routes = [
        get("/", home),
        get("/leaderboard", leaderboard),
        get("/agents/{name:path}", agent),
        get("/runs/{trace_id}", run_page),
        get("/embed/{name:path}", embed),
        get("/vs/{a}/{b}", compare),
        get("/api/leaderboard", api_leaderboard, json=True),
        get("/api/agents/{name:path}/insights", api_insights, json=True),
        get("/api/agents/{name:path}", api_agent, json=True),
        get("/api/runs/{trace_id}", api_run, json=True),
        get("/api/vs/{a}/{b}", api_compare, json=True),
        get("/badge/{name:path}.svg", badge_svg, json=True),
        Route("/healthz", healthz, methods=["GET", "HEAD"]),
        Route("/metrics", metrics_text, methods=["GET", "HEAD"]),
    ]
    return Starlette(routes=routes, middleware=[Middleware(SecurityHeaders)])


class RouteMetrics:
    """Requests and their latency per route (the handler's name) and status, as
    Prometheus text: counters, not per-request logs."""

    BUCKETS = (0.005, 0.02, 0.05, 0.15, 0.5, 1.0, 5.0)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, int], int] = {}
        self.seconds: dict[str, list[float]] = {}  # route -> bucket counts + [sum, count]

    def observe(self, route: str, status: int, seconds: float) -> None:
        with self._lock:
            self.requests[(route, status)] = self.requests.get((route, status), 0) + 1
            h = self.seconds.setdefault(route, [0.0] * (len(self.BUCKETS) + 2))
            for i, bound in enumerate(self.BUCKETS):
                if seconds <= bound:
                    h[i] += 1
            h[-2] += seconds
            h[-1] += 1

    def text(self) -> str:
        with self._lock:
            out = ["# TYPE otelbench_web_requests_total counter"]
            out += [f'otelbench_web_requests_total{{route="{r}",status="{s}"}} {n}'
                    for (r, s), n in sorted(self.requests.items())]
            out.append("# TYPE otelbench_web_request_seconds histogram")
            for r, h in sorted(self.seconds.items()):
                out += [f'otelbench_web_request_seconds_bucket{{route="{r}",le="{b}"}} {int(n)}'
                        for b, n in zip(self.BUCKETS, h)]
                out.append(f'otelbench_web_request_seconds_bucket{{route="{r}",le="+Inf"}} {int(h[-1])}')
                out.append(f'otelbench_web_request_seconds_sum{{route="{r}"}} {h[-2]:.6f}')
                out.append(f'otelbench_web_request_seconds_count{{route="{r}"}} {int(h[-1])}')
        return "\n".join(out) + "\n"


class SecurityHeaders:
    """Every response gets SECURITY_HEADERS (a route may set its own first; one that lets
    any site frame it loses X-Frame-Options)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for key, value in SECURITY_HEADERS.items():
                    headers.setdefault(key, value)
                if "frame-ancestors *" in headers["content-security-policy"]:  # /embed: others may frame it
                    del headers["x-frame-options"]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _badge_value(figures: dict[str, Any], metric: str) -> tuple[str, str, str]:
    if metric == "runs":
        return "runs", f"{figures['runs']:,}", "info"
    if metric == "success":
        rate = figures["success_rate"]
        return "success", f"{rate:.0%}", "good" if rate >= 0.9 else "ok" if rate >= 0.7 else "bad"
    if metric == "score":
        score = figures["score"]
        if score is None:
            return "judge score", "not judged", "none"
        return "judge score", f"{score:.2f}", "good" if score >= 0.75 else "ok" if score >= 0.5 else "bad"
    if metric == "cost":
        cost = figures["cost_per_run"]
        return "cost/run", "unknown" if cost is None else f"${cost:.4f}", "info"
    p50 = figures["p50_ms"]
    return "latency p50", "unknown" if p50 is None else f"{p50 / 1000:.1f}s", "info"
