"""The rollups' SQL (storage/rollups.py builds and keeps them; docs/schema.md, "Rollups").

``runs``: one row per agent run, the columns of the ``agent_runs`` view that the web shows
(plus reported/computed cost and previews of the task and the answer), computed *by that
view* — over the whole lake for a first build, over the touched traces' spans after that
— so the rollup and the view cannot disagree by construction of a second rule.

Readers see the rollup as ``base`` rows not replaced by the small ``delta`` file, plus
the delta's live rows (``RUNS_CTE``); a delta row with a NULL agent is a tombstone (the
trace is no longer a run).
"""

from __future__ import annotations

from otelbench.storage.queries.runs import COSTED
from otelbench.storage.queries.tables import derived_view_sql, span_attributes_sql, sql_string
from otelbench.storage.queries.views import agent_runs_sql, span_messages_sql
from otelbench.storage.schema import EVALS

PREVIEW_CHARS = 1000  # of a run's task and answer kept in the rollup (pages link to the run)

# The rollup's rows, from the views of whatever connection runs it (the whole lake, or
# the touched traces only: storage.rollups).
RUN_ROWS = f"""SELECT r.trace_id, r.agent, r.owner, r.status, r.start_time, r.duration_ms, r.cost_usd,
       c.cost_reported, c.cost_computed, c.calls_reported, c.calls_computed, r.input_tokens, r.output_tokens, r.llm_calls, r.tool_calls,
       r.eval_score, left(r.input, {PREVIEW_CHARS}) AS input_preview,
       left(r.output, {PREVIEW_CHARS}) AS output_preview, r.date, m.models
FROM agent_runs AS r
LEFT JOIN (
    SELECT trace_id,
           sum(cost_usd) FILTER (WHERE cost_source = 'reported') AS cost_reported,
           sum(cost_usd) FILTER (WHERE cost_source IS DISTINCT FROM 'reported') AS cost_computed,
           count(cost_usd) FILTER (WHERE cost_source = 'reported') AS calls_reported,
           count(cost_usd) FILTER (WHERE cost_source IS DISTINCT FROM 'reported') AS calls_computed
    FROM spans WHERE {COSTED} GROUP BY trace_id
) AS c ON c.trace_id = r.trace_id
LEFT JOIN (
    -- the models the run's own agent asked for (run search filters by them): llm calls
    -- resolved to that agent, so a sub-agent's calls (a private one's) never count
    SELECT trace_id, resolved_agent, list(DISTINCT request_model ORDER BY request_model) AS models
    FROM spans WHERE span_type = 'llm' AND request_model IS NOT NULL AND resolved_agent IS NOT NULL
    GROUP BY trace_id, resolved_agent
) AS m ON m.trace_id = r.trace_id AND m.resolved_agent = r.agent"""

# The trace ids in some data files (new span files; new evals commits).
TRACE_IDS = "SELECT DISTINCT trace_id FROM read_parquet($files, union_by_name = true) WHERE trace_id IS NOT NULL"

# Restrict a connection's ``spans`` and ``logs`` views to the touched traces in some
# files: the trace ids are a bound parameter (a temp table); the file names, which a view
# cannot take as parameters, are the lake's own (storage.queries.tables' rule), quoted.
TOUCHED_TABLE = "CREATE OR REPLACE TEMP TABLE touched AS SELECT DISTINCT unnest($ids::VARCHAR[]) AS trace_id"


def restricted_source_sql(files: list[str], *, row_numbers: bool = False) -> str:
    """The rows of ``files`` (the lake's own) of the touched traces, as a subquery."""
    listed = ", ".join(sql_string(f) for f in files)
    extra = ", filename = true, file_row_number = true" if row_numbers else ""
    return (f"(SELECT * FROM read_parquet([{listed}], hive_partitioning = true, union_by_name = true, "
            f"hive_types = {{'date': 'DATE'}}{extra}) WHERE trace_id IN (SELECT trace_id FROM touched))")


def restricted_views_sql(root: str, spans: list[str], logs: list[str], evals: list[str]) -> list[str]:
    """``spans``, ``logs``, ``span_messages`` and ``agent_runs`` (which read the log files
    themselves) and ``evals`` (latest wins, as its own view) over the touched traces' rows
    of those files."""
    # spans.attributes as the lake's own view reads them (the moved keys put back)
    return [f"CREATE OR REPLACE VIEW spans AS SELECT * REPLACE ({span_attributes_sql()} AS attributes) "
            f"FROM {restricted_source_sql(spans)}",
            f"CREATE OR REPLACE VIEW logs AS SELECT * FROM {restricted_source_sql(logs)}",
            span_messages_sql(root, logs=restricted_source_sql(logs, row_numbers=True)),
            agent_runs_sql(root, logs=restricted_source_sql(logs, row_numbers=True)),
            derived_view_sql(root, EVALS, source=restricted_source_sql(evals))]


# The rows of the rollup's files: ``$base`` without what ``$delta`` replaces, then the
# delta's live rows. Every web statement over runs starts WITH this.
RUNS_CTE = """runs AS (
    SELECT * FROM read_parquet($base) AS b
    WHERE NOT EXISTS (SELECT 1 FROM read_parquet($delta) AS d WHERE d.trace_id = b.trace_id)
    UNION ALL
    SELECT * FROM read_parquet($delta) WHERE agent IS NOT NULL
)"""

