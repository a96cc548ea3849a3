"""Running an agent on a suite: ``otelbench suite run SUITE --agent "COMMAND"``.

The agent command runs once per case × repeat, in its own process group, with the case
on stdin and in the environment (``OTELBENCH_CASE_*``, ``TRACEPARENT`` so the agent's own
OTel spans join the case's trace). Its stdout is its answer. The runner enforces the
suite's time limit per case, stops an agent that floods stdout, and keeps the evidence —
stdout, exit status, stderr's tail, the checker's verdict and reason — whatever happens:
an agent that hangs, crashes or prints garbage fails that case and the run goes on.

Verdicts: ``pass`` and ``fail`` are the agent's; ``error`` is a case the checker could not
score (the judge unreachable): it is left out of the pass rate and counted apart.
docs/suites.md has the contract an agent sees.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import signal
import subprocess
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.trace import format_span_id, format_trace_id, set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from otelbench.bench_runner import environment
from otelbench.bench_runner.agent_suite import AgentSuite, Case, check, check_python
from otelbench.bench_runner.hardware import probe_hardware
from otelbench.bench_runner.model_files import file_sha256
from otelbench.bench_runner.servers import identify
from otelbench.bench_runner.stats import wilson_95
from otelbench.bench_runner.suites import Verdict

MAX_STDOUT_BYTES = 1 << 20  # more than this and the agent is stopped: the case fails as a flood
STDERR_TAIL_BYTES = 4096
KILL_GRACE_S = 2.0  # between SIGTERM and SIGKILL to the agent's process group


@dataclass(frozen=True)
class Trial:
    """One case × repeat: what the agent did and the verdict on it."""

    case_id: str
    repeat: int  # 1-based
    checker: str
    verdict: str  # pass | fail | error
    reason: str
    answer: str  # the agent's stdout, whole (up to MAX_STDOUT_BYTES), stripped
    stdout_bytes: int
    stderr_tail: str
    exit_code: int | None  # None: killed (timeout, flood) or never started
    timed_out: bool
    flooded: bool
    duration_s: float
    trace_id: str = ""
    span_id: str = ""

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


@dataclass
class Finished:
    """What one agent process left behind."""

    stdout: bytes = b""
    stdout_bytes: int = 0
    stderr_tail: bytes = b""
    exit_code: int | None = None
    timed_out: bool = False
    flooded: bool = False
    start_error: str | None = None
    duration_s: float = 0.0

    @property
    def answer(self) -> str:
        """What the agent printed on stdout, stripped: its answer."""
        return _text(self.stdout).strip()


def case_input_text(case: Case) -> str:
    return case.input if isinstance(case.input, str) else json.dumps(case.input, ensure_ascii=False)


def agent_env(base: Mapping[str, str], suite: AgentSuite, case: Case, repeat: int, run_id: str,
              traceparent: str | None, otlp_endpoint: str | None) -> dict[str, str]:
    """The agent's environment: the caller's (without what otelbench set for itself:
    ``bench_runner.environment``), plus the case and where its telemetry goes."""
    env = environment.users(base)
    env.update({
        "OTELBENCH_CASE_ID": case.id,
        "OTELBENCH_CASE_INPUT": case_input_text(case),
        "OTELBENCH_SUITE": suite.spec.name,
        "OTELBENCH_SUITE_VERSION": suite.version,
        "OTELBENCH_SUITE_DIR": str(suite.folder.resolve()),
        "OTELBENCH_REPEAT": str(repeat),
        "OTELBENCH_RUN_ID": run_id,
    })
    if traceparent:
        env["TRACEPARENT"] = traceparent
    if otlp_endpoint and "OTEL_EXPORTER_OTLP_ENDPOINT" not in env:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = otlp_endpoint
    return env


def run_agent(command: str, stdin_text: str, env: Mapping[str, str], time_limit_s: float,
              max_stdout: int = MAX_STDOUT_BYTES) -> Finished:
    """Run ``command`` (a shell command line) once; never raises for what the agent does."""
    out = Finished()
    started = time.monotonic()
    try:
        proc = subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=dict(env), start_new_session=True)
    except OSError as exc:
        out.start_error = f"could not start the agent: {exc}"
        return out
    flooded = threading.Event()
    chunks: list[bytes] = []
    tail: deque[bytes] = deque()

    def feed() -> None:
        try:
            proc.stdin.write(stdin_text.encode())  # type: ignore[union-attr]
        except OSError:
            pass  # the agent did not read its input: its business
        finally:
            try:
                proc.stdin.close()  # type: ignore[union-attr]
            except OSError:
                pass

    def read_stdout() -> None:
        while chunk := proc.stdout.read1(65536):  # type: ignore[union-attr]
            out.stdout_bytes += len(chunk)
            if out.stdout_bytes > max_stdout:
                flooded.set()
                _stop(proc)
                break
            chunks.append(chunk)

    def read_stderr() -> None:
        kept = 0
        while chunk := proc.stderr.read1(65536):  # type: ignore[union-attr]
            tail.append(chunk)
            kept += len(chunk)
            while kept - len(tail[0]) >= STDERR_TAIL_BYTES:
                kept -= len(tail.popleft())

    threads = [threading.Thread(target=t, daemon=True) for t in (feed, read_stdout, read_stderr)]
    for t in threads:
        t.start()
    try:
        proc.wait(timeout=time_limit_s)
    except subprocess.TimeoutExpired:
        out.timed_out = True
        _stop(proc)
        proc.wait()
    for t in threads:
        t.join(5)
    out.duration_s = time.monotonic() - started
    out.flooded = flooded.is_set()
    out.exit_code = None if (out.timed_out or out.flooded) else proc.returncode
    out.stdout = b"".join(chunks)
    out.stderr_tail = b"".join(tail)[-STDERR_TAIL_BYTES:]
    return out


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the agent's process group, SIGKILL it after a grace period."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=KILL_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue


Judge = Callable[[Case, str], Verdict]  # raises JudgeUnavailable when it cannot score


class JudgeUnavailable(RuntimeError):
    """The judge could not score a case (no endpoint, endpoint down): verdict ``error``."""


def score(suite: AgentSuite, case: Case, finished: Finished, judge: Judge | None) -> tuple[str, str]:
    """The verdict (pass | fail | error) and its reason, from what the agent left."""
    limit = suite.spec.time_limit_s
    if finished.start_error:
        return "fail", finished.start_error
    if finished.timed_out:
        return "fail", f"timed out after {limit:g} s (the time limit per case)"
    if finished.flooded:
        return "fail", f"stopped: printed more than {MAX_STDOUT_BYTES} bytes on stdout"
    if finished.exit_code:
        last = _text(finished.stderr_tail).strip().splitlines()[-1:] or [""]
        how = f"killed by signal {-finished.exit_code}" if finished.exit_code < 0 else f"exited with {finished.exit_code}"
        return "fail", f"the agent {how}" + (f": {last[0][:300]}" if last[0] else "")
    answer = finished.answer
    if not answer:
        return "fail", "the agent printed no answer on stdout"
    kind = case.check.kind
    try:
        if kind == "python":
            verdict = check_python(suite, case, answer)
        elif kind == "judge":
            if judge is None:
                return "error", "no judge to score this case (--judge)"
            verdict = judge(case, answer)
        else:
            verdict = check(case, answer)
    except JudgeUnavailable as exc:
        return "error", f"the judge could not score it: {exc}"
    return ("pass" if verdict.passed else "fail"), verdict.reason


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


@dataclass
class SuiteRun:
    """One run of one agent on one suite."""

    suite: AgentSuite
    command: str
    agent: str | None = None  # the name results are filed under (default: what its spans name)
    repeats: int | None = None
    concurrency: int = 1
    otlp_endpoint: str | None = None
    judge: Judge | None = None
    cases_in_suite: int | None = None  # when only some cases run (--cases): the run is partial
    model_file: Path | None = None  # the model file the agent's server serves: its sha256 joins the manifest
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])

    @functools.cached_property
    def manifest(self) -> dict[str, Any]:
        """What this run runs on (``manifest``), read once: the model file is hashed once."""
        return manifest(self.command, self.env, self.model_file)

    @property
    def repeats_each(self) -> int:
        """Repeats per case: ``repeats``, else the suite's own."""
        return self.repeats or self.suite.spec.repeats

    def trials_planned(self) -> list[tuple[Case, int]]:
        return [(case, r) for r in range(1, self.repeats_each + 1) for case in self.suite.spec.cases]

    def run(self, spans: Any, on_trial: Callable[[Trial], None] | None = None) -> list[Trial]:
        """Every case × repeat (``concurrency`` at once); ``spans`` is a bench_runner.spans
        BenchSpans (a no-op one without an endpoint)."""
        planned = self.trials_planned()
        settings = {"repeats": self.repeats_each, "concurrency": self.concurrency,
                    "cases": len(self.suite.spec.cases), "time_limit_s": self.suite.spec.time_limit_s,
                    "cases_in_suite": self.cases_in_suite or len(self.suite.spec.cases),
                    **{f"manifest.{k}": v for k, v in self.manifest.items()}}
        with spans.suite_run(self.suite, self.run_id, self.command, self.agent, settings) as run_span:
            run_context = run_span.get_span_context()

            def one(item: tuple[Case, int]) -> Trial:
                trial = self._one(spans, run_context, *item)
                if on_trial is not None:
                    on_trial(trial)
                return trial

            with ThreadPoolExecutor(max(1, self.concurrency), thread_name_prefix="suite-case") as pool:
                trials = list(pool.map(one, planned))
            spans.record_suite_summary(run_span, summary(trials))
        return trials

    def _one(self, spans: Any, run_context: Any, case: Case, repeat: int) -> Trial:
        text = case_input_text(case)
        with spans.suite_case(self.suite, self.run_id, case, repeat, self.command, self.agent, run_context,
                              text) as span:
            ctx = span.get_span_context()
            carrier: dict[str, str] = {}  # W3C trace context of the case span (nothing for a no-op span)
            TraceContextTextMapPropagator().inject(carrier, set_span_in_context(span))
            env = agent_env(self.env, self.suite, case, repeat, self.run_id, carrier.get("traceparent"),
                            self.otlp_endpoint)
            finished = run_agent(self.command, text, env, self.suite.spec.time_limit_s)
            verdict, reason = score(self.suite, case, finished, self.judge)
            trial = Trial(case_id=case.id, repeat=repeat, checker=case.check.kind, verdict=verdict,
                          reason=reason, answer=finished.answer, stdout_bytes=finished.stdout_bytes,
                          stderr_tail=_text(finished.stderr_tail), exit_code=finished.exit_code,
                          timed_out=finished.timed_out, flooded=finished.flooded,
                          duration_s=finished.duration_s,
                          trace_id=format_trace_id(ctx.trace_id) if ctx.is_valid else "",
                          span_id=format_span_id(ctx.span_id) if ctx.is_valid else "")
            spans.record_suite_case(span, trial)
        return trial


