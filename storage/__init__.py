"""The lake: Parquet tables on disk (``lake``, ``derived``, ``compaction``, ``fs``) and the
one gateway that reads them (``duckdb``, with the SQL in ``queries/``)."""

DEFAULT_LAKE = "./data/lake"  # where the lake lives unless a config or --lake says otherwise


def is_remote(location: object) -> bool:
    """Whether a lake location names object storage (``s3://bucket/prefix``), not a folder.
    Here, not in ``storage.fs``, so that light processes (the receiver) can ask."""
    return str(location).startswith("s3://")
