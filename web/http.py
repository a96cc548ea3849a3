"""What every route shares over HTTP: security headers on every response, and request
counts and latencies per route as Prometheus text (counters, not per-request logs)."""

from __future__ import annotations

import threading
from typing import Any

from starlette.datastructures import MutableHeaders

SECURITY_HEADERS = {
    # one script, /static/live.js (no inline script), and its WebSocket back to this origin
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; connect-src 'self'; "
                               "style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


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
