"""Reading a row-id group of a row-tracking table: the rows of one row-id range, each column
from the newest file holding it, with `_ROW_ID` and `_SEQUENCE_NUMBER` (Java's
DataEvolutionSplitRead and DataFileRecordReader, as tarn/meta/row_ranges.py describes them).

The normal files of a group cover the same range with the same row count; rows line up by
position, so stitching is column selection, never a join. `_ROW_ID` is the stored column
where the newest file stores it, else the range's first id plus the position; `_SEQUENCE_NUMBER`
the stored column, else the newest file's max sequence number. The group's deleted rows are
the anchor file's deletion vector (positions within the range).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.data.layout import ROW_ID_FIELD, SEQUENCE_FIELD, STORED_ROW_TRACKING_FIELDS
from tarn.data.reader import FileReader, keep_mask
from tarn.errors import CorruptFile, SchemaMismatch
from tarn.meta.manifest import DataFileMeta
from tarn.meta.row_ranges import anchor_of, held_columns, newest_first, row_range
from tarn.types import DataField, arrow_field, to_arrow_type

SYSTEM_IDS = {ROW_ID_FIELD.id, SEQUENCE_FIELD.id}


def read_group(reader: FileReader, bucket_path: str, files: list[DataFileMeta],
               fields: list[DataField], table_name: str, keep_deleted: bool = False) -> pa.Table:
    """The group's live rows shaped as `fields` (table columns and row-tracking columns);
    `keep_deleted`: every row of the range, in position order (deleted ones too)."""
    normal = newest_first(files)
    _check_aligned(normal, table_name)
    newest = normal[0]
    rows = newest.row_count
    suppliers = _suppliers(reader, normal, [f for f in fields if f.id not in SYSTEM_IDS])
    columns: dict[int, pa.ChunkedArray] = {}
    for meta, wanted in suppliers:
        data = reader.read(bucket_path, meta, wanted, with_system=False, skip_deleted=False)
        if data.num_rows != rows:
            raise CorruptFile(f"table {table_name}: data file {meta.file_name} holds {data.num_rows} rows, its "
                              f"manifest entry says {meta.row_count}")
        columns.update({f.id: data.column(i) for i, f in enumerate(wanted)})
    if any(f.id in SYSTEM_IDS for f in fields):
        columns.update(_system_columns(reader, bucket_path, newest, fields))
    arrays = [columns[f.id] if f.id in columns else _nulls(f, rows, table_name) for f in fields]
    table = pa.Table.from_arrays(arrays, schema=pa.schema([arrow_field(f) for f in fields]))
    deleted = None if keep_deleted else reader.deleted_rows(anchor_of(files))
    if deleted is None:
        return table
    return table.filter(pa.array(keep_mask(deleted, 0, rows)))


def _check_aligned(normal: list[DataFileMeta], table_name: str) -> None:
    ranges = {row_range(f) for f in normal}
    if len(ranges) > 1 or len({f.row_count for f in normal}) > 1:
        names = ", ".join(f"{f.file_name} {row_range(f)}" for f in normal)
        raise CorruptFile(f"table {table_name}: data files {names} overlap in row ids without covering the same "
                          "range; Paimon reads only groups of files with equal ranges")


def _suppliers(reader: FileReader, normal: list[DataFileMeta],
               fields: list[DataField]) -> list[tuple[DataFileMeta, list[DataField]]]:
    """Each field read from the newest file holding it (by field id), grouped by file."""
    by_file: dict[str, tuple[DataFileMeta, list[DataField]]] = {}
    for f in fields:
        for meta in normal:
            file_schema = reader.schemas(meta.schema_id)
            held = set(held_columns(meta, file_schema.field_names))
            if any(ff.id == f.id and ff.name in held for ff in file_schema.fields):
                by_file.setdefault(meta.file_name, (meta, []))[1].append(f)
                break
    return list(by_file.values())


def _system_columns(reader: FileReader, bucket_path: str, newest: DataFileMeta,
                    fields: list[DataField]) -> dict[int, pa.ChunkedArray]:
    """`_ROW_ID` and `_SEQUENCE_NUMBER` of the group's rows, from the newest file."""
    wanted = [f for f in (ROW_ID_FIELD, SEQUENCE_FIELD) if any(x.id == f.id for x in fields)]
    held = newest.write_cols or ()
    stored = [f for f in STORED_ROW_TRACKING_FIELDS if f.name in held and any(w.id == f.id for w in wanted)]
    found = {}
    if stored:
        data = reader.read(bucket_path, newest, stored, with_system=False, skip_deleted=False)
        found = {f.id: data.column(i) for i, f in enumerate(stored)}
    out = {}
    for f in wanted:
        value = found.get(f.id)
        if value is None:
            out[f.id] = _derived(f, newest, newest.row_count)
        elif value.null_count:  # a null: the value the manifest entry gives
            out[f.id] = pc.coalesce(value.cast(pa.int64()), _derived(f, newest, newest.row_count))
        else:
            out[f.id] = value.cast(pa.int64())
    return out


def _derived(f: DataField, meta: DataFileMeta, rows: int) -> pa.ChunkedArray:
    if f.id == SEQUENCE_FIELD.id:
        return pa.chunked_array([pa.array(np.full(rows, meta.max_sequence_number, dtype=np.int64))])
    if meta.first_row_id is None:
        raise CorruptFile(f"data file {meta.file_name} of a row-tracking table has neither a first row id nor "
                          "stored row ids")
    return pa.chunked_array([pa.array(np.arange(meta.first_row_id, meta.first_row_id + rows, dtype=np.int64))])


def _nulls(f: DataField, rows: int, table_name: str) -> pa.ChunkedArray:
    if not f.type.nullable and rows:
        raise SchemaMismatch(f"table {table_name}: column '{f.name}' is NOT NULL but no data file holds it")
    return pa.chunked_array([pa.nulls(rows, to_arrow_type(f.type))])
