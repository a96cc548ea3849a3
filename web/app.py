"""The read-only web UI: one route table, jinja2 pages (autoescape on) and a JSON twin for
every page (``/api/...``), all answering from ``web.site.Site`` (which reads
``storage/queries/web.py`` through the lake's read gateway), and the live dashboard's
WebSockets (``web.live``). Only GET and HEAD (and the WebSocket); nothing a visitor sends
changes data. Routes and what each shows: docs/web.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from pathlib import Path
from typing import Any, AsyncIterator, Callable

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route, WebSocketRoute

from processors.config import Privacy
from storage.values import json_value
from web import live
from web.badge import badge, badge_value
from web.http import SECURITY_HEADERS, RouteMetrics, SecurityHeaders
from web.site import BADGE_METRICS, SORTS, WINDOWS, BadRequest, NotFound, Site, choice

TEMPLATES = Path(__file__).parent / "templates"
LIVE_JS = Path(__file__).parent / "static" / "live.js"
EMBED_SIZES = ("sm", "md", "lg")


def create_app(lake_root: str | Path, privacy: Privacy | None = None,
               live_spans: live.Source | None = None) -> Starlette:
    """``live_spans``: where the live feed reads new spans (``otelbench serve`` hands in the
    write-ahead log's, ``collector.tail``); by default the lake's new files."""
    site = Site(lake_root, privacy)
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(default=True))
    metrics = RouteMetrics()
    hub = live.hub(site, lake_root, live_spans)
    live_js = LIVE_JS.read_bytes()

    def page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(env.get_template(template).render(**context), status_code=status)

    def errors(handler: Callable[[Request], Response], *, json: bool) -> Any:
        """The one place errors become status codes: BadRequest 400, NotFound 404."""
        async def endpoint(request: Request) -> Response:
            started = time.perf_counter()
            try:  # DuckDB work off the event loop: one slow query does not stall the others
                response = await run_in_threadpool(handler, request)
            except BadRequest as exc:
                response = _error(400, str(exc))
            except NotFound as exc:
                response = _error(404, str(exc))
            metrics.observe(handler.__name__, response.status_code, time.perf_counter() - started)
            return response

        def _error(status: int, message: str) -> Response:
            if json:
                return JSONResponse({"error": message}, status_code=status)
            return page("error.html", status=status, status_code=status, message=message)

        return endpoint

    def api(data: Callable[[Request], Any]) -> Callable[[Request], Response]:
        """A page's JSON twin: the same data, as JSON."""
        def handler(request: Request) -> Response:
            return JSONResponse(json_value(data(request)))
        handler.__name__ = f"api_{data.__name__}"
        return handler

    # -- the data behind each page --------------------------------------------------------

    def leaderboard_data(request: Request) -> dict[str, Any]:
        return site.leaderboard(request.query_params)

    def agent_data(request: Request) -> dict[str, Any]:
        return site.agent(request.path_params["name"])

    def insights_data(request: Request) -> dict[str, Any]:
        return site.insights(request.path_params["name"])

    def run_data(request: Request) -> dict[str, Any]:
        return site.run(request.path_params["trace_id"])

    def compare_data(request: Request) -> dict[str, Any]:
        return site.compare(request.path_params["a"], request.path_params["b"])

    # -- pages ------------------------------------------------------------------------------

    def home(request: Request) -> Response:
        return page("home.html", board=site.leaderboard(request.query_params))

    def leaderboard(request: Request) -> Response:
        return page("leaderboard.html", board=leaderboard_data(request), sorts=SORTS, windows=WINDOWS)

    def agent(request: Request) -> Response:
        return page("agent.html", data=agent_data(request), metrics=BADGE_METRICS)

    def run_page(request: Request) -> Response:
        return page("run.html", data=run_data(request))

    def compare(request: Request) -> Response:
        return page("compare.html", data=compare_data(request))

    def embed(request: Request) -> Response:
        size = choice(request.query_params, "size", EMBED_SIZES, "md")
        theme = choice(request.query_params, "theme", ("light", "dark"), "light")
        response = page("embed.html", data=agent_data(request), size=size, theme=theme)
        # the one route other sites may frame
        response.headers["Content-Security-Policy"] = SECURITY_HEADERS["Content-Security-Policy"].replace(
            "frame-ancestors 'none'", "frame-ancestors *")
        return response

    def badge_svg(request: Request) -> Response:
        metric = choice(request.query_params, "metric", BADGE_METRICS, "success")
        try:
            label, value, color = badge_value(agent_data(request)["agent"], metric)
        except NotFound:
            label, value, color = "agent", "not found", "none"  # never echo a private name
        svg = badge(label, value, color)
        etag = '"' + hashlib.sha256(svg.encode()).hexdigest()[:16] + '"'
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers={"ETag": etag, "Cache-Control": "max-age=60"})
        return Response(svg, media_type="image/svg+xml", headers={"ETag": etag, "Cache-Control": "max-age=60"})

    def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    def metrics_text(request: Request) -> Response:
        return Response(metrics.text() + hub.metrics_text(), media_type="text/plain; version=0.0.4")

    def live_script(request: Request) -> Response:
        return Response(live_js, media_type="text/javascript; charset=utf-8",
                        headers={"Cache-Control": "max-age=300"})

    def get(path: str, handler: Callable[[Request], Response], *, json: bool = False) -> Route:
        return Route(path, errors(handler, json=json), methods=["GET", "HEAD"])

    routes = [
        get("/", home),
        get("/leaderboard", leaderboard),
        get("/agents/{name:path}", agent),
        get("/runs/{trace_id}", run_page),
        get("/embed/{name:path}", embed),
        get("/vs/{a}/{b}", compare),
        get("/api/leaderboard", api(leaderboard_data), json=True),
        get("/api/agents/{name:path}/insights", api(insights_data), json=True),
        get("/api/agents/{name:path}", api(agent_data), json=True),
        get("/api/runs/{trace_id}", api(run_data), json=True),
        get("/api/vs/{a}/{b}", api(compare_data), json=True),
        get("/badge/{name:path}.svg", badge_svg, json=True),
        Route("/healthz", healthz, methods=["GET", "HEAD"]),
        Route("/metrics", metrics_text, methods=["GET", "HEAD"]),
        Route("/static/live.js", live_script, methods=["GET", "HEAD"]),
        WebSocketRoute("/live/leaderboard", live.leaderboard_endpoint(hub)),
        WebSocketRoute("/live/agents/{name:path}", live.agent_endpoint(hub, site)),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await hub.close()

    return Starlette(routes=routes, middleware=[Middleware(SecurityHeaders)], lifespan=lifespan)

