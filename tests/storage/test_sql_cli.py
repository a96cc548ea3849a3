"""``otelbench sql`` end to end: a real process over a real lake, in every format."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from otelbench.storage.queries import views as view_sql
from otelbench.storage.duckdb import open_lake
from otelbench.storage.lake import Lake
from otelbench.testing.rows import BENCH_SCOPE, agent, batch, bench_run, bench_test, llm, log, tool

ROOT = Path(__file__).resolve().parents[2]
QUERY = "SELECT agent, span_id, start_time, finish_reasons, cost_usd, error_message FROM llm_calls ORDER BY span_id"


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    lk = Lake(tmp_path / "lake")
    lk.init()
    lk.write_batch("01", batch(spans=[
        agent(1, 1, name="triage"),
        llm(1, 2, 1, finish_reasons=["stop"], cost_usd=0.5),
        llm(1, 3, 1, finish_reasons=["length", "stop"], cost_usd=None, error_message="[red]boom[/red], \"quoted\""),
    ]))
    return lk


def otelbench(*args: str, stdin: str | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "otelbench", "sql", *args],
        capture_output=True, text=True, input=stdin, cwd=cwd, timeout=120,
    )


def test_json_format(lake: Lake) -> None:
    out = otelbench("--lake", str(lake.root), "--format", "json", QUERY)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [
        {"agent": "triage", "span_id": f"{2:016x}", "start_time": "2025-03-14T12:00:00+00:00",
         "finish_reasons": ["stop"], "cost_usd": 0.5, "error_message": None},
        {"agent": "triage", "span_id": f"{3:016x}", "start_time": "2025-03-14T12:00:00+00:00",
         "finish_reasons": ["length", "stop"], "cost_usd": None, "error_message": '[red]boom[/red], "quoted"'},
    ]


def test_csv_format(lake: Lake) -> None:
    out = otelbench("--lake", str(lake.root), "--format", "csv", QUERY)
    assert out.returncode == 0, out.stderr
    rows = list(csv.reader(io.StringIO(out.stdout)))
    assert rows == [
        ["agent", "span_id", "start_time", "finish_reasons", "cost_usd", "error_message"],
        ["triage", f"{2:016x}", "2025-03-14T12:00:00+00:00", '["stop"]', "0.5", ""],
        ["triage", f"{3:016x}", "2025-03-14T12:00:00+00:00", '["length", "stop"]', "", '[red]boom[/red], "quoted"'],
    ]


def test_table_format_prints_values_verbatim(lake: Lake) -> None:
    out = otelbench("--lake", str(lake.root), QUERY)
    assert out.returncode == 0, out.stderr
    assert "[red]boom[/red]" in out.stdout  # not swallowed as rich markup
    assert "2025-03-14T12:00:00+00:00" in out.stdout and '["length", "stop"]' in out.stdout
    assert "2 rows" in out.stdout


def test_default_lake_is_data_lake_under_the_cwd(lake: Lake, tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    lake.root.rename(tmp_path / "data" / "lake")
    out = otelbench("--format", "csv", "SELECT count(*) AS n FROM spans", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["n", "3"]


def test_sql_from_stdin(lake: Lake) -> None:
    out = otelbench("--lake", str(lake.root), "--format", "csv", "-", stdin="SELECT 41 + 1 AS x")
    assert out.stdout.splitlines() == ["x", "42"]


def test_errors_go_to_stderr_with_exit_1(lake: Lake, tmp_path: Path) -> None:
    refused = otelbench("--lake", str(lake.root), f"COPY spans TO '{lake.root}/x.csv'")
    assert refused.returncode == 1 and refused.stdout == ""
    assert "COPY statements are not allowed" in refused.stderr
    outside = otelbench("--lake", str(lake.root), "SELECT * FROM read_csv('/etc/passwd')")
    assert outside.returncode == 1 and "Permission" in outside.stderr
    missing = otelbench("--lake", str(tmp_path / "nowhere"), "SELECT 1")
    assert missing.returncode == 1 and "no lake" in missing.stderr


def test_usage_errors_exit_2(lake: Lake) -> None:
    assert otelbench("--lake", str(lake.root)).returncode == 2
    bad_format = otelbench("--format", "xml", "SELECT 1")
    assert bad_format.returncode == 2 and "invalid choice" in bad_format.stderr


def test_print_views_is_a_script_for_the_duckdb_cli(lake: Lake) -> None:
    out = otelbench("--lake", str(lake.root), "--print-views")
    assert out.returncode == 0, out.stderr
    con = duckdb.connect()
    con.execute(out.stdout)
    assert con.execute("SELECT agent, count(*) FROM llm_calls GROUP BY 1").fetchall() == [("triage", 2)]
    assert str(lake.root) in out.stdout


def _duckdb_cli() -> str | None:
    beside = Path(sys.executable).parent / "duckdb"  # the duckdb-cli wheel installs it here
    return str(beside) if beside.is_file() else shutil.which("duckdb")


DUCKDB_CLI = _duckdb_cli()


@pytest.mark.skipif(DUCKDB_CLI is None, reason="no duckdb CLI binary beside the interpreter or on PATH")
@pytest.mark.parametrize("how", [".read", "-init", "stdin"])
def test_print_views_runs_in_the_real_duckdb_cli(lake: Lake, tmp_path: Path, how: str) -> None:
    """The CLI (possibly another DuckDB version than the Python package) runs the script:
    every statement ends with ';' (statements joined without one fail with
    "syntax error at or near CREATE"), and only syntax both versions know is used."""
    lake.write_batch("02", batch(spans=[llm(2, 2, 1), tool(1, 4, 1)],
                                 logs=[log(2, 2, message_direction="input", messages='[{"role": "user", "parts": []}]')]))
    views = tmp_path / "views.sql"
    views.write_text(otelbench("--lake", str(lake.root), "--print-views").stdout)
    counts = " UNION ALL ".join(f"SELECT '{v}', count(*) FROM {v}" for v in view_sql.VIEW_NAMES)
    query = f"SELECT * FROM ({counts}) ORDER BY 1"
    cmd = [DUCKDB_CLI, "-csv", "-noheader", "-bail"]
    if how == ".read":
        run = subprocess.run([*cmd, "-c", f".read '{views}'", "-c", query], capture_output=True, text=True, timeout=120)
    elif how == "-init":  # README: otelbench sql --print-views > views.sql && duckdb -init views.sql
        run = subprocess.run([*cmd, "-init", str(views), "-c", query], capture_output=True, text=True, timeout=120)
    else:  # otelbench sql --print-views | duckdb
        run = subprocess.run(cmd, input=views.read_text() + query + ";\n", capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "Error" not in run.stderr, run.stderr
    with open_lake(lake.root) as gw:
        expected = gw.query(query).rows
    assert list(csv.reader(io.StringIO(run.stdout))) == [[name, str(n)] for name, n in expected]
    assert ("llm_calls", 3) in expected and ("span_messages", 1) in expected


@pytest.mark.skipif(DUCKDB_CLI is None, reason="no duckdb CLI binary beside the interpreter or on PATH")
def test_bench_views_read_in_the_real_duckdb_cli(lake: Lake, tmp_path: Path) -> None:
    """The bench views' JSON reads and casts (a string array among them) give the CLI's
    DuckDB the same rows as ours."""
    lake.write_batch("02", batch(spans=[
        bench_run(5, 1, "qwen", **{"bench.reasons": ["a, b", "c"], "bench.decode_tps.median": 41.5,
                                   "bench.quick": True, "bench.failures": 2}),
        llm(5, 2, 1, request_model="qwen", scope_name=BENCH_SCOPE),
        bench_test(5, 3, 2, "json_book", "pass"),
    ]))
    views = otelbench("--lake", str(lake.root), "--print-views").stdout
    query = ("SELECT r.model, r.confidence_reasons, r.decode_tps_median, r.quick, r.failures, t.test, t.verdict "
             "FROM bench_results AS r JOIN bench_tests AS t USING (trace_id)")
    run = subprocess.run([DUCKDB_CLI, "-csv", "-noheader", "-bail"], input=views + query + ";\n",
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "Error" not in run.stderr, run.stderr
    with open_lake(lake.root) as gw:
        expected = gw.query(query).rows
    assert expected == [("qwen", ["a, b", "c"], 41.5, True, 2, "json_book", "pass")]
    assert list(csv.reader(io.StringIO(run.stdout))) == [["qwen", "['a, b', c]", "41.5", "true", "2", "json_book", "pass"]]


def test_run_directly_without_the_cli(lake: Lake, capsys: pytest.CaptureFixture[str]) -> None:
    from otelbench.commands import sql

    assert sql.main(["--lake", str(lake.root), "--format", "json", "SELECT 1 AS one"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"one": 1}]


def test_limits_are_the_users_to_set(lake: Lake) -> None:
    """An interactive tool: every row, no time limit, DuckDB's own memory limit, unless asked."""
    many = "SELECT range FROM range(12000)"
    assert otelbench("--lake", str(lake.root), "--format", "csv", many).stdout.count("\n") == 12001
    cut = otelbench("--lake", str(lake.root), "--format", "csv", "--max-rows", "5", many)
    assert cut.stdout.count("\n") == 6 and "only the first 5 rows" in cut.stderr
    setting = "SELECT current_setting('memory_limit') AS m"
    assert json.loads(otelbench("--lake", str(lake.root), "--format", "json", "--memory-limit", "64MB",
                                setting).stdout) == [{"m": "61.0 MiB"}]
    own = json.loads(otelbench("--lake", str(lake.root), "--format", "json", setting).stdout)[0]["m"]
    assert own not in ("953.6 MiB", "61.0 MiB")  # not the gateway's 1 GB default
    slow = otelbench("--lake", str(lake.root), "--timeout", "0.2", "SELECT count(*) FROM range(1000000000000)")
    assert slow.returncode == 1 and "timed out after 0.2 s" in slow.stderr


