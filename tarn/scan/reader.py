"""Reading splits: raw files straight through, primary-key buckets merged on read (vectorised)."""

from __future__ import annotations

import copy
import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa

from tarn.arrays import filter_rows, repeat
from tarn.data.layout import ROW_TRACKING_FIELDS, VALUE_KIND_FIELD
from tarn.data.reader import FileReader, SchemaLookup
from tarn.data.runs import LookupMerge, merge_sections
from tarn.fs import FileIO
from tarn.lsm.merge import (SEQUENCE, VALUE_KIND, MergeSpec, NewerKeys, drop_retracts, lookup_merge_applies,
                            merge_table, newest_wins_applies)
from tarn.data.defaults import default_values, fill_default_values
from tarn.meta.manifest import DataFileMeta
from tarn.meta.schema import TableSchema
from tarn.scan.planner import POSTPONED, RAW, STITCHED, Split
from tarn.scan.stitch import read_group
from tarn.scan.parallel import parallel_map, serial_map
from tarn.scan.together import read_together
from tarn.store.deletion_vectors import DeletionVectorFiles
from tarn.scan.predicate import And, ColumnStats, Predicate, columns_of, filter_table, may_match_stats
from tarn.types import DataField, arrow_field, arrow_schema, to_arrow_type


class SplitReader:
    """Reads splits of one table into Arrow tables shaped as `read_fields`."""

    def __init__(self, file_io: FileIO, schema: TableSchema, schemas: SchemaLookup, options,
                 read_fields: list[DataField], predicate: Predicate | None, merge_spec: MergeSpec | None):
        self.files = FileReader(file_io, schema, schemas, options)
        self.schema = schema
        self.read_fields = read_fields
        self.predicate = predicate
        self.merge_spec = merge_spec
        needed = {f.name for f in read_fields}
        if predicate is not None:
            needed |= columns_of(predicate)
        if merge_spec is not None:
            needed |= set(merge_spec.key_columns) | set(merge_spec.sequence_columns)
            if merge_spec.engine != "deduplicate":
                needed = set(schema.field_names)  # other engines merge across all columns
        # Partition columns taken from each split's partition value instead of its files.
        self.partition_fields = _constant_partition_fields(schema, needed, merge_spec)
        # the conjuncts of the filter on key columns alone: a newest-wins merge applies them to
        # each file before merging (the same keys drop out of every file)
        self.key_filter = _key_conjuncts(predicate, merge_spec, {f.name for f in self.partition_fields})
        # Columns to read from files, in table order (a subset of the current schema).
        self.value_fields = [f for f in schema.fields if f.name in needed and f not in self.partition_fields]
        # row tracking: `_ROW_ID` / `_SEQUENCE_NUMBER` read or filtered on (stitch.read_group)
        self.row_fields = [f for f in ROW_TRACKING_FIELDS if f.name in needed]
        self.output_schema = arrow_schema(read_fields)
        # `fields.<f>.default-value`: shown for fields still null after the merge.
        self.defaults = default_values([f for f in schema.fields if f.name in needed], options) \
            if merge_spec is not None else {}

    def read_all(self, splits: list[Split]) -> list[pa.Table]:
        """Every split's rows: many small splits by one Arrow scan of their files
        (`scan/together.py`: the per-file cost is then Arrow's, not Python's), the others
        read in parallel."""
        tables, rest = read_together(self, splits)
        return tables + [t for t in parallel_map(self.read, rest) if t.num_rows]

    def system_of(self, split: Split, meta: DataFileMeta) -> tuple:
        """The system columns a plain split's file is read with: none for raw reads, the row
        kind for newest-wins merges unless the file is known to hold no retractions."""
        if split.raw_convertible or _without_retracts(meta):
            return ()
        return (VALUE_KIND_FIELD,)

    def plain(self, split: Split) -> bool:
        """A split read by whole files: one file or runs that do not overlap, or the newest
        row of each key wins."""
        return self.split_read(split).name in ("raw", "newest-wins")

    def split_read(self, split: Split) -> "SplitRead":
        """The first of SPLIT_READS that takes the split."""
        return next(read for read in SPLIT_READS if read.takes(self, split))

    def read(self, split: Split) -> pa.Table:
        tables = list(self.read_chunks(split))
        if not tables:
            return self.output_schema.empty_table()
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]

    def read_chunks(self, split: Split) -> Iterator[pa.Table]:
        """The split's rows, in one or more tables (bounded memory on the general merge path)."""
        for data in self._merged(split):
            data = self.finish(self.with_partition(data, [(split.partition_values, data.num_rows)]))
            if data.num_rows:
                yield data

    def finish(self, data: pa.Table) -> pa.Table:
        """Merged rows with their partition columns as the scan returns them: defaults shown,
        the filter applied, the read columns in their types."""
        if self.defaults:
            data = fill_default_values(data, self.defaults)
        data = filter_table(data, self.predicate)
        return data.select([f.name for f in self.read_fields]).cast(self.output_schema)

    def with_partition(self, data: pa.Table, runs: list[tuple[tuple, int]]) -> pa.Table:
        """`data` with its partition columns filled from partition values: `runs` are (values,
        row count) of consecutive rows (as Java's PartitionUtils fills them: a data file's
        partition columns hold its partition's value)."""
        for f in self.partition_fields:
            at, arrow_type = self.schema.partition_keys.index(f.name), to_arrow_type(f.type)
            chunks = [repeat(pa.scalar(values[at], arrow_type), count) for values, count in runs if count]
            data = data.append_column(arrow_field(f), pa.chunked_array(chunks, type=arrow_type))
        return data

    def _merged(self, split: Split) -> Iterator[pa.Table]:
        return self.split_read(split).read(self, split)

    def _read_stitched(self, split: Split) -> Iterator[pa.Table]:
        yield read_group(self.files_of(split), split.bucket_path, split.files, self.value_fields + self.row_fields,
                         split.table_root)

    def _read_merged(self, split: Split) -> Iterator[pa.Table]:
        for data in self._read_sections(self.files_of(split), split):
            yield data.drop_columns([SEQUENCE, VALUE_KIND])

    def _merged_with_postponed(self, split: Split) -> pa.Table:
        """`postpone.merge-on-read`: the partition's rows as its postpone compaction would leave
        them. Its real buckets' merged rows come first, the postponed rows after them in the
        order their commits landed, numbered after them (a `sequence.field` still decides
        first); one merge with the table's engine, retracted keys dropped."""
        whole = copy.copy(self)
        whole.predicate = None  # no row group skipped: a postponed row may change any row
        base = [data for real in split.merged_buckets for data in whole._merged(real)]
        names = [f.name for f in self.value_fields]
        parts = [self.files.read(split.bucket_path, meta, self.value_fields, with_system=True).select(
            names + [SEQUENCE, VALUE_KIND]) for meta in split.files]
        count = sum(t.num_rows for t in base)
        if base:
            placed = pa.concat_tables([t.select(names) for t in base])
            placed = placed.append_column(SEQUENCE, pa.array(np.arange(count, dtype=np.int64)))
            placed = placed.append_column(VALUE_KIND, pa.array(np.zeros(count, dtype=np.int8)))
            parts.insert(0, placed)
        rows = pa.concat_tables(parts)
        sequence = np.arange(rows.num_rows, dtype=np.int64)
        rows = rows.set_column(rows.schema.get_field_index(SEQUENCE), SEQUENCE, pa.array(sequence))
        merged = drop_retracts(merge_table(rows, self.merge_spec))
        return merged.drop_columns([SEQUENCE, VALUE_KIND])

    def _read_raw(self, files: FileReader, split: Split) -> list[pa.Table]:
        """Each file read alone, cut into pieces of row groups that are decoded and stripped of
        their deleted rows in parallel; with a filter, parquet row groups its statistics rule
        out are skipped (rows are still filtered exactly afterwards)."""
        may_match = None if self.predicate is None else _stats_test(self.predicate)
        planned = parallel_map(lambda meta: files.pieces(split.bucket_path, meta, self.value_fields, may_match),
                               split.files)
        pieces = [piece for file_pieces in planned for piece in file_pieces]
        # one piece: let Arrow decode its columns in parallel; several: one thread per piece
        alone = len(pieces) == 1
        return parallel_map(lambda piece: files.read_piece(piece, self.value_fields, use_threads=alone), pieces)

    def files_of(self, split: Split) -> FileReader:
        """The file reader of a split: with the split's deletion vectors, if it has any."""
        if not split.deletion_files:
            return self.files
        store = DeletionVectorFiles(self.files.file_io, split.table_root, self.files.schema)
        held = split.deletion_files
        return self.files.with_deletions(
            lambda name: store.read_one(held[name], name) if name in held else None)

    def _read_sections(self, files: FileReader, split: Split) -> Iterator[pa.Table]:
        """Key-overlapping sections of the bucket merged one at a time (`data.runs`)."""
        key_types = [self.schema.field(k).type for k in self.schema.trimmed_primary_keys]
        lookup = LookupMerge() if self._lookup_merge else None
        return merge_sections(files, split.bucket_path, split.files, self.value_fields, self.merge_spec,
                              key_types, lookup)

    @property
    def _lookup_merge(self) -> bool:
        """Java's LookupMergeFunction on read: a key's rows below its smallest level above 0 hold
        nothing newer than that level's full merged value. For deduplicate the newest row wins
        either way, so only the other engines pay for tracking levels."""
        return self.merge_spec.engine != "deduplicate" and lookup_merge_applies(self.merge_spec)

    def _read_newest_wins(self, files_reader: FileReader, split: Split) -> pa.Table:
        """Deduplicate without sorting: newest file first; an older file contributes only the
        keys no newer file holds (a retraction shadows too, then is dropped). An older file
        that newer ones can shadow at most half of is read whole at once; others are probed by
        their key columns alone first, and read in full only if some of their rows survive.
        Files are read without `_SEQUENCE_NUMBER`, and without `_VALUE_KIND` where they hold
        no retractions. The kept rows come in the order of the split's files (as
        `scan/together.py` reads them)."""
        order = sorted(range(len(split.files)), key=lambda i: split.files[i].min_sequence_number, reverse=True)
        files = [split.files[i] for i in order]
        key_fields = [self.schema.field(k) for k in self.merge_spec.key_columns]
        key_names = [f.name for f in key_fields]
        newer_rows = np.cumsum([0] + [f.row_count for f in files])
        whole = [i == 0 or files[i].row_count > 2 * newer_rows[i] for i in range(len(files))]
        in_threads = parallel_map if newer_rows[-1] >= PARALLEL_SPLIT_ROWS else serial_map

        def first_look(i: int) -> pa.Table:  # whole files, or the keys of the others
            if whole[i]:
                table = files_reader.read(split.bucket_path, files[i], self.value_fields,
                                          with_system=self.system_of(split, files[i]))
            else:
                table = files_reader.read(split.bucket_path, files[i], key_fields, with_system=False)
            return filter_table(table, self.key_filter)

        looked = in_threads(first_look, range(len(files)))
        newer, survivors = NewerKeys(), {}
        for i, table in enumerate(looked):
            keys = table.select(key_names)
            shadowed = newer.shadowed(keys) if i else np.zeros(table.num_rows, dtype=bool)
            newer.add(keys, shadowed)
            if not shadowed.all():
                survivors[i] = ~shadowed

        def kept_rows(i: int) -> pa.Table:
            table = looked[i] if whole[i] else filter_table(
                files_reader.read(split.bucket_path, files[i], self.value_fields,
                                  with_system=self.system_of(split, files[i])), self.key_filter)
            table = filter_rows(table, survivors[i])
            return drop_retracts(table).drop_columns([VALUE_KIND]) if VALUE_KIND in table.column_names else table

        kept = in_threads(kept_rows, sorted(survivors, key=lambda i: order[i]))
        if not kept:
            return arrow_schema(self.value_fields).empty_table()
        return pa.concat_tables(kept) if len(kept) > 1 else kept[0]

    def read_batches(self, splits: list[Split]) -> Iterator[pa.RecordBatch]:
        for split in splits:
            for table in self.read_chunks(split):
                yield from table.to_batches()


