"""``otelbench process`` end to end: runs sent by the real OTel SDK to the real collector,
the lake it writes, the real CLI in a process of its own, and a judge endpoint — the real
embedded llama.cpp server for the plumbing, a stub neighbour only for its failure modes
(garbage, 500, slow enough to be killed mid-pass, what exactly it was sent)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from otelbench.testing.agent_runs import Run, send_runs
from otelbench.testing.judge_stub import JudgeStub
from otelbench.testing.serve import serve
from otelbench.testing.wait import wait_for
from otelbench.storage.duckdb import open_lake
from otelbench.storage.queries.judge_noise import JUDGE_NOISE
from otelbench.storage.queries.views import JUDGE_SERVICE

ROOT = Path(__file__).resolve().parents[2]

RUNS = [
    Run("calc", "What is 17 * 3?", "17 * 3 = 51."),
    Run("calc", "What is 15% of 240?", "15% of 240 is 36."),
    Run("calc", "What is 9 + 10?", "9 + 10 = 21."),
    Run("calc", "Convert 100 F to Celsius.", None, error="calculator unavailable", tool="calculator",
        tool_error="connection refused after 3 attempts"),
    Run("lookup", "What is the capital of Australia?", "The capital of Australia is Canberra."),
    Run("lookup", "Who wrote 'Dune'?", "I'm sorry, but I can't help with that."),
]


def otelbench(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "otelbench", "process", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env={**os.environ, **(env or {})})


def config(tmp_path: Path, lake: Path, **judge: object) -> Path:
    path = tmp_path / "otel-config.yaml"
    path.write_text(yaml.safe_dump({
        "receivers": {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:0"}}}},
        "exporters": {"parquet": {"path": str(lake)}},
        "service": {"pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["parquet"]}}},
        "processors": {"judge": {"max_attempts": 2, **judge}, "clusters": {"enabled": False}},
    }))
    return path


def rows(lake: Path, sql: str) -> list[tuple]:
    with open_lake(lake) as gw:
        return gw.query(sql, max_rows=None).rows


@pytest.fixture
def lake_with_runs(collector) -> tuple[Path, list[str], str]:
    """A lake holding RUNS, sent by the SDK; the collector keeps running (the judge's own
    traces go to it). Returns the lake, the trace ids and the collector's URL."""
    url = f"http://127.0.0.1:{collector.http_port}"
    ids = send_runs(url, RUNS)
    lake = Path(collector.config.exporters.parquet.path)
    wait_for(lambda: rows(lake, "SELECT count(*) FROM agent_runs")[0][0] == len(RUNS), what="runs in the lake")
    return lake, ids, url


@pytest.mark.model
def test_the_embedded_judge_scores_every_run_once_and_its_own_traces_are_not_runs(tmp_path, lake_with_runs):
    from otelbench.bench_runner.llama_server import find_embedded_model

    lake, ids, url = lake_with_runs
    # SmolLM2 named, not the default (the strongest installed model: a slower judge)
    cfg = config(tmp_path, lake, model=str(find_embedded_model()))
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": url}
    first = otelbench("--config", str(cfg), env=env)
    assert first.returncode in (0, 1), first.stderr
    assert f"{len(RUNS)} runs judged" in first.stdout.replace(" 0 judge errors", "") or "judge errors" in first.stdout

    evals = rows(lake, "SELECT trace_id, agent, score, error, raw_answer, judge_model, judge_version, method, "
                       "attempts, input_truncated FROM evals")
    assert sorted(r[0] for r in evals) == sorted(ids)  # every run, once
    for trace_id, agent, score, error, raw, model, version, method, attempts, truncated in evals:
        assert (score is not None and 0.0 <= score <= 1.0 and error is None) or (score is None and error), evals
        assert model == "SmolLM2-135M-Instruct.Q4_1" and version.startswith("judge-run@") and attempts == 1
        assert method in ("logprobs", "json", "text") and truncated is False
    scored = {r[0]: r[2] for r in evals}
    assert dict(rows(lake, "SELECT trace_id, eval_score FROM agent_runs")) == scored

    # the judge's calls reach the lake as GenAI spans of its own service, and are not runs
    wait_for(lambda: rows(lake, f"SELECT count(*) FROM spans WHERE service_name = '{JUDGE_SERVICE}'")[0][0] > 0,
             what="the judge's own spans")
    assert rows(lake, "SELECT count(*) FROM agent_runs")[0][0] == len(RUNS)
    assert rows(lake, f"SELECT count(*) FROM llm_calls WHERE service_name = '{JUDGE_SERVICE}'")[0][0] > 0

    again = otelbench("--config", str(cfg), env=env)
    assert again.returncode == 0, again.stderr
    errors = sum(1 for r in evals if r[2] is None)
    assert f"judge: {errors} runs judged" in again.stdout or "judge: 0 runs judged" in again.stdout
    assert rows(lake, "SELECT count(*) FROM evals")[0][0] == len(RUNS)


