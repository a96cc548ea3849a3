"""Running the processors once: what to do is read from the lake, the pure judge and
clustering functions do it, their results are written back. The I/O edges of processors/.

- One run at a time per lake: ``<lake>/_processors.lock`` (a second ``otelbench process``
  is refused with a clear message, never doubled).
- Crash-safe: judge scores are committed in small chunks (``evals``: a crash loses at most
  the chunk in flight, and the runs already scored are not judged again); an agent's
  clusters are committed whole (``Lake.replace``).
- The endpoint is checked before anything is judged: when it is down the run stops with
  one line, nothing written.
- Re-judging (``processors.judge.rejudge_sample``): after the judge step, that many judged
  runs are judged again by the same judge into ``judge_repeats`` (never ``evals``: a run
  keeps one score), and the judge's noise figures over every repeat so far are reported.
"""

from __future__ import annotations

import datetime as dt
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otelbench.processors.config import Processors
from otelbench.storage.duckdb import QueryError, open_lake
from otelbench.storage.fs import LakeBusy
from otelbench.storage.lake import Lake
from otelbench.storage.privacy import Privacy
from otelbench.storage.queries import judge_noise
from otelbench.storage.queries import processors as q
from otelbench.storage.queries.tables import table_glob

if TYPE_CHECKING:
    import polars as pl

LOCK_NAME = "_processors.lock"
JUDGE_CHUNK = 8  # runs judged between two commits (at least 2 × concurrency): what a crash can cost
# The runs to judge are read in parts (RUNS_TO_JUDGE): one per JUDGE_PART_SPANS spans at
# first, twice as many after a part ran out of the gateway's memory, up to JUDGE_MAX_PARTS.
# A statement over a whole lake holds every candidate run's texts (benchmarks/judge_memory.py).
JUDGE_PART_SPANS = 1_000_000
JUDGE_MAX_PARTS = 256
STEPS = ("judge", "clusters")


class ProcessorError(RuntimeError):
    """A run that cannot go on (endpoint down, another run holding the lake): one line."""


@dataclass
class Report:
    judged: int = 0  # runs scored
    judge_errors: int = 0  # runs whose answer was unusable (stored with the raw text)
    skipped_private: int = 0  # runs not sent: private, and the endpoint is not local
    rejudged: int = 0  # judged runs judged again (judge_repeats rows with a score)
    noise: list[dict[str, Any]] = field(default_factory=list)  # JUDGE_NOISE rows, one per judge
    judge_model: str | None = None
    judge_version: str | None = None
    failures: int = 0  # failed or low-scored runs clustered
    clusters: dict[str, int] = field(default_factory=dict)  # agent → clusters
    seconds: float = 0.0


Progress = Callable[[str, int, int], None]  # (step, done, total)


def run(processors: Processors | None, privacy: Privacy, lake_root: str | Path, *, llm: Llm | None,
        only: str | None = None, agent: str | None = None, now: Callable[[], dt.datetime] | None = None,
        progress: Progress | None = None, telemetry_endpoint: str | None = None,
        shard: tuple[int, int] | None = None) -> Report:
    """Judge and cluster once (``only``: one step; ``agent``: one agent's runs) with the
    endpoint ``llm`` (None when ``needs_llm`` is false).

    ``shard`` (i, n), 1 ≤ i ≤ n: judge only the runs of shard i of n (``in_shard``), so n
    workers — on one machine or several sharing a lake in a bucket — split the judging,
    each under its own lock. Clustering needs every run's score: only shard 1 clusters
    (after the others are done, ``--only clusters`` clusters everything anew)."""
    processors = processors or Processors()
    now = now or (lambda: dt.datetime.now(dt.timezone.utc))
    progress = progress or (lambda step, done, total: None)
    started = time.monotonic()
    lake = Lake(lake_root)
    lake.init(signals=False)  # the collector's compactions are its own to settle
    report = Report()
    lock = LOCK_NAME if shard is None else LOCK_NAME.replace(".lock", f"-{shard[0]}of{shard[1]}.lock")
    try:
        with lake.fs.lock(lake.fs.path(lock), wait=False):
            since = now() - dt.timedelta(hours=processors.window_hours)
            if only in (None, "judge") and processors.judge.enabled:
                _judge(lake, processors, privacy, llm, since, agent, now, progress, report, telemetry_endpoint,
                       shard)
                if processors.judge.rejudge_sample and (shard is None or shard[0] == 1):
                    _rejudge(lake, processors, privacy, llm, since, agent, now, progress, report, telemetry_endpoint)
                report.noise = noise(lake.location)
            if only in (None, "clusters") and processors.clusters.enabled and (shard is None or shard[0] == 1):
                _cluster(lake, processors, privacy, llm, since, agent, now, progress, report)
    except LakeBusy:
        which = "" if shard is None else f" as shard {shard[0]}/{shard[1]}"
        raise ProcessorError(f"another otelbench process is running the processors{which} on {lake.location}: "
                             "wait for it to finish") from None
    report.seconds = time.monotonic() - started
    return report