PARALLEL_SPLIT_ROWS = 500_000  # a split's files read in threads from this many rows (splits run in threads)


READ_AHEAD_ROWS = 2_000_000  # a split of at most this many rows may be read ahead whole


def read_ahead(reader: SplitReader, splits: list[Split], ahead: int | None = None) -> Iterator[pa.Table]:
    """Each split's rows in plan order, the next `ahead` small splits (default: one per core)
    read in threads while the consumer takes the current one; a larger split is read as a
    stream of chunks when its turn comes, so memory stays bounded by a few splits."""
    ahead = ahead or max(2, os.cpu_count() or 2)
    pool = ThreadPoolExecutor(max_workers=ahead)
    queue: deque = deque()
    try:
        for split in splits:
            small = sum(f.row_count for f in split.files) <= READ_AHEAD_ROWS
            queue.append(pool.submit(reader.read, split) if small else split)
            while len(queue) > ahead or (queue and not isinstance(queue[0], Future)):
                yield from _tables_of(queue.popleft(), reader)
        while queue:
            yield from _tables_of(queue.popleft(), reader)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _tables_of(item, reader: SplitReader) -> Iterator[pa.Table]:
    if isinstance(item, Future):
        yield item.result()
    else:
        yield from reader.read_chunks(item)


# partition value types whose decoded Python value is exactly the column's value
CONSTANT_PARTITION_ROOTS = frozenset({"CHAR", "VARCHAR", "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT",
                                      "DATE"})


