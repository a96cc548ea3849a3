"""What ``otelbench gate`` reads to compare two runs (bench_runner/gate.py): the trials of
two suite runs, the tests and speed requests of two bench results, or an agent's runs in
two time windows — one row per trial, so the gate can count and resample them — and what
each side ran on (its manifest).

Trials come in a fixed order, so a seeded bootstrap resamples the same values each time.
Every statement takes bound parameters (``$run_id``, ``$trace_id``, ``$agent``,
``$start``, ``$end``); the gate reads the lake whole, as ``otelbench sql`` does.
"""

from __future__ import annotations

from otelbench.storage.queries.bench import bench_attr, bench_spans

# -- suite runs -----------------------------------------------------------------------

SUITE_RUN = """SELECT run_id, suite, suite_version, agent, agent_command, start_time, status, partial,
       trials, passed, failed, errors
FROM suite_runs WHERE run_id = $run_id"""

# One row per case × repeat: the verdict, the case's duration and the agent's cost.
SUITE_TRIALS = """SELECT case_id, repeat, span_id, verdict, duration_ms, cost_usd
FROM suite_cases WHERE run_id = $run_id
ORDER BY case_id, repeat, span_id"""

# The run's root span's attributes (its settings and manifest: ``bench.suite.*``).
SUITE_ROOT = f"""SELECT s.attributes FROM spans AS s
WHERE {bench_spans('suite_run')} AND {bench_attr('bench.suite.run_id')} = $run_id
LIMIT 1"""

# The models the agent's own llm calls asked for and were answered by, over the run's cases.
SUITE_MODELS = """SELECT DISTINCT coalesce(l.response_model, l.request_model) AS model, l.provider
FROM llm_calls AS l
JOIN (SELECT DISTINCT trace_id FROM suite_cases WHERE run_id = $run_id) AS c ON c.trace_id = l.trace_id
WHERE coalesce(l.response_model, l.request_model) IS NOT NULL
ORDER BY 1, 2"""

# -- bench results --------------------------------------------------------------------

BENCH_RESULT = """SELECT trace_id, model, provider, server_kind, server_version, suite, suite_version, speed_version,
       quick, runs, quantization, architecture, gguf_sha256, hardware_cpu, hardware_gpus, hardware_ram_bytes,
       status, start_time
FROM bench_results WHERE trace_id = $trace_id"""

# One row per judged test of the model run.
BENCH_TESTS = """SELECT test, verdict FROM bench_tests WHERE trace_id = $trace_id"""

# The end-to-end time of each successful timed request of one speed case (``$case``).
BENCH_LATENCIES = f"""SELECT {bench_attr('bench.e2e_ms', 'DOUBLE')} AS e2e_ms
FROM spans AS s
WHERE s.trace_id = $trace_id AND s.span_type = 'llm' AND {bench_attr('bench.case')} = $case
  AND {bench_attr('bench.e2e_ms', 'DOUBLE')} IS NOT NULL AND s.status_code IS DISTINCT FROM 'error'
ORDER BY s.start_time, s.span_id"""

# -- an agent's runs in a time window -------------------------------------------------

AGENT_RUNS = """SELECT trace_id, status, duration_ms, cost_usd, eval_score
FROM agent_runs
WHERE agent = $agent AND start_time >= $start AND start_time < $end
ORDER BY start_time, trace_id"""

AGENT_MODELS = """SELECT DISTINCT coalesce(l.response_model, l.request_model) AS model, l.provider
FROM llm_calls AS l
JOIN (SELECT trace_id FROM agent_runs WHERE agent = $agent AND start_time >= $start AND start_time < $end) AS r
  ON r.trace_id = l.trace_id
WHERE coalesce(l.response_model, l.request_model) IS NOT NULL
ORDER BY 1, 2"""

# The judges that scored the window's runs (a change of judge is a change of yardstick).
AGENT_JUDGES = """SELECT DISTINCT e.judge_model, e.judge_version
FROM evals AS e
JOIN (SELECT trace_id FROM agent_runs WHERE agent = $agent AND start_time >= $start AND start_time < $end) AS r
  ON r.trace_id = e.trace_id
WHERE e.score IS NOT NULL
ORDER BY 1, 2"""
