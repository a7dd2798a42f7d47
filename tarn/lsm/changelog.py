"""The changelog a compaction produces: per key, what changed, as -U/+U/+I/-D rows (vectorised).

Inputs are key-value rows tagged with the LSM level they were read from (column `LEVEL`), every
row of each key they hold (a key range of a streaming merge). The output is key-value rows in
key order, -U/-D before +U of the same key, each keeping its own `_SEQUENCE_NUMBER`.

- `full_compaction_changelog` (Java's FullChangelogMergeFunctionWrapper): compaction to the max
  level. before = the key's max-level row, after = the merged value (a single row passes through).
- `lookup_changelog` (Java's LookupChangelogMergeFunctionWrapper): keys with level-0 rows. before
  = the key's high-level row (its row at the smallest level above 0, among the unit's rows and
  the rows looked up in the levels above the output: the full merged value of everything
  older), after = that row merged with the key's level-0 rows (Java's LookupMergeFunction).
- `first_row_changelog` (Java's FirstRowMergeFunctionWrapper): +I for keys never seen above
  level 0, nothing else.

Emission rules shared by the first two: no before (or a retracted one) and an added after: +I;
a before and a retracted after: -D; both added: -U, +U, unless `compare` (the DataFields that
`changelog-producer.row-deduplicate` compares) finds them equal.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.codec.binary_row import encode_rows
from tarn.errors import SchemaMismatch
from tarn.lsm.first_row import RETRACT_NOT_ACCEPTED
from tarn.lsm.kv import (DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE, VALUE_KIND, MergeSpec,
                         is_retract, key_changes)
from tarn.lsm.merge import LEVEL, high_level_rows, merge_lookup_sorted, merge_multi_row_keys, merge_sorted, sort_indices
KEY_ID = "__tarn_key"  # the key's ordinal within one call (a key column, so merges keep it)


def full_compaction_changelog(rows: pa.Table, spec: MergeSpec, max_level: int,
                              compare: tuple | None = None) -> pa.Table:
    """Changelog of a compaction to `max_level`."""
    rows, sizes = _by_key(rows, spec)
    if rows.num_rows == 0:
        return _plain(rows)
    top = _levels(rows) == max_level
    starts = _starts(sizes)
    has_top = np.logical_or.reduceat(top, starts)
    key_spec = _with_key_id(spec)
    after = merge_multi_row_keys(rows, key_spec, merge_sorted)
    before = rows.filter(pa.array(top))
    wanted = ~(has_top & (sizes == 1))  # a lone max-level row did not change
    return _diff(before, after, wanted, compare)


def lookup_changelog(rows: pa.Table, spec: MergeSpec, compare: tuple | None = None) -> pa.Table:
    """Changelog of a compaction that consumes level-0 rows (lookup producer)."""
    rows, sizes = _by_key(rows, spec)
    if rows.num_rows == 0:
        return _plain(rows)
    level0 = _levels(rows) == 0
    has_level0 = np.logical_or.reduceat(level0, _starts(sizes))
    if not has_level0.all():
        rows = rows.filter(pa.array(np.repeat(has_level0, sizes)))
        rows, sizes = _by_key(rows.drop_columns([KEY_ID]), spec, sorted_already=True)
    if rows.num_rows == 0:
        return _plain(rows)
    picked = high_level_rows(rows, sizes)
    before = rows.take(pa.array(picked[picked >= 0], type=pa.int64()))
    after = merge_lookup_sorted(rows, _with_key_id(spec), every_key=True)
    return _diff(before, after, np.ones(len(sizes), dtype=bool), compare)


def first_row_changelog(rows: pa.Table, spec: MergeSpec) -> pa.Table:
    """Changelog of a first-row compaction consuming level-0 rows: the first row of every key
    with no row above level 0 (in the unit or the levels above it), kind kept."""
    rows, sizes = _by_key(rows, spec)
    if rows.num_rows == 0:
        return _plain(rows)
    retract = is_retract(rows).to_numpy(zero_copy_only=False)
    if retract.any() and not spec.ignore_delete:
        raise SchemaMismatch(RETRACT_NOT_ACCEPTED)
    levels = _levels(rows)
    starts = _starts(sizes)
    n = rows.num_rows
    seen = np.logical_or.reduceat(~retract & (levels > 0), starts)
    first_add = np.minimum.reduceat(np.where(retract, n, np.arange(n)), starts)
    new = ~seen & (first_add < n)
    return _plain(rows.take(pa.array(first_add[new], type=pa.int64())))


# ------------------------------------------------------------------ helpers


def _by_key(rows: pa.Table, spec: MergeSpec, sorted_already: bool = False) -> tuple[pa.Table, np.ndarray]:
    """Rows sorted by key then sequence, with a KEY_ID column; and the row count of each key."""
    if not sorted_already and rows.num_rows:
        rows = rows.take(sort_indices(rows, spec))
    last = key_changes(rows, spec.key_columns)
    ends = np.flatnonzero(last)
    sizes = np.diff(np.concatenate([[-1], ends])).astype(np.int64)
    key_ids = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    return rows.append_column(KEY_ID, pa.array(key_ids, type=pa.int64())), sizes


def _starts(sizes: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)


def _levels(rows: pa.Table) -> np.ndarray:
    return rows.column(LEVEL).to_numpy()


def _with_key_id(spec: MergeSpec) -> MergeSpec:
    return replace(spec, key_columns=(*spec.key_columns, KEY_ID))


def _plain(rows: pa.Table) -> pa.Table:
    """Without the helper columns."""
    return rows.drop_columns([c for c in (LEVEL, KEY_ID) if c in rows.column_names])


def _positions(table: pa.Table, key_count: int) -> np.ndarray:
    """Row of each key in a table with at most one row per key (-1: absent)."""
    positions = np.full(key_count, -1, dtype=np.int64)
    positions[table.column(KEY_ID).to_numpy()] = np.arange(table.num_rows)
    return positions


def _is_add(table: pa.Table, positions: np.ndarray) -> np.ndarray:
    kinds = table.column(VALUE_KIND).to_numpy(zero_copy_only=False)
    present = positions >= 0
    add = np.zeros(len(positions), dtype=bool)
    picked = kinds[positions[present]]
    add[present] = (picked == INSERT) | (picked == UPDATE_AFTER)
    return add


def _diff(before: pa.Table, after: pa.Table, wanted: np.ndarray, compare) -> pa.Table:
    """-U/+U/+I/-D rows of the `wanted` keys from one before and one after row per key."""
    key_count = len(wanted)
    before_at, after_at = _positions(before, key_count), _positions(after, key_count)
    before_add, after_add = _is_add(before, before_at), _is_add(after, after_at)
    inserts = wanted & ~before_add & after_add
    deletes = wanted & before_add & ~after_add
    updates = wanted & before_add & after_add
    if compare is not None and updates.any():
        keys = np.flatnonzero(updates)
        same = _equal_rows(before.take(pa.array(before_at[keys])), after.take(pa.array(after_at[keys])), compare)
        updates[keys[same]] = False
    minus_keys = np.flatnonzero(deletes | updates)
    plus_keys = np.flatnonzero(inserts | updates)
    minus = _with_kind(before.take(pa.array(before_at[minus_keys], type=pa.int64())),
                       np.where(deletes[minus_keys], DELETE, UPDATE_BEFORE))
    plus = _with_kind(after.take(pa.array(after_at[plus_keys], type=pa.int64())),
                      np.where(inserts[plus_keys], INSERT, UPDATE_AFTER))
    plus = plus.select(minus.column_names)
    order = np.lexsort((np.repeat([0, 1], [len(minus_keys), len(plus_keys)]),
                        np.concatenate([minus_keys, plus_keys])))
    return _plain(pa.concat_tables([minus, plus]).take(pa.array(order, type=pa.int64())))


def _with_kind(table: pa.Table, kinds: np.ndarray) -> pa.Table:
    index = table.schema.get_field_index(VALUE_KIND)
    column = pa.array(kinds.astype(np.int8), type=table.schema.field(index).type)
    return table.set_column(index, VALUE_KIND, column)


def _equal_rows(left: pa.Table, right: pa.Table, fields) -> np.ndarray:
    """Whether each row pair holds equal values in the columns of `fields` (nulls equal nulls)."""
    same = np.ones(left.num_rows, dtype=bool)
    for f in fields:
        a, b = left.column(f.name), right.column(f.name)
        if f.type.root in _NESTED:
            a, b = _row_bytes(a, f.type), _row_bytes(b, f.type)
        equal = pc.fill_null(pc.equal(a, b), False)
        same &= _bools(pc.or_(equal, pc.and_(pc.is_null(a), pc.is_null(b))))
    return same


_NESTED = ("ARRAY", "MAP", "MULTISET", "ROW")


def _row_bytes(column, data_type) -> pa.Array:
    """Nested values as the bytes of one-field BinaryRows (equal bytes = equal values)."""
    buffer, offsets = encode_rows([column], [data_type])
    return pa.Array.from_buffers(pa.large_binary(), len(offsets) - 1,
                                 [None, pa.py_buffer(offsets.astype(np.int64)), pa.py_buffer(buffer)])


def _bools(array) -> np.ndarray:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return array.to_numpy(zero_copy_only=False)
