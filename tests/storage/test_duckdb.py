"""storage.duckdb: the gateway's lockdown, limits and parameters, on a real lake."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from otelbench.storage.duckdb import Gateway, QueryError, Result, open_lake
from otelbench.storage.lake import Lake
from otelbench.testing.rows import agent, batch, llm, span


@pytest.fixture
def lake(tmp_path: Path) -> Lake:
    lk = Lake(tmp_path / "lake")
    lk.init()
    lk.write_batch("0001", batch(spans=[agent(1, 1), llm(1, 2, 1), span(2, 5, name="a'); DROP--")]))
    return lk


@pytest.fixture
def gw(lake: Lake) -> Gateway:
    with open_lake(lake.root) as g:
        yield g


def lake_files(lake: Lake) -> set[Path]:
    return {p for p in lake.root.rglob("*") if p.is_file()}


def test_select_returns_columns_rows_and_types(gw: Gateway) -> None:
    r = gw.query("SELECT span_type, count(*) AS n FROM spans GROUP BY 1 ORDER BY 1")
    assert r == Result(["span_type", "n"], [("agent", 1), ("llm", 1), ("other", 1)], ["VARCHAR", "BIGINT"])


def test_parameters_are_bound_never_formatted(gw: Gateway) -> None:
    assert gw.query("SELECT name FROM spans WHERE name = ?", ["a'); DROP--"]).rows == [("a'); DROP--",)]
    assert gw.query("SELECT count(*) FROM spans WHERE span_type = $t", {"t": "llm"}).rows == [(1,)]


def test_max_rows_truncates_and_says_so(gw: Gateway) -> None:
    r = gw.query("SELECT * FROM range(10)", max_rows=3)
    assert r.rows == [(0,), (1,), (2,)] and r.truncated
    assert not gw.query("SELECT * FROM range(3)", max_rows=3).truncated


def test_timeout_interrupts_a_long_query(gw: Gateway) -> None:
    with pytest.raises(QueryError, match="timed out after 0.2 s") as err:
        gw.query("SELECT count(*) FROM range(1000000000000) a", timeout_s=0.2)
    assert err.value.kind == "timeout"
    assert gw.query("SELECT 1").rows == [(1,)]  # the gateway still works afterwards


@pytest.mark.parametrize(
    "sql",
    [
        "DESCRIBE spans",
        "SHOW TABLES",
        "SUMMARIZE SELECT 1",
        "FROM spans LIMIT 1",
        "WITH x AS (SELECT 1) SELECT * FROM x",
        "VALUES (1)",
        "EXPLAIN SELECT * FROM spans",
        "EXPLAIN ANALYZE SELECT count(*) FROM spans",
        "SELECT * FROM duckdb_settings() LIMIT 1",
    ],
)
def test_read_statements_run(gw: Gateway, sql: str) -> None:
    gw.query(sql)


@pytest.mark.parametrize(
    "sql, why",
    [
        ("COPY (SELECT 1) TO '{lake}/spans/date=2025-03-14/x.parquet'", "COPY statements are not allowed"),
        ("COPY (SELECT 1) TO '{tmp}/x.csv'", "COPY"),
        ("COPY spans FROM '{tmp}/x.csv'", "COPY"),
        ("EXPORT DATABASE '{tmp}/dump'", "EXPORT"),
        ("ATTACH ':memory:' AS other", "ATTACH"),
        ("DETACH other", "DETACH"),
        ("INSTALL httpfs", "LOAD"),
        ("LOAD httpfs", "LOAD"),
        ("SET threads = 1", "SET"),
        ("RESET threads", "SET"),
        ("SET VARIABLE x = 1", "SET"),
        ("PRAGMA threads = 1", "SET"),
        ("PRAGMA version", "PRAGMA"),
        ("CALL pragma_version()", "CALL"),
        ("CHECKPOINT", "CALL"),
        ("CREATE TABLE t AS SELECT 1", "CREATE"),
        ("CREATE OR REPLACE VIEW spans AS SELECT 1", "CREATE"),
        ("DROP VIEW llm_calls", "DROP"),
        ("INSERT INTO spans SELECT * FROM spans", "INSERT"),
        ("BEGIN TRANSACTION", "TRANSACTION"),
        ("USE memory", "SET"),
        ("EXPLAIN ANALYZE COPY (SELECT 1) TO '{lake}/x.csv'", "COPY"),
        ("SELECT 1; SELECT 2", "one SQL statement"),
        ("", "one SQL statement, got 0"),
    ],
)
def test_everything_else_is_refused(gw: Gateway, lake: Lake, tmp_path: Path, sql: str, why: str) -> None:
    before = lake_files(lake)
    with pytest.raises(QueryError, match=why) as err:
        gw.query(sql.format(lake=lake.root, tmp=tmp_path))
    assert err.value.kind == "refused"
    assert lake_files(lake) == before
    assert not list(tmp_path.glob("x.csv"))


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM glob('/etc/*')",
        "SELECT * FROM read_parquet('{outside}')",
        "SELECT * FROM read_parquet('{lake}/../outside.parquet')",
        "SELECT * FROM read_text('{lake}2/x')",  # a sibling whose name starts like the lake's
        "SELECT * FROM query('COPY (SELECT 1) TO ''{lake}/x.csv''')",
    ],
)
def test_files_outside_the_lake_are_out_of_reach(gw: Gateway, lake: Lake, tmp_path: Path, sql: str) -> None:
    outside = tmp_path / "outside.parquet"
    pq.write_table(pa.table({"a": [1]}), outside)
    with pytest.raises(QueryError) as err:
        gw.query(sql.format(lake=lake.root, outside=outside))
    assert err.value.kind == "invalid"
    assert not (lake.root / "x.csv").exists()


def test_files_inside_the_lake_are_readable(gw: Gateway, lake: Lake) -> None:
    r = gw.query("SELECT count(*) FROM read_parquet($p)", {"p": str(lake.files("spans")[0])})
    assert r.rows == [(3,)]


def test_settings_are_locked(gw: Gateway) -> None:
    # the statement check stops SET; the lock stops it even through the back door
    with pytest.raises(Exception, match="locked"):
        gw._con.execute("SET enable_external_access = true")
    assert gw.query("SELECT current_setting('enable_external_access')").rows == [(False,)]


def test_timestamps_come_back_in_utc(gw: Gateway) -> None:
    (when,) = gw.query("SELECT min(start_time) FROM spans").rows[0]
    assert when.isoformat() == "2025-03-14T12:00:00+00:00"


def test_a_writable_gateway_still_keeps_files_out_of_reach(lake: Lake, tmp_path: Path) -> None:
    with open_lake(lake.root, read_only=False) as g:
        g.query("CREATE TABLE t AS SELECT 1 AS x")
        assert g.query("SELECT x FROM t").rows == [(1,)]
        for sql in (f"COPY t TO '{lake.root}/x.csv'", "SET threads = 1", "ATTACH ':memory:' AS m"):
            with pytest.raises(QueryError, match="not allowed"):
                g.query(sql)


def test_syntax_errors_are_query_errors(gw: Gateway) -> None:
    with pytest.raises(QueryError, match="syntax error") as err:
        gw.query("SELEKT 1")
    assert err.value.kind == "invalid"
    with pytest.raises(QueryError, match="nope"):
        gw.query("SELECT nope FROM spans")


def test_open_lake_needs_a_lake(tmp_path: Path) -> None:
    with pytest.raises(QueryError, match="no lake") as err:
        open_lake(tmp_path / "missing")
    assert err.value.kind == "lake"


def test_concurrent_queries_from_threads(gw: Gateway) -> None:
    results: list[list[tuple]] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(20):
                results.append(gw.query("SELECT count(*) FROM llm_calls").rows)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == [[(1,)]] * 80


def test_new_files_show_up_without_reopening(gw: Gateway, lake: Lake) -> None:
    lake.write_batch("0002", batch(spans=[llm(3, 9, None)]))
    assert gw.query("SELECT count(*) FROM llm_calls").rows == [(2,)]


# ------------------------------------------------------------------ limits on by default
def test_limits_are_on_by_default_and_lifted_only_when_asked(gw: Gateway, monkeypatch: pytest.MonkeyPatch) -> None:
    from otelbench.storage import duckdb as gateway_mod

    r = gw.query("SELECT * FROM range(20000)")
    assert len(r.rows) == gateway_mod.DEFAULT_MAX_ROWS == 10_000 and r.truncated
    assert len(gw.query("SELECT * FROM range(20000)", max_rows=None).rows) == 20_000
    monkeypatch.setattr(gateway_mod, "DEFAULT_TIMEOUT_S", 0.2)
    with pytest.raises(QueryError, match="timed out after 0.2 s"):
        gw.query("SELECT count(*) FROM range(1000000000000) a")


def test_the_memory_limit_is_on_by_default(lake: Lake) -> None:
    with open_lake(lake.root) as g:
        assert g.query("SELECT current_setting('memory_limit')").rows[0][0].replace(" ", "") in ("1GB", "953.6MiB")
    with open_lake(lake.root, memory_limit="64MB") as g:
        with pytest.raises(QueryError, match="(?i)out of memory"):
            g.query("SELECT list(range) FROM range(30000000)", timeout_s=None)


# ------------------------------------------------------------------ Arrow and polars
def test_arrow_results_keep_types_and_limits(gw: Gateway) -> None:
    r = gw.arrow("SELECT span_type, start_time FROM spans ORDER BY span_type")
    assert r.table.column("span_type").to_pylist() == ["agent", "llm", "other"] and not r.truncated
    assert pa.types.is_timestamp(r.table.schema.field("start_time").type)
    big = gw.arrow("SELECT range AS n FROM range(30000)", max_rows=20000)
    assert big.table.num_rows == 20000 and big.truncated and big.table.column("n")[-1].as_py() == 19999
    assert gw.arrow("SELECT * FROM range(30000)", max_rows=None).table.num_rows == 30000
    assert gw.arrow("SELECT 1 AS x WHERE false").table.schema.names == ["x"]


def test_polars_results(gw: Gateway) -> None:
    frame = gw.polars("SELECT span_type, count(*) AS n FROM spans GROUP BY 1 ORDER BY 1")
    assert frame.to_dicts() == [{"span_type": "agent", "n": 1}, {"span_type": "llm", "n": 1},
                                {"span_type": "other", "n": 1}]
    with pytest.raises(QueryError, match="more than 5 rows") as err:
        gw.polars("SELECT * FROM range(10)", max_rows=5)
    assert err.value.kind == "too_many_rows"


def test_arrow_and_polars_are_locked_down_too(gw: Gateway, tmp_path: Path) -> None:
    with pytest.raises(QueryError, match="not allowed"):
        gw.arrow(f"COPY (SELECT 1) TO '{tmp_path}/x.csv'")
    with pytest.raises(QueryError, match="(?i)permission|disabled|not allowed"):
        gw.polars("SELECT * FROM read_csv('/etc/passwd')")
    with pytest.raises(QueryError, match="timed out"):
        gw.arrow("SELECT count(*) FROM range(1000000000000) a", timeout_s=0.2)


def test_a_reader_during_compaction_never_fails(lake: Lake) -> None:
    """Compaction deletes the files it merged (after publishing the merge) while a query
    that listed them may still be about to read them: the gateway runs it again. Opening
    the lake binds its views (reading a file's footer), so it opens again too."""
    errors: list[str] = []
    done = threading.Event()
    reads = opens = 0

    def read() -> None:
        nonlocal reads
        with open_lake(lake.root) as g:
            while not done.is_set():
                try:
                    g.query("SELECT count(*) FROM spans")
                    reads += 1
                except QueryError as exc:
                    errors.append(str(exc))

    def reopen() -> None:
        nonlocal opens
        while not done.is_set():
            try:
                open_lake(lake.root).close()
                opens += 1
            except QueryError as exc:
                errors.append(str(exc))

    readers = [threading.Thread(target=read), threading.Thread(target=reopen)]
    for reader in readers:
        reader.start()
    n = 2
    for _ in range(25):
        for _ in range(8):
            lake.write_batch(f"{n:04d}", batch(spans=[span(n, j) for j in range(20)]))
            n += 1
        lake.compact("spans", below_batch_id=f"{n:04d}", min_files=2)
    done.set()
    for reader in readers:
        reader.join()
    assert reads > 0 and opens > 0 and errors == []
