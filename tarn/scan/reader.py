"""Reading splits: raw files straight through, primary-key buckets merged on read (vectorised)."""

from __future__ import annotations

from typing import Callable, Iterator

import pyarrow as pa

from tarn.codec.data_file import read_data_file
from tarn.fs import FileIO, join
from tarn.lsm.merge import (SEQUENCE, VALUE_KIND, MergeSpec, drop_retracts, keys_in, merge_runs,
                             newest_wins_applies)
from tarn.meta.manifest import DataFileMeta
from tarn.meta.schema import TableSchema
from tarn.scan.evolution import adapt_table
from tarn.scan.planner import Split
from tarn.scan.predicate import Predicate, columns_of, filter_table
from tarn.types import DataField, arrow_schema
from tarn.write.files import SEQUENCE_FIELD, VALUE_KIND_FIELD

SchemaLookup = Callable[[int], TableSchema]


class SplitReader:
    """Reads splits of one table into Arrow tables shaped as `read_fields`."""

    def __init__(self, file_io: FileIO, schema: TableSchema, schemas: SchemaLookup, options,
                 read_fields: list[DataField], predicate: Predicate | None, merge_spec: MergeSpec | None):
        self.file_io = file_io
        self.schema = schema
        self.schemas = schemas
        self.options = options
        self.read_fields = read_fields
        self.predicate = predicate
        self.merge_spec = merge_spec
        self.file_format = (options.get("file.format") or "parquet").lower()
        needed = {f.name for f in read_fields}
        if predicate is not None:
            needed |= columns_of(predicate)
        if merge_spec is not None:
            needed |= set(merge_spec.key_columns) | set(merge_spec.sequence_columns)
        # Columns to read, in table order (a subset of the current schema).
        self.value_fields = [f for f in schema.fields if f.name in needed]
        self.output_schema = arrow_schema(read_fields)

    def read(self, split: Split) -> pa.Table:
        if split.raw_convertible:
            tables = [self._read_file(split, f, with_system=False) for f in split.files]
            data = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        else:
            if newest_wins_applies(self.merge_spec) and _disjoint(split.files):
                data = self._read_newest_wins(split)
            else:
                runs = [self._read_file(split, f, with_system=True) for f in split.files]
                data = merge_runs(runs, self.merge_spec)
            if data is None:
                return self.output_schema.empty_table()
            data = data.drop_columns([SEQUENCE, VALUE_KIND])
        data = filter_table(data, self.predicate)
        return data.select([f.name for f in self.read_fields]).cast(self.output_schema)

    def _read_newest_wins(self, split: Split) -> pa.Table | None:
        """Deduplicate without sorting: newest file first; an older file contributes only the
        keys no newer file holds. Older files are probed by their key columns alone, and read
        in full only if some of their rows survive."""
        files = sorted(split.files, key=lambda f: f.min_sequence_number)
        key_names = list(self.merge_spec.key_columns)
        newest = self._read_file(split, files[-1], with_system=True)
        kept, newer_keys = [newest], [newest.select(key_names)]
        for meta in reversed(files[:-1]):
            keys = self._read_file(split, meta, with_system=False, only=key_names)
            survivors = ~keys_in(keys, newer_keys)
            newer_keys.append(keys)
            if survivors.any():
                kept.append(self._read_file(split, meta, with_system=True).filter(survivors))
        data = pa.concat_tables(kept) if len(kept) > 1 else kept[0]
        return drop_retracts(data)

    def read_batches(self, splits: list[Split]) -> Iterator[pa.RecordBatch]:
        for split in splits:
            table = self.read(split)
            yield from table.to_batches()

    def _read_file(self, split: Split, meta: DataFileMeta, with_system: bool,
                   only: list[str] | None = None) -> pa.Table:
        """One file's rows shaped as the current schema's `value_fields` (or just `only`)."""
        file_schema = self.schemas(meta.schema_id)
        by_id = {f.id: f for f in file_schema.fields}
        wanted = self.value_fields if only is None else [self.schema.field(n) for n in only]
        file_fields = [by_id[f.id] for f in wanted if f.id in by_id]
        system = [SEQUENCE_FIELD, VALUE_KIND_FIELD] if with_system else []
        columns = [f.name for f in system + file_fields]
        path = meta.external_path or join(split.bucket_path, meta.file_name)
        raw = read_data_file(self.file_io, path, self.file_format_of(meta), system + file_fields, columns)
        values = adapt_table(raw.select([f.name for f in file_fields]), file_fields, wanted)
        if with_system:
            for f in system:
                values = values.append_column(f.name, raw.column(f.name))
        return values

    def file_format_of(self, meta: DataFileMeta) -> str:
        """The format from the file's extension (tables may switch `file.format` over time)."""
        ext = meta.file_name.rsplit(".", 1)[-1].lower()
        return ext if ext in ("parquet", "orc", "avro") else self.file_format


def _disjoint(files: list[DataFileMeta]) -> bool:
    """True if the files' sequence ranges do not interleave (files sorted by min sequence)."""
    ordered = sorted(files, key=lambda f: f.min_sequence_number)
    return all(a.max_sequence_number < b.min_sequence_number for a, b in zip(ordered, ordered[1:]))
