"""Reading data files by field id: any file of the table, whatever schema wrote it, shaped as
(a subset of) the current schema, whole or as a stream of batches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa

from tarn.arrays import filter_rows
from tarn.codec.data_file import (RowGroup, iter_data_file, parquet_row_groups, read_data_file,
                                  read_parquet_files_together, read_parquet_groups)
from tarn.data.evolution import adapt_table
from tarn.data.layout import STORED_ROW_TRACKING_FIELDS, SYSTEM_FIELDS
from tarn.features import format_of_file
from tarn.fs import FileIO, join
from tarn.errors import CorruptFile
from tarn.lsm.kv import SEQUENCE
from tarn.lsm.merge import LEVEL
from tarn.meta.manifest import APPEND_SOURCE, DataFileMeta
from tarn.meta.schema import TableSchema
from tarn.types import DataField

SchemaLookup = Callable[[int], TableSchema]
Deletions = Callable[[str], "np.ndarray | None"]  # data file name -> deleted row positions
BATCH_ROWS = 262144
PIECE_ROWS = 500_000  # consecutive parquet row groups are read together up to about this many rows


@dataclass(frozen=True)
class FilePiece:
    """A part of one data file that can be read on its own: consecutive parquet row groups
    (`footer` is the file's parquet metadata), or the whole file (`groups` None: orc, avro)."""

    bucket_path: str
    meta: DataFileMeta
    groups: tuple[RowGroup, ...] | None = None
    footer: object = None

    @property
    def rows(self) -> int:
        return self.meta.row_count if self.groups is None else sum(g.rows for g in self.groups)


class FileReader:
    """Reads one table's data files shaped as (a subset of) the current schema, by field id.
    `with_system`: True adds `_SEQUENCE_NUMBER` and `_VALUE_KIND` after the fields, a tuple of
    system fields adds those only.

    `deletions` (deletion vectors: a data file name -> its deleted row positions, or None) drops
    those rows from everything read, unless a read asks for every row (`skip_deleted=False`)."""

    def __init__(self, file_io: FileIO, schema: TableSchema, schemas: SchemaLookup, options,
                 deletions: Deletions | None = None):
        self.file_io = file_io
        self.schema = schema
        self.schemas = schemas
        self.file_format = (options.get("file.format") or "parquet").lower()
        self.deletions = deletions
        # sequence.snapshot-ordering: an APPEND file's rows take its commit's snapshot id
        self.snapshot_ordering = str(options.get("sequence.snapshot-ordering") or "false").strip().lower() == "true"

    def read(self, bucket_path: str, meta: DataFileMeta, fields: list[DataField], with_system: bool | tuple,
             skip_deleted: bool = True) -> pa.Table:
        file_fields, system, path = self._plan(bucket_path, meta, fields, with_system)
        raw = read_data_file(self.file_io, path, self.format_of(meta), system + file_fields)
        shaped = self._ordered(self._shape(raw, file_fields, fields, system), meta)
        return self._drop_deleted(shaped, meta, 0) if skip_deleted else shaped

    def _ordered(self, rows: pa.Table, meta: DataFileMeta) -> pa.Table:
        """`sequence.snapshot-ordering`: the rows of a file an APPEND or OVERWRITE commit added
        carry its snapshot id (the file's stamped minimum) as their sequence number; compacted
        files keep theirs (Java's KeyValueFileReaderFactory)."""
        if not self.snapshot_ordering or SEQUENCE not in rows.column_names:
            return rows
        if meta.file_source is None:
            raise CorruptFile(f"data file {meta.file_name}: 'sequence.snapshot-ordering' needs the file source "
                              "in data file metadata, which this file lacks")
        if meta.file_source != APPEND_SOURCE:
            return rows
        stamped = pa.array(np.full(rows.num_rows, meta.min_sequence_number, dtype=np.int64))
        return rows.set_column(rows.schema.get_field_index(SEQUENCE), SEQUENCE, stamped)

    def read_together(self, files: list[tuple[str, DataFileMeta]], fields: list[DataField],
                      with_system: bool | tuple) -> list[tuple[pa.Table, list[tuple[str, DataFileMeta]]]]:
        """These (bucket path, file) pairs read by one Arrow scan per schema: each scan's rows
        shaped as `fields` plus `with_system`, deleted rows included, with its files in the
        order their rows follow. Only parquet files naming all their columns, at least two of
        a schema, are read together; the others are left out (to be read by `read`)."""
        by_schema: dict[int, list] = {}
        for bucket_path, meta in files:
            if self.format_of(meta) == "parquet" and meta.write_cols is None:
                by_schema.setdefault(meta.schema_id, []).append((bucket_path, meta))
        scans = []
        for together in by_schema.values():
            if self.snapshot_ordering and with_system:  # each file's rows need their own stamp
                continue
            if len(together) < 2:
                continue
            file_fields, system, _ = self._plan(together[0][0], together[0][1], fields, with_system)
            paths = [self._plan(b, m, fields, with_system)[2] for b, m in together]
            raw = read_parquet_files_together(self.file_io, paths, [m.row_count for _, m in together],
                                              system + file_fields)
            if raw is not None:
                scans.append((self._shape(raw, file_fields, fields, system), together))
        return scans

    def iter(self, bucket_path: str, meta: DataFileMeta, fields: list[DataField], with_system: bool,
             batch_rows: int = BATCH_ROWS) -> Iterator[pa.Table]:
        file_fields, system, path = self._plan(bucket_path, meta, fields, with_system)
        offset = 0
        for raw in iter_data_file(self.file_io, path, self.format_of(meta), system + file_fields, batch_rows):
            yield self._drop_deleted(self._ordered(self._shape(raw, file_fields, fields, system), meta), meta, offset)
            offset += raw.num_rows

    def pieces(self, bucket_path: str, meta: DataFileMeta, fields: list[DataField],
               may_match: Callable[[dict, int], bool] | None = None) -> list[FilePiece]:
        """The file cut into pieces to read in parallel (consecutive parquet row groups of about
        `PIECE_ROWS` rows; other formats whole). With `may_match({column: (min, max, null
        count)}, rows)` (current column names; only columns whose type kept its kind), parquet
        row groups whose statistics cannot match are left out."""
        if self.format_of(meta) != "parquet":
            return [FilePiece(bucket_path, meta)]
        file_fields, _, path = self._plan(bucket_path, meta, fields, False)
        test = None if may_match is None else _renamed_test(may_match, file_fields, fields)
        footer, groups = parquet_row_groups(self.file_io, path, file_fields, test)
        return [FilePiece(bucket_path, meta, run, footer) for run in _consecutive_runs(groups)]

    def read_piece(self, piece: FilePiece, fields: list[DataField], use_threads: bool = True) -> pa.Table:
        """A piece's rows without system columns, minus its deleted rows; `use_threads=False`
        decodes on the calling thread (when pieces are already read in parallel)."""
        if piece.groups is None:
            return self.read(piece.bucket_path, piece.meta, fields, with_system=False)
        file_fields, _, path = self._plan(piece.bucket_path, piece.meta, fields, False)
        raw = read_parquet_groups(self.file_io, path, file_fields, [g.index for g in piece.groups],
                                  piece.footer, use_threads)
        shaped = self._shape(raw, file_fields, fields, [])
        deleted = self.deleted_rows(piece.meta)
        if deleted is None:
            return shaped
        keep = [keep_mask(deleted, g.start, g.rows) for g in piece.groups]
        return filter_rows(shaped, keep[0] if len(keep) == 1 else np.concatenate(keep))

    def read_pruned(self, bucket_path: str, meta: DataFileMeta, fields: list[DataField],
                    may_match: Callable[[dict, int], bool]) -> pa.Table:
        """`read` without system columns, skipping the parquet row groups whose statistics
        cannot match (see `pieces`). Other formats are read whole."""
        tables = [self.read_piece(p, fields) for p in self.pieces(bucket_path, meta, fields, may_match)]
        if not tables:
            return self.read_piece(FilePiece(bucket_path, meta, ()), fields)
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]

    def with_deletions(self, deletions: Deletions | None) -> "FileReader":
        """This reader with other deletion vectors."""
        options = {"file.format": self.file_format, "sequence.snapshot-ordering": str(self.snapshot_ordering)}
        return FileReader(self.file_io, self.schema, self.schemas, options, deletions)

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
        return filter_rows(rows, keep_mask(deleted, offset, rows.num_rows))

    def _plan(self, bucket_path, meta, fields, with_system):
        by_id = {f.id: f for f in self.schemas(meta.schema_id).fields}
        if meta.write_cols is not None:  # a file of some columns (data evolution, row ids stored)
            held = set(meta.write_cols)
            by_id = {i: f for i, f in by_id.items() if f.name in held}
            by_id.update({f.id: f for f in STORED_ROW_TRACKING_FIELDS if f.name in held})
        file_fields = [by_id[f.id] for f in fields if f.id in by_id]
        system = list(SYSTEM_FIELDS if with_system is True else with_system or ())
        path = self.file_io.native(meta.external_path) if meta.external_path else join(bucket_path, meta.file_name)
        return file_fields, system, path

    @staticmethod
    def _shape(raw: pa.Table, file_fields, fields, system) -> pa.Table:
        values = adapt_table(raw.select([f.name for f in file_fields]), file_fields, fields)
        for f in system:
            values = values.append_column(f.name, raw.column(f.name))
        return values

    def format_of(self, meta: DataFileMeta) -> str:
        """The format from the file's extension (tables may switch `file.format` over time)."""
        return format_of_file(meta.file_name, self.file_format)

    def run_chunks(self, bucket_path: str, run_files: list[DataFileMeta], fields,
                   with_level: bool = False) -> Iterator[pa.Table]:
        """A sorted run (files in key order) as a stream of key-sorted tables with system columns;
        `with_level`: plus a LEVEL column holding each row's file level."""
        for meta in run_files:
            for chunk in self.iter(bucket_path, meta, fields, with_system=True):
                yield with_level_column(chunk, meta.level) if with_level else chunk


