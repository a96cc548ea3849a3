"""docs/schema.md documents every column of every table and view, with its DuckDB type,
and nothing that does not exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from otelbench.storage.queries import views
from otelbench.storage.duckdb import open_lake
from otelbench.storage.lake import Lake
from otelbench.storage.schema import PARTITION_COLUMN, SCHEMA_VERSION, TABLES

DOC = Path(__file__).resolve().parents[2] / "docs" / "schema.md"
_SECTION = re.compile(r"^### `(?P<name>\w+)`\s*$", re.MULTILINE)
_ROW = re.compile(r"^\| `(?P<column>\w+)` \| (?P<type>[^|]+?) \| (?P<meaning>.+) \|\s*$", re.MULTILINE)


def documented() -> dict[str, dict[str, tuple[str, str]]]:
    """section name → column → (type, meaning), from the '### `name`' sections' tables."""
    text = DOC.read_text()
    heads = list(_SECTION.finditer(text))
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for head, nxt in zip(heads, [*heads[1:], None]):
        body = text[head.end(): nxt.start() if nxt else len(text)]
        out[head["name"]] = {m["column"]: (m["type"].strip(), m["meaning"].strip()) for m in _ROW.finditer(body)}
    return out


@pytest.fixture(scope="module")
def described(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """view name → column → DuckDB type, from DESCRIBE on an empty lake."""
    lake = Lake(tmp_path_factory.mktemp("docs") / "lake")
    lake.init()
    with open_lake(lake.root) as gw:
        return {v: {r[0]: r[1] for r in gw.query(f"DESCRIBE {v}").rows} for v in views.VIEW_NAMES}


def test_every_table_column_is_documented() -> None:
    docs = documented()
    for name, table in TABLES.items():
        assert name in docs, f"docs/schema.md has no '### `{name}`' section"
        # a derived table's section is its view's; the commit bookkeeping (_row,
        # _tombstone) is documented once, under "Derived tables"
        wanted = table.stored_columns if table.kind == "signal" else [*table.columns, "committed_at"]
        missing = [c for c in wanted if c not in docs[name]]
        assert not missing, f"{name}: undocumented columns {missing}"


@pytest.mark.parametrize("view", views.VIEW_NAMES)
def test_every_view_column_is_documented_with_its_type(view: str, described: dict[str, dict[str, str]]) -> None:
    docs = documented()[view]
    actual = described[view]
    assert {c: docs.get(c, ("-", ""))[0] for c in actual} == actual, f"{view}: docs differ from DESCRIBE"
    assert set(docs) == set(actual), f"{view}: documented columns that do not exist: {set(docs) - set(actual)}"
    assert all(meaning for _, meaning in docs.values())


def test_the_runs_rollup_is_documented_with_its_types() -> None:
    import duckdb

    from otelbench.storage.rollups import RUNS_SCHEMA

    con = duckdb.connect()
    con.register("runs", RUNS_SCHEMA.empty_table())
    actual = {r[0]: r[1] for r in con.sql("DESCRIBE runs").fetchall()}
    assert {c: t for c, (t, _) in documented()["runs"].items()} == actual


def test_partitioning_and_version_are_documented() -> None:
    text = DOC.read_text()
    assert f"**Schema version: {SCHEMA_VERSION}**" in text
    assert f"{PARTITION_COLUMN}=YYYY-MM-DD" in text
    assert "seed.parquet" in text