# A refresh's recomputed rows are staged first (storage.rollups): each step's rows, one
# file per agent with the step's number, and ``touch_steps`` (trace id, step) of the
# traces each step touched. A trace's row is that of the last step that touched it (none
# if that step found no run), as if each step had been committed in turn.
TOUCH_STEPS_TABLE = "CREATE OR REPLACE TEMP TABLE touch_steps (trace_id VARCHAR, step INTEGER)"
TOUCH_STEP = "INSERT INTO touch_steps SELECT trace_id, $step FROM touched"
# Once every step is staged: every touched trace, and the last step of each.
ALL_TOUCHED = "CREATE OR REPLACE TEMP TABLE touched AS SELECT DISTINCT trace_id FROM touch_steps"
LAST_TOUCH = ("CREATE OR REPLACE TEMP TABLE last_touch AS "
              "SELECT trace_id, max(step) AS step FROM touch_steps GROUP BY trace_id")
# New scores' traces that the span steps did not recompute (those got their score there).
UNTOUCHED_IDS = TRACE_IDS + " AND trace_id NOT IN (SELECT trace_id FROM touched)"


def _staged_sql(files: str) -> str:
    return (f"SELECT s.* EXCLUDE (step) FROM read_parquet({files}) AS s "
            "SEMI JOIN last_touch AS l ON l.trace_id = s.trace_id AND l.step = s.step")


def fresh_rows_sql(staged: list[str]) -> str:
    """The ``fresh_rows`` view: the staged rows (``staged``: the rollup's own files, quoted
    as the lake's are, since a view takes no parameters) of each trace's last step."""
    return f"CREATE OR REPLACE TEMP VIEW fresh_rows AS {_staged_sql('[' + ', '.join(map(sql_string, staged)) + ']')}"


def merged_delta_sql(delta: str) -> str:
    """The ``merged_delta`` view: the rows of the new delta — the old one's (``delta``, a
    rollup file) that the new rows do not replace, then the new rows (``fresh``: the
    recomputed rows and the tombstones)."""
    return (f"CREATE OR REPLACE TEMP VIEW merged_delta AS SELECT * FROM read_parquet({sql_string(delta)}) "
            "WHERE trace_id NOT IN (SELECT trace_id FROM fresh) UNION ALL SELECT * FROM fresh")


FRESH = "CREATE OR REPLACE TEMP VIEW fresh AS SELECT * FROM fresh_rows UNION ALL SELECT * FROM tombstones"
# Its keys, read once: its size, the agents it touches, what it replaces in the base.
DELTA_KEYS = "CREATE OR REPLACE TEMP TABLE delta_keys AS SELECT trace_id, agent FROM merged_delta"
DELTA_ROWS = "SELECT count(*) FROM delta_keys"
# The new delta, by trace id (a lookup reads one row group).
NEW_DELTA = "SELECT * FROM merged_delta ORDER BY trace_id"
# Merging a big delta into the base: the agents whose files change (their runs in the
# delta, or runs of theirs that the delta moved to another agent) ...
AFFECTED_AGENTS = """SELECT DISTINCT agent FROM delta_keys WHERE agent IS NOT NULL
UNION SELECT i.agent FROM read_parquet($index) AS i JOIN delta_keys AS d ON d.trace_id = i.trace_id"""
# ... a few agents' new rows at a time ($base: their files; $staged: their staged rows;
# storage.rollups sorts them by agent and time in Arrow, which needs no more memory than
# the rows, and writes one file per agent): their base rows the delta does not replace,
# their old delta rows that the new rows do not, and their new rows ...
MERGED_WITH = f"""SELECT * FROM read_parquet($base) AS b
WHERE agent IN (SELECT agent FROM merging) AND NOT EXISTS (SELECT 1 FROM delta_keys AS d WHERE d.trace_id = b.trace_id)
UNION ALL
SELECT * FROM read_parquet($delta)
WHERE agent IN (SELECT agent FROM merging) AND trace_id NOT IN (SELECT trace_id FROM fresh)
UNION ALL
{_staged_sql('$staged')} WHERE s.agent IN (SELECT agent FROM merging)"""
# The agents of one such group, and each agent's runs in the base and the delta (to form
# the groups).
AGENTS_TABLE = "CREATE OR REPLACE TEMP TABLE merging AS SELECT unnest($agents::VARCHAR[]) AS agent"
ROWS_PER_AGENT = """SELECT agent, sum(n) FROM (
    SELECT agent, count(*) AS n FROM read_parquet($index) GROUP BY agent
    UNION ALL SELECT agent, count(*) FROM delta_keys WHERE agent IS NOT NULL GROUP BY agent
) GROUP BY agent"""
# ... and the trace index of the new base ($base: every file).
INDEX_ROWS = "SELECT trace_id, agent FROM read_parquet($base) ORDER BY trace_id"
# The agent of one run (for ``params_of``): the delta's row, else the index's.
TRACE_AGENT = """SELECT agent FROM read_parquet($delta) WHERE trace_id = $trace_id AND agent IS NOT NULL
UNION ALL SELECT agent FROM read_parquet($index) WHERE trace_id = $trace_id"""
# Touched traces in the rollup that the recomputation (``fresh_rows``) no longer finds.
GONE = """SELECT trace_id FROM runs WHERE trace_id IN (SELECT trace_id FROM touched)
AND trace_id NOT IN (SELECT trace_id FROM fresh_rows)"""
# Runs whose scores changed (new evals commits): their rows with the latest score, the
# rule of agent_runs' ``scores`` (the latest non-NULL score, whichever judge gave it).
RESCORED = f"""WITH {RUNS_CTE},
scores AS (
    SELECT trace_id, arg_max(score, judged_at) AS score FROM evals
    WHERE score IS NOT NULL AND trace_id IN (SELECT trace_id FROM touched) GROUP BY trace_id
)
SELECT r.* REPLACE (s.score AS eval_score)
FROM runs AS r LEFT JOIN scores AS s ON s.trace_id = r.trace_id
WHERE r.trace_id IN (SELECT trace_id FROM touched)"""
