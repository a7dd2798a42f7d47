"""Split a batch into (partition, bucket) groups with one sort, vectorised."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

GROUP_COLUMN = "__tarn_group"


@dataclass
class Group:
    partition_values: tuple
    bucket: int
    rows: pa.Table  # a zero-copy slice of the sorted input


def partition_codes(table: pa.Table, partition_keys) -> np.ndarray:
    """A dense int64 code per row, equal for rows of the same partition (nulls included)."""
    codes = np.zeros(table.num_rows, dtype=np.int64)
    for name in partition_keys:
        encoded = pc.dictionary_encode(table.column(name).combine_chunks(), null_encoding="encode")
        indices = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        codes = codes * max(len(encoded.dictionary), 1) + indices
    return codes


def group_rows(table: pa.Table, partition_keys, buckets: np.ndarray | None,
               sort_columns: list[str]) -> list[Group]:
    """Groups of rows sharing partition and bucket; within a group rows are stably sorted by
    `sort_columns` (input order kept among equal sort values)."""
    n = table.num_rows
    if n == 0:
        return []
    codes = partition_codes(table, partition_keys) if partition_keys else np.zeros(n, np.int64)
    if buckets is not None:
        codes = codes * (int(buckets.max()) + 1) + buckets
    order = _sort_order(table, codes, sort_columns)
    if order is not None:
        table = table.take(order)
        order = order.to_numpy()
        codes = codes[order]
        buckets = buckets[order] if buckets is not None else None
    starts = np.concatenate(([0], np.flatnonzero(codes[1:] != codes[:-1]) + 1, [n]))
    groups = []
    for lo, hi in zip(starts[:-1], starts[1:]):
        rows = table.slice(lo, hi - lo)
        values = tuple(rows.column(k)[0].as_py() for k in partition_keys)
        bucket = int(buckets[lo]) if buckets is not None else 0
        groups.append(Group(values, bucket, rows))
    return groups


def _sort_order(table: pa.Table, codes: np.ndarray, sort_columns: list[str]) -> pa.Array | None:
    single_group = bool((codes == codes[0]).all())
    if not sort_columns:
        if single_group:
            return None
        return pa.array(np.argsort(codes, kind="stable"))
    keys = [table.column(c) for c in sort_columns]
    if len(keys) == 1 and _is_numpy_sortable(keys[0].type):
        key = keys[0].to_numpy()
        order = np.lexsort((key,)) if single_group else np.lexsort((key, codes))
        return pa.array(order)
    sort_table = pa.table({GROUP_COLUMN: codes, **{f"k{i}": k for i, k in enumerate(keys)}})
    sort_keys = ([] if single_group else [(GROUP_COLUMN, "ascending")])
    sort_keys += [(f"k{i}", "ascending") for i in range(len(keys))]
    return pc.sort_indices(sort_table, sort_keys=sort_keys, null_placement="at_start")


def _is_numpy_sortable(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)
            or pa.types.is_time(t)) and not pa.types.is_dictionary(t)
