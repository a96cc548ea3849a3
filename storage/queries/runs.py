"""What a run is made of, as SQL expressions that ``agent_runs`` (storage.queries.views),
``suite_cases`` (storage.queries.suites) and the cost rollups (storage.queries.rollups)
share, so that a run's agent and its cost read the same everywhere.
"""

from __future__ import annotations

# The outermost span that names an agent: the root if it names one, else an agent span,
# else any; then the earliest (a span starts before what it calls, ties are common).
OUTERMOST = ("((s.parent_span_id IS NOT NULL)::BIGINT << 61) + ((s.span_type IS DISTINCT FROM 'agent')::BIGINT << 60)"
              " + epoch_us(s.start_time)")

# What a run's cost sums: its llm calls' costs, and what its agent spans report themselves
# (otelbench.sdk's task.cost: an owner's cost that no instrumented call carries; no
# instrumentation recorded in tests/testdata/recorded puts a cost on an agent span).
COSTED = "span_type = 'llm' OR (span_type = 'agent' AND cost_source = 'reported')"
COSTED_S = "s.span_type = 'llm' OR (s.span_type = 'agent' AND s.cost_source = 'reported')"
