"""storage.agents: which agent a span's work belongs to, as a table of span trees."""

from __future__ import annotations

import pyarrow as pa
import pytest

from otelbench.storage.agents import MAX_DEPTH, resolve

# (trace, span, parent, agent_name, service, request_agent) → expected resolved_agent
TREES = [
    # a call under its agent
    ([("t", "a", None, "triage", "svc", None), ("t", "c", "a", None, "svc", None)], ["triage", "triage"]),
    # at any depth: LangGraph's model node, a workflow task, a chain between agent and call
    ([("t", "a", None, "triage", "svc", None), ("t", "n", "a", None, "svc", None),
      ("t", "m", "n", None, "svc", None), ("t", "c", "m", None, "svc", None)], ["triage"] * 4),
    # the nearest agent wins over an outer one
    ([("t", "o", None, "outer", "svc", None), ("t", "i", "o", "inner", "svc", None),
      ("t", "c", "i", None, "svc", None)], ["outer", "inner", "inner"]),
    # no agent up to the root: the root's request agent, else the root's service
    ([("t", "r", None, None, "root-svc", "from-header"), ("t", "c", "r", None, "svc", None)],
     ["from-header", "from-header"]),
    ([("t", "r", None, None, "root-svc", None), ("t", "c", "r", None, "other-svc", None)], ["root-svc", "root-svc"]),
    # a broken chain stays unresolved; span ids repeat across traces
    ([("t", "c", "missing", None, "svc", None), ("u", "a", None, "x", "svc", None), ("t", "d", "a", None, "svc", None)],
     [None, "x", None]),
    # a span that names its agent needs no parent
    ([("t", "c", "missing", "self", "svc", None)], ["self"]),
]


@pytest.mark.parametrize(("rows", "expected"), TREES)
def test_resolve(rows: list[tuple], expected: list) -> None:
    cols = [pa.array(list(c), pa.string()) for c in zip(*rows)]
    assert resolve(*cols[:5], request_agent=cols[5]).to_pylist() == expected


def test_children_before_parents_and_given_values() -> None:
    rows = [("t", "c", "m", None, "svc"), ("t", "m", "a", None, "svc"), ("t", "a", None, "triage", "svc")]
    cols = [pa.array(list(c), pa.string()) for c in zip(*rows)]
    assert resolve(*cols).to_pylist() == ["triage"] * 3
    given = pa.array(["kept", None, None], pa.string())
    assert resolve(*cols, given).to_pylist() == ["kept", "triage", "triage"]


def test_a_chain_deeper_than_the_walk_is_left_for_later() -> None:
    n = MAX_DEPTH + 5
    ids = [f"s{i}" for i in range(n)]
    parents = [None, *ids[:-1]]
    cols = [pa.array(["t"] * n), pa.array(ids), pa.array(parents), pa.array(["root", *[None] * (n - 1)]),
            pa.array(["svc"] * n)]
    got = resolve(*cols).to_pylist()
    assert got[: MAX_DEPTH + 1] == ["root"] * (MAX_DEPTH + 1) and got[-1] is None
