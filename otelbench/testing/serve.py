"""``otelbench serve`` in a process of its own, for tests: started with a config, its
OTLP/HTTP URL read from what it prints, stopped with SIGTERM as an operator would; and
``otelbench web`` the same way (``serve_web``)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from otelbench.testing.wait import wait_for

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Served:
    proc: subprocess.Popen[str]
    url: str  # the OTLP/HTTP receiver, http://host:port
    out: str = ""  # what it printed, once stopped
    err: str = ""


def free_port() -> int:
    """A port nothing listens on now (for ``web.endpoint``, which takes no port 0)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def web_up(web: str) -> bool:
    """Whether the web UI at ``web`` (``http://host:port``) answers its health check."""
    import httpx

    try:
        return httpx.get(f"{web}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@contextmanager
def serve(config: Path, *, cwd: Path = ROOT) -> Iterator[Served]:
    """``cwd``: the folder it runs in (the config's relative paths are read from there).

    Its output is read line by line as it comes, by a thread per stream, into ``out`` and
    ``err``: ``communicate`` after a ``readline`` would read the pipe beneath the buffer
    and lose whatever lines that buffer already held."""
    proc = subprocess.Popen([sys.executable, "-m", "otelbench", "serve", "--config", str(config)], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out: list[str] = []
    err: list[str] = []
    readers = [threading.Thread(target=lambda s=stream, into=lines: into.extend(s), daemon=True)
               for stream, lines in ((proc.stdout, out), (proc.stderr, err))]
    for reader in readers:
        reader.start()
    served = None
    try:
        wait_for(lambda: any("OTLP/HTTP listening on " in line for line in list(out)) or proc.poll() is not None,
                 what="otelbench serve listening")
        listening = [line for line in list(out) if "OTLP/HTTP listening on " in line]
        assert listening, "".join(err)
        served = Served(proc, listening[0].rsplit(" ", 1)[1].strip())
        yield served
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        for reader in readers:
            reader.join(timeout=10)
        if served is not None:
            served.out, served.err = "".join(out), "".join(err)


@contextmanager
def serve_web(lake: Path, *, config: Path | None = None) -> Iterator[str]:
    """``otelbench web`` over ``lake`` on a free port; yields its base URL once ``/healthz``
    answers, and stops it with SIGTERM."""
    import httpx

    port = free_port()
    args = [sys.executable, "-m", "otelbench", "web", "--lake", str(lake), "--endpoint", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(args + (["--config", str(config)] if config else []), cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        assert proc.poll() is None, proc.stderr.read()  # type: ignore[union-attr]
        try:
            return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(healthy, what=f"otelbench web answering on {url}")
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)

