"""The `first-row` merge engine: each key keeps the first row written for it.

As Paimon's FirstRowMergeFunction: the kept row is the first +I/+U of the key in sequence order,
unchanged (kind and `_SEQUENCE_NUMBER` included); -U/-D rows are refused unless `ignore-delete`
(or its older key `first-row.ignore-delete`) is set, and then skipped - a key with only
retracts disappears.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from tarn.errors import InvalidOption, SchemaMismatch
from tarn.lsm.kv import MergeSpec, is_retract, key_changes
from tarn.options import as_options

RETRACT_NOT_ACCEPTED = (
    "By default, First row merge engine can not accept DELETE/UPDATE_BEFORE records.\n"
    "You can config 'ignore-delete' to ignore the DELETE/UPDATE_BEFORE records."
)


def merge_first_row(table: pa.Table, spec: MergeSpec) -> pa.Table:
    """Merge a sorted key-value table with the first-row engine: one row per key."""
    if table.num_rows == 0:
        return table
    retract = is_retract(table).to_numpy(zero_copy_only=False)
    if retract.any() and not spec.ignore_delete:
        raise SchemaMismatch(RETRACT_NOT_ACCEPTED)
    ends = np.flatnonzero(key_changes(table, spec.key_columns))
    starts = np.concatenate(([0], ends[:-1] + 1))
    n = table.num_rows
    first_kept = np.minimum.reduceat(np.where(retract, n, np.arange(n)), starts)
    first_kept = first_kept[first_kept < n]
    if len(first_kept) == n:
        return table
    return table.take(pa.array(first_kept, type=pa.int64()))


def validate_first_row(fields, primary_keys, options, table_name: str) -> None:
    """Raise InvalidOption for options Paimon refuses on a first-row table."""
    typed = as_options(options)
    if typed.sequence_fields:
        raise InvalidOption(f"table {table_name}: do not support use sequence field "
                            f"('sequence.field' = '{typed.get('sequence.field')}') on FIRST_ROW "
                            f"merge engine.")
    producer = typed.changelog_producer
    if producer not in ("none", "lookup"):
        raise InvalidOption(f"table {table_name}: only support 'none' and 'lookup' "
                            f"changelog-producer on FIRST_ROW merge engine, not "
                            f"'changelog-producer' = '{producer}'")
    if typed.bool("deletion-vectors.enabled") and not typed.bool("pk-clustering-override"):
        raise InvalidOption(f"table {table_name}: first row merge engine does not need deletion "
                            f"vectors ('deletion-vectors.enabled') because there is no deletion "
                            f"of old data in this merge engine.")