def _renamed_test(may_match, file_fields: list[DataField], fields: list[DataField]):
    """`may_match` over current column names, for statistics named as in the file."""
    current = {f.id: f for f in fields}
    names = {ff.name: current[ff.id].name for ff in file_fields if ff.type.root == current[ff.id].type.root}
    return lambda stats, rows: may_match({names[n]: v for n, v in stats.items() if n in names}, rows)


def _consecutive_runs(groups: list[RowGroup]) -> list[tuple[RowGroup, ...]]:
    """Row groups packed into runs of consecutive groups of about `PIECE_ROWS` rows."""
    runs: list[list[RowGroup]] = []
    for group in groups:
        last = runs[-1] if runs else None
        if last and last[-1].index + 1 == group.index and sum(g.rows for g in last) < PIECE_ROWS \
                and sum(g.rows for g in last) + group.rows <= 2 * PIECE_ROWS:
            last.append(group)
        else:
            runs.append([group])
    return [tuple(run) for run in runs]


def keep_mask(deleted: np.ndarray, offset: int, count: int) -> np.ndarray:
    """Rows offset..offset+count-1 of a file: True where a row is not in `deleted` (sorted)."""
    keep = np.ones(count, dtype=bool)
    lo, hi = np.searchsorted(deleted, [offset, offset + count])
    keep[deleted[lo:hi] - offset] = False
    return keep


def with_level_column(chunk: pa.Table, level: int) -> pa.Table:
    """The chunk with a LEVEL column (the LSM level its rows were read from)."""
    return chunk.append_column(LEVEL, pa.array(np.full(chunk.num_rows, level, dtype=np.int32)))
