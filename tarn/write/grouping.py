"""Split a batch into (partition, bucket) groups, each sorted by key, vectorised."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.lsm.kv import key_changes

PARALLEL_TAKE_ROWS = 200_000  # below this a group's columns are gathered in the calling thread
_take_pool: ThreadPoolExecutor | None = None


@dataclass
class Group:
    """Rows of one (partition, bucket): `source` rows at `indices` (None = `lo`..`hi`), to be
    sorted by `sort_columns` when materialised (so groups can be sorted in parallel)."""

    partition_values: tuple
    bucket: int
    source: pa.Table
    indices: np.ndarray | None
    lo: int
    hi: int
    sort_columns: list
    numeric_keys: np.ndarray | None = None

    def rows(self) -> pa.Table:
        if self.indices is None and not self.sort_columns:
            return self.source.slice(self.lo, self.hi - self.lo)
        return take_rows(self.source, self.sorted_indices())

    def sorted_indices(self) -> np.ndarray:
        """Positions in `source` of the group's rows, in sort order."""
        indices = self.indices
        if self.sort_columns:
            indices = _sorted_within(self.source, self.numeric_keys, indices, self.lo, self.hi,
                                     self.sort_columns)
        return np.arange(self.lo, self.hi) if indices is None else indices

    def last_of_each_key(self, key_columns: list[str]) -> pa.Table:
        """The rows sorted, only the last row of each key: gathered once, the keys alone
        looked at first (a deduplicating flush holds no sorted copy of the dropped rows)."""
        indices = self.sorted_indices()
        if len(key_columns) == 1 and self.numeric_keys is not None:
            keys = self.numeric_keys[indices]
            last = np.append(keys[1:] != keys[:-1], True) if len(keys) else np.zeros(0, dtype=bool)
        else:
            last = key_changes(take_rows(self.source.select(key_columns), indices), key_columns)
        return take_rows(self.source, indices if last.all() else indices[last])


def take_rows(table: pa.Table, indices: np.ndarray) -> pa.Table:
    """`table.take(indices)`, large tables gathered column by column on a small thread pool
    (Arrow's take is single-threaded and releases the GIL; a sorted write spends much of its
    time here). The pool runs only takes, so a caller on another pool cannot deadlock it."""
    if len(indices) < PARALLEL_TAKE_ROWS or table.num_columns < 2:
        return table.take(pa.array(indices))
    global _take_pool
    if _take_pool is None:
        _take_pool = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 2), thread_name_prefix="tarn-take")
    positions = pa.array(indices)
    columns = [f.result() for f in [_take_pool.submit(c.take, positions) for c in table.columns]]
    return pa.Table.from_arrays(columns, schema=table.schema)


def key_order(table: pa.Table, key_names: list[str]) -> np.ndarray:
    """Row indices sorted by the key columns, rows with equal keys in arrival order."""
    if len(key_names) == 1:
        keys = numeric_keys_of(table.column(key_names[0]))
        if keys is not None:
            return stable_numeric_order(keys)
    keys = table.select(key_names)
    return pc.sort_indices(keys, sort_keys=[(c, "ascending", "at_start") for c in key_names]).to_numpy()


def numeric_keys_of(column) -> np.ndarray | None:
    """The column as numpy integers when it sorts as they do (integers, dates, times,
    timestamps), else None."""
    if not _is_numpy_sortable(column.type):
        return None
    keys = column.to_numpy()
    if keys.dtype.kind in "mM":
        keys = keys.view(np.int64)
    integer = keys.dtype.kind == "i" or (keys.dtype.kind == "u" and keys.dtype.itemsize < 8)
    return keys if integer else None


def stable_numeric_order(keys: np.ndarray) -> np.ndarray:
    """`np.argsort(keys, kind="stable")` for integer keys. Keys spanning less than 2**31 are
    packed with their position into one int64 (`(key - min) << 32 | position`) and sorted as
    plain values: several times faster than an argsort, and stable by construction."""
    n = len(keys)
    if n < 2:
        return np.arange(n, dtype=np.int64)
    low, high = int(keys.min()), int(keys.max())
    if n >= (1 << 32) or high - low >= (1 << 31):
        order = np.argsort(keys)  # fast unstable sort; redone stably only where keys repeat
        ordered = keys[order]
        if (ordered[1:] == ordered[:-1]).any():
            order = np.argsort(keys, kind="stable")
        return order
    packed = keys.astype(np.int64)
    packed -= low
    packed <<= 32
    packed |= np.arange(n, dtype=np.int64)
    packed.sort()
    packed &= 0xFFFFFFFF
    return packed


def partition_codes(table: pa.Table, partition_keys) -> np.ndarray:
    """A dense int64 code per row, equal for rows of the same partition (nulls included)."""
    codes = np.zeros(table.num_rows, dtype=np.int64)
    for name in partition_keys:
        encoded = pc.dictionary_encode(table.column(name).combine_chunks(), null_encoding="encode")
        indices = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        codes = codes * max(len(encoded.dictionary), 1) + indices
    return codes


def group_rows(table: pa.Table, partition_keys, buckets: np.ndarray | None,
               sort_columns: list[str], key_order: np.ndarray | None = None) -> list[Group]:
    """Groups of rows sharing partition and bucket. Within a group, `rows()` are sorted by
    `sort_columns`, rows with equal sort values staying in input order (so the last one
    written is the last one in the group). `key_order`: the rows already in that order (each
    group takes its rows from it, keeping it), so no group sorts."""
    n = table.num_rows
    if n == 0:
        return []
    codes = partition_codes(table, partition_keys) if partition_keys else np.zeros(n, np.int64)
    if buckets is not None:
        codes = codes * (int(buckets.max()) + 1) + buckets
    numeric_keys = None
    if key_order is None:
        order, bounds = _group_order(codes)
        if len(sort_columns) == 1:
            numeric_keys = numeric_keys_of(table.column(sort_columns[0]))
    else:
        within, bounds = _group_order(codes[key_order])
        order = key_order if within is None else key_order[within]
        sort_columns = []
    groups = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        indices = order[lo:hi] if order is not None else None
        first = int(indices[0]) if indices is not None else 0
        values = tuple(table.column(k)[first].as_py() for k in partition_keys)
        bucket = int(buckets[first]) if buckets is not None else 0
        groups.append(Group(values, bucket, table, indices, int(lo), int(hi), list(sort_columns), numeric_keys))
    return groups


def _group_order(codes: np.ndarray):
    """(row order grouping equal codes stably or None if already grouped, group boundaries)."""
    n = len(codes)
    if (codes == codes[0]).all():
        return None, np.array([0, n])
    if codes.max() < (1 << 15):
        order = np.argsort(codes.astype(np.int16), kind="stable")  # radix sort
    else:
        order = np.argsort(codes, kind="stable")
    grouped = codes[order]
    bounds = np.concatenate(([0], np.flatnonzero(grouped[1:] != grouped[:-1]) + 1, [n]))
    return order, bounds


def _sorted_within(table: pa.Table, numeric_keys, indices, lo: int, hi: int,
                   sort_columns: list[str]) -> np.ndarray:
    """Row indices of one group (`indices`, or the range lo..hi) stably sorted by the columns."""
    if indices is None:
        indices = np.arange(lo, hi)
    if numeric_keys is not None:
        return indices[stable_numeric_order(numeric_keys[indices])]
    part = table.select(sort_columns).take(pa.array(indices))
    order = pc.sort_indices(part, sort_keys=[(c, "ascending", "at_start") for c in sort_columns]).to_numpy()
    return indices[order]


def _is_numpy_sortable(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_time(t)
