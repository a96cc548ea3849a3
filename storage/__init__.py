"""The lake: Parquet tables on disk (``lake``, ``derived``, ``compaction``, ``fs``) and the
one gateway that reads them (``duckdb``, with the SQL in ``queries/``)."""

DEFAULT_LAKE = "./data/lake"  # where the lake lives unless a config or --lake says otherwise
