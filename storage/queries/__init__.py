"""All SQL of otelbench, by concern — SQL lives only in this package:

- ``tables``: the lake's tables as SQL (paths, literals, one view per table);
- ``views``: the views over them (calls, tool calls, agent runs, messages) and their DDL;
- ``bench``: the bench runner's views; ``suites``: the agent suites' views;
- ``compaction``: merging small files without repeats;
- ``lockdown``: confining a connection to the lake;
- ``reports``: named queries (the summary, the demo's report, the benchmarks);
- ``processors``: what the judge and the clustering read;
- ``rollups``: building and reading the runs rollup (storage/rollups.py);
- ``search``: the rollup's rows as the run search index keeps them (storage/search_index.py);
- ``web``, ``web_models``, ``web_suites``, ``live``: what the web UI reads.

Functions only *build* SQL (pure, tested as input → SQL); ``storage.duckdb`` runs it.
"""

from __future__ import annotations

from typing import Any


def bind(statement: str, params: dict[str, Any]) -> dict[str, Any]:
    """The parameters ``statement`` names (``$name``), of ``params``: DuckDB refuses others,
    so a caller can keep one dict of everything its statements may use."""
    return {k: v for k, v in params.items() if f"${k}" in statement}
