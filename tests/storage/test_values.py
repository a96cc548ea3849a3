"""storage.values: the one JSON rendering of DuckDB values, fed by a real DuckDB."""

from __future__ import annotations

import datetime as dt
import json

import duckdb
import pytest

from otelbench.storage import values
from otelbench.storage.duckdb import Result


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT TIMESTAMPTZ '2025-03-14 12:00:00+00'", "2025-03-14T12:00:00+00:00"),
        ("SELECT DATE '2025-03-14'", "2025-03-14"),
        ("SELECT TIME '12:30:01'", "12:30:01"),
        ("SELECT INTERVAL 90 SECOND", 90.0),
        ("SELECT 1.25::DECIMAL(5, 2)", 1.25),
        ("SELECT 'nan'::DOUBLE", None),
        ("SELECT 'inf'::DOUBLE", "Infinity"),
        ("SELECT '-inf'::DOUBLE", "-Infinity"),
        ("SELECT '00000000-0000-0000-0000-000000000001'::UUID", "00000000-0000-0000-0000-000000000001"),
        ("SELECT '\\x00\\xFF'::BLOB", "AP8="),
        ("SELECT [1, NULL, 3]", [1, None, 3]),
        ("SELECT {'a': 1, 'b': [DATE '2025-01-02']}", {"a": 1, "b": ["2025-01-02"]}),
        ("SELECT MAP {'k': 2}", {"k": 2}),
        ("SELECT 'héllo'", "héllo"),
        ("SELECT NULL", None),
        ("SELECT true", True),
    ],
)
def test_json_value_of_every_duckdb_kind(sql: str, expected: object) -> None:
    value = duckdb.execute(sql).fetchall()[0][0]
    assert values.json_value(value) == expected
    json.loads(values.dumps(values.json_value(value)))  # always strict JSON


def test_text_cells() -> None:
    assert values.text(None) == ""
    assert values.text([1, {"a": "é"}]) == '[1, {"a": "é"}]'
    assert values.text(dt.date(2025, 1, 2)) == "2025-01-02"


def test_records_and_result_json() -> None:
    result = Result(["n", "at"], [(1, dt.date(2025, 1, 2))], ["INTEGER", "DATE"], truncated=True)
    assert values.records(result.columns, result.rows) == [{"n": 1, "at": "2025-01-02"}]
    assert values.result_json(result) == {"columns": ["n", "at"], "types": ["INTEGER", "DATE"],
                                          "rows": [[1, "2025-01-02"]], "truncated": True}
    with pytest.raises(ValueError):
        values.dumps(float("nan"))  # a raw NaN never reaches a client as invalid JSON
