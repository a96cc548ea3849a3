"""The bench runner's views: ``bench_results`` (one row per model run), ``bench_tests``
(one row per judged test) and ``bench_goodput`` (one row per load step of a goodput sweep),
read from the spans ``otelbench bench`` exports."""

from __future__ import annotations

from otelbench.storage.queries.tables import parents_cte, sql_string

# --------------------------------------------------------------------------- bench
# ``otelbench bench`` exports its results as spans (bench_runner/spans.py has the tree):
# a root span per model run (bench.kind = model_run) carrying the results as ``bench.*``
# attributes, a chat span per request, and under each chat span a span per test judged on
# its reply (bench.kind = test). The views read those attributes from ``spans.attributes``;
# their names are the runner's, formatted into the SQL as constants of ours. The
# runner's instrumentation scope picks its spans cheaply before any JSON is parsed.
BENCH_SCOPE = "otelbench.bench_runner"


def bench_attr(name: str, cast: str = "VARCHAR", alias: str = "s") -> str:
    """One ``bench.*`` (or other) span attribute as ``cast``; NULL when absent or unfit."""
    path = sql_string(f'$."{name}"')
    if cast.endswith("[]"):  # a string array: the JSON array, cast as a whole
        return f"TRY_CAST(json_extract({alias}.attributes, {path}) AS {cast})"
    value = f"json_extract_string({alias}.attributes, {path})"
    return value if cast == "VARCHAR" else f"TRY_CAST({value} AS {cast})"


def bench_spans(kind: str) -> str:
    """The bench runner's spans of one ``bench.kind`` (of ``spans AS s``)."""
    return f"s.scope_name = {sql_string(BENCH_SCOPE)} AND {bench_attr('bench.kind')} = {sql_string(kind)}"


def bench_results_sql() -> str:
    """One row per model run: the root span of ``bench <model>`` and its summary."""
    return f"""CREATE OR REPLACE VIEW bench_results AS
SELECT
    s.trace_id, s.start_time, s.duration_ms,
    s.request_model AS model, s.provider,
    {bench_attr('bench.server.kind')} AS server_kind,
    {bench_attr('bench.server.version')} AS server_version,
    {bench_attr('server.address')} AS server_address,
    {bench_attr('server.port', 'INTEGER')} AS server_port,
    {bench_attr('bench.suite')} AS suite,
    {bench_attr('bench.suite.version')} AS suite_version,
    {bench_attr('bench.speed.version')} AS speed_version,
    {bench_attr('bench.quick', 'BOOLEAN')} AS quick,
    {bench_attr('bench.runs', 'INTEGER')} AS runs,
    {bench_attr('bench.decode_tps.median', 'DOUBLE')} AS decode_tps_median,
    {bench_attr('bench.ttft_ms.median', 'DOUBLE')} AS ttft_ms_median,
    {bench_attr('bench.prefill_tps.median', 'DOUBLE')} AS prefill_tps_median,
    {bench_attr('bench.ability_score', 'DOUBLE')} AS ability_score,
    {bench_attr('bench.agent_fitness_score', 'DOUBLE')} AS agent_fitness_score,
    {bench_attr('bench.tests_passed', 'INTEGER')} AS tests_passed,
    {bench_attr('bench.tests_total', 'INTEGER')} AS tests_total,
    {bench_attr('bench.confidence')} AS confidence,
    {bench_attr('bench.reasons', 'VARCHAR[]')} AS confidence_reasons,
    {bench_attr('bench.gguf.quantization')} AS quantization,
    {bench_attr('bench.gguf.architecture')} AS architecture,
    {bench_attr('bench.gguf.sha256')} AS gguf_sha256,
    {bench_attr('bench.hardware.cpu')} AS hardware_cpu,
    {bench_attr('bench.hardware.gpus', 'VARCHAR[]')} AS hardware_gpus,
    {bench_attr('bench.hardware.ram_bytes', 'BIGINT')} AS hardware_ram_bytes,
    {bench_attr('bench.failures', 'INTEGER')} AS failures,
    CASE WHEN s.status_code = 'error' THEN 'error' ELSE 'ok' END AS status,
    s.error_message,
    s.owner, s.date
FROM spans AS s
WHERE {bench_spans('model_run')}"""


