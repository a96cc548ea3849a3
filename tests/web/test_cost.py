"""web.cost: an agent's cost by source, each figure labelled, as a table of input → expected."""

from __future__ import annotations

import pytest

from otelbench.web.cost import agent_cost, source_label


@pytest.mark.parametrize("sources, label", [
    ([], None), ([None], None), (["reported"], "reported"), (["computed", "computed"], "computed"),
    (["reported", "computed"], "mixed"), (["computed", None], "computed"),
])
def test_source_label(sources: list[str | None], label: str | None) -> None:
    assert source_label(sources) == label


def row(source: str, total: float, calls: int, runs: int) -> dict:
    return {"source": source, "total_usd": total, "calls": calls, "runs": runs}


@pytest.mark.parametrize("rows, runs, costed, expected", [
    ([], 4, 0, {"total_usd": None, "per_run_usd": None, "source": None, "mixed_runs": 0,
                "reported": (None, None, 0, 0), "computed": (None, None, 0, 0)}),
    ([row("reported", 1.0, 2, 2)], 4, 2, {"total_usd": 1.0, "per_run_usd": 0.25, "source": "reported",
                                         "mixed_runs": 0, "reported": (1.0, 0.25, 2, 2),
                                         "computed": (None, None, 0, 0)}),
    ([row("computed", 0.3, 3, 3)], 3, 3, {"total_usd": 0.3, "per_run_usd": 0.1, "source": "computed",
                                         "mixed_runs": 0, "reported": (None, None, 0, 0),
                                         "computed": (0.3, 0.1, 3, 3)}),
    # run 2 of 3 mixes: reported in runs 1, 2; computed in runs 2, 3
    ([row("reported", 0.5, 2, 2), row("computed", 0.25, 2, 2)], 5, 3,
     {"total_usd": 0.75, "per_run_usd": 0.15, "source": "mixed", "mixed_runs": 1,
      "reported": (0.5, 0.1, 2, 2), "computed": (0.25, 0.05, 2, 2)}),
])
def test_agent_cost(rows: list[dict], runs: int, costed: int, expected: dict) -> None:
    got = agent_cost(rows, runs, costed)
    for key in ("total_usd", "per_run_usd"):
        assert got[key] == pytest.approx(expected[key])
    assert (got["source"], got["mixed_runs"]) == (expected["source"], expected["mixed_runs"])
    for source in ("reported", "computed"):
        g = got[source]
        assert (g["total_usd"], g["per_run_usd"], g["calls"], g["runs"]) == pytest.approx(expected[source])