# -- the endpoint ------------------------------------------------------------------------


@dataclass
class Llm:
    """The judge's endpoint for a run (the clustering's descriptions use it too), opened by
    the caller (otelbench process / serve: the embedded model server lives there)."""

    client: Any  # an openai.OpenAI
    model: str
    local: bool  # on a machine the operator controls: private runs may be sent


def needs_llm(processors: Processors, only: str | None) -> bool:
    return ((only in (None, "judge") and processors.judge.enabled)
            or (only in (None, "clusters") and processors.clusters.enabled and processors.clusters.describe))


# -- the judge ---------------------------------------------------------------------------


def sample(runs: pl.DataFrame, share: float) -> pl.DataFrame:
    """The same share of runs every time: those whose trace id hashes below it."""
    if share >= 1:
        return runs
    bound = int(share * 2**32)
    keep = [zlib.crc32(t.encode()) < bound for t in runs["trace_id"]]
    return runs.filter(keep)


def in_shard(runs: pl.DataFrame, shard: tuple[int, int] | None) -> pl.DataFrame:
    """The runs of shard i of n: those whose trace id hashes to i - 1 modulo n (the same
    runs every time, whoever asks: the shards never overlap and leave none out)."""
    if shard is None:
        return runs
    i, n = shard
    return runs.filter([zlib.crc32(t.encode()) % n == i - 1 for t in runs["trace_id"]])


def hidden_by(privacy: Privacy) -> dict[str, list[str]]:
    """The parameters by which the processors' statements leave a private sub-agent's or
    owner's spans out of another run's texts (storage/queries/processors.py)."""
    return {"private_agents": list(privacy.private_agents), "private_owners": list(privacy.private_owners)}


def of_runs(runs: pl.DataFrame) -> dict[str, list[Any]]:
    """``runs``' trace ids, agents and owners, for TOOL_CALLS_OF_RUNS and ERRORS_OF_RUNS."""
    return {"trace_ids": runs["trace_id"].to_list(), "agents": runs["agent"].to_list(),
            "owners": runs["owner"].to_list()}


def withhold_private(runs: pl.DataFrame, privacy: Privacy, local: bool) -> tuple[pl.DataFrame, int]:
    """Runs whose inputs and outputs may go to this endpoint, and how many may not."""
    if local:
        return runs, 0
    keep = [not privacy.restricted(a, o) for a, o in zip(runs["agent"], runs["owner"])]
    kept = runs.filter(keep)
    return kept, runs.height - kept.height


