"""Reading splits: raw files straight through, primary-key buckets merged on read (vectorised)."""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np
import pyarrow as pa

from tarn.codec.data_file import iter_data_file, read_data_file
from tarn.fs import FileIO, join
from tarn.lsm.intervals import partition_sections
from tarn.lsm.partial_update import default_values, fill_default_values
from tarn.lsm.merge import (LEVEL, SEQUENCE, VALUE_KIND, MergeSpec, drop_retracts, keys_in,
                             lookup_merge_applies, merge_lookup_sorted, merge_table, newest_wins_applies,
                             sort_indices)
from tarn.lsm.stream_merge import merge_streams
from tarn.meta.manifest import DataFileMeta
from tarn.meta.schema import TableSchema
from tarn.scan.evolution import adapt_table
from tarn.scan.planner import Split
from tarn.scan.predicate import Predicate, columns_of, filter_table
from tarn.types import DataField, arrow_schema
from tarn.write.files import SEQUENCE_FIELD, VALUE_KIND_FIELD

SchemaLookup = Callable[[int], TableSchema]
BATCH_ROWS = 262144


class FileReader:
    """Reads one table's data files shaped as (a subset of) the current schema, by field id."""

    def __init__(self, file_io: FileIO, schema: TableSchema, schemas: SchemaLookup, options):
        self.file_io = file_io
        self.schema = schema
        self.schemas = schemas
        self.file_format = (options.get("file.format") or "parquet").lower()

    def read(self, bucket_path: str, meta: DataFileMeta, fields: list[DataField], with_system: bool) -> pa.Table:
        file_fields, system, path = self._plan(bucket_path, meta, fields, with_system)
        raw = read_data_file(self.file_io, path, self.format_of(meta), system + file_fields)
        return self._shape(raw, file_fields, fields, system)

    def iter(self, bucket_path: str, meta: DataFileMeta, fields: list[DataField], with_system: bool,
             batch_rows: int = BATCH_ROWS) -> Iterator[pa.Table]:
        file_fields, system, path = self._plan(bucket_path, meta, fields, with_system)
        for raw in iter_data_file(self.file_io, path, self.format_of(meta), system + file_fields, batch_rows):
            yield self._shape(raw, file_fields, fields, system)

    def _plan(self, bucket_path, meta, fields, with_system):
        by_id = {f.id: f for f in self.schemas(meta.schema_id).fields}
        file_fields = [by_id[f.id] for f in fields if f.id in by_id]
        system = [SEQUENCE_FIELD, VALUE_KIND_FIELD] if with_system else []
        path = meta.external_path or join(bucket_path, meta.file_name)
        return file_fields, system, path

    @staticmethod
    def _shape(raw: pa.Table, file_fields, fields, system) -> pa.Table:
        values = adapt_table(raw.select([f.name for f in file_fields]), file_fields, fields)
        for f in system:
            values = values.append_column(f.name, raw.column(f.name))
        return values

    def format_of(self, meta: DataFileMeta) -> str:
        """The format from the file's extension (tables may switch `file.format` over time)."""
        ext = meta.file_name.rsplit(".", 1)[-1].lower()
        return ext if ext in ("parquet", "orc", "avro") else self.file_format

    def run_chunks(self, bucket_path: str, run_files: list[DataFileMeta], fields,
                   with_level: bool = False) -> Iterator[pa.Table]:
        """A sorted run (files in key order) as a stream of key-sorted tables with system columns;
        `with_level`: plus a LEVEL column holding each row's file level."""
        for meta in run_files:
            for chunk in self.iter(bucket_path, meta, fields, with_system=True):
                yield with_level_column(chunk, meta.level) if with_level else chunk


