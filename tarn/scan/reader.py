"""Reading splits: raw files straight through, primary-key buckets merged on read (vectorised)."""

from __future__ import annotations

import copy
import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Iterator

import numpy as np
import pyarrow as pa

from tarn.data.layout import ROW_TRACKING_FIELDS
from tarn.data.reader import FileReader, SchemaLookup
from tarn.data.runs import LookupMerge, merge_sections
from tarn.fs import FileIO
from tarn.lsm.merge import (SEQUENCE, VALUE_KIND, MergeSpec, NewerKeys, drop_retracts, lookup_merge_applies,
                            merge_table, newest_wins_applies)
from tarn.paths import POSTPONE_BUCKET
from tarn.data.defaults import default_values, fill_default_values
from tarn.meta.manifest import DataFileMeta
from tarn.meta.schema import TableSchema
from tarn.scan.planner import Split
from tarn.scan.stitch import read_group
from tarn.store.deletion_vectors import DeletionVectorFiles
from tarn.scan.predicate import ColumnStats, Predicate, columns_of, filter_table, may_match_stats
from tarn.types import DataField, arrow_schema


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
        # Columns to read, in table order (a subset of the current schema).
        self.value_fields = [f for f in schema.fields if f.name in needed]
        # row tracking: `_ROW_ID` / `_SEQUENCE_NUMBER` read or filtered on (stitch.read_group)
        self.row_fields = [f for f in ROW_TRACKING_FIELDS if f.name in needed]
        self.output_schema = arrow_schema(read_fields)
        # `fields.<f>.default-value`: shown for fields still null after the merge.
        self.defaults = default_values(self.value_fields, options) if merge_spec is not None else {}

    def read_all(self, splits: list[Split]) -> list[pa.Table]:
        """Every split's rows, splits read in parallel. Many small files are first read
        together by one Arrow scan (`FileReader.preload`): the per-file cost of a table of many
        small buckets is then Arrow's, not Python's."""
        small = [(s.bucket_path, f) for s in splits if self._plain(s) for f in s.files]
        rows = sum(meta.row_count for _, meta in small)
        if len(small) >= PRELOAD_MIN_FILES and rows <= PRELOAD_MAX_ROWS and rows <= PRELOAD_FILE_ROWS * len(small):
            self.files.preload(small, self.value_fields)
        try:
            return parallel_map(self.read, splits)
        finally:
            self.files.preloaded.clear()

    def _plain(self, split: Split) -> bool:
        """A split read by whole files: one file or runs that do not overlap, or the newest
        row of each key wins."""
        if split.bucket == POSTPONE_BUCKET or split.row_tracking:
            return False
        return split.raw_convertible or (newest_wins_applies(self.merge_spec) and _disjoint(split.files))

    def read(self, split: Split) -> pa.Table:
        tables = list(self.read_chunks(split))
        if not tables:
            return self.output_schema.empty_table()
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]

    def read_chunks(self, split: Split) -> Iterator[pa.Table]:
        """The split's rows, in one or more tables (bounded memory on the general merge path)."""
        for data in self._merged(split):
            if self.defaults:
                data = fill_default_values(data, self.defaults)
            data = filter_table(data, self.predicate)
            if data.num_rows:
                yield data.select([f.name for f in self.read_fields]).cast(self.output_schema)

    def _merged(self, split: Split) -> Iterator[pa.Table]:
        if split.bucket == POSTPONE_BUCKET:
            yield self._merged_with_postponed(split)
            return
        files = self._files_of(split)
        if split.row_tracking and (len(split.files) > 1 or self.row_fields):
            yield read_group(files, split.bucket_path, split.files, self.value_fields + self.row_fields,
                             split.table_root)
            return
        if split.raw_convertible:
            yield from self._read_raw(files, split)
            return
        if newest_wins_applies(self.merge_spec) and _disjoint(split.files):
            data = self._read_newest_wins(files, split)
            if data is not None:
                yield data.drop_columns([SEQUENCE, VALUE_KIND])
            return
        for data in self._read_sections(files, split):
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
        if all(files.is_preloaded(split.bucket_path, meta) for meta in split.files):
            return [files.read(split.bucket_path, meta, self.value_fields, with_system=False) for meta in split.files]
        may_match = None if self.predicate is None else _stats_test(self.predicate)
        planned = parallel_map(lambda meta: files.pieces(split.bucket_path, meta, self.value_fields, may_match),
                               split.files)
        pieces = [piece for file_pieces in planned for piece in file_pieces]
        # one piece: let Arrow decode its columns in parallel; several: one thread per piece
        alone = len(pieces) == 1
        return parallel_map(lambda piece: files.read_piece(piece, self.value_fields, use_threads=alone), pieces)

    def _files_of(self, split: Split) -> FileReader:
        """The file reader of a split: with the split's deletion vectors, if it has any."""
        if not split.deletion_files:
            return self.files
        store = DeletionVectorFiles(self.files.file_io, split.table_root)
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

    def _read_newest_wins(self, files_reader: FileReader, split: Split) -> pa.Table | None:
        """Deduplicate without sorting: newest file first; an older file contributes only the
        keys no newer file holds. An older file that newer ones can shadow at most half of is
        read whole at once; others are probed by their key columns alone first, and read in
        full only if some of their rows survive."""
        files = sorted(split.files, key=lambda f: f.min_sequence_number, reverse=True)
        key_fields = [self.schema.field(k) for k in self.merge_spec.key_columns]
        key_names = [f.name for f in key_fields]
        newer_rows = np.cumsum([0] + [f.row_count for f in files])
        whole = [i == 0 or files[i].row_count > 2 * newer_rows[i] for i in range(len(files))]
        in_threads = parallel_map if newer_rows[-1] >= PARALLEL_SPLIT_ROWS else serial_map

        def first_look(i: int) -> pa.Table:  # whole files, or the keys of the others
            fields, system = (self.value_fields, True) if whole[i] else (key_fields, False)
            return files_reader.read(split.bucket_path, files[i], fields, with_system=system)

        looked = in_threads(first_look, range(len(files)))
        newer, survivors = NewerKeys(), {}
        for i, table in enumerate(looked):
            keys = table.select(key_names)
            shadowed = newer.shadowed(keys) if i else np.zeros(table.num_rows, dtype=bool)
            newer.add(keys, shadowed)
            if not shadowed.all():
                survivors[i] = ~shadowed

        def kept_rows(i: int) -> pa.Table:
            table = looked[i] if whole[i] else files_reader.read(split.bucket_path, files[i], self.value_fields,
                                                                with_system=True)
            return table if survivors[i].all() else table.filter(survivors[i])

        kept = in_threads(kept_rows, list(survivors)) or [looked[0]]  # [looked[0]]: no rows at all
        data = pa.concat_tables(kept) if len(kept) > 1 else kept[0]
        return drop_retracts(data)

    def read_batches(self, splits: list[Split]) -> Iterator[pa.RecordBatch]:
        for split in splits:
            for table in self.read_chunks(split):
                yield from table.to_batches()


