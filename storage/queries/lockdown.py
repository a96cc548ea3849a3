"""The statements that lock a DuckDB connection to the lake, run by ``storage.duckdb``
after the views exist, in this order (docs/security.md, "SQL confined to the lake").

TIMESTAMPTZ values come back in UTC whatever the host's zone (an ICU setting: not
accepted in duckdb.connect's config, so set before the lock).
"""

SET_TIME_ZONE_UTC = "SET TimeZone = 'UTC'"
# Parquet footers kept once read: a compacted day's file has a ~300 KB footer (50 row
# groups) that binding a union_by_name read and the scan each parse, and a run page reads a
# few days' files per statement. DuckDB keeps them in its buffer pool, within memory_limit
# (evicted like any buffer), and reads a footer anew when its file changed.
KEEP_PARQUET_FOOTERS = "SET parquet_metadata_cache = true"
SET_ALLOWED_DIRECTORIES = "SET allowed_directories = $1"  # bound: [lake folder + '/']
DISABLE_EXTERNAL_ACCESS = "SET enable_external_access = false"
LOCK_CONFIGURATION = "SET lock_configuration = true"