def test_an_endpoint_that_is_down_stops_the_run_with_one_line_and_writes_nothing(tmp_path, lake_with_runs):
    lake, _, _ = lake_with_runs
    out = otelbench("--config", str(config(tmp_path, lake, endpoint="http://127.0.0.1:9/v1", model="m")))
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1 and "127.0.0.1:9" in out.stderr, out.stderr
    assert rows(lake, "SELECT count(*) FROM evals")[0][0] == 0


def test_unusable_answers_are_kept_as_errors_and_retried_a_bounded_number_of_times(tmp_path, lake_with_runs):
    lake, ids, _ = lake_with_runs
    with JudgeStub("garbage") as stub:
        cfg = config(tmp_path, lake, endpoint=stub.base_url, model="stub-judge")
        for attempt in (1, 2, 3):
            out = otelbench("--config", str(cfg))
            assert "Traceback" not in out.stderr, out.stderr
            got = rows(lake, "SELECT score, error, raw_answer, attempts FROM evals")
            assert len(got) == len(ids)
            # max_attempts is 2: the third pass asks nothing
            assert {r[3] for r in got} == {min(attempt, 2)}
            assert all(r[0] is None and r[1] and r[2] for r in got), got


def test_a_server_error_is_a_recorded_judge_error_not_a_crash(tmp_path, lake_with_runs):
    lake, ids, _ = lake_with_runs
    with JudgeStub("http500") as stub:
        out = otelbench("--config", str(config(tmp_path, lake, endpoint=stub.base_url, model="stub-judge")))
    assert "Traceback" not in out.stderr, out.stderr
    got = rows(lake, "SELECT score, error FROM evals")
    assert got and all(score is None and "500" in error for score, error in got) or out.returncode == 1


def test_private_runs_never_reach_a_judge_that_is_not_local(tmp_path, lake_with_runs):
    lake, ids, _ = lake_with_runs
    path = config(tmp_path, lake)
    with JudgeStub() as stub:
        data = yaml.safe_load(path.read_text())
        data["processors"]["judge"].update(endpoint=stub.base_url, model="stub-judge", local=False)
        data["privacy"] = {"private_agents": ["lookup"]}
        path.write_text(yaml.safe_dump(data))
        out = otelbench("--config", str(path))
        assert out.returncode == 0, out.stderr
        assert "2 private runs not sent" in out.stdout
        sent = stub.prompts()
    assert "Canberra" not in sent and "Australia" not in sent and "Dune" not in sent
    assert "17 * 3" in sent
    assert rows(lake, "SELECT DISTINCT agent FROM evals") == [("calc",)]


def _judged(lake: Path) -> int:
    try:
        return rows(lake, "SELECT count(*) FROM evals")[0][0]
    except Exception:  # noqa: BLE001 - not written yet
        return 0


def _sums(collector, n: int) -> tuple[Path, list[str]]:
    """``n`` runs of the calc agent sent through ``collector``, in its lake."""
    ids = send_runs(f"http://127.0.0.1:{collector.http_port}",
                    [Run("calc", f"What is {i} + {i}?", f"{2 * i}") for i in range(n)])
    lake = Path(collector.config.exporters.parquet.path)
    wait_for(lambda: rows(lake, "SELECT count(*) FROM agent_runs")[0][0] == n, what="runs in the lake")
    return lake, ids