def manifest(command: str, env: Mapping[str, str], model_file: Path | None = None) -> dict[str, Any]:
    """What a run ran on, recorded on its span (``bench.suite.manifest.*``) so that
    ``otelbench gate`` can name what differs between two runs: the agent command's sha256
    (the span keeps only its first 500 characters), the machine, otelbench's and Python's
    versions, the host of ``OPENAI_BASE_URL`` (without credentials or path), the server
    behind it (kind and version as ``bench_runner.servers`` learns them, "unknown" when it
    cannot), and the model file's name and sha256 when the caller names it."""
    hw = probe_hardware(measure_bandwidth=False)
    out: dict[str, Any] = {
        "agent_command_sha256": hashlib.sha256(command.encode()).hexdigest(),
        "hardware.cpu": hw.cpu.model, "hardware.gpus": [g.name for g in hw.gpus], "hardware.ram_bytes": hw.ram_bytes,
        "otelbench_version": metadata.version("otelbench"), "python_version": platform.python_version(),
    }
    if base := env.get("OPENAI_BASE_URL"):
        url = urlsplit(base)
        out["server.address"] = f"{url.hostname}:{url.port}" if url.port else (url.hostname or "")
    out["server.name"], out["server.version"] = identify(base, env.get("OPENAI_API_KEY") or "local")
    if model_file is not None:
        out["model_file"] = model_file.name
        out["model_file_sha256"] = file_sha256(model_file)
    return out


def summary(trials: list[Trial]) -> dict[str, Any]:
    """Pass rate over the scored trials with its Wilson 95 % interval (the views compute
    the same from the spans: storage/queries/suites.py)."""
    scored = [t for t in trials if t.verdict != "error"]
    passed = sum(t.passed for t in scored)
    low, high = wilson_95(passed, len(scored))
    return {"trials": len(trials), "scored": len(scored), "passed": passed,
            "failed": len(scored) - passed, "errors": len(trials) - len(scored),
            "pass_rate": passed / len(scored) if scored else None, "pass_rate_low": low, "pass_rate_high": high}


def evidence(run: SuiteRun, trials: list[Trial]) -> dict[str, Any]:
    """The run as JSON: settings, summary and every trial (kept beside the spans)."""
    return {"suite": run.suite.spec.name, "suite_version": run.suite.version, "run_id": run.run_id,
            "agent": run.agent, "agent_command": run.command,
            "repeats": run.repeats_each, "concurrency": run.concurrency, "manifest": run.manifest,
            "summary": summary(trials), "trials": [asdict(t) for t in trials]}
