"""The statements that lock a DuckDB connection to the lake, run by ``storage.duckdb``
after the views exist, in this order (docs/security.md, "SQL confined to the lake").

TIMESTAMPTZ values come back in UTC whatever the host's zone (an ICU setting: not
accepted in duckdb.connect's config, so set before the lock).
"""

SET_TIME_ZONE_UTC = "SET TimeZone = 'UTC'"
SET_ALLOWED_DIRECTORIES = "SET allowed_directories = $1"  # bound: [lake folder + '/']
DISABLE_EXTERNAL_ACCESS = "SET enable_external_access = false"
LOCK_CONFIGURATION = "SET lock_configuration = true"
