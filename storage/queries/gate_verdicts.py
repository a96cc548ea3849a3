"""The ``gate_verdicts`` view: one row per ``otelbench gate`` verdict recorded as a span
(bench_runner/gate_record.py; ``bench.kind = gate``, service ``otelbench-bench``: benchmark
evidence, never agents' telemetry), and what the web's gate badge asks of it: the latest
verdict about one agent or one suite that the reader may see."""

from __future__ import annotations

from otelbench.storage.queries.bench import bench_attr, bench_spans


def gate_verdicts_sql() -> str:
    return f"""CREATE OR REPLACE VIEW gate_verdicts AS
SELECT
    s.trace_id, s.start_time,
    {bench_attr('bench.gate.verdict')} AS verdict,
    {bench_attr('bench.gate.regression', 'BOOLEAN')} AS regression,
    {bench_attr('bench.gate.compared')} AS compared,
    {bench_attr('bench.gate.baseline')} AS baseline,
    {bench_attr('bench.gate.candidate')} AS candidate,
    {bench_attr('bench.suite')} AS suite,
    {bench_attr('bench.suite.version')} AS suite_version,
    {bench_attr('bench.agent.name')} AS agent,
    {bench_attr('bench.gate.model')} AS model,
    {bench_attr('bench.gate.confidence', 'DOUBLE')} AS confidence,
    {bench_attr('bench.gate.regressions', 'VARCHAR[]')} AS regressions,
    {bench_attr('bench.gate.differs', 'VARCHAR[]')} AS differs,
    {bench_attr('bench.gate.metrics')} AS metrics,
    s.owner, s.date
FROM spans AS s
WHERE {bench_spans('gate')}"""


# What a reader may see: no verdict about a private agent or of a private owner's key.
_VISIBLE = """NOT list_contains($private_agents, coalesce(agent, ''))
  AND NOT list_contains($private_owners, coalesce(owner, ''))"""

# The latest verdict about agent ``$name`` (its suite runs' gates and its time windows').
LATEST_OF_AGENT = f"""SELECT verdict, compared, suite, suite_version, agent, start_time
FROM gate_verdicts
WHERE agent = $name AND {_VISIBLE}
ORDER BY start_time DESC, trace_id DESC
LIMIT 1"""

# The latest verdict about suite ``$name`` (a suite name, or one version of it: ``name-vN+hash``).
LATEST_OF_SUITE = f"""SELECT verdict, compared, suite, suite_version, agent, start_time
FROM gate_verdicts
WHERE (suite = $name OR suite_version = $name) AND {_VISIBLE}
ORDER BY start_time DESC, trace_id DESC
LIMIT 1"""
