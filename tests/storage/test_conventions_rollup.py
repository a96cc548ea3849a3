"""The conventions rollup (storage/conventions.py) against the views it stands for: the
doctor's report read from the rollup equals the one read from the views, after a first
build, new spans and log events, compaction and a merge of the parts — on a lake the real
collector wrote from real OTel SDK spans and recorded instrumentations' OTLP/JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otelbench.normalize import coverage
from otelbench.testing.agent_runs import Run, send_runs
from otelbench.testing.wait import wait_for
from otelbench.storage import conventions, rollups
from otelbench.storage.duckdb import open_lake
from otelbench.storage.lake import Lake
from otelbench.web import doctor_report as doctor

RECORDED = Path(__file__).resolve().parents[1] / "testdata" / "recorded"


@pytest.fixture(scope="module")
def collector(tmp_path_factory):
    from otelbench.collector.wiring import Collector
    from otelbench.testing.collector import collector_config

    c = Collector(collector_config(tmp_path_factory.mktemp("conventions"))).start()
    yield c
    c.stop()


def _count(lake: Path, table: str) -> int:
    if not (lake / table).exists():
        return 0
    with open_lake(lake) as gw:
        return gw.query(f"SELECT count(*) FROM {table}").rows[0][0]


def _post_recorded(collector: Any, stack: str) -> None:
    """A recorded stack's requests, as its SDK sent them (OTLP/JSON), to the collector."""
    lake = Path(collector.config.exporters.parquet.path)
    want = {"spans": _count(lake, "spans"), "logs": _count(lake, "logs")}
    for signal, table, items in (("traces", "spans", ("resourceSpans", "scopeSpans", "spans")),
                                 ("logs", "logs", ("resourceLogs", "scopeLogs", "logRecords"))):
        for f in sorted((RECORDED / stack).glob(f"{signal}-*.json")):
            body = json.loads(f.read_text())
            want[table] += sum(len(s[items[2]]) for r in body[items[0]] for s in r[items[1]])
            r = httpx.post(f"http://127.0.0.1:{collector.http_port}/v1/{signal}", content=f.read_bytes(),
                           headers={"Content-Type": "application/json"})
            assert r.status_code == 200, r.text
    wait_for(lambda: all(_count(lake, t) == n for t, n in want.items()), what=f"{stack}'s spans and logs in the lake")


def _runs(lake: Path) -> int:
    with open_lake(lake) as gw:
        return gw.query("SELECT count(*) FROM agent_runs").rows[0][0]


def _send(url: str, lake: Path, runs: list[Run]) -> None:
    before = _runs(lake) if (lake / "spans").exists() else 0
    send_runs(url, runs)
    wait_for(lambda: _runs(lake) == before + len(runs), what="the runs in the lake")


def _both(lake: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    with open_lake(lake) as gw:
        rows = doctor.gateway_rows(gw)
        plain = doctor.read(lake, rows, "all", use_rollups=False)
        rolled = doctor.read(lake, rows, "all")
    assert (plain["source"], rolled["source"]) == ("lake", "rollup")
    return ({k: v for k, v in plain.items() if k != "source"}, {k: v for k, v in rolled.items() if k != "source"})


def test_the_rollup_follows_the_views(collector, monkeypatch) -> None:
    lake = Path(collector.config.exporters.parquet.path)
    url = f"http://127.0.0.1:{collector.http_port}"
    _send(url, lake, [Run("calc", f"What is {i} + 1?", f"{i + 1}") for i in range(3)])
    _post_recorded(collector, "openai-v2")
    assert conventions.current(lake) is None and conventions.pending(lake)
    first = conventions.refresh(lake)
    assert first is not None and rollups.refresh(lake) is not None and not conventions.pending(lake)
    plain, rolled = _both(lake)
    assert plain == rolled and len(plain["services"]) == 2

    # nothing new: the same version
    assert conventions.refresh(lake) == first

    # new spans and log events of other scopes: one more part each
    _post_recorded(collector, "openllmetry")
    _post_recorded(collector, "google-adk")
    _send(url, lake, [Run("search", "weather in Paris", "sunny", tool="web_search")])
    assert conventions.refresh(lake) > first and rollups.refresh(lake) is not None
    plain, rolled = _both(lake)
    assert plain == rolled
    assert {s["service"] for s in plain["services"]} >= {"demo-agent", "weather-app", "record-fixtures-openai-v2"}

    # compaction: its outputs name their inputs, all seen — nothing counted twice
    Lake(lake).compact("spans", below_batch_id="z" * 40, min_files=2)
    Lake(lake).compact("logs", below_batch_id="z" * 40, min_files=2)
    conventions.refresh(lake)
    rollups.refresh(lake)
    plain, rolled = _both(lake)
    assert plain == rolled

    # many parts are summed into one, and the files no version names are swept
    monkeypatch.setattr(conventions, "MAX_PARTS", 1)
    _send(url, lake, [Run("calc", "What is 9 + 9?", "18")])
    conventions.refresh(lake)
    rollups.refresh(lake)
    plain, rolled = _both(lake)
    assert plain == rolled
    snap = conventions.current(lake)
    assert all(len(files) == 1 for kind, files in snap.parts.items() if kind != "events")
    kept = {Path(f).name for files in snap.parts.values() for f in files}
    on_disk = {p.name for p in (lake / "_rollups" / "conventions").glob("*.parquet")}
    assert kept <= on_disk and len(on_disk) <= 2 * len(kept) + 3  # this version's and the previous one's


def test_a_window_leaves_older_days_out(collector) -> None:
    lake = Path(collector.config.exporters.parquet.path)
    if _count(lake, "spans") == 0:
        _post_recorded(collector, "openai-v2")
    conventions.refresh(lake)
    with open_lake(lake) as gw:
        recent = doctor.read(lake, doctor.gateway_rows(gw), "24h")
        plain = doctor.read(lake, doctor.gateway_rows(gw), "24h", use_rollups=False)
    # the recordings are of 2026-12-02 and -03: only the runs sent now are in the last day
    assert {s["service"] for s in recent["services"]} <= {"demo-agent"}
    assert {k: v for k, v in recent.items() if k != "source"} == {k: v for k, v in plain.items() if k != "source"}


_SEGMENT = st.one_of(st.from_regex(r"[a-z_]{1,6}", fullmatch=True), st.integers(0, 999).map(str))


@settings(max_examples=200, deadline=None)
@given(st.lists(_SEGMENT, min_size=1, max_size=6))
def test_a_key_has_one_form_whatever_its_indices(segments: list[str]) -> None:
    key = ".".join(segments)
    form = coverage.key_form(key)
    # every index but a leading one is N; renumbering the indices gives the same form
    assert form.split(".")[1:] == ["N" if s.isdigit() else s for s in segments[1:]]
    renumbered = ".".join(str(int(s) + 7) if s.isdigit() and i else s for i, s in enumerate(segments))
    assert coverage.key_form(renumbered) == form == coverage.key_form(form)
