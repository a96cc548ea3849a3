"""One model's benchmark, end to end: speed cases, load levels, the ability and
agent-fitness suite, GGUF metadata and the plausibility verdict, as one result dict.

The result is what ``--out`` saves and ``--compare`` reads (``RESULT_SCHEMA_VERSION``):
schema_version, model, server, hardware, gguf, suite, settings, formulas, runs (raw
per-run measurements), summary, plausibility, tests, failures.

A failed request never stops the run: its kind, message and evidence (the HTTP body, the
bad line, the stream's tail) stay in ``runs`` (speed) or the test's ``error`` (suite),
every one is listed in ``failures``, and any failure is a problem (a non-zero exit).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import httpx
from opentelemetry.trace import SpanContext

from otelbench.bench_runner import plausibility, speed, stats, suites
from otelbench.bench_runner.client import ErrorKind, RunResult, http_client, measure_run
from otelbench.bench_runner.model_files import GgufLookup, Status, default_roots, file_sha256, locate_gguf
from otelbench.bench_runner.hardware import Hardware
from otelbench.bench_runner.servers import ServerInfo
from otelbench.bench_runner.spans import BenchSpans, record_reply, record_run, record_summary

RESULT_SCHEMA_VERSION = 1
QUICK_TESTS = 4  # --quick: the tests judged on the suite's first replies (distinct requests)
EVIDENCE_CHARS = 200  # of a failed request's evidence in its one-line description (speed runs keep it all)


@dataclass(frozen=True)
class Options:
    runs: int = 5
    warmup: int = 1
    quick: bool = False
    speed_only: bool = False
    concurrency: tuple[int, ...] = ()
    api_key: str | None = None
    models_dirs: tuple[Path, ...] = ()
    suite: str = suites.DEFAULT_SUITE


@dataclass
class Progress:
    """What the terminal UI hears about: one call per finished request."""

    on_request: Callable[[str], None] = lambda label: None
    on_phase: Callable[[str], None] = lambda phase: None


@dataclass
class ModelRun:
    result: dict[str, Any]
    problems: list[str] = field(default_factory=list)  # what makes the exit code non-zero


def jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: jsonable(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def gguf_section(lookup: GgufLookup) -> dict[str, Any]:
    """The model's file as the result records it: its header's facts and its sha256 (of
    the first shard, for a split model), which names the exact file a result ran on."""
    info = lookup.info
    out: dict[str, Any] = {"status": lookup.status.value, "reason": lookup.reason,
                           "candidates": [jsonable(c) for c in lookup.candidates]}
    if info is not None:
        out.update(jsonable(info))
        try:
            out["sha256"] = file_sha256(info.path)
        except OSError:  # gone or unreadable since its header was read
            out["sha256"] = None
    else:  # the keys exist either way, so readers need no special case
        out.update({"path": None, "size_bytes": None, "architecture": None, "quantization": None, "sha256": None})
    return out


def speed_plan(opts: Options) -> tuple[list[speed.SpeedCase], int, int]:
    if opts.quick:
        return [c for c in speed.CASES if c.quick], 1, min(opts.warmup, 1)
    return list(speed.CASES), opts.runs, opts.warmup


def suite_plan(opts: Options) -> suites.Suite:
    suite = suites.load_suite(opts.suite)
    return suite.first(QUICK_TESTS) if opts.quick else suite


def planned_requests(opts: Options) -> int:
    """Requests one model's run sends (for a progress bar), concurrency levels aside."""
    cases, runs, warmup = speed_plan(opts)
    return len(cases) * (runs + warmup) + (0 if opts.speed_only else suite_plan(opts).replies)


def not_offered(server: ServerInfo, model: str) -> str | None:
    """Why ``model`` cannot be benchmarked at ``server``, or None. A server that lists no
    model at all gets the benefit of the doubt."""
    if not server.models or model in {m.id for m in server.models}:
        return None
    offered = ", ".join(m.id for m in server.models[:8]) + (", …" if len(server.models) > 8 else "")
    return f"model {model!r} is not offered by {server.base_url} (it offers: {offered}; see --list)"


