"""All SQL of otelbench, by concern — SQL lives only in this package:

- ``tables``: the lake's tables as SQL (paths, literals, one view per table);
- ``views``: the views over them (calls, tool calls, agent runs, messages) and their DDL;
- ``bench``: the bench runner's views;
- ``compaction``: merging small files without repeats;
- ``lockdown``: confining a connection to the lake;
- ``reports``: named queries (the summary, the benchmarks).

Functions only *build* SQL (pure, tested as input → SQL); ``storage.duckdb`` runs it.
"""
