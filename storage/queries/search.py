"""What run search reads (storage/search_index.py keeps the index, storage/run_search.py
asks it): the runs rollup's rows as the index holds them, and — for the benchmark that
chose the index (benchmarks/search.py) — the same search as a scan of the rollup.

A run's row in the index is its rollup row (storage.queries.rollups.RUNS_CTE's rule: a
delta row replaces its base row; a delta row with a NULL agent is a tombstone).
"""

from __future__ import annotations

from otelbench.storage.queries.rollups import RUNS_CTE

# What the index keeps of a run: the filters' columns, its task and answer (the rollup's
# previews), the start as microseconds since the epoch (the index's integer field).
_INDEXED = """trace_id, agent, coalesce(owner, '') AS owner, status, epoch_us(start_time) AS start_us,
       duration_ms, cost_usd, eval_score, input_preview AS task, output_preview AS answer,
       coalesce(models, []) AS models"""

# The base rows of some agents ($files: their base files) that the delta does not replace.
BASE_ROWS = f"""SELECT {_INDEXED}
FROM read_parquet($files) AS b
WHERE NOT EXISTS (SELECT 1 FROM read_parquet($delta) AS d WHERE d.trace_id = b.trace_id)"""

# Every delta row (tombstones too: agent NULL) with a digest of what the index keeps of it,
# so an update re-indexes only the rows that changed since it last looked.
DELTA_ROWS = f"""SELECT {_INDEXED},
       hash(trace_id, agent, owner, status, start_time, duration_ms, cost_usd, eval_score, input_preview,
            output_preview, models)::VARCHAR AS digest
FROM read_parquet($delta)"""

# The same search as one scan of the rollup, without an index: every word of $words in
# the task or the answer (as a substring, lowercased), the filters (NULL: any), privacy as
# the web's statements apply it ($private_agents, $private_owners; a text query skips
# $hidden_agents and $hidden_owners, whose texts are never searchable). Newest first.
SCAN = f"""WITH {RUNS_CTE}
SELECT trace_id, agent, status, start_time, duration_ms, cost_usd, eval_score, input_preview AS task,
       output_preview AS answer, count(*) OVER () AS total
FROM runs
WHERE agent IS NOT NULL AND NOT list_contains($private_agents, agent)
  AND NOT list_contains($private_owners, coalesce(owner, ''))
  AND ($agent IS NULL OR agent = $agent) AND ($status IS NULL OR status = $status)
  AND ($since IS NULL OR start_time >= $since) AND ($until IS NULL OR start_time < $until)
  AND ($min_score IS NULL OR eval_score >= $min_score) AND ($max_score IS NULL OR eval_score <= $max_score)
  AND ($min_cost IS NULL OR cost_usd >= $min_cost) AND ($max_cost IS NULL OR cost_usd <= $max_cost)
  AND ($min_ms IS NULL OR duration_ms >= $min_ms) AND ($max_ms IS NULL OR duration_ms <= $max_ms)
  AND ($model IS NULL OR list_contains(models, $model))
  AND (len($words) = 0 OR (NOT list_contains($hidden_agents, agent)
       AND NOT list_contains($hidden_owners, coalesce(owner, ''))
       AND list_bool_and(list_transform($words, lambda w: contains(lower(coalesce(input_preview, '')), w)
                                                   OR contains(lower(coalesce(output_preview, '')), w)))))
ORDER BY start_time DESC, trace_id
LIMIT $limit OFFSET $offset"""

__all__ = ["BASE_ROWS", "DELTA_ROWS", "SCAN"]
