"""``otelbench init``: find the project's LLM stack and print (or, with ``--install``, do)
the minimal setup that sends its telemetry here; ``--check`` proves the path works end to
end. It never edits the project's files (otelbench/init/, docs/init.md)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from otelbench.init.project import Plan, Project

DEFAULT_ENDPOINT = "http://127.0.0.1:4318"
DEFAULT_WEB = "http://127.0.0.1:8000"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", help="show (or install) what sends this project's LLM telemetry to otelbench",
                       description="Detect the project in the current folder (pyproject.toml, requirements*.txt, "
                       "imports, package.json) and its LLM libraries, then print the instrumentation packages, "
                       "the environment variables and a code snippet. Never edits your files.")
    p.add_argument("folder", nargs="?", type=Path, default=Path("."), help="the project (default: here)")
    p.add_argument("--endpoint", default=os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", DEFAULT_ENDPOINT),
                   help="the collector's OTLP/HTTP address (default: %(default)s)")
    p.add_argument("--key", default=os.environ.get("OTELBENCH_KEY"), help="ingest key (default: $OTELBENCH_KEY)")
    p.add_argument("--agent", default=None, help="the agent's name (default: the project's)")
    p.add_argument("--install", action="store_true",
                   help="run the install command with the package manager the project uses (shown first)")
    p.add_argument("--check", action="store_true",
                   help="send a test span (for JavaScript: through the project's own packages), wait until "
                   "otelbench shows it, print the agent's profile URL")
    p.add_argument("--web", default=DEFAULT_WEB, help="the web UI, for --check (default: %(default)s)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from otelbench.init.check import check
    from otelbench.init.project import detect, plan

    if not args.folder.is_dir():
        print(f"otelbench init: {args.folder} is not a folder", file=sys.stderr)
        return 2
    project = detect(args.folder)
    agent = args.agent or project.name
    plans = plan(project, endpoint=args.endpoint, key=args.key, agent=agent, python=sys.executable
                 if project.python_manager == "pip" and _inside(args.folder) else "python")
    _describe(project)
    for p in plans:
        _show_install(p)
        print("\n2. environment:")
        for k, v in p.env.items():
            print(f"   export {k}={v}")
        print(f"\n3. run: {p.run}\n\n   {'or in code' if p.language == 'python' else 'the code'}:\n")
        print("\n".join(f"   {line}" for line in p.snippet.splitlines()))
        for note in p.notes:
            print(f"\n   note: {note}")
    if not plans:
        print("\nNo LLM library found (looked for openai, anthropic, langchain, llama-index, crewai; for JavaScript "
              "openai, @anthropic-ai/sdk, ai, @mastra/core).\nAny OpenTelemetry SDK works as it is: "
              f"OTEL_EXPORTER_OTLP_ENDPOINT={args.endpoint} OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf; "
              "an agent with no instrumentation: otelbench.sdk (docs/sdk.md).")
    status = 0
    if args.install:
        status = _install(plans, args.folder)
    if args.check and status == 0:
        status = check(plans, args.folder, endpoint=args.endpoint, key=args.key, agent=agent, web=args.web)
    return status


def _show_install(p: Plan) -> None:
    from otelbench.init.project import shown

    title = {"python": "Python", "javascript": "JavaScript"}[p.language]
    print(f"\n{title}\n\n1. install: {' '.join(pkg for pkg in p.packages if pkg not in p.present) or 'nothing to add'}")
    if p.install:
        print(f"   {shown(p.install)}")
    if p.present:
        print(f"   (the project lists {', '.join(p.present)} already)")


def _describe(p: Project) -> None:
    langs = [name for name, on in (("Python", p.python), ("JavaScript", p.javascript)) if on]
    print(f"project {p.name} in {p.folder}: {', '.join(langs) or 'no Python or JavaScript found'}")
    for lib, where in {**p.libraries, **p.js_libraries}.items():
        print(f"  {lib}: {', '.join(where[:3])}{' …' if len(where) > 3 else ''}")


def _inside(folder: Path) -> bool:
    """Whether this Python is the project's own virtualenv (pip then installs into it)."""
    return Path(sys.prefix).resolve().is_relative_to(folder.resolve())


def _install(plans: list, folder: Path) -> int:
    for p in plans:
        if not p.install:
            continue
        from otelbench.init.project import shown

        print(f"\nrunning: {shown(p.install)}", flush=True)
        try:
            done = subprocess.run(p.install, cwd=folder)
        except FileNotFoundError:
            print(f"otelbench init: {p.install[0]} is not installed here; run the command above yourself",
                  file=sys.stderr)
            return 1
        if done.returncode != 0:
            print(f"otelbench init: the install failed (exit {done.returncode})", file=sys.stderr)
            return 1
    return 0
