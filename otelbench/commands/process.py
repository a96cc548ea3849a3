"""``otelbench process``: run the processors once (the LLM judge, failure clustering), and
the schedule ``otelbench serve`` runs them on (``Scheduler``, each run a process of its own)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from collector import DEFAULT_URL
from collector.config import DEFAULT_CONFIG_PATH
from storage import DEFAULT_LAKE

log = logging.getLogger("otelbench.processors")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("process", help="judge the agent runs and cluster their failures, once",
                       description="Run the processors once over the lake: the LLM judge scores every agent run "
                       "(evals), failure clustering groups the failures that keep coming back "
                       "(failure_clusters, cluster_members). Settings: the processors: section of the config "
                       "(docs/config.md); without one, the defaults (the embedded model judges).")
    p.add_argument("--config", default=None,
                   help=f"config file (default: ./{DEFAULT_CONFIG_PATH} when it exists, else the defaults)")
    p.add_argument("--lake", default=None,
                   help=f"lake folder or s3://bucket/prefix (default: the config's exporters.parquet.path, else {DEFAULT_LAKE})")
    p.add_argument("--only", choices=("judge", "clusters"), default=None, help="run one processor")
    p.add_argument("--agent", default=None, metavar="NAME", help="only this agent's runs")
    p.add_argument("--shard", type=_shard, default=None, metavar="I/N",
                   help="judge only shard I of N of the runs (by trace id), so N workers split the judging; "
                        "only shard 1 clusters the failures")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from collector.config import ConfigError, load_config, parse_config
    from processors import pipeline

    try:
        path = args.config or (DEFAULT_CONFIG_PATH if Path(DEFAULT_CONFIG_PATH).exists() else None)
        config = load_config(path) if path else None
    except ConfigError as exc:
        print(f"otelbench process: {exc}", file=sys.stderr)
        return 2
    if config is None:
        config = parse_config({"receivers": {"otlp": {}}, "service": {"pipelines": {}}}, where="defaults")
    lake = args.lake or config.lake_path
    _exit_on_sigterm()
    progress, done = _progress()
    telemetry = _telemetry(config)
    try:
        with endpoint(config.processors, args.only) as llm:
            report = pipeline.run(config.processors, config.privacy, lake, llm=llm, only=args.only,
                                  agent=args.agent, progress=progress, telemetry_endpoint=telemetry,
                                  shard=args.shard)
    except pipeline.ProcessorError as exc:
        done()
        print(f"otelbench process: {exc}", file=sys.stderr)
        return 1
    done()
    _print(report, args.only)
    if report.judge_model and telemetry is None:
        print("the judge's own calls were not traced: no collector listens (set OTEL_EXPORTER_OTLP_ENDPOINT)")
    return 0 if report.judge_errors == 0 or report.judged else 1


def _shard(text: str) -> tuple[int, int]:
    i, sep, n = text.partition("/")
    if not (sep and i.isdigit() and n.isdigit() and 1 <= int(i) <= int(n)):
        raise argparse.ArgumentTypeError(f"{text!r}: I/N with 1 <= I <= N, e.g. 2/4")
    return int(i), int(n)


SIGTERM_EXIT = 128 + signal.SIGTERM


def _exit_on_sigterm() -> None:
    """SIGTERM unwinds like Ctrl-C: the embedded model server is stopped and the lock
    released on the way out; what was committed stays, the chunk in flight is dropped."""

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(SIGTERM_EXIT)

    signal.signal(signal.SIGTERM, stop)


def _telemetry(config: Any) -> str | None:
    """Where the judge's own spans go: OTEL_EXPORTER_OTLP_ENDPOINT, else the config's
    OTLP/HTTP receiver, else the default collector URL — when something listens there
    (else they are not traced, and the report says so: an exporter retrying a closed port
    would fill stderr and hold the exit for seconds)."""
    url = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not url:
        url = DEFAULT_URL
        otlp = config.receivers.otlp
        if otlp and otlp.protocols.http and not otlp.protocols.http.endpoint.endswith(":0"):
            url = f"http://{otlp.protocols.http.endpoint}"
    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 4318), timeout=1).close()
    except OSError:
        return None
    return url


def _progress() -> tuple[Any, Any]:
    """A progress bar on a terminal; nothing in a pipe or a CI log."""
    if not sys.stderr.isatty():
        return None, lambda: None
    from rich.progress import Progress

    bar = Progress(transient=True)
    bar.start()
    tasks: dict[str, Any] = {}

    def update(step: str, done: int, total: int) -> None:
        if step not in tasks:
            tasks[step] = bar.add_task(step, total=total)
        bar.update(tasks[step], completed=done, total=total)

    return update, bar.stop


def _print(report: Any, only: str | None) -> None:
    """What the run did, each line wrapped at the terminal's width (80 in a pipe), its
    continuation indented."""
    import shutil
    import textwrap

    width = shutil.get_terminal_size().columns

    def say(text: str) -> None:
        print(textwrap.fill(text, width=max(width, 40), subsequent_indent="  ", break_long_words=False,
                            break_on_hyphens=False))

    if only in (None, "judge"):
        model = Path(report.judge_model).name if report.judge_model else "-"
        line = f"judge: {report.judged} runs judged, {report.judge_errors} judge errors"
        if report.skipped_private:
            line += f", {report.skipped_private} private runs not sent to a non-local judge"
        say(f"{line} ({model}, {report.judge_version or '-'})")
    if only in (None, "clusters"):
        per_agent = ", ".join(f"{a} {n}" for a, n in sorted(report.clusters.items())) or "none"
        say(f"clusters: {report.failures} failed or low-scored runs; clusters per agent: {per_agent}")
    say(f"took {report.seconds:.1f}s")


@contextlib.contextmanager
def endpoint(processors: Any, only: str | None) -> Iterator[Any]:
    """The judge's endpoint for one run: ``embedded`` starts the embedded model server
    (the code of ``otelbench model serve``) and stops it when the run ends."""
    from processors import pipeline
    from processors.config import EMBEDDED, Processors

    processors = processors or Processors()
    if not pipeline.needs_llm(processors, only):
        yield None
        return
    import openai

    judge = processors.judge
    if judge.endpoint != EMBEDDED:
        key = "sk-none"  # local servers take any key; the client needs one
        if judge.api_key_env is not None:
            key = os.environ.get(judge.api_key_env, "")
            if not key:
                raise pipeline.ProcessorError(f"processors.judge.api_key_env names {judge.api_key_env}, "
                                              "which is not set")
        client = openai.OpenAI(base_url=judge.endpoint, api_key=key, max_retries=0)
        yield pipeline.Llm(client, judge.model or "", judge.is_local)
        return
    from bench_runner.llama_server import DEFAULT_PARALLEL, EmbeddedModelMissing, LlamaServer, LlamaServerError

    try:  # two slots a request in flight: the judge's two kinds of request each keep their prompt prefix
        server = LlamaServer(judge.model or strongest_local_model(),
                             parallel=max(DEFAULT_PARALLEL, 2 * judge.requests_at_once)).start()
    except (LlamaServerError, EmbeddedModelMissing) as exc:
        raise pipeline.ProcessorError(f"the embedded judge could not start: {exc}") from exc
    try:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-local", max_retries=0)
        yield pipeline.Llm(client, server.model_id or "", True)
    finally:
        server.stop()


def strongest_local_model() -> Path:
    """The default embedded judge: the model ``otelbench model fetch`` provides when it
    has been fetched (a stronger judge: docs/judge.md), else the embedded SmolLM2."""
    from bench_runner.llama_server import find_embedded_model
    from bench_runner.model_fetch import fetched

    return next(iter(fetched()), None) or find_embedded_model()


# -- on a schedule, in otelbench serve -----------------------------------------------------


def child_main(processors: Any, privacy: Any, lake: str, telemetry_endpoint: str | None, parent_pid: int,
               log_level: str) -> None:
    """A scheduled run, in a process of its own (collector.child): the embedder, HDBSCAN,
    the judge and the embedded model server live and die with it."""
    from storage.process import die_with_parent
    from processors import pipeline

    die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # serve decides when we stop
    _exit_on_sigterm()
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        with endpoint(processors, None) as llm:
            report = pipeline.run(processors, privacy, lake, llm=llm, telemetry_endpoint=telemetry_endpoint)
    except pipeline.ProcessorError as exc:
        log.error("processors: %s", exc)
        raise SystemExit(1) from None
    log.info("processors: %d runs judged (%d judge errors), %d failures in %d clusters, %.1fs", report.judged,
             report.judge_errors, report.failures, sum(report.clusters.values()), report.seconds)


class Scheduler:
    """In ``otelbench serve``: a thread that starts one processors run every
    ``processors.interval_s`` (the first after one interval), one at a time."""

    def __init__(self, config: Any, telemetry_endpoint: str | None) -> None:
        self.config, self.telemetry_endpoint = config, telemetry_endpoint
        self.runs = self.failures = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._process: Any = None
        self._thread = threading.Thread(target=self._loop, name="processors", daemon=True)

    def start(self) -> Scheduler:
        self._thread.start()
        return self

    def _loop(self) -> None:
        from collector.child import Child

        cfg = self.config
        lake = cfg.lake_path
        while not self._stop.wait(cfg.processors.interval_s):
            with self._lock:
                if self._stop.is_set():
                    return
                self._process = Child(
                    "otelbench.commands.process:child_main",
                    (cfg.processors, cfg.privacy, str(lake), self.telemetry_endpoint, os.getpid(),
                     cfg.service.telemetry.log_level),
                    name="otelbench-processors",
                )
                self._process.start()
            started = time.monotonic()
            self._process.join()
            self.runs += 1
            if self._process.exitcode not in (0, SIGTERM_EXIT, -signal.SIGTERM):
                self.failures += 1
                log.error("the processors run exited with code %s after %.0fs", self._process.exitcode,
                          time.monotonic() - started)

    def stop(self) -> None:
        with self._lock:
            self._stop.set()
            process = self._process
        if process is not None and process.is_alive():
            process.terminate()  # a run stopped half-way keeps what it committed
            process.join(30)
        self._thread.join(30)