def describe_failure(run: RunResult) -> str:
    """A failed request in one line: kind, message, evidence (cut to EVIDENCE_CHARS: a
    stream's tail keeps its end, where it broke; a body or a bad line its start)."""
    text = f"{run.error_kind}: {run.error}"
    evidence = run.evidence or ""
    if len(evidence) > EVIDENCE_CHARS:
        tail = run.error_kind in (ErrorKind.STREAM_CUT, ErrorKind.NO_TOKENS, ErrorKind.TIMEOUT)
        evidence = "…" + evidence[-EVIDENCE_CHARS:] if tail else evidence[:EVIDENCE_CHARS] + "…"
    return text + (f" (evidence: {evidence!r})" if evidence else "")


def run_model(
    model: str,
    server: ServerInfo,
    hardware: Hardware,
    spans: BenchSpans,
    opts: Options,
    progress: Progress = Progress(),
) -> ModelRun:
    problems = [why] if (why := not_offered(server, model)) else []  # the caller should have skipped it
    base_url = server.base_url
    lookup = locate_gguf(model, server_paths=server.paths_for(model),
                         roots=default_roots(models_dirs=opts.models_dirs))
    suite = suite_plan(opts)
    cases, runs, warmup = speed_plan(opts)
    settings = {"runs": runs, "warmup": warmup, "quick": opts.quick, "speed_only": opts.speed_only,
                "concurrency": list(opts.concurrency)}
    result: dict[str, Any] = {
        "schema_version": RESULT_SCHEMA_VERSION,
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "model": model,
        "server": {"base_url": base_url, "kind": server.kind, "version": server.version},
        "hardware": jsonable(hardware),
        "gguf": gguf_section(lookup),
        "suite": {"name": suite.name, "version": suite.version, "speed": speed.SPEED_VERSION},
        "settings": settings,
        "formulas": stats.FORMULAS,
    }
    root_settings = {"server.kind": server.kind, "server.version": server.version or "unknown",
                     "speed.version": speed.SPEED_VERSION, "quick": opts.quick, "runs": runs,
                     "gguf.sha256": result["gguf"]["sha256"]}
    # the machine, so results from several machines stay apart (web: /models/{name})
    root_settings |= {"hardware.cpu": hardware.cpu.model, "hardware.gpus": [g.name for g in hardware.gpus],
                      "hardware.ram_bytes": hardware.ram_bytes}
    with http_client(httpx.Timeout(120, connect=5)) as client, \
            spans.model_run(model, base_url, suite.name, suite.version, provider=server.provider,
                            settings=root_settings) as root:
        progress.on_phase("speed")
        case_results = [
            speed.run_case(c, base_url=base_url, model=model, provider=server.provider, spans=spans, runs=runs,
                           warmup=warmup, client=client, api_key=opts.api_key,
                           on_run=lambda r, c=c: progress.on_request(c.name))
            for c in cases
        ]
        summaries = {cr.case.name: cr.summary() for cr in case_results}
        result["runs"] = {cr.case.name: [r.to_dict() for r in cr.runs] for cr in case_results}
        problems += [f"{cr.case.name}: {describe_failure(r)}" for cr in case_results for r in cr.runs if not r.ok]
        concurrency = []
        if opts.concurrency:
            progress.on_phase("concurrency")
            concurrency = speed.concurrency(
                list(opts.concurrency), base_url=base_url, model=model, runs_per_client=1 if opts.quick else 2,
                client_factory=lambda: http_client(httpx.Timeout(120, connect=5)), api_key=opts.api_key)
            for level in concurrency:
                for kind, count in level["failures"].items():
                    problems.append(f"concurrency {level['n_clients']}: {count} × {kind}")
        tests: list[suites.TestResult] = []
        if not opts.speed_only:
            progress.on_phase("suite")
            tests = _run_suite(suite, opts, model, server, spans, client, progress, problems)
        scores = suites.score(tests)
        verdict = _plausibility(case_results, lookup, hardware)
        result["summary"] = {"cases": summaries, "concurrency": concurrency,
                             "ability_score": scores["ability"], "agent_fitness_score": scores["agent_fitness"],
                             "tests_passed": sum(t.passed for t in tests), "tests_total": len(tests)}
        result["plausibility"] = verdict
        result["tests"] = [t.to_dict() | {"name": t.test} for t in tests]
        result["failures"] = problems
        headline = summaries.get("medium-200") or next(iter(summaries.values()), {})
        record_summary(root, {
            "ability_score": scores["ability"], "agent_fitness_score": scores["agent_fitness"],
            "confidence": verdict["confidence"], "reasons": [r["message"] for r in verdict["reasons"]],
            "decode_tps.median": (headline.get("decode_tps") or {}).get("median"),
            "ttft_ms.median": (headline.get("ttft_ms") or {}).get("median"),
            "prefill_tps.median": ((summaries.get("prefill-2k") or {}).get("prefill_tps") or {}).get("median"),
            "gguf.quantization": result["gguf"].get("quantization"),
            "gguf.architecture": result["gguf"].get("architecture"),
            "tests_passed": result["summary"]["tests_passed"], "tests_total": len(tests),
        }, problems)
    return ModelRun(result, problems)