# a scan of at least PRELOAD_MIN_FILES files averaging at most PRELOAD_FILE_ROWS rows, together
# at most PRELOAD_MAX_ROWS, reads them by one Arrow scan first (SplitReader.read_all)
PRELOAD_MIN_FILES, PRELOAD_FILE_ROWS, PRELOAD_MAX_ROWS = 8, 200_000, 8_000_000
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


def serial_map(read, items) -> list:
    return [read(item) for item in items]


def parallel_map(read, items: list) -> list:
    """`read` of every item, in order; several at once (Arrow's readers and kernels release the
    GIL, so a file's decoding overlaps another's filtering)."""
    if len(items) < 2:
        return [read(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(len(items), os.cpu_count() or 2)) as pool:
        return list(pool.map(read, items))


def _stats_test(predicate: Predicate):
    """The row-group test of `predicate`: ({column: (min, max, null count)}, rows) -> may match."""
    return lambda stats, rows: may_match_stats(predicate, {n: ColumnStats(*v) for n, v in stats.items()}, rows)


def _disjoint(files: list[DataFileMeta]) -> bool:
    """True if the files' sequence ranges do not interleave."""
    ordered = sorted(files, key=lambda f: f.min_sequence_number)
    return all(a.max_sequence_number < b.min_sequence_number for a, b in zip(ordered, ordered[1:]))
