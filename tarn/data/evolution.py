"""Schema evolution on read: map data written under an old schema onto the read schema by field id."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from tarn.codec.variant import python_column
from tarn.errors import SchemaMismatch
from tarn.types import DataField, DataType, arrow_field, arrow_schema, to_arrow_type


def adapt_table(data: pa.Table, file_fields: list[DataField], read_fields: list[DataField]) -> pa.Table:
    """`data` (columns named as in `file_fields`) reshaped to `arrow_schema(read_fields)`.

    Columns are matched by field id: renamed columns take the new name, dropped ones vanish,
    added ones are all null, widened types are cast; ROW fields are matched the same way."""
    file_by_id = {f.id: f for f in file_fields}
    columns = []
    for rf in read_fields:
        ff = file_by_id.get(rf.id)
        if ff is None:
            columns.append(_null_column(rf, data.num_rows, rf.name))
            continue
        if ff.name not in data.column_names:
            raise SchemaMismatch(f"column {ff.name!r} (field id {ff.id}) is missing from the file data")
        column = data.column(ff.name)
        chunks = [_adapt_array(c, ff.type, rf.type, rf.name) for c in column.chunks]
        columns.append(pa.chunked_array(chunks, type=to_arrow_type(rf.type)))
    return pa.Table.from_arrays(columns, schema=arrow_schema(read_fields))


def _null_column(rf: DataField, num_rows: int, path: str) -> pa.ChunkedArray:
    if not rf.type.nullable and num_rows:
        raise SchemaMismatch(f"column {path!r} is NOT NULL but is absent from an older data file")
    if rf.type.root == "VARIANT":  # null structs over valid (empty) children, as its children are NOT NULL
        return pa.chunked_array([python_column([None] * num_rows)], type=to_arrow_type(rf.type))
    return pa.chunked_array([pa.nulls(num_rows, to_arrow_type(rf.type))], type=to_arrow_type(rf.type))


def _check_not_null(array: pa.Array, target: DataType, path: str) -> pa.Array:
    if not target.nullable and array.null_count:
        raise SchemaMismatch(f"column {path!r} is NOT NULL but the data holds {array.null_count} nulls")
    return array


def _null_mask(array: pa.Array) -> pa.Array | None:
    return array.is_null() if array.null_count else None


def _adapt_array(array: pa.Array, source: DataType, target: DataType, path: str) -> pa.Array:
    """One array of `source` type as an array of `target` type (whole-array operations only)."""
    target_arrow = to_arrow_type(target)
    if target.root == "ROW" and source.root == "ROW":
        out = _adapt_struct(array, source, target, path)
    elif target.root == "ARRAY" and source.root == "ARRAY":
        values = _adapt_array(array.values, source.element, target.element, path + ".element")
        out = pa.ListArray.from_arrays(array.offsets, values, type=target_arrow, mask=_null_mask(array))
    elif target.root in ("MAP", "MULTISET") and source.root == target.root:
        key_src, key_dst = (source.key, target.key) if target.root == "MAP" else (source.element, target.element)
        keys = _adapt_array(array.keys, key_src, key_dst, path + ".key")
        items = array.items if target.root == "MULTISET" else \
            _adapt_array(array.items, source.value, target.value, path + ".value")
        out = pa.MapArray.from_arrays(array.offsets, keys, items, type=target_arrow, mask=_null_mask(array))
    elif array.type.equals(target_arrow):
        out = array
    else:
        try:
            out = pc.cast(array, target_arrow)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SchemaMismatch(f"column {path!r} cannot be read as {target}: {e}") from e
    return _check_not_null(out, target, path)


def _adapt_struct(array: pa.StructArray, source: DataType, target: DataType, path: str) -> pa.Array:
    source_by_id = {f.id: (i, f) for i, f in enumerate(source.fields)}
    children = []
    for rf in target.fields:
        child_path = f"{path}.{rf.name}"
        found = source_by_id.get(rf.id)
        if found is None:
            if not rf.type.nullable and len(array):
                raise SchemaMismatch(f"field {child_path!r} is NOT NULL but absent from an older data file")
            children.append(pa.nulls(len(array), to_arrow_type(rf.type)))
        else:
            index, sf = found
            children.append(_adapt_array(array.field(index), sf.type, rf.type, child_path))
    fields = [arrow_field(f) for f in target.fields]
    return pa.StructArray.from_arrays(children, fields=fields, mask=_null_mask(array))
