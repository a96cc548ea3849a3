"""One run of the processors (the LLM judge, failure clustering) as a process runs it:
the judge's endpoint (``embedded``: the embedded model server, started and stopped with
the run), SIGTERM handling, and a scheduled run's own process (``child_main``)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger("otelbench.processors")

SIGTERM_EXIT = 128 + signal.SIGTERM


def exit_on_sigterm() -> None:
    """SIGTERM unwinds like Ctrl-C: the embedded model server is stopped and the lock
    released on the way out; what was committed stays, the chunk in flight is dropped."""

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(SIGTERM_EXIT)

    signal.signal(signal.SIGTERM, stop)


@contextlib.contextmanager
def endpoint(processors: Any, only: str | None) -> Iterator[Any]:
    """The judge's endpoint for one run: ``embedded`` starts the embedded model server
    (the code of ``otelbench model serve``) and stops it when the run ends."""
    from otelbench.processors import pipeline
    from otelbench.processors.config import EMBEDDED, Processors

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
    from otelbench.bench_runner.llama_server import DEFAULT_PARALLEL, EmbeddedModelMissing, LlamaServer, LlamaServerError

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
    from otelbench.bench_runner.llama_server import find_embedded_model
    from otelbench.bench_runner.model_fetch import fetched

    return next(iter(fetched()), None) or find_embedded_model()


def child_main(processors: Any, privacy: Any, lake: str, telemetry_endpoint: str | None, parent_pid: int,
               log_level: str) -> None:
    """A scheduled run, in a process of its own (storage.process): the embedder, HDBSCAN,
    the judge and the embedded model server live and die with it."""
    from otelbench.storage.process import die_with_parent
    from otelbench.processors import pipeline

    die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # serve decides when we stop
    exit_on_sigterm()
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        with endpoint(processors, None) as llm:
            report = pipeline.run(processors, privacy, lake, llm=llm, telemetry_endpoint=telemetry_endpoint)
    except pipeline.ProcessorError as exc:
        log.error("processors: %s", exc)
        raise SystemExit(1) from None
    log.info("processors: %d runs judged (%d judge errors), %d failures in %d clusters, %.1fs", report.judged,
             report.judge_errors, report.failures, sum(report.clusters.values()), report.seconds)
    for n in report.noise if report.rejudged else []:  # only on passes that judged runs again
        log.info("processors: %d runs judged again; judge noise of %s %s over %d repeats: mean |difference| %.3f, "
                 "within-run SD %.3f", report.rejudged, n["judge_model"], n["judge_version"], n["repeats"],
                 n["mean_abs_diff"], n["sd"])