def runs_to_judge(gateway: Any, params: dict[str, Any]) -> pl.DataFrame:
    """RUNS_TO_JUDGE over the whole lake, part by part, newest first."""
    import polars as pl

    files = {"span_files": table_glob(gateway.root, "spans"), "log_files": table_glob(gateway.root, "logs")}
    spans = gateway.query(q.SPAN_ROWS, max_rows=None).rows[0][0]
    parts = min(max(1, -(-spans // JUDGE_PART_SPANS)), JUDGE_MAX_PARTS)
    while True:
        try:
            found = [gateway.polars(q.RUNS_TO_JUDGE, {**params, **files, "parts": parts, "part": part},
                                    max_rows=None, timeout_s=None) for part in range(parts)]
        except QueryError as exc:
            if exc.kind != "memory" or parts >= JUDGE_MAX_PARTS:
                raise
            parts = min(2 * parts, JUDGE_MAX_PARTS)
            continue
        return pl.concat(found).sort("start_time", "trace_id", descending=[True, False])


def _summarized(judge_pkg: Any, gateway: Any, runs: pl.DataFrame, privacy: Privacy) -> pl.DataFrame:
    """``runs`` with the judge's summary of their tool calls and errors."""
    ids = {**of_runs(runs), **hidden_by(privacy)}
    return judge_pkg.with_summaries(runs, gateway.polars(q.TOOL_CALLS_OF_RUNS, ids, max_rows=None, timeout_s=None),
                                    gateway.polars(q.ERRORS_OF_RUNS, ids, max_rows=None, timeout_s=None))


def _check_endpoint(judge_pkg: Any, llm: Llm) -> None:
    try:
        judge_pkg.check_endpoint(llm.client, llm.model)
    except judge_pkg.JudgeEndpointError as exc:
        raise ProcessorError(str(exc)) from exc


def _judge(lake: Any, processors: Processors, privacy: Privacy, llm: Llm | None, since: dt.datetime,
           agent: str | None, now: Callable[[], dt.datetime], progress: Progress, report: Report,
           telemetry_endpoint: str | None, shard: tuple[int, int] | None = None) -> None:
    from otelbench.processors import judge as judge_pkg  # heavy: loaded only when the judge runs

    assert llm is not None
    cfg = processors.judge
    try:
        prompt = judge_pkg.load_prompt(cfg.prompt)
    except judge_pkg.PromptError as exc:
        raise ProcessorError(f"processors.judge.prompt: {exc}") from exc
    report.judge_model, report.judge_version = llm.model, prompt.version
    params = {"since": since, "agent": agent, "judge_model": llm.model, "judge_version": prompt.version,
              "max_attempts": cfg.max_attempts}
    with open_lake(lake.location) as gateway:
        runs = runs_to_judge(gateway, params)
        runs, report.skipped_private = withhold_private(in_shard(sample(runs, cfg.sample), shard), privacy, llm.local)
        if runs.height == 0:
            return
        runs = _summarized(judge_pkg, gateway, runs, privacy)
    _check_endpoint(judge_pkg, llm)
    step = max(JUDGE_CHUNK, 2 * cfg.requests_at_once)
    with judge_pkg.traced(llm.client, telemetry_endpoint) as client:
        for start in range(0, runs.height, step):
            chunk = runs.slice(start, step)
            attempts = dict(zip(chunk["trace_id"], chunk["attempts_so_far"]))
            try:
                evals = judge_pkg.judge_runs(chunk, client=client, model=llm.model, prompt=prompt, now=now,
                                             concurrency=cfg.requests_at_once, max_input_tokens=cfg.max_input_tokens,
                                             attempts_so_far=attempts)
            except judge_pkg.JudgeEndpointError as exc:  # it went away mid-pass: what is written stays
                raise ProcessorError(f"{exc} (after {report.judged + report.judge_errors} runs judged and "
                                     "written; the next pass goes on from there)") from exc
            lake.append("evals", evals)
            errors = int(evals["score"].is_null().sum())
            report.judged += evals.height - errors
            report.judge_errors += errors
            progress("judge", min(start + step, runs.height), runs.height)


def _rejudge(lake: Any, processors: Processors, privacy: Privacy, llm: Llm | None, since: dt.datetime,
             agent: str | None, now: Callable[[], dt.datetime], progress: Progress, report: Report,
             telemetry_endpoint: str | None) -> None:
    """Judge ``rejudge_sample`` judged runs again (processors.judge.repeats) into
    ``judge_repeats``, in one commit: a crash before it leaves no partial repeat."""
    import polars as pl

    from otelbench.processors import judge as judge_pkg  # heavy: loaded only when the judge runs

    assert llm is not None
    cfg = processors.judge
    prompt = judge_pkg.load_prompt(cfg.prompt)  # _judge has checked that it loads
    params = {"since": since, "agent": agent, "judge_model": llm.model, "judge_version": prompt.version}
    with open_lake(lake.location) as gateway:
        candidates = gateway.polars(q.RUNS_TO_REJUDGE, params, max_rows=None, timeout_s=None)
        chosen = judge_pkg.rejudge_sample(candidates, cfg.rejudge_sample)
        if chosen.height == 0:
            return
        runs = gateway.polars(q.RUNS_OF_IDS, {"trace_ids": chosen["trace_id"].to_list()}, max_rows=None,
                              timeout_s=None)
        runs, withheld = withhold_private(runs, privacy, llm.local)
        report.skipped_private += withheld
        if runs.height == 0:
            return
        runs = _summarized(judge_pkg, gateway, runs, privacy)
    _check_endpoint(judge_pkg, llm)
    with judge_pkg.traced(llm.client, telemetry_endpoint) as client:
        try:
            evals = judge_pkg.judge_runs(runs, client=client, model=llm.model, prompt=prompt, now=now,
                                         concurrency=cfg.requests_at_once, max_input_tokens=cfg.max_input_tokens)
        except judge_pkg.JudgeEndpointError as exc:
            raise ProcessorError(f"{exc} (while judging runs again; no repeat written)") from exc
    repeats = judge_pkg.as_repeats(evals, chosen.filter(pl.col("trace_id").is_in(runs["trace_id"].to_list())))
    lake.append("judge_repeats", repeats)
    report.rejudged = int(repeats["score"].is_not_null().sum())
    progress("rejudge", runs.height, runs.height)


def noise(lake_root: str | Path) -> list[dict[str, Any]]:
    """The judge's noise over every repeat in the lake, one dict per judge model and
    version (storage/queries/judge_noise.py); empty when nothing was judged again."""
    with open_lake(lake_root) as gateway:
        found = gateway.query(judge_noise.JUDGE_NOISE, max_rows=None)
    return [dict(zip(found.columns, row)) for row in found.rows]


# -- failure clustering ------------------------------------------------------------------


def _cluster(lake: Any, processors: Processors, privacy: Privacy, llm: Llm | None, since: dt.datetime,
             agent: str | None, now: Callable[[], dt.datetime], progress: Progress, report: Report) -> None:
    import polars as pl

    from otelbench.processors import clustering  # heavy: loaded only when clustering runs

    cfg = processors.clusters
    with open_lake(lake.location) as gateway:
        failures = gateway.polars(q.FAILURES, {"since": since, "agent": agent, "score_below": cfg.score_below,
                                               **hidden_by(privacy)}, max_rows=None, timeout_s=None)
        known = [r[0] for r in gateway.query(q.CLUSTERED_AGENTS, max_rows=None).rows]
        agents = sorted(set(failures["agent"].to_list()) | {a for a in known if agent in (None, a)})
        previous = {a: clustering.ClusterResult.from_tables(
            gateway.polars(q.CLUSTERS_OF_AGENT, {"agent": a}, max_rows=None),
            gateway.polars(q.MEMBERS_OF_AGENT, {"agent": a}, max_rows=None)) for a in agents}
    if not agents:
        return
    embedder = clustering.make_embedder(cfg.embedder, cfg.embedding_model)
    describe = clustering.llm_describer(llm.client, llm.model) if (cfg.describe and llm is not None) else None
    report.failures = failures.height
    for i, name in enumerate(agents):
        def cluster(mine: pl.DataFrame, before: clustering.ClusterResult) -> clustering.ClusterResult:
            # the descriptions quote failures: a restricted run's text goes only to a local endpoint
            private = not (llm and llm.local) and any(privacy.restricted(a, o)
                                                      for a, o in zip(mine["agent"], mine["owner"]))
            return clustering.cluster_failures(mine, embedder=embedder, describe=None if private else describe,
                                               previous=before, now=now(), min_cluster_size=cfg.min_cluster_size,
                                               score_below=cfg.score_below, merge_cosine=cfg.merge_cosine)

        result = cluster_apart(failures.filter(pl.col("agent") == name), name, privacy, previous[name], cluster)
        # members first: a reader between the two commits sees the new members with the old
        # clusters' ids for a moment, never clusters without members
        lake.replace("cluster_members", result.members, {"agent": name})
        lake.replace("failure_clusters", result.clusters, {"agent": name})
        report.clusters[name] = result.clusters.height
        progress("clusters", i + 1, len(agents))


def cluster_apart(mine: pl.DataFrame, agent: str, privacy: Privacy, previous: Any,
                  cluster: Callable[[pl.DataFrame, Any], Any]) -> Any:
    """One agent's clusters: its runs that everyone may see, and each private owner's runs
    (``privacy.private_owners``) apart, each group by ``cluster(failures, previous)``, in
    one result with ids that never collide. A reader not granted an owner then sees the
    agent's clusters, terms and descriptions made without that owner's runs (the web shows
    a cluster only over the runs its reader may see: storage/queries/web.py)."""
    import polars as pl

    from otelbench.processors.clustering import ClusterResult  # heavy: loaded only when clustering runs

    hidden = pl.col("owner").is_in(list(privacy.private_owners)).fill_null(False)
    owners = sorted({o for o in mine.filter(hidden)["owner"]})
    parts = [mine.filter(~hidden), *(mine.filter(pl.col("owner") == o) for o in owners)]
    results: list[Any] = []
    params = dict(previous.params.get(agent, {}))
    for part in parts:
        used = [c for r in results for c in r.clusters["cluster_id"]]  # an id taken by a group before
        before = ClusterResult(previous.clusters.filter(~pl.col("cluster_id").is_in(used)),
                               previous.members.filter(~pl.col("cluster_id").is_in(used)), {agent: params})
        found = cluster(part, before)
        params = found.params.get(agent, params)
        results.append(found)
    if len(results) == 1:
        return results[0]
    return ClusterResult(pl.concat([r.clusters for r in results]).sort("cluster_id"),
                         pl.concat([r.members for r in results]).sort(["cluster_id", "trace_id"]), {agent: params})
