"""Compaction's writer: a stream of rows → row groups that readers can skip, in bounded memory.

DuckDB's sort cannot spill the kilobytes of message and attribute text real spans carry
(200,000 spans run out of a 512 MB limit), so compaction does not sort a partition in
DuckDB: DuckDB reads only the key columns (to find repeats and agents), pyarrow streams
the rows, and this writer gives the files the layout a sort would:

- rows are bucketed by the table's first sort key (``span_type`` for spans), so a row
  group holds one span type and ``WHERE span_type = 'llm'`` skips the others by their
  min/max statistics;
- each row group is sorted by the remaining keys (``start_time``);
- a bucket is written once it holds ``ROW_GROUP_ROWS`` rows; when all buckets together
  hold ``buffer_bytes`` the biggest one is written; at the end, what is left: each bucket
  on its own, or, when there are many (metric names), those under 1/16 of a row group
  together, sorted by every key. A batch with more than 64 distinct values goes whole into
  one mixed bucket, sorted by every key.

Outputs are filled in turn up to ``target_rows`` rows or ``target_bytes`` (Arrow bytes,
uncompressed) each; the last output takes whatever remains. An output is opened with the
size of its first row group (``open_file(path, rows)``), which sizes per-group structures
such as bloom filters (``storage.files.write_options``): a budget's groups are alike.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


_MIXED = object()  # the bucket of batches with too many distinct first-key values
_MAX_RUNS = 64


class RowGroupWriter:
    def __init__(
        self,
        outputs: Sequence[str],
        *,
        sort_keys: Sequence[str],
        row_group_rows: int,
        target_rows: int,
        target_bytes: int,
        buffer_bytes: int,
        open_file: Callable[[str, int], pq.ParquetWriter],
        close_file: Callable[[str], None],
    ) -> None:
        self.outputs, self.sort_keys = list(outputs), list(sort_keys)
        self.row_group_rows, self.target_rows, self.target_bytes = row_group_rows, target_rows, target_bytes
        self.buffer_bytes = buffer_bytes
        self._open_file, self._close_file = open_file, close_file
        self.written: list[str] = []
        self._writer: pq.ParquetWriter | None = None
        self._rows_in_file = self._bytes_in_file = 0
        self._buckets: dict[Any, list[pa.Table]] = {}
        self._bucket_rows: dict[Any, int] = {}
        self._bucket_bytes: dict[Any, int] = {}

    # -- input -------------------------------------------------------------------------
    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        if table.num_rows == 0:
            return
        if not self.sort_keys:
            self._add(None, table)
        else:
            first = self.sort_keys[0]
            order = pc.sort_indices(table, [(first, "ascending")])
            runs = pc.run_end_encode(table.column(first).combine_chunks().take(order))
            if len(runs.values) > _MAX_RUNS:  # many distinct values (metric names): one mixed bucket
                self._add(_MIXED, table)
            else:
                start = 0
                for value, end in zip(runs.values.to_pylist(), runs.run_ends.to_pylist()):
                    # a copy per bucket: slices of one shared batch would keep all of it
                    # alive until every bucket holding a piece was written
                    self._add(value, table.take(order[start:end]))
                    start = end
        self._drain()

    def close(self) -> None:
        few = len(self._bucket_rows) <= 16
        for key in [k for k, n in self._bucket_rows.items() if few or n >= self.row_group_rows // 16]:
            self._write_group(self._sorted(self._take(key), self._keys(key)))
        rest = [t for parts in self._buckets.values() for t in parts]
        self._buckets.clear()
        self._bucket_rows.clear()
        self._bucket_bytes.clear()
        if rest:
            rest = [pa.concat_tables(rest)]  # the sort gets the only reference (_sorted)
            table = self._sorted(rest.pop(), self.sort_keys)
            for start in range(0, table.num_rows, self.row_group_rows):
                self._write_group(table.slice(start, self.row_group_rows))
        if self._writer is not None:
            self._writer.close()
            self._close_file(self.written[-1])
            self._writer = None

    # -- buckets ----------------------------------------------------------------------
    def _add(self, key: Any, table: pa.Table) -> None:
        self._buckets.setdefault(key, []).append(table)
        self._bucket_rows[key] = self._bucket_rows.get(key, 0) + table.num_rows
        self._bucket_bytes[key] = self._bucket_bytes.get(key, 0) + table.nbytes

    def _take(self, key: Any) -> pa.Table:
        table = pa.concat_tables(self._buckets.pop(key))
        del self._bucket_rows[key], self._bucket_bytes[key]
        return table

    def _drain(self) -> None:
        for key in [k for k, n in self._bucket_rows.items() if n >= self.row_group_rows]:
            table = self._take(key)
            whole = table.num_rows - table.num_rows % self.row_group_rows
            for start in range(0, whole, self.row_group_rows):
                self._write_group(self._sorted(table.slice(start, self.row_group_rows), self._keys(key)))
            if whole < table.num_rows:
                self._add(key, table.slice(whole))
        while self._bucket_bytes and sum(self._bucket_bytes.values()) >= self.buffer_bytes:
            key = max(self._bucket_bytes, key=self._bucket_bytes.__getitem__)
            self._write_group(self._sorted(self._take(key), self._keys(key)))

    def _keys(self, bucket: Any) -> list[str]:
        """What a bucket's row groups are sorted by: the rest of the keys (all of them for the mixed one)."""
        return self.sort_keys if bucket is _MIXED else self.sort_keys[1:]

    @staticmethod
    def _sorted(table: pa.Table, keys: Sequence[str]) -> pa.Table:
        """``table`` sorted by ``keys``, column by column: each column is let go once its
        sorted copy exists, so where the caller passes its only reference (a bucket taken
        whole) the sort holds the bucket and one column twice, not the bucket twice. A
        column is made one array and its chunks let go before the take: a take from many
        chunks concatenates them first, and held that copy, the chunks and the result at
        once (three times the column)."""
        if not keys or table.num_rows < 2:
            return table
        order = pc.sort_indices(table, [(k, "ascending") for k in keys])  # stable; nulls last
        schema, columns = table.schema, []
        while table.num_columns:
            column = table.column(0).combine_chunks()
            table = table.remove_column(0)
            columns.append(column.take(order))
            del column
        return pa.Table.from_arrays(columns, schema=schema)

    # -- files ------------------------------------------------------------------------
    def _write_group(self, table: pa.Table) -> None:
        """Into the current output; a group that would take it past ``target_rows`` is
        split there (the last output takes everything left)."""
        while table.num_rows:
            if self._writer is not None and self._full() and len(self.written) < len(self.outputs):
                self._writer.close()
                self._close_file(self.written[-1])
                self._writer = None
            if self._writer is None:
                self.written.append(self.outputs[len(self.written)])
                self._writer = self._open_file(self.written[-1], table.num_rows)
                self._rows_in_file = self._bytes_in_file = 0
            last = len(self.written) == len(self.outputs)
            part = table if last else table.slice(0, self.target_rows - self._rows_in_file)
            self._writer.write_table(part, row_group_size=part.num_rows)
            self._rows_in_file += part.num_rows
            self._bytes_in_file += part.nbytes
            table = table.slice(part.num_rows)

    def _full(self) -> bool:
        return self._rows_in_file >= self.target_rows or self._bytes_in_file >= self.target_bytes
