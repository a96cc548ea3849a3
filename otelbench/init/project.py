"""What ``otelbench init`` finds in a project and what it proposes: pure functions over
the project's files (nothing is ever written there).

``detect(folder)`` reads the manifests (pyproject.toml, requirements*.txt, setup.cfg,
Pipfile, package.json), the lock files that say which package manager the project uses,
and, for Python, the imports of its modules; ``plan(project, ...)`` turns the LLM libraries
found into the packages that instrument them, the environment variables that point them at
otelbench, a code snippet, and the install command of the project's own package manager.
docs/init.md.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from otelbench.init import javascript

# Python: distribution name (as in a manifest) or top-level import -> library
PY_LIBRARIES = {"openai": "openai", "anthropic": "anthropic", "langchain": "langchain",
                "langchain-core": "langchain", "langchain_core": "langchain", "langchain-openai": "langchain",
                "langchain_openai": "langchain", "langgraph": "langchain", "llama-index": "llama-index",
                "llama_index": "llama-index", "llama-index-core": "llama-index", "crewai": "crewai"}
# ... and the instrumentation that records it (one per library)
PY_INSTRUMENTATIONS = {
    "openai": "opentelemetry-instrumentation-openai-v2",  # the official one
    "anthropic": "opentelemetry-instrumentation-anthropic",  # OpenLLMetry
    "langchain": "openinference-instrumentation-langchain",
    "llama-index": "openinference-instrumentation-llama-index",
    "crewai": "openinference-instrumentation-crewai",
}
PY_BASE = ("opentelemetry-distro", "opentelemetry-exporter-otlp")  # opentelemetry-instrument, OTLP exporters
# JavaScript: otelbench/init/javascript.py
# lock file -> package manager (the first found wins)
PY_MANAGERS = (("uv.lock", "uv"), ("poetry.lock", "poetry"), ("pdm.lock", "pdm"), ("Pipfile.lock", "pipenv"),
               ("Pipfile", "pipenv"))
JS_MANAGERS = (("pnpm-lock.yaml", "pnpm"), ("yarn.lock", "yarn"), ("bun.lockb", "bun"), ("bun.lock", "bun"),
               ("package-lock.json", "npm"))
INSTALL = {"pip": "{python} -m pip install", "uv": "uv add", "poetry": "poetry add", "pdm": "pdm add",
           "pipenv": "pipenv install", "npm": "npm install", "pnpm": "pnpm add", "yarn": "yarn add", "bun": "bun add"}
SKIPPED_DIRS = {".git", ".venv", "venv", "env", "node_modules", "__pycache__", "site-packages", "dist", "build", ".tox"}
MAX_MODULES = 2000  # Python files read for imports
_IMPORT = re.compile(r"^\s*(?:from\s+([A-Za-z_][\w]*)|import\s+([A-Za-z_][\w]*))", re.MULTILINE)
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass
class Project:
    folder: Path
    name: str
    python: bool = False
    javascript: bool = False
    python_manager: str | None = None
    js_manager: str | None = None
    libraries: dict[str, list[str]] = field(default_factory=dict)  # library -> where it was seen
    js_libraries: dict[str, list[str]] = field(default_factory=dict)
    js_dependencies: dict[str, str] = field(default_factory=dict)  # package.json's, name -> range


@dataclass
class Plan:
    packages: list[str]
    install: list[str] | None  # the command, as argv; None when there is nothing to install
    env: dict[str, str]
    snippet: str
    run: str  # how to start the program with the instrumentation on
    notes: list[str]
    language: str = "python"
    present: list[str] = field(default_factory=list)  # of ``packages``, those the project lists already
    imports: dict[str, list[str]] = field(default_factory=dict)  # JavaScript: package -> names --check imports


def detect(folder: Path) -> Project:
    """What ``folder`` holds: its languages, package managers and LLM libraries."""
    folder = folder.resolve()
    p = Project(folder, _name(folder))
    for manifest in [folder / "pyproject.toml", folder / "setup.cfg", folder / "Pipfile",
                     *sorted(folder.glob("requirements*.txt")), *sorted(folder.glob("requirements/*.txt"))]:
        if manifest.is_file():
            p.python = True
            for dep in _python_deps(manifest):
                _saw(p.libraries, PY_LIBRARIES.get(dep.lower().replace(".", "-")), manifest.name)
    modules = [m for m in _python_files(folder)]
    if modules:
        p.python = True
    for module in modules[:MAX_MODULES]:
        try:
            text = module.read_text(errors="replace")
        except OSError:
            continue
        for a, b in _IMPORT.findall(text):
            _saw(p.libraries, PY_LIBRARIES.get(a or b), str(module.relative_to(folder)))
    if (folder / "package.json").is_file():
        p.javascript = True
        p.js_dependencies = javascript.dependencies(folder)
        for dep in p.js_dependencies:
            if dep in javascript.JS_LIBRARIES:
                _saw(p.js_libraries, javascript.JS_LIBRARIES[dep], f"package.json ({dep})")
    p.python_manager = next((m for lock, m in PY_MANAGERS if (folder / lock).exists()), "pip") if p.python else None
    p.js_manager = next((m for lock, m in JS_MANAGERS if (folder / lock).exists()), "npm") if p.javascript else None
    return p


def plan(p: Project, *, endpoint: str, key: str | None, agent: str | None, python: str = "python") -> list[Plan]:
    """One plan per language found with LLM libraries (none: an empty list)."""
    headers = ",".join(f"{k}={v}" for k, v in (("x-bench-key", key), ("x-bench-agent", agent)) if v)
    env = {"OTEL_SERVICE_NAME": agent or p.name, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
           "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
    if headers:
        env["OTEL_EXPORTER_OTLP_HEADERS"] = headers
    plans = []
    if p.libraries:
        packages = [*PY_BASE, *(PY_INSTRUMENTATIONS[lib] for lib in sorted(p.libraries))]
        py_env = {**env, "OTEL_TRACES_EXPORTER": "otlp", "OTEL_LOGS_EXPORTER": "otlp",
                  "OTEL_METRICS_EXPORTER": "none", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
        plans.append(Plan(packages, _install(p.python_manager or "pip", packages, python), py_env,
                          _PY_SNIPPET, "opentelemetry-instrument python your_agent.py", _py_notes(p)))
    if p.js_libraries:
        plans.append(_js_plan(p, env, endpoint=endpoint, key=key, agent=agent or p.name, python=python))
    return plans


def shown(argv: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


# -- helpers ---------------------------------------------------------------------------------

def _name(folder: Path) -> str:
    for manifest, read in ((folder / "pyproject.toml", lambda t: tomllib.loads(t).get("project", {}).get("name")),
                           (folder / "package.json", lambda t: json.loads(t).get("name"))):
        try:
            found = read(manifest.read_text()) if manifest.is_file() else None
        except (OSError, ValueError, tomllib.TOMLDecodeError):
            found = None
        if isinstance(found, str) and found:
            return found
    return folder.name


def _saw(found: dict[str, list[str]], library: str | None, where: str) -> None:
    if library is not None and where not in found.setdefault(library, []):
        found[library].append(where)


def _python_deps(manifest: Path) -> list[str]:
    """Distribution names a manifest asks for (PEP 621, Poetry, setup.cfg, Pipfile, requirements)."""
    try:
        text = manifest.read_text(errors="replace")
    except OSError:
        return []
    if manifest.suffix == ".toml" or manifest.name == "Pipfile":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return []
        specs = list(data.get("project", {}).get("dependencies", []))
        for extra in data.get("project", {}).get("optional-dependencies", {}).values():
            specs += extra
        specs += list(data.get("tool", {}).get("poetry", {}).get("dependencies", {}))
        specs += list(data.get("packages", {})) + list(data.get("dev-packages", {}))  # Pipfile
        return [m.group(1) for s in specs if (m := _REQUIREMENT.match(str(s)))]
    lines = text.splitlines()
    if manifest.suffix == ".cfg":
        lines = [ln for ln in lines if ln.startswith((" ", "\t"))]  # install_requires = ... continuation lines
    return [m.group(1) for ln in lines if not ln.strip().startswith(("#", "-")) and (m := _REQUIREMENT.match(ln))]


def _python_files(folder: Path) -> list[Path]:
    found = []
    stack = [folder]
    while stack and len(found) < MAX_MODULES:
        here = stack.pop()
        try:
            entries = sorted(here.iterdir())
        except OSError:
            continue
        for e in entries:
            if e.is_dir() and e.name not in SKIPPED_DIRS and not e.name.startswith("."):
                stack.append(e)
            elif e.suffix == ".py":
                found.append(e)
    return found


def _install(manager: str, packages: list[str], python: str) -> list[str]:
    return [*shlex.split(INSTALL[manager].format(python=python)), *packages]


def _js_plan(p: Project, env: dict[str, str], *, endpoint: str, key: str | None, agent: str, python: str) -> Plan:
    """The packages the project lacks, the code for each stack at the version it has."""
    libraries = set(p.js_libraries)
    versions = {dep: javascript.version(p.folder, dep, p.js_dependencies.get(dep))
                for dep in javascript.JS_LIBRARIES if dep in p.js_dependencies}
    ai = versions.get("ai", ("", None))[1]
    needed = javascript.packages(libraries, ai)
    missing = [pkg for pkg in needed if pkg not in p.js_dependencies]
    headers = {k: v for k, v in (("x-bench-key", key), ("x-bench-agent", agent)) if v}
    specs = javascript.install_specs(missing, versions.get("@mastra/core", ("", None))[1])
    return Plan(needed, _install(p.js_manager or "npm", specs, python) if missing else None, env,
                javascript.snippet(libraries, ai, agent=agent, endpoint=endpoint, headers=headers),
                javascript.run_line(libraries), javascript.notes(libraries, versions, agent), language="javascript",
                present=[pkg for pkg in needed if pkg in p.js_dependencies],
                imports=javascript.exports(needed, ai, libraries))


def _py_notes(p: Project) -> list[str]:
    notes = []
    if "crewai" in p.libraries or "langchain" in p.libraries:
        notes.append("LangChain and CrewAI call an LLM client too: its instrumentation records those calls "
                     "under the framework's spans.")
    return notes


_PY_SNIPPET = """# No code change is needed: start your program under opentelemetry-instrument (above).
# To set it up in code instead, before your LLM client is created:
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

provider = TracerProvider()  # reads OTEL_SERVICE_NAME and the OTEL_EXPORTER_OTLP_* variables
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)
# then, per library found: e.g. OpenAIInstrumentor().instrument()
#   (from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor)"""
