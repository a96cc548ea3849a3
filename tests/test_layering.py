"""The layout is the architecture: which package may import which, and no cycle between modules.

Every ``import`` of every module is read with ``ast``: module-level, function-level and
``TYPE_CHECKING`` ones alike (a lazy import inside a function is still a dependency). An
import names the most specific module it reaches: ``from storage import lake`` is an edge
to ``storage.lake``, ``from storage import is_remote`` one to ``storage`` (its
``__init__``). A ``__main__.py`` is a launcher that nothing imports, not a dependency
(``python -m otelbench.bench_runner`` runs ``otelbench bench``).

- ``LAYERS`` says, for every package, what of this project it may import besides itself;
  the table has no cycle, so neither have the packages;
- no cycle between modules, inside a package or across packages;
- the receiver process stays light: importing its modules loads no polars, pyarrow or
  numpy (those are the flusher's and the compactor's).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections import defaultdict, deque
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Each folder of the repository → the package it installs as (setup.py's package_dir):
# everything lives under the one ``otelbench`` namespace.
FOLDERS = {"otelbench": "otelbench", "sdk/python/otelbench_sdk": "otelbench.sdk",
           **{f: f"otelbench.{f}" for f in ("storage", "normalize", "exporters", "processors", "web", "collector",
                                             "bench_runner")}}

# Each package (or sub-package with rules of its own) → what of this project it may
# import besides itself: a package name allows all of it, a dotted name only that module.
# Bottom-up: a package imports only from rows above its own.
LAYERS: dict[str, tuple[str, ...]] = {
    # the lake: schema, Parquet I/O, compaction, derived commits, the DuckDB gateway, all SQL;
    # the one process launcher, the strict config base, the privacy settings, model labels
    "otelbench.storage": (),
    # OTLP → the lake's columns; pure: the table and column names are all it needs
    "otelbench.normalize": ("otelbench.storage.schema",),
    # the flusher's batch → normalize → storage; forwarding; each with its config
    "otelbench.exporters": ("otelbench.normalize", "otelbench.storage"),
    # the judge and failure clustering over the lake
    "otelbench.processors": ("otelbench.storage",),
    # pages and JSON over storage's one query layer, and which keys the normalizer's
    # mappings read (the doctor's report). Its live feed reads the log through
    # ``collector.tail``, which ``otelbench.runtime.web`` hands in.
    "otelbench.web": ("otelbench.storage", "otelbench.normalize.coverage"),
    # the receivers, the ingest core, the log, the flusher and compactor processes; its
    # config holds the exporters', the processors' privacy and the web's sections
    "otelbench.collector": ("otelbench.storage", "otelbench.normalize", "otelbench.exporters",
                            "otelbench.processors.config", "otelbench.web.config"),
    # the bench and suites: results reach the lake as spans sent to the collector's default
    # endpoint; the suite judge asks through the judge's endpoint and parser; a replay prices
    # its candidate by the table the lake's computed costs use
    "otelbench.bench_runner": ("otelbench.storage", "otelbench.collector", "otelbench.processors.judge",
                               "otelbench.normalize.pricing"),
    # the CLI and its commands, the runtime that starts and supervises the processes, the
    # demo, `otelbench init`, the SDK: everything but the test kit
    "otelbench": ("otelbench.storage", "otelbench.normalize", "otelbench.exporters", "otelbench.processors",
                  "otelbench.web", "otelbench.collector", "otelbench.bench_runner"),
    # the test kit: collectors, lakes, canned servers, the SDK's in-memory exporter
    "otelbench.testing": ("otelbench.storage", "otelbench.normalize", "otelbench.exporters", "otelbench.processors",
                          "otelbench.web", "otelbench.collector", "otelbench.bench_runner", "otelbench.sdk"),
}

RECEIVER = tuple(f"otelbench.collector.{m}" for m in ("service", "http_server", "grpc_server", "wiring", "encoding",
                                                      "wal", "config"))
HEAVY = ("polars", "pyarrow", "numpy")


def _module_name(path: Path) -> str:
    folder = next(f for f in FOLDERS if path.is_relative_to(ROOT / f))
    parts = [FOLDERS[folder], *path.relative_to(ROOT / folder).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    """Every module of this project's packages (compiled extensions by their source)."""
    found = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")) + sorted((ROOT / folder).rglob("*.pyx")):
            found.setdefault(_module_name(path), path)
    return found


MODULES = _modules()


