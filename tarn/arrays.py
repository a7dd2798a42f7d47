"""Arrow arrays built whole, without a Python step per row."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_OFFSETS = {pa.string(): np.int32, pa.binary(): np.int32, pa.large_string(): np.int64, pa.large_binary(): np.int64}


def repeat(value: pa.Scalar, count: int) -> pa.Array:
    """`count` copies of `value`. Strings and binaries are laid out directly (Arrow's own
    `repeat` appends them one at a time)."""
    offset_type = _OFFSETS.get(value.type)
    if offset_type is None or not value.is_valid:
        return pa.repeat(value, count)
    data = value.as_buffer().to_pybytes()
    if len(data) * count > np.iinfo(offset_type).max:
        return pa.repeat(value, count)
    offsets = np.arange(0, (count + 1) * len(data), len(data), dtype=offset_type) if data \
        else np.zeros(count + 1, dtype=offset_type)
    return pa.Array.from_buffers(value.type, count, [None, pa.py_buffer(offsets), pa.py_buffer(data * count)])


def filter_rows(table: pa.Table, keep: np.ndarray) -> pa.Table:
    """The rows of `table` where `keep` (a numpy bool array) is True, filtered column by
    column (faster than `Table.filter`)."""
    if keep.all():
        return table
    mask = pa.array(keep)
    return pa.Table.from_arrays([column.filter(mask) for column in table.columns], schema=table.schema)


def in_sorted(values: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """For each of `values`: is it in `reference` (sorted)? Binary searches of the shorter
    side: values much longer than the reference and strictly increasing are searched for the
    reference's entries instead."""
    if len(reference) == 0:
        return np.zeros(len(values), dtype=bool)
    if len(values) > 4 * len(reference) and bool((values[1:] > values[:-1]).all()):
        at = np.searchsorted(values, reference)
        inside = at < len(values)
        at, wanted = at[inside], reference[inside]
        hit = np.zeros(len(values), dtype=bool)
        hit[at[values[at] == wanted]] = True
        return hit
    at = np.searchsorted(reference, values)
    np.minimum(at, len(reference) - 1, out=at)
    return reference[at] == values


def without_hidden_nulls(column):
    """`column` (an Array or ChunkedArray) with the nulls a NOT NULL child field holds only
    under a null parent (a null struct, a null list entry) replaced by a placeholder value.

    Arrow builds such nulls (`pa.nulls(n, struct_type)`, a struct from `if_else`, a null
    VARIANT) and its parquet writer refuses them ("declared non-nullable but contains nulls"),
    although the file stores nothing under a null parent: what a reader gets back is the same
    null. Nulls a parent does not hide are left for the caller's own NOT NULL checks."""
    if not _nests(column.type):
        return column
    if isinstance(column, pa.ChunkedArray):
        chunks = [without_hidden_nulls(c) for c in column.chunks]
        if all(new is old for new, old in zip(chunks, column.chunks)):
            return column
        return pa.chunked_array(chunks, column.type)
    return _unhidden(column)


def _nests(t: pa.DataType) -> bool:
    return pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t)


def _unhidden(array: pa.Array) -> pa.Array:
    t = array.type
    if pa.types.is_struct(t):
        children = [_unhidden(array.field(i)) for i in range(t.num_fields)]
        parents_null = array.is_null() if array.null_count else None
        fixed = [_placeheld(child, t.field(i), parents_null) for i, child in enumerate(children)]
        if all(new is old for new, old in zip(fixed, (array.field(i) for i in range(t.num_fields)))):
            return array
        return pa.StructArray.from_arrays(fixed, fields=list(t), mask=parents_null)
    if pa.types.is_map(t):
        keys, items = _unhidden(array.keys), _unhidden(array.items)
        if keys is array.keys and items is array.items:
            return array
        return pa.MapArray.from_arrays(array.offsets, keys, items, type=t,
                                       mask=array.is_null() if array.null_count else None)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        values = _unhidden(array.values)
        if values is array.values:
            return array
        cls = pa.ListArray if pa.types.is_list(t) else pa.LargeListArray
        return cls.from_arrays(array.offsets, values, type=t, mask=array.is_null() if array.null_count else None)
    return array


def _placeheld(child: pa.Array, field: pa.Field, parents_null) -> pa.Array:
    """`child` of a NOT NULL `field` with its nulls under null parents filled (a struct
    child: made valid, its own NOT NULL children filled in turn)."""
    if field.nullable or not child.null_count or parents_null is None:
        return child
    import pyarrow.compute as pc

    hidden = pc.and_(child.is_null(), parents_null)
    if not pc.any(hidden).as_py():
        return child
    if pa.types.is_struct(field.type):
        kids = [_placeheld(child.field(i), field.type.field(i), hidden) for i in range(field.type.num_fields)]
        still_null = pc.and_(child.is_null(), pc.invert(hidden))
        return pa.StructArray.from_arrays(kids, fields=list(field.type),
                                          mask=still_null if pc.any(still_null).as_py() else None)
    return pc.if_else(hidden, _placeholder(field.type), child)


def _placeholder(t: pa.DataType) -> pa.Scalar:
    """A value of type `t` that stands where nothing is stored."""
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return pa.scalar(b"\0" * (t.byte_width if pa.types.is_fixed_size_binary(t) else 0), t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.scalar("", t)
    if pa.types.is_boolean(t):
        return pa.scalar(False, t)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        return pa.scalar([], t)
    if pa.types.is_decimal(t):
        import decimal
        return pa.scalar(decimal.Decimal(0), t)
    if pa.types.is_floating(t):
        return pa.scalar(0.0, t)
    return pa.scalar(0, pa.int64()).cast(t)  # integers, dates, times, timestamps
