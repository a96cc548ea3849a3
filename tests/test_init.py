"""``otelbench init`` on project folders as people have them (Python with uv, pip or Poetry,
JavaScript with pnpm), run as the real command; ``--install`` with a package manager that
records how it was called (the neighbour, not the thing under test); ``--check`` against a
real collector and a real ``otelbench web`` on its lake."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx

from otelbench.init.project import detect, plan
from otelbench.testing.serve import ROOT, serve_web


def init(folder: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "otelbench", "init", str(folder), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})


def tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and its hash: what init must leave as it was."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def test_a_python_project_with_uv_gets_its_instrumentations_and_nothing_is_edited(tmp_path: Path) -> None:
    project = write(tmp_path, {
        "pyproject.toml": '[project]\nname = "trip-planner"\ndependencies = ["openai>=1.40", "langgraph"]\n',
        "uv.lock": "", "src/planner/agent.py": "import anthropic\nfrom llama_index.core import VectorStoreIndex\n",
        ".venv/lib/site.py": "import crewai  # a dependency's file, not the project's\n"})
    before = tree(project)
    done = init(project, "--key", "k-123")
    assert done.returncode == 0, done.stderr
    assert tree(project) == before  # nothing written, nothing changed
    out = done.stdout
    assert "project trip-planner" in out and "anthropic: src/planner/agent.py" in out and "crewai" not in out
    assert ("uv add opentelemetry-distro opentelemetry-exporter-otlp opentelemetry-instrumentation-anthropic "
            "openinference-instrumentation-langchain openinference-instrumentation-llama-index "
            "opentelemetry-instrumentation-openai-v2") in out
    for line in ("export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318",
                 "export OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
                 "export OTEL_EXPORTER_OTLP_HEADERS=x-bench-key=k-123,x-bench-agent=trip-planner",
                 "export OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true", "export OTEL_LOGS_EXPORTER=otlp",
                 "opentelemetry-instrument python"):
        assert line in out, line


def test_requirements_and_poetry_and_setup_cfg_are_read(tmp_path: Path) -> None:
    pip = write(tmp_path / "pip", {"requirements-dev.txt": "# tools\n-r base.txt\nAnthropic==0.40 ; python_version>'3'\n"})
    assert set(detect(pip).libraries) == {"anthropic"} and detect(pip).python_manager == "pip"
    (install,) = [p.install for p in plan(detect(pip), endpoint="http://h:4318", key=None, agent=None)]
    assert install[:4] == ["python", "-m", "pip", "install"] and "opentelemetry-instrumentation-anthropic" in install
    poetry = write(tmp_path / "poetry", {"pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.11"\n'
                                                          'llama-index = "*"\n', "poetry.lock": ""})
    assert set(detect(poetry).libraries) == {"llama-index"} and detect(poetry).python_manager == "poetry"
    cfg = write(tmp_path / "cfg", {"setup.cfg": "[options]\ninstall_requires =\n    crewai>=0.1\n    requests\n"})
    assert set(detect(cfg).libraries) == {"crewai"}


def test_a_javascript_project_with_pnpm(tmp_path: Path) -> None:
    project = write(tmp_path, {"package.json": json.dumps({"name": "support-bot", "dependencies": {
        "openai": "^4", "ai": "^4", "@mastra/core": "^0.1", "express": "^4"}}), "pnpm-lock.yaml": ""})
    done = init(project)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert ("pnpm add @opentelemetry/sdk-node @opentelemetry/exporter-trace-otlp-proto @mastra/observability "
            "@mastra/otel-exporter @arizeai/openinference-instrumentation-openai") in out
    assert "experimental_telemetry" in out and "Mastra" in out and "node --import ./otel.mjs" in out
    assert "export OTEL_SERVICE_NAME=support-bot" in out and "new OpenAIInstrumentation()" in out


def test_a_project_without_llm_libraries_is_told_what_works_anyway(tmp_path: Path) -> None:
    done = init(write(tmp_path, {"app.py": "import requests\n"}))
    assert done.returncode == 0 and "No LLM library found" in done.stdout and "otelbench.sdk" in done.stdout
    assert init(tmp_path / "missing").returncode == 2


def test_install_runs_the_projects_own_package_manager_after_showing_it(tmp_path: Path) -> None:
    project = write(tmp_path / "p", {"pyproject.toml": '[project]\nname = "x"\ndependencies = ["openai"]\n',
                                     "poetry.lock": ""})
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls.txt"
    write(bin_dir, {"poetry": f"#!/bin/sh\necho \"poetry called\"\necho \"$PWD $*\" > {calls}\n"})
    (bin_dir / "poetry").chmod(0o755)
    before = tree(project)
    done = init(project, "--install", env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr
    shown = done.stdout.index("running: poetry add opentelemetry-distro")
    assert shown < done.stdout.index("poetry called")  # shown first, then run
    assert calls.read_text().split() == [str(project), "add", "opentelemetry-distro", "opentelemetry-exporter-otlp",
                                          "opentelemetry-instrumentation-openai-v2"]
    assert tree(project) == before
    missing = init(project, "--install", env={"PATH": "/nonexistent"})
    assert missing.returncode == 1 and "poetry is not installed here" in missing.stderr


def test_check_sends_a_span_and_finds_it_on_the_web(tmp_path: Path, collector) -> None:
    project = write(tmp_path / "p", {"main.py": "import openai\n"})
    endpoint = f"http://127.0.0.1:{collector.http_port}"
    with serve_web(Path(collector.config.exporters.parquet.path)) as web:
        done = init(project, "--check", "--endpoint", endpoint, "--web", web, "--agent", "checked-agent")
        assert done.returncode == 0, done.stderr
        assert f"check: ok — {web}/agents/checked-agent" in done.stdout
        profile = httpx.get(f"{web}/api/agents/checked-agent").json()
        assert profile["agent"]["runs"] == 1
    down = init(project, "--check", "--endpoint", "http://127.0.0.1:9", "--web", "http://127.0.0.1:9")
    assert down.returncode == 1 and "did not take the span" in down.stderr
