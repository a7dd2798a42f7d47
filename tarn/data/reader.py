"""Reading data files by field id: any file of the table, whatever schema wrote it, shaped as
(a subset of) the current schema, whole or as a stream of batches."""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np
import pyarrow as pa

from tarn.codec.data_file import iter_data_file, read_data_file, read_parquet_row_groups
from tarn.data.evolution import adapt_table
from tarn.data.layout import SYSTEM_FIELDS
from tarn.fs import FileIO, join
from tarn.lsm.merge import LEVEL
from tarn.meta.manifest import DataFileMeta
from tarn.meta.schema import TableSchema
from tarn.types import DataField

SchemaLookup = Callable[[int], TableSchema]
Deletions = Callable[[str], "np.ndarray | None"]  # data file name -> deleted row positions
BATCH_ROWS = 262144


class FileReader:
    """Reads one table's data files shaped as (a subset of) the current schema, by field id.

    `deletions` (deletion vectors: a data file name -> its deleted row positions, or None) drops
    those rows from everything read, unless a read asks for every row (`skip_deleted=False`)."""

    def __init__(self, file_io: FileIO, schema: TableSchema, schemas: SchemaLookup, options,
                 deletions: Deletions | None = None):
        self.file_io = file_io
        self.schema = schema
        self.schemas = schemas
        self.file_format = (options.get("file.format") or "parquet").lower()
        self.deletions = deletions

    def read(self, bucket_path: str, meta: DataFileMeta, fields: list[DataField], with_system: bool,
             skip_deleted: bool = True) -> pa.Table:
        file_fields, system, path = self._plan(bucket_path, meta, fields, with_system)
        raw = read_data_file(self.file_io, path, self.format_of(meta), system + file_fields)
        shaped = self._shape(raw, file_fields, fields, system)
        return self._drop_deleted(shaped, meta, 0) if skip_deleted else shaped

    def iter(self, bucket_path: str, meta: DataFileMeta, fields: list[DataField], with_system: bool,
             batch_rows: int = BATCH_ROWS) -> Iterator[pa.Table]:
        file_fields, system, path = self._plan(bucket_path, meta, fields, with_system)
        offset = 0
        for raw in iter_data_file(self.file_io, path, self.format_of(meta), system + file_fields, batch_rows):
            yield self._drop_deleted(self._shape(raw, file_fields, fields, system), meta, offset)
            offset += raw.num_rows

    def read_pruned(self, bucket_path: str, meta: DataFileMeta, fields: list[DataField],
                    may_match: Callable[[dict, int], bool]) -> pa.Table:
        """`read` without system columns, skipping the parquet row groups whose statistics
        cannot match: `may_match({column: (min, max, null count)}, rows)` with current column
        names (only columns whose type kept its kind). Other formats are read whole."""
        if self.format_of(meta) != "parquet":
            return self.read(bucket_path, meta, fields, with_system=False)
        file_fields, _, path = self._plan(bucket_path, meta, fields, False)
        current = {f.id: f for f in fields}
        names = {ff.name: current[ff.id].name for ff in file_fields if ff.type.root == current[ff.id].type.root}

        def test(stats: dict, rows: int) -> bool:
            return may_match({names[n]: v for n, v in stats.items() if n in names}, rows)

        raw, positions = read_parquet_row_groups(self.file_io, path, file_fields, test)
        shaped = self._shape(raw, file_fields, fields, [])
        deleted = self.deleted_rows(meta)
        if deleted is None:
            return shaped
        at = np.minimum(np.searchsorted(deleted, positions), len(deleted) - 1)
        return shaped.filter(pa.array(deleted[at] != positions))

    def with_deletions(self, deletions: Deletions | None) -> "FileReader":
        """This reader with other deletion vectors."""
        return FileReader(self.file_io, self.schema, self.schemas, {"file.format": self.file_format}, deletions)

    def deleted_rows(self, meta: DataFileMeta) -> np.ndarray | None:
        """The file's deleted row positions (sorted), None when it has no deletion vector."""
        if self.deletions is None:
            return None
        positions = self.deletions(meta.file_name)
        return positions if positions is not None and len(positions) else None

    def _drop_deleted(self, rows: pa.Table, meta: DataFileMeta, offset: int) -> pa.Table:
        deleted = self.deleted_rows(meta)
        if deleted is None:
            return rows
        return rows.filter(pa.array(keep_mask(deleted, offset, rows.num_rows)))

    def _plan(self, bucket_path, meta, fields, with_system):
        by_id = {f.id: f for f in self.schemas(meta.schema_id).fields}
        file_fields = [by_id[f.id] for f in fields if f.id in by_id]
        system = list(SYSTEM_FIELDS) if with_system else []
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


def keep_mask(deleted: np.ndarray, offset: int, count: int) -> np.ndarray:
    """Rows offset..offset+count-1 of a file: True where a row is not in `deleted` (sorted)."""
    keep = np.ones(count, dtype=bool)
    lo, hi = np.searchsorted(deleted, [offset, offset + count])
    keep[deleted[lo:hi] - offset] = False
    return keep


def with_level_column(chunk: pa.Table, level: int) -> pa.Table:
    """The chunk with a LEVEL column (the LSM level its rows were read from)."""
    return chunk.append_column(LEVEL, pa.array(np.full(chunk.num_rows, level, dtype=np.int32)))