def bench_tests_sql() -> str:
    """One row per judged test; the model is the one its reply's chat span asked for."""
    return f"""CREATE OR REPLACE VIEW bench_tests AS
WITH tests AS NOT MATERIALIZED (
    SELECT s.* FROM spans AS s WHERE {bench_spans('test')}
),
{parents_cte("replies", "tests", "request_model", "model")}
SELECT
    s.trace_id, s.span_id, s.parent_span_id AS reply_span_id, s.start_time,
    r.model,
    {bench_attr('bench.suite')} AS suite,
    {bench_attr('bench.suite.version')} AS suite_version,
    {bench_attr('bench.test.name')} AS test,
    {bench_attr('bench.test.category')} AS category,
    {bench_attr('bench.test.checker')} AS checker,
    {bench_attr('bench.test.verdict')} AS verdict,
    {bench_attr('bench.test.reason')} AS reason,
    s.owner, s.date
FROM tests AS s
LEFT JOIN replies AS r ON r.trace_id = s.trace_id AND r.span_id = s.parent_span_id"""


def _goodput(name: str, cast: str) -> str:
    return bench_attr(f"bench.goodput.{name}", cast)


def bench_goodput_sql() -> str:
    """One row per load step of a goodput sweep (``bench.kind = goodput_step``), with its
    sweep's SLO and seed from the root span (``goodput_sweep``) it hangs under."""
    latency = ",\n    ".join(f"{_goodput(f'{m}_ms.{q}', 'DOUBLE')} AS {m}_{q}_ms"
                             for m in ("ttft", "itl", "e2e") for q in ("p50", "p95", "p99"))
    return f"""CREATE OR REPLACE VIEW bench_goodput AS
WITH steps AS NOT MATERIALIZED (
    SELECT s.* FROM spans AS s WHERE {bench_spans('goodput_step')}
),
sweeps AS NOT MATERIALIZED (
    SELECT s.trace_id, s.span_id,
        {bench_attr('bench.goodput.slo')} AS slo,
        {bench_attr('bench.goodput.min_pass', 'DOUBLE')} AS min_pass,
        {bench_attr('bench.goodput.seed', 'BIGINT')} AS seed,
        {bench_attr('bench.goodput.highest_rate', 'DOUBLE')} AS highest_rate,
        {bench_attr('bench.goodput.highest_concurrency', 'DOUBLE')} AS highest_concurrency
    FROM spans AS s WHERE {bench_spans('goodput_sweep')}
)
SELECT
    s.trace_id, s.span_id, s.start_time, s.duration_ms,
    {_goodput('model', 'VARCHAR')} AS model,
    {_goodput('mode', 'VARCHAR')} AS mode,
    {_goodput('load', 'DOUBLE')} AS load,
    {_goodput('sent', 'INTEGER')} AS sent,
    {_goodput('completed', 'INTEGER')} AS completed,
    {_goodput('passed', 'INTEGER')} AS passed,
    {_goodput('good', 'INTEGER')} AS good,
    {_goodput('wall_s', 'DOUBLE')} AS wall_s,
    {_goodput('throughput_rps', 'DOUBLE')} AS throughput_rps,
    {_goodput('goodput_rps', 'DOUBLE')} AS goodput_rps,
    {_goodput('pass_share', 'DOUBLE')} AS pass_share,
    {latency},
    {_goodput('holds', 'BOOLEAN')} AS holds,
    w.slo, w.min_pass, w.seed,
    CASE {_goodput('mode', 'VARCHAR')} WHEN 'rate' THEN w.highest_rate ELSE w.highest_concurrency END
        AS highest_holding,
    s.owner, s.date
FROM steps AS s
LEFT JOIN sweeps AS w ON w.trace_id = s.trace_id AND w.span_id = s.parent_span_id"""
