"""The layout is the architecture: which top-level package may import which.

Every ``import`` of every module is read with ``ast`` (module-level and function-level
alike: a lazy import inside a function is still a dependency), and the rules are:

- ``normalize/`` is pure: of this project it imports only ``storage.schema``;
- ``exporters/`` import nothing from ``collector/`` (the collector starts them and
  passes in what they need);
- ``storage/`` imports none of the packages above it;
- ``processors/`` import nothing from ``collector/`` or ``otelbench/`` (the CLI and the
  server call them; ``otelbench.testing`` serves their tests, not them);
- no cycle among the top-level packages (a ``__main__.py`` is a launcher that nothing
  imports, not a dependency: ``python -m bench_runner`` runs ``otelbench bench``);
- the receiver process stays light: importing its modules loads no polars, pyarrow or
  numpy (those are the flusher's and the compactor's).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("collector", "normalize", "exporters", "storage", "bench_runner", "processors", "web", "otelbench")
RECEIVER = ("collector.service", "collector.http_server", "collector.grpc_server", "collector.runtime",
            "collector.encoding", "collector.wal", "collector.config")
HEAVY = ("polars", "pyarrow", "numpy")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[str, int]]:
    """(imported module, line) for every import in one file, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            module = ".".join(x for x in (base, node.module or "") if x)
            # ``from pkg import mod`` imports pkg.mod when it is a module
            found += [(f"{module}.{alias.name}", node.lineno) for alias in node.names]
    return found


def _edges() -> list[tuple[str, str, str]]:
    """(importing module, imported module, "file:line") for imports of this project's packages."""
    edges = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name == "__main__.py":
                continue
            for module, line in _imports(path):
                if module.split(".")[0] in PACKAGES:
                    edges.append((_module_name(path), module, f"{path.relative_to(ROOT)}:{line}"))
    return edges


EDGES = _edges()


def _violations(importer: str, forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()) -> list[str]:
    def within(module: str, prefixes: tuple[str, ...]) -> bool:
        return any(module == p or module.startswith(p + ".") for p in prefixes)

    return [f"{where}: {src} imports {dst}" for src, dst, where in EDGES
            if within(src, (importer,)) and within(dst, forbidden) and not within(dst, allowed)]


def test_the_package_list_is_complete() -> None:
    found = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests"}
    assert found <= set(PACKAGES), f"a new top-level package: add it to PACKAGES and its rules: {found - set(PACKAGES)}"


def test_normalize_imports_only_the_schema_of_this_project() -> None:
    others = tuple(p for p in PACKAGES if p != "normalize")
    bad = _violations("normalize", others, allowed=("storage.schema",))
    assert not bad, "\n".join(bad)


def test_exporters_import_nothing_from_the_collector() -> None:
    bad = _violations("exporters", ("collector",))
    assert not bad, "\n".join(bad)


def test_storage_imports_no_package_above_it() -> None:
    bad = _violations("storage", tuple(p for p in PACKAGES if p != "storage"))
    assert not bad, "\n".join(bad)


def test_processors_import_neither_the_collector_nor_the_cli() -> None:
    bad = _violations("processors", ("collector", "otelbench"))
    assert not bad, "\n".join(bad)


def test_the_web_reads_through_storage_only() -> None:
    """Pages, JSON and (later) MCP answer from one query layer in storage/ (its privacy
    settings and the strict config base live there too); from the normalizer the web takes
    only ``normalize.coverage`` (pure data: which attribute keys its mappings read, for the
    doctor's report).
    Its live feed inside ``otelbench serve`` reads the write-ahead log through
    ``collector.tail``, which ``otelbench.runtime.web`` hands in: the web never imports it."""
    assert not _violations("web", ("collector", "exporters", "normalize", "bench_runner", "processors", "otelbench"),
                           allowed=("normalize.coverage",))


def test_no_cycle_among_top_level_packages() -> None:
    graph: dict[str, dict[str, str]] = defaultdict(dict)  # package → {package it imports: one place}
    for src, dst, where in EDGES:
        a, b = src.split(".")[0], dst.split(".")[0]
        if a != b:
            graph[a].setdefault(b, where)

    def path_to(start: str, goal: str, seen: set[str]) -> list[str] | None:
        for nxt in graph[start]:
            if nxt == goal:
                return [start, goal]
            if nxt not in seen:
                seen.add(nxt)
                rest = path_to(nxt, goal, seen)
                if rest:
                    return [start, *rest]
        return None

    cycles = []
    for package in PACKAGES:
        cycle = path_to(package, package, set())
        if cycle:
            cycles.append(" → ".join(cycle) + " (" + ", ".join(graph[a][b] for a, b in zip(cycle, cycle[1:])) + ")")
    assert not cycles, "\n".join(cycles)


@pytest.mark.parametrize("module", RECEIVER)
def test_the_receiver_loads_no_dataframe_library(module: str) -> None:
    """The receiver process answers requests; polars, pyarrow and numpy (~100 MiB) belong
    to the flusher and compactor processes."""
    code = f"import sys, {module}; print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    loaded = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    assert loaded == "", f"importing {module} loads {loaded}"


def test_the_cli_loads_no_pydantic_plugin() -> None:
    """A pydantic plugin installed beside otelbench (logfire's, from the `frameworks`
    extra) would load its whole library into the receiver and every flusher (~20 MiB
    each) the moment the config models are defined; the CLI turns plugins off."""
    import importlib.metadata

    plugins = [e.name for e in importlib.metadata.entry_points(group="pydantic")]
    if not plugins:
        pytest.skip("no pydantic plugin installed here: nothing to keep out")
    code = ("import sys, otelbench.cli as cli\n"
            "try:\n    cli.main(['sql', '--print-views', '--lake', '/nonexistent'])\nexcept SystemExit:\n    pass\n"
            "import pydantic.plugin._loader as loader\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('logfire',)), list(loader.get_plugins()))")
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[] []", (plugins, out.stdout)
