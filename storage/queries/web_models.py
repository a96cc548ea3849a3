"""What the web UI's model and benchmark pages read (web/pages/models.py): one parameterised
statement per figure, over ``bench_results``, ``bench_tests``, ``bench_goodput`` and the bench runner's chat
spans (storage.queries.bench says what the runner exports).

This is benchmark evidence, kept apart from the agents' self-reported telemetry
(storage.queries.web): no statement here reads ``agent_runs``, none there reads these.

Privacy: a model run sent with a private owner's key (``$private_owners``) appears
nowhere; its requests and tests are reached only through a visible run's trace id.
Text that came over the wire (replies, reasons, errors) is cut to ``$chars`` characters
here, so a 1 MB string never leaves DuckDB; its full length comes beside it.

Which run stands for a model: the latest full run (else the latest ``--quick`` one), per machine where speed is concerned (decode
speed is a property of model *and* machine), per suite version where scores are (scores
of different suite versions are not comparable). The machine is the runner's own
description of its hardware (``bench_results.hardware_*``), NULL from older runners.
"""

from __future__ import annotations

from otelbench.storage.queries.bench import BENCH_SCOPE, bench_attr
from otelbench.storage.queries.tables import sql_string

_VISIBLE = "model IS NOT NULL AND NOT list_contains($private_owners, coalesce(owner, ''))"

# The machine a run was made on, as one label: CPU, then GPUs; NULL when not recorded.
MACHINE = "nullif(concat_ws(' + ', hardware_cpu, nullif(array_to_string(hardware_gpus, ', '), '')), '')"

_RUN = f"""trace_id, start_time, duration_ms, model, provider, server_kind, suite, suite_version, speed_version,
       quick, runs AS timed_runs, decode_tps_median, ttft_ms_median, prefill_tps_median, ability_score,
       agent_fitness_score, tests_passed, tests_total, confidence,
       list_transform(confidence_reasons[1:50], lambda r: left(r, $chars)) AS confidence_reasons,
       quantization, architecture, hardware_cpu, hardware_gpus, hardware_ram_bytes, {MACHINE} AS machine,
       failures, status, left(error_message, $chars) AS error_message"""


def _latest(partition: str, where: str = "TRUE") -> str:
    """The run that stands for each ``partition``: its latest full run, else (none) its
    latest ``--quick`` one (one timed run per case, half the tests); with how many visible
    runs the partition has."""
    return f"""SELECT * EXCLUDE (nth) FROM (
    SELECT {_RUN},
           count(*) OVER w AS model_runs,
           row_number() OVER (w ORDER BY quick IS TRUE, start_time DESC, trace_id DESC) AS nth
    FROM bench_results
    WHERE {_VISIBLE} AND {where}
    WINDOW w AS (PARTITION BY {partition})
)
WHERE nth = 1
ORDER BY model, machine NULLS LAST"""


# The models tab of the leaderboard: each model's latest run on each machine.
LEADERBOARD = _latest(f"model, {MACHINE}")

# Every suite version's results: each model's latest run that judged tests of it ...
SUITE_LATEST = _latest("suite_version, model", "suite_version IS NOT NULL AND coalesce(tests_total, 0) > 0")
# ... and every speed version's: each model's latest run on each machine.
SPEED_LATEST = _latest(f"speed_version, model, {MACHINE}", "speed_version IS NOT NULL")

# The verdicts of the given runs' tests (a suite's table of tests × models).
VERDICTS = """SELECT trace_id, test, category, checker, verdict
FROM bench_tests
WHERE list_contains($trace_ids, trace_id)
ORDER BY trace_id, start_time, span_id"""

# One model: every visible run of it, newest first (no row: unknown or private) ...
MODEL_RUNS = f"""SELECT {_RUN}
FROM bench_results
WHERE model = $model AND {_VISIBLE}
ORDER BY start_time DESC, trace_id"""

_MODEL_TRACES = f"SELECT trace_id FROM bench_results WHERE model = $model AND {_VISIBLE}"


