"""A vectorised k-way merge of sorted runs with bounded memory.

Each run is an iterator of key-sorted Arrow tables (a sorted run read file by file, batch by
batch). The merge keeps one buffered chunk per run. Each step takes the smallest "last key"
among the buffers as a bound: every row with a key <= bound, in every run, is already
buffered (runs are sorted), so those rows can be merged now — concatenated, sorted and passed
through the merge engine in one vectorised call — and emitted. Memory is a few chunks per run,
whatever the runs' sizes; the output is key-ordered.
"""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

Chunks = Iterator[pa.Table]


def merge_streams(runs: list[Chunks], key_columns: list[str],
                  merge: Callable[[pa.Table], pa.Table]) -> Iterator[pa.Table]:
    """Yield merged, key-ordered tables. `merge` gets the rows of a key range from all runs
    (unsorted across runs) and returns them merged (it sorts)."""
    sources = [_Source(run, key_columns) for run in runs]
    sources = [s for s in sources if s.buffer is not None]
    while sources:
        bound_source = min(sources, key=lambda s: s.last_key)
        bound = bound_source.last_key
        parts = [s.take_through(bound) for s in sources]
        parts = [p for p in parts if p is not None and p.num_rows]
        if parts:
            merged = merge(pa.concat_tables(parts, promote_options="permissive") if len(parts) > 1 else parts[0])
            if merged is not None and merged.num_rows:
                yield merged
        sources = [s for s in sources if s.buffer is not None]


class _Source:
    """One run: its current buffered chunk (key-sorted) and the key of its last row."""

    def __init__(self, chunks: Chunks, key_columns: list[str]):
        self.chunks = iter(chunks)
        self.key_columns = key_columns
        self.buffer: pa.Table | None = None
        self.last_key: tuple = ()
        self._refill()

    def _refill(self) -> None:
        for chunk in self.chunks:
            if chunk.num_rows:
                self.buffer = chunk
                self.last_key = row_key(chunk, chunk.num_rows - 1, self.key_columns)
                return
        self.buffer = None

    def take_through(self, bound: tuple) -> pa.Table | None:
        """Remove and return the buffered rows with key <= bound (a prefix of the buffer)."""
        if self.buffer is None:
            return None
        if self.last_key <= bound:
            taken = self.buffer
            self._refill()
            return taken
        count = count_at_most(self.buffer, self.key_columns, bound)
        taken = self.buffer.slice(0, count)
        self.buffer = self.buffer.slice(count)
        return taken


def row_key(table: pa.Table, index: int, key_columns: list[str]) -> tuple:
    return tuple(_orderable(table.column(c)[index].as_py()) for c in key_columns)


def _orderable(value):
    return (value is not None, value)


def count_at_most(table: pa.Table, key_columns: list[str], bound: tuple) -> int:
    """How many leading rows of a key-sorted table have key <= bound (vectorised)."""
    at_most = None  # rows whose key prefix so far is strictly less, or equal throughout
    equal_so_far = None
    for name, (present, value) in zip(key_columns, bound):
        column = table.column(name)
        if not present:  # bound component is NULL: only NULLs are <=, and they are equal
            less = pa.repeat(False, len(column))
            equal = pc.is_null(column)
        else:
            less = pc.or_kleene(pc.is_null(column), pc.less(column, pa.scalar(value, column.type)))
            equal = pc.fill_null(pc.equal(column, pa.scalar(value, column.type)), False)
        less = pc.fill_null(less, False)
        if equal_so_far is None:
            at_most, equal_so_far = less, equal
        else:
            at_most = pc.or_(at_most, pc.and_(equal_so_far, less))
            equal_so_far = pc.and_(equal_so_far, equal)
    mask = pc.or_(at_most, equal_so_far)
    return int(np.count_nonzero(_to_numpy(mask)))


def _to_numpy(array) -> np.ndarray:
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    return array.to_numpy(zero_copy_only=False)
