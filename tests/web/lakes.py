"""Lakes for the web's tests, written by the real collector from real OTel SDK spans, and
plain SQL over them to check the pages' figures against."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from otelbench.testing.agent_runs import Run, send_runs
from otelbench.testing.wait import wait_for
from otelbench.storage.duckdb import open_lake


def rows(root: Path, query: str, params: dict[str, Any] | None = None) -> list[tuple]:
    with open_lake(root) as gw:
        return gw.query(query, params, max_rows=None).rows


def runs_in(root: Path) -> int:
    return rows(root, "SELECT count(*) FROM agent_runs")[0][0]


@contextmanager
def collector(tmp: Path, **overrides: Any) -> Iterator[tuple[str, Path]]:
    """A running collector on free ports (``overrides``: of its config, e.g. ``auth``):
    ``(its OTLP/HTTP URL, the lake it writes)``."""
    from otelbench.collector.wiring import Collector
    from otelbench.testing.collector import collector_config

    running = Collector(collector_config(tmp, **overrides)).start()
    try:
        yield f"http://127.0.0.1:{running.http_port}", Path(running.config.exporters.parquet.path)
    finally:
        running.stop()


def send(url: str, root: Path, runs: Sequence[Run]) -> None:
    """Send ``runs``, wait until every one is an agent run in the lake, and fold them into
    the rollups (what the web's refresher does within ``refresh_s``)."""
    before = runs_in(root)
    send_runs(url, runs)
    wait_for(lambda: runs_in(root) == before + len(runs), what=f"{len(runs)} more runs in the lake")
    fold(root)


def fold(root: Path) -> None:
    """Fold what the lake holds into its rollups now (storage/rollups.py)."""
    from otelbench.storage import rollups

    wait_for(lambda: rollups.refresh(root) is not None, what="the rollups refreshed")


def judge_and_cluster(root: Path, score: float = 0.75, privacy: Any = None) -> None:
    """Judge every run and cluster the failures with the real processors (the judge's
    endpoint a stub answering ``score``; clusters not described by an LLM; ``privacy``: the
    rules they run under, none by default), then fold."""
    import openai

    from otelbench.testing.judge_stub import MODEL, JudgeStub
    from otelbench.processors import pipeline
    from otelbench.processors.config import Clusters, Processors
    from otelbench.storage.privacy import Privacy

    with JudgeStub(score=score) as stub:
        llm = pipeline.Llm(openai.OpenAI(base_url=stub.base_url, api_key="x", max_retries=0), MODEL, True)
        pipeline.run(Processors(clusters=Clusters(describe=False)), privacy or Privacy(), root, llm=llm)
    fold(root)