def _attr(name: str, cast: str = "VARCHAR") -> str:
    return bench_attr(name, cast)


# ... its speed cases per run: the medians over the timed requests that succeeded (warm-up
# runs left out), as bench_runner/speed.py summarizes them; its requests are the runner's
# chat spans with a ``bench.case`` other than ``suite`` ...
_CASE = _attr("bench.case")
_OK = "s.status_code IS DISTINCT FROM 'error'"
SPEED_CASES = f"""SELECT s.trace_id, {_CASE} AS "case",
       count(*) AS requests,
       count(*) FILTER (WHERE NOT ({_OK})) AS failed,
       median({_attr('bench.ttft_ms', 'DOUBLE')}) FILTER (WHERE {_OK}) AS ttft_ms_median,
       median({_attr('bench.ttfo_ms', 'DOUBLE')}) FILTER (WHERE {_OK}) AS ttfo_ms_median,
       median({_attr('bench.e2e_ms', 'DOUBLE')}) FILTER (WHERE {_OK}) AS e2e_ms_median,
       median({_attr('bench.decode_tps', 'DOUBLE')}) FILTER (WHERE {_OK}) AS decode_tps_median,
       median({_attr('bench.prefill_tps', 'DOUBLE')}) FILTER (WHERE {_OK}) AS prefill_tps_median,
       median(s.output_tokens) FILTER (WHERE {_OK}) AS output_tokens_median
FROM spans AS s
WHERE s.scope_name = {sql_string(BENCH_SCOPE)} AND s.operation = 'chat'
  AND s.trace_id IN ({_MODEL_TRACES})
  AND {_CASE} IS DISTINCT FROM 'suite' AND {_CASE} IS NOT NULL
  AND NOT coalesce({_attr('bench.warmup', 'BOOLEAN')}, false)
GROUP BY s.trace_id, "case"
ORDER BY s.trace_id, min(s.start_time)"""

# ... and its judged tests per run, each with the reply it judged (the reply's text parts,
# from the chat span's output messages: bench_runner/spans.py, record_reply).
_REPLY_TEXT = "array_to_string(json_extract_string(c.output_messages, '$[*].parts[*].content'), '')"
TESTS = f"""WITH replies AS (
    SELECT c.trace_id, c.span_id, {_REPLY_TEXT} AS answer, c.status_code, c.error_message
    FROM llm_calls AS c
    WHERE c.trace_id IN ({_MODEL_TRACES})
)
SELECT t.trace_id, t.suite, t.suite_version, t.test, t.category, t.checker, t.verdict,
       left(t.reason, $chars) AS reason, length(t.reason) AS reason_chars,
       left(r.answer, $chars) AS answer, length(r.answer) AS answer_chars,
       left(r.error_message, $chars) AS reply_error
FROM bench_tests AS t
LEFT JOIN replies AS r ON r.trace_id = t.trace_id AND r.span_id = t.reply_span_id
WHERE t.trace_id IN ({_MODEL_TRACES})
ORDER BY t.trace_id, t.start_time, t.span_id"""

# ... and its goodput sweeps (``bench_goodput``): every visible load step, sweep by sweep.
GOODPUT_STEPS = f"""SELECT trace_id, start_time, mode, load, sent, completed, passed, good, throughput_rps,
       goodput_rps, pass_share, ttft_p95_ms, e2e_p95_ms, holds, slo, min_pass, highest_holding
FROM bench_goodput
WHERE model = $model AND {_VISIBLE}
ORDER BY trace_id, mode DESC, load"""

# The models that have a visible goodput sweep (a model may have sweeps and no bench run).
GOODPUT_MODELS = f"SELECT DISTINCT model FROM bench_goodput WHERE {_VISIBLE}"

__all__ = ["MACHINE", "LEADERBOARD", "SUITE_LATEST", "SPEED_LATEST", "VERDICTS", "MODEL_RUNS", "SPEED_CASES",
           "TESTS", "GOODPUT_STEPS", "GOODPUT_MODELS"]