WIDE = ("SELECT trace_id, agent, span_id, start_time, request_model, input_tokens, output_tokens, cost_usd, "
        "finish_reasons, error_message, input_messages, output_messages, 123456789012345 AS big, "
        "0.1::DOUBLE + 0.2::DOUBLE AS sum_double, 0.00013425::FLOAT AS f32 FROM llm_calls ORDER BY span_id")


@pytest.mark.parametrize("width", [80, 120, 200])
def test_a_wide_result_fits_the_terminal_with_the_columns_it_leaves_out_named(lake: Lake, width: int) -> None:
    out = otelbench("--lake", str(lake.root), "--width", str(width), WIDE)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= width
    header = next(line for line in lines if "trace_id" in line)
    assert "agent" in header and "f32" in header  # the first and the last columns stay
    shown = [c.strip() for c in header.strip("│ ").split("│")]
    names = [c.strip() for c in WIDE.split("FROM")[0][len("SELECT"):].split(",")]
    names = [n.rsplit(" AS ", 1)[-1] for n in names]
    assert all(c in names or c == "…" for c in shown)  # headers whole, never cut
    hidden = len(names) - (len(shown) - ("…" in shown))
    caption = " ".join(lines[lines.index(next(line for line in lines if line.startswith("2 rows"))):])
    if hidden:
        assert "…" in shown and f"{hidden} of {len(names)} columns not shown" in caption
        assert "--format line" in caption
    else:
        assert "not shown" not in caption
    body = "\n".join(lines)
    if "f32" in shown:
        assert "0.00013425" in body and "0.00013425000361" not in body  # a FLOAT's own shortest text
    if "big" in shown:
        assert "123456789012345" in body  # a number is never cut
    for long_cell in ("input_messages", "output_messages"):
        if long_cell in shown:
            assert "…" in body  # long text shortened, marked


def test_piped_output_keeps_whole_values(lake: Lake) -> None:
    lk = lake
    lk.write_batch("02", batch(spans=[llm(2, 2, 1, error_message="x" * 300)]))
    out = otelbench("--lake", str(lk.root), "SELECT error_message, span_id FROM llm_calls WHERE trace_id LIKE '%2'")
    assert "x" * 300 in out.stdout and "not shown" not in out.stdout


def test_line_format_shows_every_column_of_every_row_whole(lake: Lake) -> None:
    out = otelbench("--lake", str(lake.root), "--format", "line", WIDE)
    assert out.returncode == 0, out.stderr
    blocks = out.stdout.strip().split("\n\n")
    assert len(blocks) == 3 and blocks[-1] == "2 rows"
    first = dict(line.strip().split(" = ", 1) for line in blocks[0].splitlines() if " = " in line)
    assert first["agent"] == "triage" and first["big"] == "123456789012345"
    assert first["sum_double"] == "0.30000000000000004"  # the shortest text that reads back to that double
    assert first["f32"] == "0.00013425" and first["error_message"] == "NULL"
    assert '[red]boom[/red], "quoted"' in blocks[1]
