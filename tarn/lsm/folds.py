"""Per-key folds over rows sorted by key: `Fold`, the rows of each key as one field aggregator
sees them, which the aggregation and partial-update engines both build (Java's partial-update
reuses the aggregation engine's FieldAggregators), and the vectorised kernels the field
functions of tarn.lsm.field_aggs are built from."""

from __future__ import annotations

from dataclasses import dataclass, replace

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


@dataclass(frozen=True)
class Fold:
    """How one field aggregator sees the rows of the keys being merged (sorted by key, each key
    a run of rows in merge order): per key an optional initial row whose value the accumulator
    starts from (aggregation: the -D a key restarts from under remove-record-on-delete;
    partial-update: the base row), then the rows folded in - `agg` rows with agg(acc, v),
    `reversed` rows with Java's aggReversed (partial-update: a row that lost its sequence group)
    and `retract` rows with retract(acc, v); a key's initial row may also be a retract row
    (retracted right after it set the accumulator). Rows in none of these masks never reach the
    aggregator. `seen` marks rows before the initial row that reached it: they only leave
    first_value's "initialised" state behind. The field functions of tarn.lsm.field_aggs take
    a Fold, a column and the field's options and give one value per key."""

    starts: np.ndarray  # first row of each key
    key_of: np.ndarray  # key of each row
    init: np.ndarray  # per key: the initial row, -1 for none (a null accumulator)
    agg: np.ndarray
    reversed: np.ndarray
    retract: np.ndarray
    seen: np.ndarray

    @classmethod
    def of(cls, starts: np.ndarray, key_of: np.ndarray, init: np.ndarray | None = None, *,
           agg: np.ndarray, retract: np.ndarray, reversed: np.ndarray | None = None,
           seen: np.ndarray | None = None) -> Fold:
        none = np.zeros(len(key_of), dtype=bool)
        init = np.full(len(starts), -1) if init is None else init
        return cls(starts, key_of, init, agg, none if reversed is None else reversed, retract,
                   none if seen is None else seen)

    @property
    def keys(self) -> int:
        return len(self.starts)

    @property
    def rows(self) -> int:
        return len(self.key_of)

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(np.append(self.starts, self.rows))

    @property
    def lasts(self) -> np.ndarray:
        return np.append(self.starts[1:], self.rows) - 1

    def init_rows(self) -> np.ndarray:
        """The rows that are their key's initial row."""
        mask = np.zeros(self.rows, dtype=bool)
        mask[self.init[self.init >= 0]] = True
        return mask

    def without_retract(self) -> Fold:
        """The fold of a field with `ignore-retract`: retract rows leave it alone."""
        return replace(self, retract=np.zeros(self.rows, dtype=bool))

    def first(self, mask: np.ndarray, none: int = -1) -> np.ndarray:
        return first_where(mask, self.starts, none)

    def last(self, mask: np.ndarray) -> np.ndarray:
        return last_where(mask, self.starts)

    def any(self, mask: np.ndarray) -> np.ndarray:
        return np.logical_or.reduceat(mask, self.starts)

    def total(self, values: np.ndarray) -> np.ndarray:
        return np.add.reduceat(values, self.starts)

    def after(self, per_key: np.ndarray) -> np.ndarray:
        """Rows after the per-key row `per_key` (-1: every row of the key)."""
        return np.arange(self.rows) > per_key[self.key_of]
