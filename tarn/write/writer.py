"""TableWriter: buffer batches, then cut them into sorted, merged data files per bucket."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn import partition
from tarn.bucket import bucket_ids
from tarn.errors import SchemaMismatch, TarnError
from tarn.fs import FileIO, join
from tarn.lsm.merge import INSERT, ROW_KIND_NAMES, SEQUENCE, VALUE_KIND, MergeSpec, merge_sorted
from tarn.meta.schema import TableSchema
from tarn.options import Options
from tarn.write.conform import conform, to_arrow_table
from tarn.write.files import FileWriter, layout_of
from tarn.write.grouping import Group, group_rows
from tarn.write.message import CommitMessage

NextSequence = Callable[[bytes, int], int]


class TableWriter:
    """Collects writes for one commit. `prepare_commit()` writes the files and returns messages."""

    def __init__(self, file_io: FileIO, root: str, name: str, schema: TableSchema, options: Options,
                 next_sequence: NextSequence):
        self.file_io = file_io
        self.root = root
        self.name = name
        self.schema = schema
        self.options = options
        self.next_sequence = next_sequence
        self.layout = layout_of(schema)
        self.num_buckets = options.int("bucket")
        self.buffered: list[pa.Table] = []
        self._check_writable()

    def _check_writable(self) -> None:
        if self.schema.primary_keys and self.num_buckets <= 0:
            raise TarnError(f"table {self.name}: writing primary-key tables with bucket={self.num_buckets} "
                            "(dynamic/postpone bucket mode) is not supported by tarn yet; "
                            "create the table with a fixed 'bucket' > 0")
        if self.num_buckets == 0 or self.num_buckets < -2:
            raise TarnError(f"table {self.name}: invalid bucket number {self.num_buckets}")

    # ------------------------------------------------------------------ buffering

    def write(self, data, row_kind=None) -> None:
        table = to_arrow_table(data, self.name)
        rowkind_field = self.options.get("rowkind.field")
        conformed = conform(table, list(self.schema.fields), self.name, self.schema.primary_keys)
        kinds = self._row_kinds(conformed, row_kind, rowkind_field)
        if self.layout.is_key_value:
            conformed = conformed.append_column(VALUE_KIND, kinds)
        elif kinds is not None and pc.any(pc.not_equal(kinds, INSERT)).as_py():
            raise SchemaMismatch(f"table {self.name}: append tables accept only +I rows; "
                                 "updates and deletes need a primary-key table")
        if conformed.num_rows:
            self.buffered.append(conformed)

    def _row_kinds(self, table: pa.Table, row_kind, rowkind_field) -> pa.Array:
        n = table.num_rows
        if row_kind is None and rowkind_field:
            row_kind = table.column(rowkind_field)
        if row_kind is None:
            return pa.array(np.zeros(n, dtype=np.int8))
        if isinstance(row_kind, str):
            return pa.array(np.full(n, _kind_code(row_kind, self.name), dtype=np.int8))
        values = pa.chunked_array([row_kind]) if isinstance(row_kind, pa.Array) else row_kind
        if not isinstance(values, pa.ChunkedArray):
            values = pa.chunked_array([pa.array(values)])
        if len(values) != n:
            raise SchemaMismatch(f"table {self.name}: {len(values)} row kinds for {n} rows")
        if pa.types.is_integer(values.type):
            codes = values.cast(pa.int8())
        else:
            codes = pc.index_in(values.cast(pa.string()), value_set=pa.array(list(ROW_KIND_NAMES)))
            codes = codes.cast(pa.int8())
        if codes.null_count or pc.any(pc.or_(pc.less(codes, 0), pc.greater(codes, 3))).as_py():
            field = f"column '{rowkind_field}'" if rowkind_field else "row_kind"
            raise SchemaMismatch(f"table {self.name}: {field} holds values other than +I, -U, +U, -D")
        return codes.combine_chunks()

    # ------------------------------------------------------------------ flushing

    def prepare_commit(self) -> list[CommitMessage]:
        """Write every buffered row to data files; the caller commits (or aborts) the messages."""
        if not self.buffered:
            return []
        data = pa.concat_tables(self.buffered)
        self.buffered = []
        written: list[CommitMessage] = []
        groups = self._groups(data)
        with ThreadPoolExecutor(max_workers=min(len(groups), os.cpu_count() or 2)) as pool:
            futures = [pool.submit(self._flush_group, group) for group in groups]
            failure = None
            for future in futures:
                try:
                    written.append(future.result())
                except BaseException as exc:  # keep collecting so every written file is aborted
                    failure = failure or exc
        if failure is not None:
            abort(self.file_io, self.root, self.schema, written)
            raise failure
        return written

    def _groups(self, data: pa.Table) -> list[Group]:
        buckets = None
        if self.num_buckets > 0:
            key_fields = [self.schema.field(k) for k in self.schema.bucket_keys]
            buckets = bucket_ids(data, key_fields, self.num_buckets)
        sort_columns = list(self.layout.key_names) if self.layout.is_key_value else []
        return group_rows(data, list(self.schema.partition_keys), buckets, sort_columns)

    def _flush_group(self, group: Group) -> CommitMessage:
        partition_bytes = self.partition_bytes(group.partition_values)
        writer = FileWriter(self.file_io, self.bucket_path(group.partition_values, group.bucket),
                            self.schema, self.options)
        base = self.next_sequence(partition_bytes, group.bucket)
        rows = group.rows()
        if self.layout.is_key_value:
            # Rows are sorted by key with arrival order kept among equal keys, which is the
            # order sequence numbers would give them. After the merge each key appears once,
            # so numbering the merged rows in key order (all above the bucket's previous
            # maximum) orders every key exactly as arrival-order numbering would.
            rows = rows.append_column(SEQUENCE, pa.array(np.arange(base, base + rows.num_rows, dtype=np.int64)))
            rows = merge_sorted(rows, self.merge_spec())
            sequence = pa.array(np.arange(base, base + rows.num_rows, dtype=np.int64))
            rows = rows.set_column(rows.schema.get_field_index(SEQUENCE), SEQUENCE, sequence)
            files = writer.write(rows)
        else:
            files = writer.write(rows, first_sequence=base)
        total = self.num_buckets if self.num_buckets > 0 else -1
        return CommitMessage(partition_bytes, group.bucket, total, new_files=files)

    def merge_spec(self) -> MergeSpec:
        return MergeSpec(tuple(self.layout.key_names), self.options.get("merge-engine") or "deduplicate",
                         self.options.bool("ignore-delete"))

    # ------------------------------------------------------------------ partitions

    def partition_bytes(self, values: tuple) -> bytes:
        return partition.to_bytes(self.schema, values)

    def bucket_path(self, values: tuple, bucket: int) -> str:
        return partition.bucket_path(self.root, self.schema, self.options.get("partition.default-name"),
                                     values, bucket)


def _kind_code(text: str, table_name: str) -> int:
    if text not in ROW_KIND_NAMES:
        raise SchemaMismatch(f"table {table_name}: row kind '{text}' is not one of {list(ROW_KIND_NAMES)}")
    return ROW_KIND_NAMES[text]


def abort(file_io: FileIO, root: str, schema: TableSchema, messages: list[CommitMessage]) -> None:
    """Delete every data file the messages added (the commit did not happen)."""
    default_name = schema.options.get("partition.default-name")
    for message in messages:
        values = partition.from_bytes(schema, message.partition)
        directory = partition.bucket_path(root, schema, default_name, values, message.bucket)
        for meta in [*message.new_files, *message.compact_after, *message.changelog_files]:
            file_io.delete(join(directory, meta.file_name))
