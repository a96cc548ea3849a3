"""What the web keeps per rollup version — figures, every agent's series and clusters,
profiles, the home and leaderboard bodies — is read anew when the version changes: new
runs sent through the real collector show on every page once they are folded in."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from otelbench.testing.agent_runs import Run
from otelbench.testing.wait import wait_for
from tests.web.lakes import collector, send
from otelbench.web.app import create_app


def test_new_runs_show_on_every_kept_answer_after_the_next_version(tmp_path: Path) -> None:
    with collector(tmp_path) as (url, root):
        send(url, root, [Run("calc", "What is 1 + 1?", "2")] * 2)
        client = TestClient(create_app(root, refresh_s=0, figures_every_s=0))

        def seen() -> dict[str, object]:
            profile = client.get("/api/agents/calc").json()
            board = client.get("/api/leaderboard?window=all").json()["agents"]
            return {"figures": profile["agent"]["runs"],
                    "series": sum(p["runs"] for p in profile["over_time"]["periods"]),
                    "histogram": sum(b["count"] for b in profile["latency"]["buckets"]),
                    "recent": len(profile["recent_runs"]),
                    "leaderboard": {a["agent"]: a["runs"] for a in board}.get("calc"),
                    "home": client.get("/api/home").json()["instance"]["runs"],
                    "page": client.get("/leaderboard?window=all").text.count('href="/agents/calc"') > 0,
                    "failures": sum(p["failures"] for p in profile["over_time"]["periods"])}

        first = seen()
        assert first == {"figures": 2, "series": 2, "histogram": 2, "recent": 2, "leaderboard": 2, "home": 2,
                         "page": True, "failures": 0}
        send(url, root, [Run("calc", "Divide by zero", None, error="ZeroDivisionError: division by zero")] * 3)
        assert seen() == {**first, "figures": 5, "series": 5, "histogram": 5, "recent": 5, "leaderboard": 5,
                          "home": 5, "failures": 3}


def test_figures_that_lag_the_rollup_do_not_stay_behind_once_computed_anew(tmp_path: Path) -> None:
    # figures are computed at most every figures_every_s: a profile made from figures a
    # version behind must not be kept as the new version's answer
    with collector(tmp_path) as (url, root):
        send(url, root, [Run("calc", "What is 1 + 1?", "2")] * 2)
        client = TestClient(create_app(root, refresh_s=0, figures_every_s=1.5))

        def runs() -> tuple[int, int, int]:
            profile = client.get("/api/agents/calc").json()
            home = client.get("/api/home").json()
            return (profile["agent"]["runs"], sum(p["runs"] for p in profile["over_time"]["periods"]),
                    {a["agent"]: a["runs"] for a in home["board"]["agents"]}["calc"])

        assert runs() == (2, 2, 2)
        send(url, root, [Run("calc", "What is 2 + 2?", "4")] * 3)  # one new rollup version, then none
        wait_for(lambda: runs() == (5, 5, 5), timeout_s=15, what="the kept figures computed anew")
