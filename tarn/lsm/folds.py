"""Per-key folds over rows sorted by key: the vectorised primitives the field aggregators of
the aggregation and partial-update engines are built from (Java's partial-update reuses the
aggregation engine's FieldAggregators; here both engines share these kernels, and each decides
which rows of a key feed them)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def take_rows(column, rows: np.ndarray) -> pa.Array:
    """`column[rows]`, null where a row is -1."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column.take(pa.array(rows, type=pa.int64(), mask=rows < 0))


def first_where(mask: np.ndarray, starts: np.ndarray, none: int) -> np.ndarray:
    """Per key (keys start at `starts`): the first row where `mask` holds, else `none`."""
    n = len(mask)
    first = np.minimum.reduceat(np.where(mask, np.arange(n), n), starts)
    return np.where(first == n, none, first)


def last_where(mask: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per key: the last row where `mask` holds, else -1."""
    return np.maximum.reduceat(np.where(mask, np.arange(len(mask)), -1), starts)


def hash_fold(values: pa.Array, include: np.ndarray | None, key_of_row: np.ndarray, keys: int,
              how: str) -> pa.Array:
    """Arrow's hash aggregate `how` (sum, min, max, all, any) of the included (None: all)
    non-null values, one value per key in key order; null for a key without any."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if include is not None:
        key_of_row, values = key_of_row[include], values.filter(pa.array(include))
    found = pa.table({"key": key_of_row, "v": values})
    options = pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)
    found = found.group_by("key", use_threads=False).aggregate([("v", how, options)])
    at = np.full(keys, -1)
    at[found.column("key").to_numpy()] = np.arange(found.num_rows)
    return take_rows(found.column(f"v_{how}"), at)
