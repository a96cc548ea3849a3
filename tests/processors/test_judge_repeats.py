"""Re-judging (``processors.judge.rejudge_sample``, processors/judge/repeats.py): the judge's
noise measured exactly against a stub judge whose repeats differ by known amounts, and
never a run counted twice."""

from __future__ import annotations

import json
import re
import statistics
import zlib
from pathlib import Path

import openai
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otelbench.processors import pipeline
from otelbench.processors.config import Clusters, Judge, Processors
from otelbench.processors.judge.judgement import REFERENCE_WEIGHT
from otelbench.processors.judge.repeats import rejudge_sample
from otelbench.storage.duckdb import open_lake
from otelbench.storage.lake import Lake
from otelbench.storage.privacy import Privacy
from otelbench.testing.judge_stub import MODEL, JudgeStub
from otelbench.testing.rows import agent, batch

ALL_TIME = 24 * 365 * 50.0
TASK = re.compile(r"task number (\d+)\b")


def _msg(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


# every run's answer: it holds one of the two values of the stub's own answer to the task
# ({"reasoning": REASONING, "score": …}), so the judge's agreement with it is exactly 1/2
ANSWER = "The answer matches the task."


def _lake(root: Path, runs: int, agents: tuple[str, ...] = ("a",)) -> None:
    lake = Lake(root)
    lake.init()
    lake.write_batch("01", batch(spans=[
        agent(n, 1, name=agents[n % len(agents)], at=60.0 * n, input_messages=_msg("user", f"task number {n}"),
              output_messages=_msg("assistant", ANSWER)) for n in range(1, runs + 1)]))


def _pass(root: Path, stub: JudgeStub, rejudge: int) -> pipeline.Report:
    cfg = Processors(window_hours=ALL_TIME, judge=Judge(rejudge_sample=rejudge),
                     clusters=Clusters(enabled=False))
    llm = pipeline.Llm(openai.OpenAI(base_url=stub.base_url, api_key="x", max_retries=0), MODEL, True)
    return pipeline.run(cfg, Privacy(), root, llm=llm)


def _rows(root: Path, sql: str) -> list[tuple]:
    with open_lake(root) as gw:
        return gw.query(sql, max_rows=None).rows


# run n's first grade, and how far each of its repeats moves it (the k-th repeat: k × delta).
# The stored score is REFERENCE_WEIGHT × agreement (1/2, ANSWER) + the rest × grade
# (judgement.combine): at least 0.5 exactly when the grade is.
BASE = {1: 0.2, 2: 0.45, 3: 0.6, 4: 0.8, 5: 0.55, 6: 0.3}
DELTA = {1: 0.1, 2: 0.1, 3: -0.2, 4: 0.0, 5: -0.1, 6: 0.3}
SHARE = 1 - REFERENCE_WEIGHT


def _scripted(prompt: str, asked_before: int) -> float:
    n = int(TASK.search(prompt).group(1))
    return round(BASE[n] + asked_before * DELTA[n], 6)


def _stored(n: int, k: int) -> float:
    """Run n's stored score at its k-th judgement (0: the first)."""
    return REFERENCE_WEIGHT * 0.5 + SHARE * (BASE[n] + k * DELTA[n])


def test_repeats_give_exact_noise_figures_and_leave_the_scores_alone(tmp_path):
    root = tmp_path / "lake"
    _lake(root, len(BASE))
    with JudgeStub(score_of=_scripted) as stub:
        first = _pass(root, stub, rejudge=len(BASE))
        evals = _rows(root, "SELECT trace_id, score, judged_at FROM evals ORDER BY trace_id")
        second = _pass(root, stub, rejudge=4)
    assert first.judged == len(BASE) and first.rejudged == len(BASE) and second.judged == 0 and second.rejudged == 4
    # evals and the runs' scores are the first judgements, untouched by either pass's repeats
    assert _rows(root, "SELECT trace_id, score, judged_at FROM evals ORDER BY trace_id") == evals
    assert [s for _, s, _ in evals] == pytest.approx([_stored(n, 0) for n in sorted(BASE)])
    assert _rows(root, "SELECT count(*), count(eval_score) FROM agent_runs") == [(len(BASE), len(BASE))]

    # after the first pass every run has one repeat: the figures of the known differences
    (noise,) = first.noise
    deltas = [SHARE * d for d in DELTA.values()]
    firsts = [_stored(n, 0) for n in BASE]
    assert (noise["runs"], noise["repeats"], noise["judged"]) == (6, 6, 6)
    assert noise["mean_abs_diff"] == pytest.approx(sum(map(abs, deltas)) / 6)
    assert noise["sd"] == pytest.approx((sum(d * d for d in deltas) / 6 / 2) ** 0.5)
    sides = [(_stored(n, 0) >= 0.5) == (_stored(n, 1) >= 0.5) for n in BASE]
    assert noise["same_side"] == pytest.approx(sum(sides) / 6) and sum(sides) == 2  # 2, 3, 5, 6 cross 0.5
    assert noise["score_variance"] == pytest.approx(statistics.variance(firsts))
    assert noise["noise_share"] == pytest.approx(noise["sd"] ** 2 / statistics.variance(firsts))

    # the second pass repeats 4 runs again (all had one repeat: the 4 lowest hashes), repeat 2
    repeats = _rows(root, 'SELECT trace_id, "repeat", first_score, score FROM judge_repeats ORDER BY trace_id, "repeat"')
    twice = sorted(_rows(root, "SELECT trace_id FROM evals"), key=lambda r: zlib.crc32(r[0].encode()))[:4]
    assert sorted(t for t, r, _, _ in repeats if r == 2) == sorted(t for (t,) in twice)
    scores: dict[str, list[float]] = {}
    for trace_id, _, first_score, score in repeats:
        scores.setdefault(trace_id, [first_score]).append(score)
    pooled = sum(statistics.variance(v) * (len(v) - 1) for v in scores.values()) / sum(len(v) - 1 for v in
                                                                                        scores.values())
    (noise,) = second.noise
    assert (noise["runs"], noise["repeats"]) == (6, 10)
    assert noise["sd"] == pytest.approx(pooled ** 0.5)
    assert noise["mean_abs_diff"] == pytest.approx(statistics.mean(abs(s - f) for _, _, f, s in repeats))
    for trace_id, values in scores.items():  # each repeat landed where the stub was told to put it
        n = int(trace_id, 16)
        assert values == pytest.approx([_stored(n, k) for k in range(len(values))])


def test_the_sample_takes_the_least_repeated_runs_first_in_hash_order():
    ids = [f"{i:032x}" for i in range(50)]
    candidates = pl.DataFrame({"trace_id": ids, "first_score": [0.5] * 50, "repeats": [i % 3 for i in range(50)]})
    chosen = rejudge_sample(candidates, 20)
    never = sorted((t for i, t in enumerate(ids) if i % 3 == 0), key=lambda t: zlib.crc32(t.encode()))
    once = sorted((t for i, t in enumerate(ids) if i % 3 == 1), key=lambda t: zlib.crc32(t.encode()))
    assert chosen["trace_id"].to_list() == never + once[: 20 - len(never)]
    assert rejudge_sample(candidates.reverse(), 20).equals(chosen)
    assert rejudge_sample(candidates, 0).height == 0 and rejudge_sample(candidates, 500).height == 50


def test_without_a_rejudge_sample_nothing_is_judged_again(tmp_path):
    root = tmp_path / "lake"
    _lake(root, 3)
    with JudgeStub() as stub:
        report = _pass(root, stub, rejudge=0)
        report = _pass(root, stub, rejudge=0)
    assert report.rejudged == 0 and report.noise == []
    assert _rows(root, "SELECT count(*) FROM judge_repeats") == [(0,)]


def _counted(root: Path) -> list[tuple]:
    from otelbench.storage import rollups
    from otelbench.web.site import Site

    rollups.refresh(root)
    figures = Site(root, Privacy(), refresh_s=0).figures("all")
    board = sorted((a, f["runs"], f["judged"], f["score"]) for a, f in figures.items())
    return [*_rows(root, "SELECT trace_id, eval_score FROM agent_runs ORDER BY trace_id"),
            *_rows(root, "SELECT count(*), count(DISTINCT (trace_id, judge_model, judge_version)) FROM evals"), *board]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=st.integers(1, 6), asks=st.lists(st.integers(0, 8), min_size=1, max_size=3),
       scores=st.lists(st.floats(0, 1), min_size=1, max_size=4))
def test_rejudging_never_counts_a_run_twice(tmp_path_factory, runs, asks, scores):
    """Whatever is re-judged, how often and with what answers: the runs' scores, the evals
    rows and the leaderboard's counts and means are what the judging alone gave."""
    root = tmp_path_factory.mktemp("lake")
    _lake(root, runs, agents=("a", "b"))
    answers = iter(scores * 100)
    with JudgeStub(score_of=lambda prompt, before: round(next(answers), 4)) as stub:
        _pass(root, stub, rejudge=0)
        before = _counted(root)
        for n in asks:
            _pass(root, stub, rejudge=n)
    assert _counted(root) == before
    repeats = _rows(root, 'SELECT count(*), count(DISTINCT (trace_id, "repeat")) FROM judge_repeats')
    assert repeats[0][0] == repeats[0][1] == sum(min(n, runs) for n in asks)