class NoReply(Exception):
    """A suite request that got no whole reply; the message is its failure, evidence included."""


def _run_suite(suite: suites.Suite, opts: Options, model: str, server: ServerInfo, spans: BenchSpans,
               client: httpx.Client, progress: Progress, problems: list[str]) -> list[suites.TestResult]:
    """``suites.run_suite`` with each reply a measured, traced request and each verdict a span
    under the chat span of the reply it judged."""
    chat_spans: dict[tuple[str | None, str, int], SpanContext] = {}  # reply key → its request's span

    def complete(test: suites.SuiteTest) -> str:
        with spans.chat(model, server.base_url, server.provider, case="suite", test=test.name) as span:
            run = measure_run(server.base_url, model, test.messages(), max_tokens=test.max_tokens,
                              client=client, api_key=opts.api_key)
            record_run(span, run)
            if run.ok:
                record_reply(span, run.text, run.finish_reason)
        chat_spans[test.reply_key] = span.get_span_context()
        progress.on_request(test.name)
        if not run.ok:
            failure = describe_failure(run)
            problems.append(f"suite {test.name}: {failure}")
            raise NoReply(failure)
        return run.text

    def judged(test: suites.SuiteTest, result: suites.TestResult) -> None:
        spans.test(result, chat_spans.get(test.reply_key))

    return suites.run_suite(suite, complete, on_result=judged)


def _plausibility(case_results: list[speed.CaseResult], lookup: GgufLookup, hw: Hardware) -> dict[str, Any]:
    """Each case assessed; the worst sets the model's confidence, every reason kept with its case."""
    info = lookup.info if lookup.status == Status.READY else None
    limits = plausibility.limits_from_hardware(hw, info.size_bytes if info else None)
    per_case = {}
    reasons: list[dict[str, str]] = []
    worst = plausibility.Confidence.HIGH
    for cr in case_results:
        ok = cr.ok_runs
        if not ok:
            continue
        case = plausibility.CaseSummary.from_runs(ok, name=cr.case.name)
        a = plausibility.assess(case, info, limits)
        per_case[cr.case.name] = a.to_dict()
        if cr.case.name.startswith("prefill"):
            continue  # 8 output tokens: its decode figures are not meant to be read
        worst = max(worst, a.confidence, key=lambda c: c.rank)
        for r in a.reasons:
            reasons.append({"case": cr.case.name, "severity": r.severity.value, "code": r.code,
                            "message": f"{cr.case.name}: {r.message}"})
    if not per_case:
        worst = plausibility.Confidence.LOW
        reasons.append({"case": "*", "severity": "LOW", "code": "no_runs", "message": "no successful run to judge"})
    return {"confidence": worst.value, "reasons": reasons, "cases": per_case}
