"""What the web UI reads of the agent suites (web/pages/suites.py): ``otelbench suite run``'s
results, through the ``suite_runs`` view and the case spans themselves.

This is benchmark evidence — fixed tasks, not production telemetry — kept apart from the
agents' own figures (storage.queries.web): no statement here reads ``agent_runs``.

Privacy is applied here: a run of a private agent (``$private_agents``, by the name its
results are filed under) or sent with a private owner's key (``$private_owners``)
appears nowhere. A run's cases are reached only through a visible run's id
(``$run_ids``), and their owner is checked again. Text that came over the wire (inputs,
answers, stderr, reasons) is cut to ``$chars`` characters here, its full length beside.

Which run stands for an agent on a suite version: its latest ``complete`` run of the
whole suite (not ``partial``); results of two suite versions are never put together.

Cost (measured on the 10 M-span benchmark lake, no suites in it): ``suite_runs`` costs
~0.2 s, nearly all of it ``suite_cases`` joining every span by trace id (the agents'
own calls, for the cost); the web reads it once per rollup version (Site.suite_runs) and
not at all when ``HAS_SUITES`` finds no suite span (~0.05 s: the runner's instrumentation
scope picks its spans before any JSON is parsed). A run's cases are read from the case
spans alone (``CASES``), never through that join.
"""

from __future__ import annotations

from otelbench.storage.queries.bench import bench_attr, bench_spans

_CASES = bench_spans("suite_case")

# Whether the lake holds any suite case at all (else the pages need not ask the view).
HAS_SUITES = f"""SELECT 1 AS found FROM spans AS s
WHERE {_CASES}
LIMIT 1"""

# Every visible suite run, newest first per suite version and agent, with whether it is
# the one that stands for that agent there (``standing``) and how many runs it has.
SUITE_RUNS = """SELECT * EXCLUDE (whole, nth), whole AND nth = 1 AS standing FROM (
    SELECT run_id, suite, suite_version, agent, start_time, duration_ms, repeats, concurrency, cases, trials,
           passed, failed, errors, timed_out, pass_rate, pass_rate_low, pass_rate_high, cost_usd,
           cost_per_case_usd, input_tokens, output_tokens, latency_p50_ms, latency_p95_ms, status, partial, owner,
           status = 'complete' AND NOT partial AS whole,
           count(*) OVER w AS agent_runs,
           row_number() OVER (w ORDER BY status = 'complete' AND NOT partial DESC, start_time DESC, run_id) AS nth
    FROM suite_runs
    WHERE agent IS NOT NULL AND suite_version IS NOT NULL
      AND NOT list_contains($private_agents, agent)
      AND NOT list_contains($private_owners, coalesce(owner, ''))
    WINDOW w AS (PARTITION BY suite_version, agent)
)
ORDER BY suite, suite_version, agent, start_time DESC, run_id"""


def _text(name: str, column: str) -> str:
    value = bench_attr(name)
    return f"left({value}, $chars) AS {column}, length({value}) AS {column}_chars"


# The cases × repeats of the given runs, read from the case spans alone (the columns as
# ``suite_cases`` has them: storage/queries/suites.py; a test holds the two equal). One
# row per case span even if it was stored twice.
CASES = f"""SELECT * FROM (
SELECT DISTINCT ON (s.trace_id, s.span_id)
       {bench_attr('bench.suite.run_id')} AS run_id, s.trace_id, s.span_id, s.start_time, s.duration_ms,
       {bench_attr('bench.case.id')} AS case_id,
       {bench_attr('bench.case.repeat', 'INTEGER')} AS repeat,
       {bench_attr('bench.case.checker')} AS checker,
       {bench_attr('bench.case.verdict')} AS verdict,
       {_text('bench.case.reason', 'reason')},
       {_text('bench.case.input', 'input')},
       {_text('bench.case.output', 'output')},
       {_text('bench.case.stderr', 'stderr')},
       {bench_attr('bench.case.exit_code', 'INTEGER')} AS exit_code,
       coalesce({bench_attr('bench.case.timed_out', 'BOOLEAN')}, false) AS timed_out,
       coalesce({bench_attr('bench.case.flooded', 'BOOLEAN')}, false) AS flooded,
       s.owner
FROM spans AS s
WHERE {_CASES}
  AND list_contains($run_ids, {bench_attr('bench.suite.run_id')})
  AND NOT list_contains($private_owners, coalesce(s.owner, ''))
)
ORDER BY run_id, repeat, start_time, trace_id, span_id"""

__all__ = ["HAS_SUITES", "SUITE_RUNS", "CASES"]
