"""Merging key-value rows: the merge engines as vectorised `pa.Table -> pa.Table` functions.

Key-value tables carry the key columns, `_SEQUENCE_NUMBER`, `_VALUE_KIND` and the value columns.
Write flushes, compaction and merge-on-read all go through `merge_sorted` (one sorted table) or
`merge_runs` (several sorted runs of one bucket).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SEQUENCE = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
KEY_PREFIX = "_KEY_"

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
ROW_KIND_NAMES = {"+I": INSERT, "-U": UPDATE_BEFORE, "+U": UPDATE_AFTER, "-D": DELETE}


@dataclass(frozen=True)
class MergeSpec:
    """What a merge needs to know: the key columns and the engine with its options."""

    key_columns: tuple[str, ...]
    engine: str = "deduplicate"
    ignore_delete: bool = False
    sequence_columns: tuple[str, ...] = ()


def sort_indices(table: pa.Table, spec: MergeSpec) -> pa.Array:
    """Indices ordering rows by key, then user sequence fields, then system sequence."""
    keys = [(c, "ascending") for c in spec.key_columns]
    keys += [(c, "ascending") for c in spec.sequence_columns]
    keys.append((SEQUENCE, "ascending"))
    return pc.sort_indices(table, sort_keys=keys, null_placement="at_start")


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
    return table.filter(pc.invert(is_retract(table)))


def merge_sorted(table: pa.Table, spec: MergeSpec) -> pa.Table:
    """Merge a table sorted by `sort_indices`: one row per key (retract rows kept)."""
    if spec.engine != "deduplicate":
        raise NotImplementedError(f"merge-engine '{spec.engine}' is not supported yet")
    if spec.ignore_delete:
        table = drop_retracts(table)
    return table.filter(key_changes(table, spec.key_columns))


def merge_table(table: pa.Table, spec: MergeSpec) -> pa.Table:
    """Sort an unsorted key-value table and merge it."""
    return merge_sorted(table.take(sort_indices(table, spec)), spec)


def merge_runs(runs: list[pa.Table], spec: MergeSpec, disjoint_sequences: bool) -> pa.Table:
    """Merge sorted runs (each with unique keys) of one bucket; the output is not key-ordered.

    When the runs' sequence ranges do not interleave and the engine is deduplicate with system
    sequence only, the newest run wins outright: older runs just drop the keys newer runs hold
    (a hash anti-join, no sort). Otherwise all runs are sorted and merged together.
    """
    runs = [r for r in runs if r.num_rows]
    if not runs:
        return None
    if len(runs) == 1:
        return drop_retracts(_ignore(runs[0], spec))
    if spec.engine == "deduplicate" and not spec.sequence_columns and disjoint_sequences:
        return drop_retracts(_newest_wins(runs, spec))
    merged = merge_table(pa.concat_tables(runs, promote_options="permissive"), spec)
    return drop_retracts(merged)


def _ignore(table: pa.Table, spec: MergeSpec) -> pa.Table:
    return drop_retracts(table) if spec.ignore_delete else table


def _newest_wins(runs: list[pa.Table], spec: MergeSpec) -> pa.Table:
    """Runs ordered by sequence, oldest first; keep each key from the newest run that has it."""
    runs = [_ignore(r, spec) for r in runs]
    kept = [runs[-1]]
    newer_keys = [runs[-1].select(list(spec.key_columns))]
    for run in reversed(runs[:-1]):
        seen = pa.concat_tables(newer_keys)
        kept.append(_anti_join(run, seen, spec.key_columns))
        newer_keys.append(run.select(list(spec.key_columns)))
    return pa.concat_tables(kept)


def _anti_join(run: pa.Table, seen: pa.Table, key_columns) -> pa.Table:
    if len(key_columns) == 1:
        name = key_columns[0]
        hit = pc.is_in(run.column(name), value_set=seen.column(name).combine_chunks())
        return run.filter(pc.invert(hit))
    joined = run.join(seen, keys=list(key_columns), join_type="left anti", use_threads=True)
    return joined.select(run.column_names)