def _resolve(name: str) -> str:
    """The most specific module of ours that importing ``name`` reaches ('' if none)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _imports(path: Path) -> list[tuple[str, int]]:
    """(imported name, line) for every import in one file, relative imports resolved;
    ``from pkg import x`` names ``pkg.x`` when that is a module, else ``pkg``."""
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
            found += [(f"{module}.{alias.name}" if f"{module}.{alias.name}" in MODULES else module, node.lineno)
                      for alias in node.names]
    return found


def _graph() -> dict[str, dict[str, str]]:
    """importing module → {imported module of ours: "file:line" of its first import}."""
    graph: dict[str, dict[str, str]] = defaultdict(dict)
    for module, path in MODULES.items():
        if path.suffix != ".py" or path.name == "__main__.py":
            continue
        for name, line in _imports(path):
            target = _resolve(name) if name.split(".")[0] == "otelbench" else ""
            if target and target != module:
                graph[module].setdefault(target, f"{path.relative_to(ROOT)}:{line}")
    return graph


GRAPH = _graph()


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _layer(module: str) -> str:
    return max((layer for layer in LAYERS if _within(module, layer)), key=len)


def _cycles(graph: dict[str, dict[str, str]]) -> list[tuple[frozenset[str], list[str]]]:
    """Each group of modules that import each other (a strongly connected component, by
    Tarjan's algorithm), with the shortest cycle through its first module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:  # v is the first of its group: the group is on the stack above it
            group = frozenset(stack[stack.index(v):])
            del stack[stack.index(v):]
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [(group, _shortest_cycle(graph, group)) for group in groups]


def _shortest_cycle(graph: dict[str, dict[str, str]], group: frozenset[str]) -> list[str]:
    """Breadth first from the group's first module back to it: [start, ..., start]."""
    start = min(group)
    came_from = {start: start}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        if start in graph[v]:
            path = [v]
            while path[-1] != start:
                path.append(came_from[path[-1]])
            return [*reversed(path), start]
        for w in sorted(graph[v]):
            if w in group and w not in came_from:
                came_from[w] = v
                queue.append(w)
    raise AssertionError(f"no cycle through {start}")  # a strongly connected group always has one


def _describe(group: frozenset[str], cycle: list[str], graph: dict[str, dict[str, str]]) -> str:
    edges = " → ".join(f"{b} ({graph[a][b]})" for a, b in zip(cycle, cycle[1:]))
    more = f"   [all modules of this tangle: {', '.join(sorted(group))}]" if len(group) > len(cycle) - 1 else ""
    return f"{cycle[0]} → {edges}{more}"


def test_every_package_has_its_rules() -> None:
    found = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests"}
    assert found <= set(FOLDERS), f"a new top-level package: give it a row in LAYERS and FOLDERS: {found - set(FOLDERS)}"
    assert {FOLDERS[f] for f in found} - {"otelbench"} <= set(LAYERS), "a folder without its row in LAYERS"
    allowed = {a for allows in LAYERS.values() for a in allows}
    assert all(_resolve(a) == a for a in allowed), f"LAYERS names no such module: {allowed - set(MODULES)}"


def test_the_layers_have_no_cycle() -> None:
    """Every allowed import points at an earlier row: the packages form layers, not a loop."""
    order = list(LAYERS)
    upward = [f"{layer} may import {a}" for layer, allows in LAYERS.items() for a in allows
              if order.index(_layer(a)) >= order.index(layer)]
    assert not upward, "\n".join(upward)


@pytest.mark.parametrize("layer", list(LAYERS))
def test_each_package_imports_only_what_its_row_allows(layer: str) -> None:
    bad = [f"{where}: {src} imports {dst} (allowed to {layer}: {', '.join(LAYERS[layer]) or 'nothing'})"
           for src, targets in GRAPH.items() if _layer(src) == layer
           for dst, where in targets.items()
           if _layer(dst) != layer and not any(_within(dst, a) for a in LAYERS[layer])]
    assert not bad, "\n".join(bad)


def test_no_cycle_between_modules() -> None:
    """A cycle means two modules are one concept split in two, or a shared piece living in
    one of them: move it to the module it belongs to (hiding an import inside a function
    does not remove the cycle, and this test still sees it)."""
    found = [_describe(group, cycle, GRAPH) for group, cycle in _cycles(GRAPH)]
    assert not found, "import cycles (each import: file:line):\n" + "\n".join(found)


def test_the_cycle_finder_finds_and_names_a_cycle() -> None:
    graph = {"a": {"b": "a.py:1"}, "b": {"c": "b.py:2", "d": "b.py:3"}, "c": {"a": "c.py:4", "b": "c.py:5"},
             "d": {}, "e": {"a": "e.py:6"}}
    ((group, cycle),) = _cycles(graph)
    assert group == {"a", "b", "c"}
    assert _describe(group, cycle, graph) == "a → b (a.py:1) → c (b.py:2) → a (c.py:4)"
    assert _cycles({"a": {"b": "x"}, "b": {}}) == []


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