def with_level_column(chunk: pa.Table, level: int) -> pa.Table:
    """The chunk with a LEVEL column (the LSM level its rows were read from)."""
    return chunk.append_column(LEVEL, pa.array(np.full(chunk.num_rows, level, dtype=np.int32)))


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
        self.output_schema = arrow_schema(read_fields)
        # `fields.<f>.default-value`: shown for fields still null after the merge.
        self.defaults = default_values(self.value_fields, options) if merge_spec is not None else {}

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
        if split.raw_convertible:
            for meta in split.files:
                yield self.files.read(split.bucket_path, meta, self.value_fields, with_system=False)
            return
        if newest_wins_applies(self.merge_spec) and _disjoint(split.files):
            data = self._read_newest_wins(split)
            if data is not None:
                yield data.drop_columns([SEQUENCE, VALUE_KIND])
            return
        for data in self._read_sections(split):
            yield data.drop_columns([SEQUENCE, VALUE_KIND])

    def _read_sections(self, split: Split) -> Iterator[pa.Table]:
        """Key-overlapping sections of the bucket: a section with one sorted run is read as is,
        others are merged by a streaming k-way merge (memory bounded per section)."""
        key_types = [self.schema.field(k).type for k in self.schema.trimmed_primary_keys]
        lookup = self._lookup_merge
        merge = self._merge_lookup if lookup else (lambda rows: merge_table(rows, self.merge_spec))
        for section in partition_sections(split.files, key_types):
            if len(section) == 1:
                for meta in section[0].files:
                    yield drop_retracts(self.files.read(split.bucket_path, meta, self.value_fields, True))
                continue
            streams = [self.files.run_chunks(split.bucket_path, list(run.files), self.value_fields, lookup)
                       for run in oldest_first(section)]
            for merged in merge_streams(streams, list(self.merge_spec.key_columns), merge):
                yield drop_retracts(merged)

    @property
    def _lookup_merge(self) -> bool:
        """Java's LookupMergeFunction on read: a key's rows below its smallest level above 0 hold
        nothing newer than that level's full merged value. For deduplicate the newest row wins
        either way, so only the other engines pay for tracking levels."""
        return self.merge_spec.engine != "deduplicate" and lookup_merge_applies(self.merge_spec)

    def _merge_lookup(self, rows: pa.Table) -> pa.Table:
        rows = rows.take(sort_indices(rows, self.merge_spec))
        return merge_lookup_sorted(rows, self.merge_spec).drop_columns([LEVEL])

    def _read_newest_wins(self, split: Split) -> pa.Table | None:
        """Deduplicate without sorting: newest file first; an older file contributes only the
        keys no newer file holds. Older files are probed by their key columns alone, and read
        in full only if some of their rows survive."""
        files = sorted(split.files, key=lambda f: f.min_sequence_number)
        key_fields = [self.schema.field(k) for k in self.merge_spec.key_columns]
        newest = self.files.read(split.bucket_path, files[-1], self.value_fields, with_system=True)
        kept, newer_keys = [newest], [newest.select([f.name for f in key_fields])]
        for meta in reversed(files[:-1]):
            keys = self.files.read(split.bucket_path, meta, key_fields, with_system=False)
            survivors = ~keys_in(keys, newer_keys)
            newer_keys.append(keys)
            if survivors.any():
                older = self.files.read(split.bucket_path, meta, self.value_fields, with_system=True)
                kept.append(older.filter(survivors))
        data = pa.concat_tables(kept) if len(kept) > 1 else kept[0]
        return drop_retracts(data)

    def read_batches(self, splits: list[Split]) -> Iterator[pa.RecordBatch]:
        for split in splits:
            for table in self.read_chunks(split):
                yield from table.to_batches()


def oldest_first(runs):
    """Runs ordered by their newest sequence number, so that a merge concatenating their rows
    meets the versions of a key oldest first."""
    return sorted(runs, key=lambda run: max(f.max_sequence_number for f in run.files))


def _disjoint(files: list[DataFileMeta]) -> bool:
    """True if the files' sequence ranges do not interleave."""
    ordered = sorted(files, key=lambda f: f.min_sequence_number)
    return all(a.max_sequence_number < b.min_sequence_number for a, b in zip(ordered, ordered[1:]))
