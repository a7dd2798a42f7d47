"""Batch reads: tarn splits as Spark input partitions, read by tarn's own reader as Arrow.

Planning runs on the driver: the filters Spark pushes become a tarn predicate (partition
pruning, stats skipping; for primary-key tables only key stats prune files and every filter
is applied after the merge), the planned splits are packed into input partitions of about
`source.split.target-size` (each file costing at least `source.split.open-file-cost`). A
primary-key split is one bucket and is never cut: its files are merged together.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import (DataSourceReader, EqualNullSafe, EqualTo, Filter, GreaterThan,
                                    GreaterThanOrEqual, In, InputPartition, IsNotNull, IsNull, LessThan,
                                    LessThanOrEqual, Not, StringStartsWith)
from pyspark.sql.types import StructType

import tarn
from tarn.scan.scan import scan_fields
from tarn.errors import SchemaMismatch
from tarn.scan.planner import Split
from tarn.scan.predicate import Predicate, col
from tarn.spark.target import ROW_KIND_COLUMN, ReadTarget
from tarn.spark.types import arrow_target, fit_batch

# Column types whose Python filter values tarn compares exactly as Spark does.
EXACT_TYPES = ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "CHAR",
               "VARCHAR", "DATE")
BATCH_ROWS = 65536


@dataclass
class SplitGroup(InputPartition):
    """Splits read by one Spark task (picklable)."""

    splits: list[Split]


def split_cost(split: Split, open_file_cost: int) -> int:
    return sum(max(f.file_size, open_file_cost) for f in split.files)


def task_size(splits: list[Split], target_size: int, open_file_cost: int, parallelism: int) -> int:
    """Bytes per task: `target_size`, but small enough to give every core work (as Spark sizes
    file partitions: min(target, max(open cost, total / parallelism)))."""
    total = sum(split_cost(s, open_file_cost) for s in splits)
    return min(target_size, max(open_file_cost, total // max(parallelism, 1)))


def pack_splits(splits: list[Split], target_size: int, open_file_cost: int) -> list[list[Split]]:
    """Splits packed into ceil(total / target_size) groups of about equal size (largest split
    first, each to the lightest group); a split is never cut. Groups keep the plan's order."""
    costs = [split_cost(s, open_file_cost) for s in splits]
    count = min(len(splits), max(1, -(-sum(costs) // max(target_size, 1))))
    loads = [0] * count
    members: list[list[int]] = [[] for _ in range(count)]
    for i in sorted(range(len(splits)), key=lambda i: -costs[i]):
        lightest = loads.index(min(loads))
        loads[lightest] += costs[i]
        members[lightest].append(i)
    return [[splits[i] for i in sorted(group)] for group in members if group]


# ---------------------------------------------------------------------------------------------
# filters


def to_predicate(f: Filter, types: dict[str, str]) -> Predicate | None:
    """The tarn predicate of a Spark filter, or None when it is not pushed."""
    if isinstance(f, Not):
        inner = to_predicate(f.child, types)
        return None if inner is None else ~inner
    column = _column(f, types)
    if column is None:
        return None
    c = col(column)
    if isinstance(f, EqualTo):
        return None if f.value is None else c == f.value
    if isinstance(f, EqualNullSafe):
        return c.is_null() if f.value is None else c == f.value
    if isinstance(f, GreaterThan):
        return c > f.value
    if isinstance(f, GreaterThanOrEqual):
        return c >= f.value
    if isinstance(f, LessThan):
        return c < f.value
    if isinstance(f, LessThanOrEqual):
        return c <= f.value
    if isinstance(f, In):
        values = [v for v in f.value if v is not None]
        return c.isin(values) if len(values) == len(f.value) else None
    if isinstance(f, IsNull):
        return c.is_null()
    if isinstance(f, IsNotNull):
        return c.is_not_null()
    if isinstance(f, StringStartsWith):
        return c.startswith(f.value)
    return None


def _column(f: Filter, types: dict[str, str]) -> str | None:
    path = getattr(f, "attribute", None)
    if path is None or len(path) != 1:
        return None  # nested fields are not pushed
    name = next((n for n in types if n.lower() == path[0].lower()), None)
    if name is None or types[name] not in EXACT_TYPES:
        return None
    return name


def combine(predicates: list[Predicate]) -> Predicate | None:
    if not predicates:
        return None
    out = predicates[0]
    for p in predicates[1:]:
        out = out & p
    return out


# ---------------------------------------------------------------------------------------------
# the reader


class BatchReader(DataSourceReader):
    """Reads one snapshot of a table (or a system table). Picklable: it crosses to executors."""

    def __init__(self, target: ReadTarget, schema: StructType):
        self.target = target
        self.schema = schema
        self.arrow_schema = arrow_target(schema)
        self.predicate: Predicate | None = None
        self.row_kind = target.options.get("read.changelog", "false").lower() == "true"
        self.columns = self._columns(schema)

    def _columns(self, schema: StructType) -> list[str] | None:
        """Columns to read: those of the (possibly user-supplied, narrower) schema."""
        if self.target.system:
            return None
        table = self.target.open()
        names = [f.name for f in scan_fields(self.target.table_schema(table))]
        by_lower = {n.lower(): n for n in names}
        fields = [f for f in schema.fields if not (self.row_kind and f.name == ROW_KIND_COLUMN)]
        unknown = [f.name for f in fields if f.name.lower() not in by_lower]
        if unknown:
            raise SchemaMismatch(f"table {self.target.path}: the read schema names unknown column(s) "
                                 f"{unknown} (columns: {names})")
        return [by_lower[f.name.lower()] for f in fields]

    def scan(self, table: tarn.Table):
        return self.target.scan(table, self.predicate, self.columns)

    def partitions(self) -> list[SplitGroup]:
        if self.target.system or self.target.incremental:
            return [SplitGroup([])]
        table = self.target.open()
        splits = [part for split in self.scan(table).plan() for part in split.by_file()]
        options = self.target.table_options()
        open_cost = options.memory_bytes("source.split.open-file-cost")
        size = task_size(splits, options.memory_bytes("source.split.target-size"), open_cost,
                         os.cpu_count() or 1)  # planning runs on the driver: its cores
        groups = pack_splits(splits, size, open_cost)
        return [SplitGroup(g) for g in groups] or [SplitGroup([])]

    def read(self, partition: SplitGroup) -> Iterator[pa.RecordBatch]:
        table = self.target.open()
        if self.target.system:
            from tarn.ops.system_tables import system_table
            data = system_table(table, self.target.system)
            yield from fit_batch(data.select([f.name for f in self.arrow_schema]),
                                 self.arrow_schema).to_batches(BATCH_ROWS)
            return
        if self.target.incremental:  # the changed rows of the table's incremental options, in one task
            rows = self.target.changed_rows(table, self.predicate, self.columns, with_kinds=self.row_kind)
            if self.row_kind:
                rows = rows.rename_columns([ROW_KIND_COLUMN, *rows.column_names[1:]])
            yield from fit_batch(rows, self.arrow_schema).to_batches(BATCH_ROWS)
            return
        reader = self.scan(table).reader()
        for split in partition.splits:
            for chunk in reader.read_chunks(split):
                if self.row_kind:  # a batch read sees the merged state: every row is an insert
                    chunk = chunk.add_column(0, ROW_KIND_COLUMN, pa.repeat(pa.scalar("+I"), chunk.num_rows))
                yield from fit_batch(chunk, self.arrow_schema).to_batches(BATCH_ROWS)


class FilteringBatchReader(BatchReader):
    """A BatchReader that takes the filters Spark pushes: partition pruning, stats skipping,
    rows filtered by tarn (for primary-key tables after the merge). Spark refuses readers with
    `pushFilters` unless spark.sql.python.filterPushdown.enabled is on."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        if self.target.system:
            yield from filters
            return
        table = self.target.open()
        types = {f.name: f.type.root for f in self.target.table_schema(table).fields}
        pushed = []
        for f in filters:
            predicate = to_predicate(f, types)
            if predicate is None:
                yield f
            else:
                pushed.append(predicate)
        self.predicate = combine(pushed)
