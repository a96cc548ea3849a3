"""A real browser for tests: Debian's headless Chromium driven by Playwright's sync API.

Playwright cannot download its own browser here (``playwright install`` needs the
internet), so it drives ``/usr/bin/chromium`` through ``executable_path``;
scripts/setup.sh installs both. ``Watch`` records what a page did that nobody asked for
(dialogs, script errors, console messages, CSP violations, requests leaving 127.0.0.1),
so a test can assert there was none. docs/web.md, "Browser tests".
"""

from __future__ import annotations

import importlib.util
import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

CHROMIUM = Path("/usr/bin/chromium")  # Debian's `chromium` package
# headless in a container: no sandbox (no user namespaces), no GPU, /tmp instead of a small
# /dev/shm; and none of Chromium's own traffic (updates, safe browsing, metrics, sync)
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
               "--disable-component-update", "--disable-default-apps", "--disable-sync", "--no-first-run",
               "--disable-domain-reliability", "--disable-client-side-phishing-detection",
               "--metrics-recording-only", "--no-default-browser-check"]
SETUP_HINT = ("the browser tests need Debian's chromium and Playwright: run ./scripts/setup.sh as root "
              "(or: apt-get install -y --no-install-recommends chromium && .venv/bin/pip install playwright); "
              "never `playwright install`. To leave them out, set OTELBENCH_NO_BROWSER=1.")
NO_BROWSER_ENV = "OTELBENCH_NO_BROWSER"  # "1": the browser tests skip (an explicit opt-out)
SCREENSHOTS_ENV = "OTELBENCH_SCREENSHOTS"  # a folder: the tests save their screenshots there
WIDTH = 1280  # screenshots are this wide ...
MAX_HEIGHT = 1600  # ... and at most this tall
SENTINEL = "untouched"  # window.__sentinel; every hostile payload in the tests tries to change it

# Runs before any of the page's own content in every frame (through the DevTools protocol,
# so the page's CSP does not apply to it): the sentinel, and a record of CSP violations.
_INIT = f"""window.__sentinel = {SENTINEL!r}; window.__csp = [];
document.addEventListener("securitypolicyviolation",
    e => window.__csp.push(e.violatedDirective + " " + (e.blockedURI || "inline")));"""


def missing() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    if importlib.util.find_spec("playwright") is None:
        return f"Playwright is not installed; {SETUP_HINT}"
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is missing; {SETUP_HINT}"
    return None


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium (a playwright ``Browser``), closed on exit."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Watch:
    """One browser context, and everything its pages did unasked."""

    context: Any
    dialogs: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)  # requests that would leave 127.0.0.1: aborted

    def __post_init__(self) -> None:
        self.context.add_init_script(_INIT)
        self.context.route("**/*", self._route)

    def _route(self, route: Any) -> None:
        if _local(route.request.url):
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()

    def page(self) -> Any:
        page = self.context.new_page()
        page.on("dialog", lambda d: (self.dialogs.append(f"{d.type}: {d.message}"), d.dismiss()))
        page.on("pageerror", lambda e: self.page_errors.append(str(e)))
        page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        page.on("websocket", lambda ws: None if _local(ws.url) else self.outside.append(ws.url))
        return page

    def problems(self, page: Any) -> list[str]:
        """What went wrong so far, as one list (empty: nothing): the watch's records, CSP
        violations and a changed sentinel in every frame of ``page``."""
        found = [f"dialog {d}" for d in self.dialogs] + [f"page error {e}" for e in self.page_errors]
        found += [f"console {c}" for c in self.console] + [f"request to {u}" for u in self.outside]
        for frame in page.frames:
            state = frame.evaluate("[window.__sentinel, window.__csp]")
            if state[0] != SENTINEL:
                found.append(f"sentinel is {state[0]!r} in {frame.url}")
            found += [f"CSP violation {v} in {frame.url}" for v in state[1] or []]
        return found


def _local(url: str) -> bool:
    """A request that stays on this machine: to 127.0.0.1 (any port), or data: (no request)."""
    return url.startswith("data:") or urlsplit(url).hostname == "127.0.0.1"


@contextmanager
def another_site(html: str) -> Iterator[str]:
    """A site of another origin (127.0.0.1, its own port) whose one page is ``html``; yields
    its URL. On loopback, not a name the browser fulfils itself: Chromium refuses to frame a
    local address in a page from anywhere else (Local Network Access)."""
    import http.server
    import threading

    body = html.encode()

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def screenshot(page: Any, path: Path) -> Path:
    """Save what ``page`` shows, ``WIDTH`` wide and at most ``MAX_HEIGHT`` tall, as a PNG
    with a 64-colour palette (a text page stays well under 200 KB)."""
    from PIL import Image

    page.set_viewport_size({"width": WIDTH, "height": 720})
    # the content's height, not the viewport's: a short page leaves no empty band
    height = min(page.evaluate("Math.ceil(document.body.getBoundingClientRect().bottom) + 16"), MAX_HEIGHT)
    png = page.screenshot(full_page=True, clip={"x": 0, "y": 0, "width": WIDTH, "height": height})
    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(64, method=Image.Quantize.MEDIANCUT)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, optimize=True)
    return path
