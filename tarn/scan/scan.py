"""Scan: the rows of one snapshot of a table, read on demand.

A scan holds a TableContext, the schema it reads with, the snapshot, the pushed-down filter,
the columns and a limit. `plan()` asks the planner (tarn/scan/planner.py) for splits, a reader
(tarn/scan/reader.py) merges and filters them, `count()` and `estimates()` answer from metadata
where they can (tarn/scan/counts.py). `TableCore.scan_snapshot` builds one with its arguments
checked; `Table.scan` adds time travel.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from tarn import features
from tarn.data.layout import ROW_TRACKING_FIELDS
from tarn.errors import FileMissing, InvalidArgument, MissingDependency, SnapshotNotFound
from tarn.lsm.merge import merge_spec_of
from tarn.meta.schema import TableSchema
from tarn.meta.snapshot import Snapshot
from tarn.scan import counts, fallback
from tarn.scan.filters import RowFilterReader
from tarn.scan.planner import Split, planner_for
from tarn.scan.predicate import Predicate
from tarn.scan.reader import SplitReader, read_ahead
from tarn.store.context import TableContext
from tarn.types import DataField, arrow_schema


def scan_fields(schema: TableSchema) -> list[DataField]:
    """The columns a scan of a table with `schema` may select and filter: the table's, and on
    row-tracking tables `_ROW_ID` and `_SEQUENCE_NUMBER` (Paimon's system columns, not part of
    `select *`)."""
    fields = list(schema.fields)
    if schema.shape.tracks_rows:
        taken = set(schema.field_names)
        fields += [f for f in ROW_TRACKING_FIELDS if f.name not in taken]
    return fields


@dataclass
class Scan:
    """The rows of one snapshot that `table.scan(...)` selects; nothing is read until a
    reading method runs, and each run reads again.

    Readers: `to_arrow()`, `to_pandas()`, `to_polars()`, `to_duckdb(name)`, `to_batches()`,
    `to_arrow_batch_reader()`; any Arrow PyCapsule consumer (`pa.table(scan)`,
    `polars.DataFrame(scan)`, DuckDB) reads it through `__arrow_c_stream__`. `count()` counts
    the rows, `plan()` lists the splits (one per file of an append table, one per bucket of a
    primary-key table).

    `filter`: the tarn predicate (literals in the columns' types) that prunes partitions and
    files and filters rows; `row_filter`: a pyarrow Expression, or the part of one tarn could
    not translate, applied to the rows after the read; `limit`: at most that many rows."""

    table: TableContext  # the table read (`table.name`, `table.file_io`, ...)
    schema: TableSchema
    snapshot: Snapshot | None
    filter: Predicate | None = None
    columns: list[str] | None = None
    _splits: list[Split] | None = field(default=None, repr=False)

    follows_latest: bool = False  # a scan of "the latest snapshot", not of a pinned one
    limit: int | None = None
    row_filter: pc.Expression | None = None
    row_filter_columns: tuple[str, ...] = ()  # the columns `row_filter` reads
    # the table's `scan.bucket` and `scan.file-creation-time-millis` (tarn/scan/startup.py):
    # only this bucket's files; only files created at or after this (local wall-clock millis)
    bucket: int | None = None
    files_from_ms: int | None = None

    def __repr__(self) -> str:
        parts = [f"table={self.table.name}", f"snapshot={self.snapshot.id if self.snapshot else None}"]
        if self.filter is not None:
            parts.append(f"filter={self.filter!r}")
        if self.row_filter is not None:
            parts.append(f"row_filter={self.row_filter}")
        if self.columns is not None:
            parts.append(f"columns={self.columns!r}")
        if self.limit is not None:
            parts.append(f"limit={self.limit}")
        return f"Scan({', '.join(parts)})"

    def plan(self) -> list[Split]:
        """The splits to read, planned once (partitions, manifests and files the filter rules
        out are skipped)."""
        if self._splits is None:
            self._splits = self._retrying(self._plan)
        return self._splits

    def _table_options(self) -> dict:
        """The table's latest options (a scan of the latest snapshot already holds them)."""
        return self.schema.options if self.follows_latest else self.table.schema().options

    @property
    def narrowed(self) -> bool:
        """Reads only some buckets or files of the snapshot (table statistics do not apply)."""
        return self.bucket is not None or self.files_from_ms is not None

    def _plan(self) -> list[Split]:
        splits = planner_for(self.table, self.schema).plan(self.snapshot, self.filter)
        if fallback.second_branch(self._table_options(), self.table.branch) is not None:
            splits = fallback.combine(self.table, self.schema, self.snapshot, self.filter, splits,
                                      self.follows_latest)
        return self._narrow(splits) if self.narrowed else splits

    def _narrow(self, splits: list[Split]) -> list[Split]:
        if self.bucket is not None:
            splits = [s for s in splits if s.bucket == self.bucket]
        if self.files_from_ms is None:
            return splits
        narrowed = []
        for split in splits:
            files = [f for f in split.files
                     if f.creation_time is not None and f.creation_time >= self.files_from_ms]
            if len(files) == len(split.files):
                narrowed.append(split)
            elif files:
                narrowed.append(dataclasses.replace(split, files=files))
        return narrowed

    def _retrying(self, read):
        """Run `read`; when a scan of the latest snapshot finds a file gone because expiry
        removed its snapshot meanwhile, move to the new latest snapshot and read again."""
        for _ in range(5):
            try:
                return read()
            except (FileMissing, SnapshotNotFound):
                if not self._move_to_latest():
                    raise
        return read()

    def _move_to_latest(self) -> bool:
        """Re-pin a latest-snapshot scan after its snapshot expired; False if nothing changed."""
        if not self.follows_latest:
            return False
        latest = self.table.latest_snapshot()
        if latest is None or (self.snapshot is not None and latest.id == self.snapshot.id
                              and self.table.snapshot_store.exists(latest.id)):
            return False
        self.snapshot, self._splits = latest, None
        return True

    def reader(self) -> SplitReader:
        """The reader of this scan's splits: rows merged, filtered (filter and row_filter) and
        shaped as the scan's columns; `limit` is not applied. With a second branch
        (`scan.fallback-branch`), its splits are read with its own schemas."""
        own = self._reader(self.table, self.schema, self.read_fields)
        if fallback.second_branch(self._table_options(), self.table.branch) is None:
            return own

        def other(name: str):
            context = fallback.branch_context(self.table, name)
            schema = context.schema()
            return self._reader(context, schema, [schema.field(f.name) for f in self.read_fields], self.schema)
        return fallback.BranchReader(own, other)

    def _reader(self, context, schema: TableSchema, read_fields: list[DataField], shaped_as: TableSchema | None = None):
        options = schema.shape.options
        spec = merge_spec_of(schema, options) if schema.primary_keys else None
        features.check_columns(context.name, read_fields)
        if spec is not None and spec.engine != "deduplicate":
            features.check_columns(context.name, schema.fields)  # merged across every column
        if self.row_filter is not None:
            reader = RowFilterReader(context.file_io, schema, context.schema_by_id, options, read_fields,
                                     self.filter, spec, self.row_filter, self.row_filter_columns)
        else:
            reader = SplitReader(context.file_io, schema, context.schema_by_id, options, read_fields, self.filter, spec)
        if shaped_as is not None:  # the other branch's rows typed as this table's columns
            reader.output_schema = arrow_schema([shaped_as.field(f.name) for f in reader.read_fields])
            if isinstance(reader, RowFilterReader):
                reader.final_schema = arrow_schema([shaped_as.field(f.name) for f in read_fields])
        return reader

    @property
    def read_fields(self) -> list[DataField]:
        """The fields of the rows this scan returns."""
        names = self.columns if self.columns is not None else self.schema.field_names
        by_name = {f.name: f for f in scan_fields(self.schema)}
        return [by_name[n] for n in names]

    @property
    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of the rows this scan returns."""
        return arrow_schema(self.read_fields)

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The rows as Arrow record batches, split after split (memory bounded by a few splits:
        small ones are read ahead in threads); with `limit`, no split is read once enough rows
        came."""
        remaining = self.limit
        if remaining == 0:
            return
        reader = self.reader()
        plan = self.plan()
        tables = read_ahead(reader, plan) if remaining is None else (
            table for split in plan for table in reader.read_chunks(split))
        for table in tables:
            for batch in table.to_batches():
                if remaining is not None:
                    if batch.num_rows >= remaining:
                        yield batch.slice(0, remaining)
                        return
                    remaining -= batch.num_rows
                yield batch

    def to_arrow_batch_reader(self) -> pa.RecordBatchReader:
        """A `pyarrow.RecordBatchReader` streaming the rows (read as it is consumed)."""
        return pa.RecordBatchReader.from_batches(self.arrow_schema, self.to_batches())

    def __arrow_c_stream__(self, requested_schema=None):
        """The Arrow PyCapsule stream protocol: `pa.table(scan)`, `polars.DataFrame(scan)`,
        DuckDB and other consumers read the scan as a stream of batches."""
        return self.to_arrow_batch_reader().__arrow_c_stream__(requested_schema)

    def to_arrow(self) -> pa.Table:
        """All rows as one Arrow table (splits read in parallel; with `limit`, in order until
        enough rows came)."""
        return self._retrying(self._read_all)

    def _read_all(self) -> pa.Table:
        if self.limit is not None:
            return pa.Table.from_batches(list(self.to_batches()), schema=self.arrow_schema)
        tables = self.reader().read_all(self.plan())
        if not tables:
            return self.arrow_schema.empty_table()
        return pa.concat_tables(tables)

    def to_pandas(self, **kwargs):
        """All rows as a pandas DataFrame; keyword arguments go to `pyarrow.Table.to_pandas`."""
        table = self.to_arrow()
        try:
            return table.to_pandas(**kwargs)
        except ImportError as e:
            raise MissingDependency(f"Scan.to_pandas needs pandas: pip install 'tarn-lake[pandas]' ({e})") from None

    def to_polars(self):
        """All rows as a `polars.DataFrame` (needs polars: pip install 'tarn-lake[polars]')."""
        try:
            import polars
        except ImportError:
            raise MissingDependency("Scan.to_polars needs polars: pip install 'tarn-lake[polars]'") from None
        return polars.from_arrow(self.to_arrow())

    def to_duckdb(self, name: str, connection=None):
        """Register the rows (read now) as the DuckDB view `name` in `connection` (default: a
        new in-memory database) and return the connection: `scan.to_duckdb("t").sql("SELECT
        ... FROM t")`. Needs duckdb: pip install 'tarn-lake[duckdb]'."""
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"table {self.table.name}: to_duckdb needs a view name (a string), got {name!r}")
        try:
            import duckdb
        except ImportError:
            raise MissingDependency("Scan.to_duckdb needs duckdb: pip install 'tarn-lake[duckdb]'") from None
        connection = duckdb.connect() if connection is None else connection
        connection.register(name, self.to_arrow())
        return connection

    def count(self) -> int:
        """The rows this scan returns, from manifests where they tell (append tables, buckets
        needing no merge, fresh statistics of primary-key tables), else by reading."""
        return self._retrying(lambda: counts.count(self))

    def estimates(self) -> list[counts.SplitEstimate]:
        """A guess of the rows and bytes each planned split returns, from metadata only."""
        return self._retrying(lambda: counts.estimates(self))