@dataclass(frozen=True)
class SplitRead:
    """One way of reading splits, as Java's split-read providers: `takes(reader, split)` says
    whether it reads the split (the first in SPLIT_READS that does reads it), `read(reader,
    split)` yields its rows in the reader's value columns."""

    name: str
    takes: Callable[["SplitReader", Split], bool]
    read: Callable[["SplitReader", Split], Iterator[pa.Table]]


SPLIT_READS = (
    # postpone.merge-on-read: the partition's postponed rows merged with its real buckets
    SplitRead("postponed", lambda r, s: s.kind == POSTPONED, lambda r, s: iter([r._merged_with_postponed(s)])),
    # the files of one row-id group, stitched by row id (a lone file without row columns reads raw)
    SplitRead("stitched", lambda r, s: s.kind == STITCHED and (len(s.files) > 1 or bool(r.row_fields)),
              SplitReader._read_stitched),
    SplitRead("raw", lambda r, s: s.kind in (RAW, STITCHED),
              lambda r, s: iter(r._read_raw(r.files_of(s), s))),
    # deduplicate over runs that do not overlap: the newest row of a key wins, no sort
    SplitRead("newest-wins", lambda r, s: newest_wins_applies(r.merge_spec) and _disjoint(s.files),
              lambda r, s: iter([r._read_newest_wins(r.files_of(s), s)])),
    SplitRead("merged", lambda r, s: True, SplitReader._read_merged),  # key-overlapping sections, any engine
)
# (many small splits of any of these kinds are read by one Arrow scan first: tarn/scan/together.py)


