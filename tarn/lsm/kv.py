"""Key-value rows of primary-key tables: system columns, row kinds, and what a merge needs.

Every merge engine (tarn.lsm.merge and the engine modules) works on tables holding the key
columns, `_SEQUENCE_NUMBER`, `_VALUE_KIND` and the table's columns.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.arrays import filter_rows

SEQUENCE = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
KEY_PREFIX = "_KEY_"

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
ROW_KIND_NAMES = {"+I": INSERT, "-U": UPDATE_BEFORE, "+U": UPDATE_AFTER, "-D": DELETE}


@dataclass(frozen=True)
class MergeSpec:
    """What a merge needs to know: the key columns, the engine and the table it merges for.

    `fields` are the table's columns (tarn.types.DataField) and `options` the table options
    (a tarn.options.Options); engines other than deduplicate read their settings there
    (`fields.<f>.aggregate-function`, `fields.<f>.sequence-group`, ...)."""

    key_columns: tuple[str, ...]
    engine: str = "deduplicate"
    ignore_delete: bool = False
    sequence_columns: tuple[str, ...] = ()
    fields: tuple = ()
    options: object = None
    sequence_descending: bool = False  # `sequence.field.sort-order` = descending
    row_kind_flag: bool = False  # `sequence.auto-padding` has row-kind-flag: -U/-D before +I/+U

    @property
    def plain_order(self) -> bool:
        """Rows of a key merge in system-sequence (arrival) order alone."""
        return not self.sequence_columns and not self.row_kind_flag


def key_changes(table: pa.Table, key_columns) -> np.ndarray:
    """Boolean array: row i is the last of its key run (key differs at i+1, or i is last)."""
    n = table.num_rows
    last = np.zeros(n, dtype=bool)
    if n == 0:
        return last
    last[-1] = True
    if n == 1:
        return last
    for name in key_columns:
        column = table.column(name)
        a, b = column.slice(0, n - 1), column.slice(1)
        differs = pc.not_equal(a, b)
        if differs.null_count:
            differs = pc.fill_null(differs, pc.not_equal(a.is_null(), b.is_null()))
        last[:-1] |= _to_numpy_bool(differs)
    return last


def _to_numpy_bool(array) -> np.ndarray:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return array.to_numpy(zero_copy_only=False)


def is_retract(table: pa.Table) -> pa.Array:
    kind = table.column(VALUE_KIND)
    return pc.or_(pc.equal(kind, UPDATE_BEFORE), pc.equal(kind, DELETE))


def drop_retracts(table: pa.Table) -> pa.Table:
    """Rows whose final kind is -U or -D are not part of the table's content."""
    if table.num_rows == 0:
        return table
    kinds = table.column(VALUE_KIND)
    if kinds.null_count == 0 and pa.types.is_integer(kinds.type):
        codes = kinds.to_numpy()
        retract = (codes == UPDATE_BEFORE) | (codes == DELETE)
        if not retract.any():
            return table  # nothing to drop: no copy
        return filter_rows(table, ~retract)
    return table.filter(pc.invert(is_retract(table)))