def _in_background(cfg: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "otelbench", "process", "--config", str(cfg)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_pass_killed_half_way_keeps_what_it_wrote_and_the_next_repeats_nothing(tmp_path, collector, sig):
    lake, ids = _sums(collector, 40)
    with JudgeStub(delay_s=0.05) as stub:
        cfg = config(tmp_path, lake, endpoint=stub.base_url, model="stub-judge", concurrency=1)
        proc = _in_background(cfg)
        wait_for(lambda: _judged(lake) > 0, timeout_s=60, what="a first chunk committed")
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        assert "Traceback" not in err, err
        assert proc.returncode == (-signal.SIGKILL if sig == signal.SIGKILL else 143)
        kept = _judged(lake)
        assert 0 < kept < 40
        first_pass_requests = len(stub.requests)
        out = otelbench("--config", str(cfg))  # not refused: the lock went with the process
        assert out.returncode == 0, out.stderr
        second_pass_requests = len(stub.requests) - first_pass_requests
    got = rows(lake, "SELECT trace_id, count(*) FROM evals GROUP BY trace_id")
    assert sorted(t for t, _ in got) == sorted(ids) and {n for _, n in got} == {1}
    # what was committed is not asked again (the pass asks per run at least once)
    per_run = second_pass_requests / (40 - kept)
    assert first_pass_requests + second_pass_requests <= per_run * (40 + 8) + 1


@pytest.mark.slow
def test_an_endpoint_that_dies_mid_pass_keeps_what_was_written(tmp_path, collector):
    lake, _ = _sums(collector, 30)
    with JudgeStub(delay_s=0.05) as stub:
        cfg = config(tmp_path, lake, endpoint=stub.base_url, model="stub-judge", concurrency=1)
        proc = _in_background(cfg)
        wait_for(lambda: _judged(lake) > 0, timeout_s=60, what="a first chunk committed")
        stub.stop()
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and err.count("\n") == 1 and "written; the next pass goes on" in err, err
    kept = rows(lake, "SELECT count(*), count(score) FROM evals")[0]
    assert 0 < kept[0] < 30 and kept[0] == kept[1]  # whole chunks of real scores, no half-written errors


@pytest.mark.slow
def test_two_passes_at_once_on_one_lake_do_not_double_anything(tmp_path, lake_with_runs):
    lake, ids, _ = lake_with_runs
    with JudgeStub(held=True) as stub:  # the first pass stays in progress until the second has tried
        cfg = config(tmp_path, lake, endpoint=stub.base_url, model="stub-judge", concurrency=1)
        first = _in_background(cfg)
        wait_for(lambda: len(stub.requests) > 0, timeout_s=60, what="the first pass judging")
        second = otelbench("--config", str(cfg))
        stub.release()
        out, err = first.communicate(timeout=120)
    assert second.returncode == 1 and "another otelbench process is running" in second.stderr
    assert first.returncode == 0, err
    assert rows(lake, "SELECT count(*), count(DISTINCT trace_id) FROM evals") == [(len(ids), len(ids))]


def test_only_one_agent(tmp_path, lake_with_runs):
    lake, _, _ = lake_with_runs
    with JudgeStub() as stub:
        out = otelbench("--config", str(config(tmp_path, lake, endpoint=stub.base_url, model="stub-judge")),
                        "--agent", "lookup", "--only", "judge")
    assert out.returncode == 0, out.stderr
    assert "clusters:" not in out.stdout
    assert rows(lake, "SELECT agent, count(*) FROM evals GROUP BY agent") == [("lookup", 2)]
    assert rows(lake, "SELECT agent, count(eval_score) FROM agent_runs GROUP BY agent ORDER BY agent") == [
        ("calc", 0), ("lookup", 2)]


def test_serve_judges_on_a_schedule_and_never_judges_the_judges_calls(tmp_path):
    lake = tmp_path / "lake"
    with JudgeStub() as stub:
        cfg = tmp_path / "otel-config.yaml"
        cfg.write_text(yaml.safe_dump({
            "receivers": {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:0"}}}},
            "exporters": {"parquet": {"path": str(lake), "flush": {"interval_s": 0.2}}},
            "service": {"wal": {"dir": str(tmp_path / "wal")},
                        "pipelines": {"traces": {"receivers": ["otlp"], "exporters": ["parquet"]}}},
            "processors": {"interval_s": 1, "judge": {"endpoint": stub.base_url, "model": "stub-judge"},
                           "clusters": {"enabled": False}},
        }))
        with serve(cfg) as served:
            ids = send_runs(served.url, RUNS)
            wait_for(lambda: _judged(lake) == len(ids), timeout_s=60, what="scheduled judging")
            # the judge's own calls reached the lake through this collector ...
            wait_for(lambda: rows(lake, f"SELECT count(*) FROM spans WHERE service_name = '{JUDGE_SERVICE}'")[0][0]
                     > 0, what="the judge's spans")
            asked = len(stub.requests)
            passes = _scheduled_passes(served.url)
            wait_for(lambda: _scheduled_passes(served.url) >= passes + 2, timeout_s=120,
                     what="two more scheduled passes")
            # ... and were neither judged nor counted as runs
            assert len(stub.requests) == asked
            assert _judged(lake) == len(ids)
            assert rows(lake, "SELECT count(*) FROM agent_runs")[0][0] == len(RUNS)
    assert served.proc.returncode == 0, served.err
    assert "judging and clustering every 1s" in served.out


def _scheduled_passes(url: str) -> int:
    """Scheduled processors runs that ended, from serve's /metrics; failed ones must not count."""
    metrics = httpx.get(f"{url}/metrics", timeout=10).text
    errors = next(line for line in metrics.splitlines() if line.startswith("otelbench_processors_errors_total "))
    assert float(errors.split()[-1]) == 0, metrics
    runs = next(line for line in metrics.splitlines() if line.startswith("otelbench_processors_runs_total "))
    return int(float(runs.split()[-1]))


@pytest.mark.parametrize("shard", ["0/2", "3/2", "1", "a/b"])
def test_a_bad_shard_is_refused_with_the_form_expected(shard, tmp_path):
    out = subprocess.run([sys.executable, "-m", "otelbench", "process", "--lake", str(tmp_path), "--shard", shard],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "I/N with 1 <= I <= N" in out.stderr


def test_rejudge_judges_runs_again_apart_and_prints_the_judges_noise(tmp_path, lake_with_runs):
    lake, ids, _ = lake_with_runs
    # each answer 0.1 higher than the last one to the same request: every repeat differs
    with JudgeStub(score_of=lambda prompt, before: 0.3 + 0.1 * before) as stub:
        cfg = str(config(tmp_path, lake, endpoint=stub.base_url, model="stub-judge"))
        first = otelbench("--config", cfg, "--only", "judge")
        scores = rows(lake, "SELECT trace_id, eval_score FROM agent_runs ORDER BY trace_id")
        again = otelbench("--config", cfg, "--only", "judge", "--rejudge", "4")
    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    assert "judge noise" not in first.stdout
    assert "judge: 0 runs judged" in again.stdout and "judge: 4 judged runs judged again" in again.stdout
    noise = rows(lake, f"SELECT runs, repeats, mean_abs_diff, sd, same_side FROM ({JUDGE_NOISE})")
    assert [r[:2] for r in noise] == [(4, 4)]
    assert re.search(r"judge noise \(stub-judge, judge-run@\w+\): 4 runs judged again, 4 repeats; "
                     rf"mean \|difference\| {noise[0][2]:.3f}, within-run SD {noise[0][3]:.3f}",
                     " ".join(again.stdout.split()))  # lines wrap at 80 columns in a pipe
    assert rows(lake, "SELECT trace_id, eval_score FROM agent_runs ORDER BY trace_id") == scores
    assert rows(lake, "SELECT count(*) FROM evals") == [(len(ids),)]


def test_a_bad_rejudge_count_is_refused(tmp_path):
    out = subprocess.run([sys.executable, "-m", "otelbench", "process", "--lake", str(tmp_path), "--rejudge", "-3"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "a number of runs, 0 or more" in out.stderr
