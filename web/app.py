"""The read-only web UI: one route table, jinja2 pages (autoescape on) and a JSON twin for
every page (``/api/...``), each the same page function of web/pages/ over the ``Site``
(web/site.py) as the request's reader sees it, and the live dashboard's WebSockets
(``web.live``). Only GET and HEAD (and the WebSocket); nothing a visitor sends changes
data. Routes and what each shows: docs/web.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections import OrderedDict
from pathlib import Path
from collections.abc import Sequence
from typing import Any, AsyncIterator, Callable

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route, WebSocketRoute

from otelbench.storage.privacy import Privacy
from otelbench.storage.values import json_value
from otelbench.web import doctor_report, live, mcp_server
from otelbench.web.access import Access, Denied, key_of
from otelbench.web.badge import BADGE_METRICS, badge
from otelbench.web.charts import duration
from otelbench.web.errors import BadRequest, NotFound
from otelbench.web.receivers import Receivers
from otelbench.web.http import SECURITY_HEADERS, RouteMetrics, SecurityHeaders
from otelbench.web.pages import agent as agent_page
from otelbench.web.pages import benchmarks, embeds, models, replays, run
from otelbench.web.pages import search as search_page
from otelbench.web.pages import compare as compare_page
from otelbench.web.pages import home as home_page
from otelbench.web.pages import leaderboard as leaderboard_page
from otelbench.web.pages.doctor import doctor as doctor_page_data
from otelbench.web.share import ShareImages
from otelbench.web.site import WINDOWS, Site
from otelbench.web.text import message_text, visible

TEMPLATES = Path(__file__).parent / "templates"
LIVE_JS = Path(__file__).parent / "static" / "live.js"
SIGNED_ROUTES = ("/embed/", "/badge/", "/og/")  # where a signed link may stand in for a key
KEPT_BODIES = 64  # home and leaderboard bodies kept per rollup version (≈ 80 KB each for 200 agents)


def create_app(lake_root: str | Path, privacy: Privacy | None = None, receivers: Receivers | None = None, *,
               refresh_s: float = 2.0, figures_every_s: float = Site.FIGURES_EVERY_S,
               live_spans: live.Source | None = None, mcp_hosts: Sequence[str] = (),
               keyring: Any = None, clock: Callable[[], float] = time.time) -> Starlette:
    """``receivers``: the collector's OTLP endpoints the home page tells SDKs to use (the
    config's, when started with one; else the defaults). ``refresh_s``: how often the
    rollups are checked for new lake files; ``figures_every_s``: the least time between two
    computations of the agents' figures (web.site.Site). ``live_spans``: where the live
    feed reads new spans (``otelbench serve`` hands in the write-ahead log's,
    ``collector.tail``); by default the lake's new files. ``mcp_hosts``: Host headers the
    MCP endpoint (``/mcp``) accepts besides loopback ones (``web.mcp_hosts``). ``keyring``:
    the configured keys (``collector.keys.Keyring`` of ``receivers.otlp.auth.keys``), whose
    ``read`` ones see what their grants name beyond public data (web/access.py).
    ``clock``: the time signed links are made and checked by (seconds since the epoch)."""
    site = Site(lake_root, privacy, refresh_s=refresh_s, figures_every_s=figures_every_s)
    access = Access(site.privacy, keyring, clock=clock)
    receivers = receivers or Receivers()
    share_images = ShareImages()
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(default=True))
    env.filters["duration"] = duration  # milliseconds as people read them: 40 ms, 1.83 s
    env.filters["message_text"] = message_text  # a task or answer (JSON messages) as its text
    env.filters["visible"] = visible
    metrics = RouteMetrics()
    hub = live.hub(site, lake_root, live_spans)
    live_js = LIVE_JS.read_bytes()

    def page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(env.get_template(template).render(**context), status_code=status)

    def site_of(request: Request) -> Site:
        """The site as this request's reader may see it (web/access.py): public, a read
        key's grants, or — on an embed, badge or share image — a signed link's."""
        name = request.path_params.get("name")
        signed = request.query_params if name is not None and request.url.path.startswith(SIGNED_ROUTES) else None
        return site.viewing(access.privacy_of(request.headers, signed, name))

    def errors(handler: Callable[[Request], Response], *, json: bool) -> Any:
        """The one place errors become status codes: BadRequest 400, NotFound 404, a key or
        signed link that cannot read (Denied) 401."""
        async def endpoint(request: Request) -> Response:
            started = time.perf_counter()
            try:  # DuckDB work off the event loop: one slow query does not stall the others
                response = await run_in_threadpool(handler, request)
            except BadRequest as exc:
                response = _error(400, str(exc))
            except NotFound as exc:
                response = _error(404, str(exc))
            except Denied as exc:
                response = _error(401, str(exc))
            metrics.observe(handler.__name__, response.status_code, time.perf_counter() - started)
            return response

        def _error(status: int, message: str) -> Response:
            if json:
                return JSONResponse({"error": message}, status_code=status)
            return page("error.html", status=status, status_code=status, message=message)

        return endpoint

    bodies: OrderedDict[tuple[int, str], Any] = OrderedDict()
    bodies_lock = threading.Lock()

    def kept(request: Request, build: Callable[[], str | bytes]) -> Any:
        """The body ``build()`` makes for this URL, kept per rollup version: for the pages
        about every agent (home, leaderboard), which each request would otherwise lay out
        anew from the same figures. At most ``KEPT_BODIES`` (any query string is a URL of
        its own); errors are not kept (they raise)."""
        viewer = site_of(request)
        key = (viewer.version_key(), viewer.privacy, str(request.url))
        with bodies_lock:
            if key in bodies:
                bodies.move_to_end(key)
                return bodies[key]
        body = build()
        with bodies_lock:
            bodies[key] = body
            while len(bodies) > KEPT_BODIES:
                bodies.popitem(last=False)
        return body

    def api(data: Callable[[Request], Any], *, keep: bool = False) -> Callable[[Request], Response]:
        """A page's JSON twin: the same data, as JSON (``keep``: the body kept per version)."""
        def handler(request: Request) -> Response:
            if keep:
                return Response(kept(request, lambda: JSONResponse(json_value(data(request))).body),
                                media_type="application/json")
            return JSONResponse(json_value(data(request)))
        handler.__name__ = f"api_{data.__name__}"
        return handler

    # -- the data behind each page (web/pages/), as this request's reader may see it --------

    def leaderboard_data(request: Request) -> dict[str, Any]:
        return leaderboard_page.leaderboard(site_of(request), request.query_params)

    def profile_data(request: Request) -> dict[str, Any]:
        return agent_page.profile(site_of(request), request.path_params["name"], str(request.base_url))

    def home_data(request: Request) -> dict[str, Any]:
        return home_page.home(site_of(request), receivers, request.url.hostname or "127.0.0.1", request.query_params)

    def insights_data(request: Request) -> dict[str, Any]:
        return agent_page.insights(site_of(request), request.path_params["name"])

    def run_data(request: Request) -> dict[str, Any]:
        return run.run(site_of(request), request.path_params["trace_id"])

    def compare_data(request: Request) -> dict[str, Any]:
        a, b = compare_page.vs_names(request.scope.get("raw_path") or request.url.path.encode())
        return compare_page.versus(site_of(request), a, b, request.query_params)

    def model_data(request: Request) -> dict[str, Any]:
        return models.model(site_of(request), request.path_params["name"])

    def search_data(request: Request) -> dict[str, Any]:
        return search_page.search(site_of(request), request.query_params)

    def doctor_data(request: Request) -> dict[str, Any]:
        return doctor_page_data(site_of(request), request.query_params)

    def benchmarks_data(request: Request) -> dict[str, Any]:
        return benchmarks.benchmarks(site_of(request))

    def benchmark_data(request: Request) -> dict[str, Any]:
        return benchmarks.benchmark(site_of(request), request.path_params["suite"])

    def replays_data(request: Request) -> dict[str, Any]:
        return replays.listing(site_of(request), request.query_params.get("agent", ""))

    def replay_data(request: Request) -> dict[str, Any]:
        return replays.replay(site_of(request), request.path_params["replay_id"])

    # -- pages ------------------------------------------------------------------------------

    def home(request: Request) -> Response:
        return HTMLResponse(kept(request, lambda: env.get_template("home.html").render(data=home_data(request))))

    def leaderboard(request: Request) -> Response:
        def build() -> str:
            board = leaderboard_data(request)
            if board["tab"] == "models":
                return env.get_template("leaderboard_models.html").render(board=board, sorts=models.SORTS)
            return env.get_template("leaderboard.html").render(board=board, sorts=leaderboard_page.SORTS,
                                                               windows=WINDOWS)

        return HTMLResponse(kept(request, build))

    def agent(request: Request) -> Response:
        data = profile_data(request)
        return page("agent.html", data=data, metrics=BADGE_METRICS, charts=agent_page.profile_charts(data))

    def run_page(request: Request) -> Response:
        return page("run.html", data=run_data(request))

    def compare(request: Request) -> Response:
        data = compare_data(request)
        return page("compare.html" if data["kind"] == "agents" else "compare_models.html", data=data)

    def model_page(request: Request) -> Response:
        return page("model.html", data=model_data(request))

    def search_runs(request: Request) -> Response:
        return page("search.html", data=search_data(request))

    def doctor_page(request: Request) -> Response:
        return page("doctor.html", data=doctor_data(request), labels=doctor_report.LABELS)

    def benchmarks_page(request: Request) -> Response:
        return page("benchmarks.html", data=benchmarks_data(request))

    def benchmark_page(request: Request) -> Response:
        data = benchmark_data(request)
        return page("agent_suite.html" if data["kind"] == "agent" else "benchmark.html", data=data)

    def replays_page(request: Request) -> Response:
        return page("replays.html", data=replays_data(request))

    def replay_page(request: Request) -> Response:
        return page("replay.html", data=replay_data(request))

    def embed(request: Request) -> Response:
        response = page("embed.html", **embeds.embed(site_of(request), request.path_params["name"],
                                                     request.query_params))
        # the one route other sites may frame
        response.headers["Content-Security-Policy"] = SECURITY_HEADERS["Content-Security-Policy"].replace(
            "frame-ancestors 'none'", "frame-ancestors *")
        return response

    def badge_svg(request: Request) -> Response:
        viewer = site_of(request)
        label, value, color = embeds.badge(viewer, request.path_params["name"], request.query_params)

        def drawn() -> tuple[str, str]:
            svg = badge(label, value, color)
            return svg, hashlib.sha256(svg.encode()).hexdigest()[:16]

        svg, etag = viewer.cached(("badge", label, value, color), drawn, version=0)  # its text alone decides it
        return _conditional(request, svg, "image/svg+xml", etag, 60)

    def gate_badge_svg(request: Request) -> Response:
        """The latest gate verdict about an agent or a suite (web/pages/embeds.py)."""
        of, name = ("agent", request.path_params["name"]) if "name" in request.path_params else (
            "suite", request.path_params["suite"])
        label, value, color = embeds.gate_badge(site_of(request), of, name)
        svg = badge(label, value, color)
        return _conditional(request, svg, "image/svg+xml", hashlib.sha256(svg.encode()).hexdigest()[:16], 60)

    def share_image(request: Request) -> Response:
        key, png = share_images.get(embeds.card_figures(site_of(request), request.path_params["name"]))
        return _conditional(request, png, "image/png", key, 300)

    def signed_links(request: Request) -> dict[str, Any]:
        """Links to an agent's embed, badge and share image that work without the key for
        ``ttl`` seconds (web/pages/embeds.py)."""
        key = key_of(request.headers)
        if not key:
            raise Denied("a read key is needed (X-Bench-Key or Authorization: Bearer) to sign links")
        ttl = embeds.link_ttl(request.query_params)
        return embeds.signed_links(site_of(request), access, key, request.path_params["name"], ttl,
                                   str(request.base_url))

    def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    def metrics_text(request: Request) -> Response:
        snap = site.last_snapshot  # never builds: this answers on the event loop
        extra = ("# TYPE otelbench_web_rollup_version gauge\n"
                 f"otelbench_web_rollup_version {snap.version if snap else 0}\n"
                 "# TYPE otelbench_web_rollup_refresh_errors_total counter\n"
                 f"otelbench_web_rollup_refresh_errors_total {site.refresh_errors}\n")
        return Response(metrics.text() + extra + hub.metrics_text(), media_type="text/plain; version=0.0.4")

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
        get("/vs/{pair:path}", compare),  # two names, a '/' inside one written %2F (web/pages/compare.py)
        get("/models/{name:path}", model_page),
        get("/benchmarks", benchmarks_page),
        get("/doctor", doctor_page),
        get("/search", search_runs),
        get("/benchmarks/{suite:path}", benchmark_page),
        get("/replays", replays_page),
        get("/replays/{replay_id}", replay_page),
        get("/api/leaderboard", api(leaderboard_data, keep=True), json=True),
        get("/api/agents/{name:path}/insights", api(insights_data), json=True),
        get("/api/agents/{name:path}", api(profile_data), json=True),
        get("/api/home", api(home_data, keep=True), json=True),
        get("/api/runs/{trace_id}", api(run_data), json=True),
        get("/api/vs/{pair:path}", api(compare_data), json=True),
        get("/api/models/{name:path}", api(model_data), json=True),
        get("/api/benchmarks", api(benchmarks_data), json=True),
        get("/api/doctor", api(doctor_data), json=True),
        get("/api/search", api(search_data), json=True),
        get("/api/benchmarks/{suite:path}", api(benchmark_data), json=True),
        get("/api/replays", api(replays_data), json=True),
        get("/api/replays/{replay_id}", api(replay_data), json=True),
        get("/api/links/{name:path}", api(signed_links), json=True),
        get("/badge/{name:path}.svg", badge_svg, json=True),
        get("/gate/agent/{name:path}.svg", gate_badge_svg, json=True),
        get("/gate/suite/{suite:path}.svg", gate_badge_svg, json=True),
        get("/og/{name:path}.png", share_image, json=True),
        Route("/healthz", healthz, methods=["GET", "HEAD"]),
        Route("/metrics", metrics_text, methods=["GET", "HEAD"]),
        Route("/static/live.js", live_script, methods=["GET", "HEAD"]),
        WebSocketRoute("/live/leaderboard", live.leaderboard_endpoint(hub, access)),
        WebSocketRoute("/live/agents/{name:path}", live.agent_endpoint(hub, site, access)),
    ]

    assistants = mcp_server.build(site, access=access)
    routes.append(Route(mcp_server.PATH, mcp_server.http_app(assistants, mcp_hosts)))  # POST: JSON-RPC

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with assistants.session_manager.run():  # the MCP app's own lifespan does not run
            yield
        await hub.close()
        await run_in_threadpool(site.close)

    return Starlette(routes=routes, middleware=[Middleware(SecurityHeaders)], lifespan=lifespan)


def _conditional(request: Request, body: str | bytes, media_type: str, key: str, max_age: int) -> Response:
    """``body`` with an ETag (``key``) and ``Cache-Control: max-age``; 304 without a body
    when the client already has it (``If-None-Match``)."""
    headers = {"ETag": f'"{key}"', "Cache-Control": f"max-age={max_age}"}
    if request.headers.get("if-none-match") == headers["ETag"]:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=media_type, headers=headers)