def _constant_partition_fields(schema: TableSchema, needed: set[str], merge_spec: MergeSpec | None) -> list:
    """The needed partition columns a read fills from partition values rather than reads: of
    exactly decoded types, in append tables and deduplicating primary-key tables (where a
    column that is constant in a bucket takes no part in a merge)."""
    if merge_spec is not None and (merge_spec.engine != "deduplicate" or not merge_spec.plain_order):
        return []
    filled = [schema.field(k) for k in schema.partition_keys
              if k in needed and schema.field(k).type.root in CONSTANT_PARTITION_ROOTS]
    if not needed - {f.name for f in filled}:
        return []  # a file read needs a column to count the rows by
    return filled


def _key_conjuncts(predicate: Predicate | None, merge_spec: MergeSpec | None, filled: set[str]) -> Predicate | None:
    """The part of `predicate` (its top-level conjuncts) on read key columns only, for
    newest-wins merges; None if there is none."""
    if predicate is None or merge_spec is None or not newest_wins_applies(merge_spec):
        return None
    keys = set(merge_spec.key_columns) - filled
    parts = [c for c in (predicate.children if isinstance(predicate, And) else (predicate,)) if columns_of(c) <= keys]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(tuple(parts))


def _stats_test(predicate: Predicate):
    """The row-group test of `predicate`: ({column: (min, max, null count)}, rows) -> may match."""
    return lambda stats, rows: may_match_stats(predicate, {n: ColumnStats(*v) for n, v in stats.items()}, rows)


def _without_retracts(meta: DataFileMeta) -> bool:
    """True if the file holds no -U/-D rows: a file above level 0 that counts none (level-0
    counts are not trusted: some writers record 0 for files that do hold them)."""
    return meta.level > 0 and meta.delete_row_count == 0


def _disjoint(files: list[DataFileMeta]) -> bool:
    """True if the files' sequence ranges do not interleave."""
    ordered = sorted(files, key=lambda f: f.min_sequence_number)
    return all(a.max_sequence_number < b.min_sequence_number for a, b in zip(ordered, ordered[1:]))
