"""The SQL cookbook runs: every ```sql block of docs/cookbook.md and of the README's "SQL
cookbook" section goes through the real ``otelbench sql`` command (a subprocess: read-only,
confined to the lake) and through the real ``duckdb`` CLI after ``--print-views``, over a
lake written the real way — the collector receives agent runs from the OTel SDK, bench and
suite runs from the bench runner's own spans; the real judge (against a stub endpoint) and
the real failure clustering write the derived tables. Each query must return rows, and
some answers are checked against values computed here from what was sent."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from otelbench.testing.agent_runs import Run
from otelbench.testing.suites import CAPITAL, NAME, YEAR, suite_yaml

ROOT = Path(__file__).resolve().parents[1]
COOKBOOK = ROOT / "docs" / "cookbook.md"
README = ROOT / "README.md"
README_SECTION = "## SQL cookbook"

# -- what the lake holds ------------------------------------------------------------------
# support-bot fails in two recurring ways (6 runs each: a failure cluster each, at the
# default min_cluster_size of 5); research-bot fails once; local-bot's model is unpriced.
TIMEOUT = "search_kb timed out after 30 s while looking up order {n} in the knowledge base"
REFUND = "refund API refused the request: 403 Forbidden, no permission to refund order {n}"


def _runs() -> list[Run]:
    runs = []
    for i in range(6):
        runs.append(Run("support-bot", f"Where is my order {100 + i}?", f"Order {100 + i} ships tomorrow.",
                        tool="search_kb", model="gpt-4o-mini", cost=0.002 + i * 0.0005, seconds=1.0 + 0.25 * i))
        runs.append(Run("support-bot", f"Where is order {200 + i}?", None, error=TIMEOUT.format(n=200 + i),
                        error_type="ToolTimeout", tool="search_kb", tool_error="read timed out after 30 s",
                        model="gpt-4o-mini", cost=0.0015, seconds=2.0 + 0.5 * i))
        runs.append(Run("support-bot", f"Refund order {300 + i}, please.", None, error=REFUND.format(n=300 + i),
                        error_type="PermissionError", tool="issue_refund", tool_error="403 Forbidden",
                        model="gpt-4o-mini", cost=0.001, seconds=0.5 + 0.1 * i))
    for i in range(5):
        runs.append(Run("research-bot", f"Summarize paper {i}", f"Paper {i} shows that caching helps.",
                        tool="web_search", model="claude-3-5-haiku", cost=0.01 + i * 0.002, seconds=3.0 + i))
    runs.append(Run("research-bot", "Summarize every paper of 2024", None,
                    error="context length exceeded: 210000 tokens", error_type="BadRequestError",
                    tool="web_search", model="claude-3-5-haiku", cost=0.05, seconds=9.0))
    for i in range(3):
        runs.append(Run("local-bot", f"What is {i} + {i}?", str(2 * i), tool="calculator", model="smollm2",
                        seconds=0.2 + 0.1 * i))
    return runs


RUNS = _runs()

# ingest keys: each sender's owner is stored with every span it sent (key_usage)
KEYS = {"support-bot": "key-support-0001", "research-bot": "key-research-001", "local-bot": "key-research-001",
        "bench": "key-bench-00001"}
OWNERS = {"key-support-0001": "support-team", "key-research-001": "research-team", "key-bench-00001": "bench-lab"}

# (model file, quantization, architecture, decode tok/s, prefill tok/s, TTFT ms): two runs
# of the Q4_1 file, one of each other
BENCH = [
    ("SmolLM2-135M-Instruct-Q4_1.gguf", "Q4_1", "llama", 41.1, 310.0, 503.0),
    ("SmolLM2-135M-Instruct-Q4_1.gguf", "Q4_1", "llama", 39.5, 298.0, 520.0),
    ("SmolLM2-135M-Instruct-Q8_0.gguf", "Q8_0", "llama", 30.2, 280.0, 560.0),
    ("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "Q4_K_M", "qwen2", 16.9, 95.0, 1121.0),
]

SUITE_V1 = suite_yaml("chores", 1, CAPITAL, YEAR)
SUITE_V2 = suite_yaml("chores", 2, CAPITAL, YEAR, NAME)
CASES = {"chores-v1": ("capital", "year"), "chores-v2": ("capital", "year", "name")}  # as the files say
REPEATS = 2
# each agent's answer per case (a shell command line: the suite runner runs it per case)
ANSWERS = {"support-bot": {"capital": "Paris", "year": "1989", "name": "otelbench"},
           "research-bot": {"capital": "Lyon", "year": "It fell in 1989.", "name": "otelbench"}}


def _agent_command(answers: dict[str, str]) -> str:
    arms = " ".join(f"{case}) echo '{text}';;" for case, text in answers.items())
    return f'case "$OTELBENCH_CASE_ID" in {arms} esac'


def _send_bench_runs(spans: Any) -> None:
    """Bench model runs as ``otelbench bench`` exports them: a root span per model run with
    its results (bench_runner.runner.run_model's record_summary)."""
    from otelbench.bench_runner.spans import record_summary

    for model, quant, arch, decode, prefill, ttft in BENCH:
        settings = {"server.kind": "llama_cpp_python", "speed.version": "speed-v1", "quick": True, "runs": 1,
                    "hardware.cpu": "AMD EPYC 7B13", "hardware.gpus": [], "hardware.ram_bytes": 8 << 30}
        with spans.model_run(model, "http://127.0.0.1:8080/v1", "core", "core-v1", provider="llama_cpp",
                             settings=settings) as root:
            record_summary(root, {"ability_score": 0.5, "agent_fitness_score": None, "confidence": "HIGH",
                                  "reasons": [], "decode_tps.median": decode, "ttft_ms.median": ttft,
                                  "prefill_tps.median": prefill, "gguf.quantization": quant,
                                  "gguf.architecture": arch, "tests_passed": 2, "tests_total": 4})


def _run_suites(tmp: Path, spans: Any) -> None:
    """Both agents on both versions of the suite, through the suite runner (a process per
    case × repeat, a span per case and per run)."""
    from otelbench.bench_runner.agent_suite import load
    from otelbench.bench_runner.suite_run import SuiteRun

    for version, text in (("chores-v1", SUITE_V1), ("chores-v2", SUITE_V2)):
        folder = tmp / "suites" / version
        folder.mkdir(parents=True)
        (folder / "suite.yaml").write_text(text)
        suite = load(folder)
        for agent, answers in ANSWERS.items():
            SuiteRun(suite, _agent_command(answers), agent=agent, concurrency=2).run(spans)


def _judge_and_cluster(lake: Path) -> None:
    """The real processors: the judge against a stub endpoint (a failed run's own signals
    cap its score at 0), then HDBSCAN over local embeddings (no LLM descriptions) of the
    failed runs only (``score_below`` is under every successful run's score here)."""
    import openai

    from otelbench.testing.judge_stub import MODEL, JudgeStub
    from otelbench.processors import pipeline
    from otelbench.processors.config import Clusters, Processors
    from otelbench.storage.privacy import Privacy

    with JudgeStub(score=0.75) as stub:
        llm = pipeline.Llm(openai.OpenAI(base_url=stub.base_url, api_key="x", max_retries=0), MODEL, True)
        pipeline.run(Processors(clusters=Clusters(describe=False, score_below=0.2)), Privacy(), lake, llm=llm)


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from otelbench.bench_runner.spans import BenchSpans
    from otelbench.collector.wiring import Collector
    from otelbench.testing.agent_runs import send_runs
    from otelbench.testing.collector import collector_config

    tmp = tmp_path_factory.mktemp("cookbook")
    keys = [{"key": key, "owner": owner} for key, owner in OWNERS.items()]
    collector = Collector(collector_config(tmp, auth={"keys": keys})).start()
    try:
        url = f"http://127.0.0.1:{collector.http_port}"
        for key in sorted(set(KEYS.values()) - {KEYS["bench"]}):
            # returns once the SDK's exporter has every span acknowledged
            send_runs(url, [r for r in RUNS if KEYS[r.agent] == key], headers={"X-Bench-Key": key})
        spans = BenchSpans(url, headers={"X-Bench-Key": KEYS["bench"]})
        _send_bench_runs(spans)
        _run_suites(tmp, spans)
        assert spans.shutdown()["failures"] == 0
    finally:
        collector.stop()  # graceful: everything acknowledged is in Parquet
    root = tmp / "lake"
    _judge_and_cluster(root)
    return root


# -- the queries --------------------------------------------------------------------------

def sql_blocks(text: str) -> list[tuple[str, str]]:
    """``(title, sql)`` of every ```sql block: its title is the nearest heading above it,
    or a line in bold."""
    blocks: list[tuple[str, str]] = []
    title, sql = "", None
    for line in text.splitlines():
        if sql is not None:  # inside a block
            if line.startswith("```"):
                blocks.append((title, "\n".join(sql).strip()))
                sql = None
            else:
                sql.append(line)
        elif line.startswith("```sql"):
            sql = []
        elif heading := re.match(r"#+ (.+)|\*\*(.+?)\*\*", line):
            title = (heading.group(1) or heading.group(2)).strip()
    return blocks


def readme_section() -> str:
    text = README.read_text()
    start = text.index(f"\n{README_SECTION}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]


COOKBOOK_QUERIES = sql_blocks(COOKBOOK.read_text())
README_QUERIES = sql_blocks(readme_section())
BY_TITLE = dict(COOKBOOK_QUERIES)


def otelbench_sql(lake: Path, sql: str) -> list[dict[str, Any]]:
    done = subprocess.run([sys.executable, "-m", "otelbench", "sql", "--lake", str(lake), "--format", "json", sql],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def answers(lake: Path) -> dict[str, list[dict[str, Any]]]:
    """Every distinct query's rows, by its text."""
    return {sql: otelbench_sql(lake, sql) for sql in {sql for _, sql in COOKBOOK_QUERIES + README_QUERIES}}


def test_the_docs_have_the_queries_they_promise() -> None:
    assert len(COOKBOOK_QUERIES) >= 8 and len(BY_TITLE) == len(COOKBOOK_QUERIES), "titles must be unique"
    assert len(README_QUERIES) >= 3
    for title, sql in README_QUERIES:  # the README shows a few of the cookbook's queries, unchanged
        assert BY_TITLE.get(title) == sql, f"README query {title!r} differs from docs/cookbook.md"
    for required in ("Cost per agent per day", "Slowest tools", "Failures by cluster", "Judge score vs model",
                     "Bench speed per quantization"):
        assert required in BY_TITLE, required
    for required in ("Cost per agent per day", "Slowest tools", "Failures by cluster"):
        assert required in dict(README_QUERIES), required


@pytest.mark.parametrize("title, sql", [pytest.param(t, s, id=t) for t, s in COOKBOOK_QUERIES] +
                         [pytest.param(t, s, id=f"README: {t}") for t, s in README_QUERIES])
def test_every_query_runs_and_answers(answers: dict[str, list[dict[str, Any]]], title: str, sql: str) -> None:
    rows = answers[sql]
    assert len(rows) >= 1, f"{title}: no rows"
    assert all(any(v is not None for v in row.values()) for row in rows)


def test_cost_per_agent_per_day_is_the_sum_of_what_was_sent(answers: dict[str, list[dict[str, Any]]]) -> None:
    rows = answers[BY_TITLE["Cost per agent per day"]]
    expected: dict[str, list[float | None]] = defaultdict(list)
    for run in RUNS:
        expected[run.agent].append(run.cost)
    got_cost: dict[str, float] = defaultdict(float)
    got_runs: dict[str, int] = defaultdict(int)
    got_unpriced: dict[str, int] = defaultdict(int)
    for row in rows:  # the runs may straddle midnight: sum the agent's days
        got_cost[row["agent"]] += row["cost_usd"] or 0.0
        got_runs[row["agent"]] += row["runs"]
        got_unpriced[row["agent"]] += row["unpriced_runs"]
    assert set(got_runs) == set(expected)
    for agent, costs in expected.items():
        assert got_runs[agent] == len(costs)
        assert got_unpriced[agent] == costs.count(None)
        assert got_cost[agent] == pytest.approx(sum(c for c in costs if c is not None), abs=1e-4 * len(rows))
    assert got_cost["support-bot"] > 0 and got_unpriced["local-bot"] == 3


def test_slowest_tools_are_the_durations_sent(answers: dict[str, list[dict[str, Any]]]) -> None:
    """A tool span lasts 30 % of its run (otelbench.testing.agent_runs places it there)."""
    rows = {r["tool_name"]: r for r in answers[BY_TITLE["Slowest tools"]]}
    durations: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    for run in RUNS:
        assert run.tool is not None and run.seconds is not None
        durations[run.tool].append(0.3 * run.seconds * 1000)
        errors[run.tool] += run.tool_error is not None
    assert set(rows) == set(durations)
    for tool, ms in durations.items():
        q = statistics.quantiles(ms, n=20, method="inclusive") if len(ms) > 1 else [ms[0]] * 19
        assert rows[tool]["calls"] == len(ms)
        assert rows[tool]["p50_ms"] == pytest.approx(statistics.median(ms), abs=0.06)
        assert rows[tool]["p95_ms"] == pytest.approx(q[18], abs=0.06)
        assert rows[tool]["error_rate"] == pytest.approx(errors[tool] / len(ms), abs=5e-4)
    assert list(rows)[0] == "web_search"  # the slowest first


def test_suite_pass_rates_never_mix_versions(answers: dict[str, list[dict[str, Any]]]) -> None:
    rows = answers[BY_TITLE["Suite pass rate per agent and version"]]
    got = {(r["agent"], r["suite_version"].split("+")[0]): (r["runs"], r["passed"], r["scored"], r["pass_rate"])
           for r in rows}
    expected = {}
    for version, cases in CASES.items():
        for agent, said in ANSWERS.items():
            right = {"capital": said["capital"] == "Paris", "year": "1989" in said["year"],
                     "name": said["name"] == "otelbench"}
            passed, scored = REPEATS * sum(right[c] for c in cases), REPEATS * len(cases)
            expected[(agent, version)] = (1, passed, scored, round(passed / scored, 3))
    assert got == expected


def test_failures_by_cluster_finds_both_recurring_failures(answers: dict[str, list[dict[str, Any]]]) -> None:
    rows = answers[BY_TITLE["Failures by cluster"]]
    assert {r["agent"] for r in rows} == {"support-bot"}
    assert sorted(r["size"] for r in rows) == [6, 6] and all(r["errored_runs"] == 6 for r in rows)


def test_bench_speed_per_quantization(answers: dict[str, list[dict[str, Any]]]) -> None:
    rows = answers[BY_TITLE["Bench speed per quantization"]]
    got = [(r["quantization"], r["bench_runs"], r["decode_tps"]) for r in rows]
    assert got == [("Q4_1", 2, round(statistics.median([41.1, 39.5]), 1)), ("Q8_0", 1, 30.2), ("Q4_K_M", 1, 16.9)]


def test_what_each_owner_sent_counts_every_span(answers: dict[str, list[dict[str, Any]]]) -> None:
    """Every agent run is three spans (agent, chat, tool); a bench model run one; a suite
    run one, plus one per case × repeat."""
    rows = answers[BY_TITLE["What each key's owner sent"]]
    got: dict[str, int] = defaultdict(int)
    for row in rows:
        got[row["owner"]] += row["spans"]
    expected: dict[str, int] = defaultdict(int)
    for run in RUNS:
        expected[OWNERS[KEYS[run.agent]]] += 3
    trials = sum(REPEATS * len(cases) for cases in CASES.values())
    expected[OWNERS[KEYS["bench"]]] = len(BENCH) + len(ANSWERS) * (len(CASES) + trials)
    assert got == expected


def _duckdb_cli() -> str | None:
    beside = Path(sys.executable).parent / "duckdb"  # the duckdb-cli wheel installs it here
    return str(beside) if beside.is_file() else shutil.which("duckdb")


DUCKDB_CLI = _duckdb_cli()


@pytest.mark.skipif(DUCKDB_CLI is None, reason="no duckdb CLI binary beside the interpreter or on PATH")
def test_every_query_runs_in_the_duckdb_cli(lake: Path, answers: dict[str, list[dict[str, Any]]],
                                            tmp_path: Path) -> None:
    """``otelbench sql --print-views > views.sql && duckdb -init views.sql``, then each query
    (the CLI's DuckDB may be another version than the Python package's)."""
    views = tmp_path / "views.sql"
    out = subprocess.run([sys.executable, "-m", "otelbench", "sql", "--lake", str(lake), "--print-views"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    views.write_text(out.stdout)
    queries = [sql for _, sql in COOKBOOK_QUERIES]
    script = "".join(f"SELECT count(*) FROM ({sql.rstrip(';')});\n" for sql in queries)
    run = subprocess.run([DUCKDB_CLI, "-csv", "-noheader", "-bail", "-init", str(views)], input=script,
                         capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         env={**os.environ, "HOME": str(tmp_path)})  # no ~/.duckdbrc of the developer's
    assert run.returncode == 0 and "Error" not in run.stderr, run.stderr
    counts = [int(row[0]) for row in csv.reader(io.StringIO(run.stdout)) if row]
    assert counts == [len(answers[sql]) for sql in queries]
