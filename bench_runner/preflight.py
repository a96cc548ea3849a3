"""What a server offers and whether a bench can run on it: ``otelbench bench --list`` (the
server's models with their GGUF status) and ``--check`` (server, models, GGUF files, the
OTLP endpoint, each OK or FAIL)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from otelbench.bench_runner.model_files import Status, default_roots, locate_gguf
from otelbench.bench_runner.servers import ServerInfo

if TYPE_CHECKING:
    from rich.console import Console


def print_models(info: ServerInfo, models_dirs: Sequence[Path], console: Console) -> int:
    """A row per model the server offers: where its GGUF is (or why not), size, quant, arch."""
    from rich.table import Table

    table = Table(title=f"{info.base_url} ({info.kind})", title_justify="left")
    for col in ("model", "gguf", "size", "quant", "arch", "path / reason"):
        table.add_column(col, overflow="fold")
    for m in info.models:
        lk = locate_gguf(m.id, server_paths=info.paths_for(m.id), roots=default_roots(models_dirs=tuple(models_dirs)))
        i = lk.info
        table.add_row(m.id, lk.status.value, f"{i.size_bytes / 2**20:.0f} MiB" if i else "—",
                      (i.quantization if i else m.quantization) or "—", (i.architecture if i else m.architecture) or "—",
                      str(i.path) if i else lk.reason)
    console.print(table)
    return 0


def check(info: ServerInfo, models: Sequence[str], models_dirs: Sequence[Path], otlp_endpoint: str | None,
          console: Console) -> int:
    """One OK/FAIL line per thing a bench of ``models`` needs (``otlp_endpoint`` None: spans
    are not exported, so the endpoint is not asked); 1 when any failed."""
    import httpx

    ok = True

    def line(good: bool, what: str, detail: str) -> None:
        nonlocal ok
        ok &= good
        console.print(f"{'[green]OK  [/]' if good else '[red]FAIL[/]'} {what}: {detail}")

    line(True, "server", f"{info.base_url} answers ({info.kind}, {len(info.models)} models)")
    offered = {m.id for m in info.models}
    for model in models:
        line(model in offered, f"model {model}", "offered" if model in offered else "not offered by the server (try --list)")
        lk = locate_gguf(model, server_paths=info.paths_for(model), roots=default_roots(models_dirs=tuple(models_dirs)))
        line(lk.status == Status.READY, f"gguf {model}", str(lk.info.path) if lk.info else lk.reason)
    if otlp_endpoint is not None:
        url = otlp_endpoint.rstrip("/") + "/v1/traces"
        try:
            r = httpx.post(url, content=b"", headers={"Content-Type": "application/x-protobuf"}, timeout=5)
            line(r.status_code == 200, "otlp endpoint", f"{url} answered {r.status_code}")
        except httpx.HTTPError as exc:
            line(False, "otlp endpoint", f"{url} unreachable ({type(exc).__name__}); start `otelbench serve` or pass --no-otel")
    return 0 if ok else 1
