"""``otelbench process``: run the processors once (the LLM judge, failure clustering); the
schedule ``otelbench serve`` runs them on is ``otelbench.runtime.scheduler``."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from otelbench.collector import DEFAULT_URL
from otelbench.collector.config import DEFAULT_CONFIG_PATH
from otelbench.storage import DEFAULT_LAKE


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
    p.add_argument("--rejudge", type=_count, default=None, metavar="N",
                   help="judge N already-judged runs again with the same judge (judge_repeats; the runs' scores "
                        "stay as they are) and print the judge's noise (default: processors.judge.rejudge_sample)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from otelbench.collector.config import ConfigError, load_config, parse_config
    from otelbench.runtime.processors_run import endpoint, exit_on_sigterm
    from otelbench.processors import pipeline

    try:
        path = args.config or (DEFAULT_CONFIG_PATH if Path(DEFAULT_CONFIG_PATH).exists() else None)
        config = load_config(path) if path else None
    except ConfigError as exc:
        print(f"otelbench process: {exc}", file=sys.stderr)
        return 2
    if config is None:
        config = parse_config({"receivers": {"otlp": {}}, "service": {"pipelines": {}}}, where="defaults")
    lake = args.lake or config.lake_path
    processors = config.processors
    if args.rejudge is not None:
        processors = processors.model_copy(update={"judge": processors.judge.model_copy(
            update={"rejudge_sample": args.rejudge})})
    exit_on_sigterm()
    progress, done = _progress()
    telemetry = _telemetry(config)
    try:
        with endpoint(processors, args.only) as llm:
            report = pipeline.run(processors, config.privacy, lake, llm=llm, only=args.only,
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


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: a number of runs, 0 or more")
    return int(text)


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


def noise_line(n: dict[str, Any]) -> str:
    """One judge's noise figures (storage/queries/judge_noise.py) as the report prints them."""
    share = "-" if n["noise_share"] is None else f"{100 * n['noise_share']:.1f} %"
    return (f"judge noise ({Path(n['judge_model']).name}, {n['judge_version']}): {n['runs']} runs judged again, "
            f"{n['repeats']} repeats; mean |difference| {n['mean_abs_diff']:.3f}, within-run SD {n['sd']:.3f}, "
            f"same side of 0.5 {100 * n['same_side']:.1f} %; share of the scores' variance {share} "
            f"(of {n['judged']} judged runs)")


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
        if report.rejudged:
            say(f"judge: {report.rejudged} judged runs judged again (judge_repeats)")
        for n in report.noise:
            say(noise_line(n))
    if only in (None, "clusters"):
        per_agent = ", ".join(f"{a} {n}" for a, n in sorted(report.clusters.items())) or "none"
        say(f"clusters: {report.failures} failed or low-scored runs; clusters per agent: {per_agent}")
    say(f"took {report.seconds:.1f}s")
