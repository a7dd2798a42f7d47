"""Merging key-value rows: the merge engines as vectorised `pa.Table -> pa.Table` functions.

Key-value tables carry the key columns, `_SEQUENCE_NUMBER`, `_VALUE_KIND` and the value columns.
Write flushes, compaction and merge-on-read all go through `merge_sorted` (a table sorted by
key and sequence) or `merge_table` (sorts first).

Lookup tables (`lookup_merge_applies`) merge as Java's LookupMergeFunction: every level above 0
holds each key's full merged value, so of a key's rows only those at level 0 and the one at its
smallest level above 0 are merged (`merge_lookup_sorted`; rows carry their level in `LEVEL`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.arrays import filter_rows, in_sorted
from tarn.errors import InvalidOption, SchemaMismatch
from tarn.lsm.aggregate import merge_keys as merge_aggregate_keys  # every key, singles too
from tarn.lsm.aggregate import merge_aggregate
from tarn.lsm.first_row import merge_first_row
from tarn.lsm.kv import (  # noqa: F401  (re-exported: the key-value vocabulary)
    DELETE, INSERT, KEY_PREFIX, ROW_KIND_NAMES, SEQUENCE, UPDATE_AFTER, UPDATE_BEFORE, VALUE_KIND,
    MergeSpec, _to_numpy_bool, drop_retracts, is_retract, key_changes,
)
from tarn.lsm.partial_update import DELETE_NOT_ACCEPTED, merge_partial_update, partial_update_rules
from tarn.lsm.policy import needs_lookup
from tarn.meta.schema import TableSchema
from tarn.options import Options, as_options

LEVEL = "__tarn_level"  # the LSM level a row was read from (a merge-time helper column)


def sort_indices(table: pa.Table, spec: MergeSpec) -> pa.Array:
    """Indices ordering rows by key, then user sequence fields, then system sequence.

    Fast path for one numeric key: a stable numpy sort on the key alone (timsort runs through
    the already-sorted runs a merge concatenates), accepted when equal keys come out in
    sequence order, as they do when runs are concatenated oldest first."""
    if len(spec.key_columns) == 1 and spec.plain_order:
        order = _numeric_key_order(table, spec.key_columns[0])
        if order is not None:
            return pa.array(order)
    direction = "descending" if spec.sequence_descending else "ascending"
    keys = [(c, "ascending", "at_start") for c in spec.key_columns]
    keys += [(c, direction, "at_start") for c in spec.sequence_columns]
    if spec.row_kind_flag:
        is_add = pc.or_(pc.equal(table.column(VALUE_KIND), INSERT), pc.equal(table.column(VALUE_KIND), UPDATE_AFTER))
        table = table.append_column(ROW_KIND_FLAG, is_add)
        keys.append((ROW_KIND_FLAG, "ascending", "at_start"))
    keys.append((SEQUENCE, "ascending", "at_start"))
    return pc.sort_indices(table, sort_keys=keys)


ROW_KIND_FLAG = "__tarn_is_add"


def _numeric_key_order(table: pa.Table, key_column: str) -> np.ndarray | None:
    column = table.column(key_column)
    t = column.type
    if not (pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)) or column.null_count:
        return None
    keys = column.to_numpy()
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    ties = sorted_keys[1:] == sorted_keys[:-1]
    if ties.any():
        seq = table.column(SEQUENCE).to_numpy()[order]
        if (seq[1:][ties] < seq[:-1][ties]).any():
            return None
    return order


def merge_sorted(table: pa.Table, spec: MergeSpec) -> pa.Table:
    """Merge a table sorted by `sort_indices`: one row per key, with the row kind the engine
    gives it (retract rows kept: callers drop them where the result is final). With
    `ignore-delete`, retract input rows are dropped before any engine sees them."""
    if spec.ignore_delete:
        table = drop_retracts(table)
    if spec.engine == "deduplicate":
        return _deduplicate(table, spec)
    if spec.engine == "partial-update":
        _refuse_lone_retracts(table, spec)
        return merge_multi_row_keys(table, spec, merge_partial_update)
    if spec.engine == "aggregation":
        return merge_aggregate(table, spec)
    if spec.engine == "first-row":
        return merge_first_row(table, spec)
    raise InvalidOption(f"merge-engine '{spec.engine}' is not one of {list(MERGE_ENGINES)}")


def merge_multi_row_keys(table: pa.Table, spec: MergeSpec, merge) -> pa.Table:
    """Java's ReducerMergeFunctionWrapper: a key with a single row passes through unmerged;
    `merge` sees only the keys with several rows. Output stays key-ordered."""
    if table.num_rows <= 1:
        return table
    sizes = key_sizes(table, spec.key_columns)
    return merge_chosen_keys(table, sizes, sizes > 1, lambda rows: merge(rows, spec))


def key_sizes(table: pa.Table, key_columns) -> np.ndarray:
    """Row count of each key run of a key-sorted table, in key order."""
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    return np.diff(np.concatenate([[-1], np.flatnonzero(key_changes(table, key_columns))])).astype(np.int64)


def key_starts(sizes: np.ndarray) -> np.ndarray:
    """Index of each key run's first row, from the runs' sizes."""
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)


def merge_chosen_keys(table: pa.Table, sizes: np.ndarray, chosen: np.ndarray, merge) -> pa.Table:
    """`merge` (rows -> one row per key) runs on the `chosen` keys' rows; the other keys hold
    one row each and pass through. Output stays key-ordered."""
    if not chosen.any():
        return table
    if chosen.all():
        return merge(table)
    row_chosen = np.repeat(chosen, sizes)
    merged = merge(table.filter(pa.array(row_chosen)))
    singles = table.filter(pa.array(~row_chosen))
    order = np.where(chosen, len(singles) + np.cumsum(chosen) - 1, np.cumsum(~chosen) - 1)
    return pa.concat_tables([singles, merged]).take(pa.array(order))


def _refuse_lone_retracts(table: pa.Table, spec: MergeSpec) -> None:
    """partial-update takes -U/-D rows only with sequence groups or remove-record-on-delete
    (ignore-delete drops them before this); refuse them even when a key has no other row."""
    if table.num_rows == 0 or not pc.any(is_retract(table)).as_py():
        return
    rules = partial_update_rules(spec.fields, spec.key_columns, spec.options)
    if not rules.groups and not rules.remove_record_on_delete:
        raise SchemaMismatch(DELETE_NOT_ACCEPTED)


def check_retracts(table: pa.Table, spec: MergeSpec) -> None:
    """Refuse -U/-D rows the merge engine does not take, before they are written anywhere (a
    postpone writer merges nothing, so it checks as Java's PostponeBucketWriter does)."""
    if spec.ignore_delete:
        return
    if spec.engine == "partial-update":
        _refuse_lone_retracts(table, spec)
    elif spec.engine == "first-row":
        merge_first_row(table.slice(0, 0) if table.num_rows == 0 else table.filter(is_retract(table)), spec)


MERGE_ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")


def _deduplicate(table: pa.Table, spec: MergeSpec) -> pa.Table:
    last_of_key = key_changes(table, spec.key_columns)
    return table if last_of_key.all() else table.filter(last_of_key)


def merge_table(table: pa.Table, spec: MergeSpec) -> pa.Table:
    """Sort an unsorted key-value table and merge it."""
    return merge_sorted(table.take(sort_indices(table, spec)), spec)


# ------------------------------------------------------------------ lookup tables


def lookup_merge_applies(spec: MergeSpec) -> bool:
    """Java wraps the merge function of tables that need lookup (changelog-producer=lookup,
    deletion vectors, force-lookup) in LookupMergeFunction; first-row is never wrapped."""
    if spec.engine == "first-row" or spec.options is None:
        return False
    options = as_options(spec.options)
    return needs_lookup(options)


def high_level_rows(table: pa.Table, sizes: np.ndarray) -> np.ndarray:
    """Java's pickHighLevel over a key-sorted table with a LEVEL column: per key, the row index
    of its first row at its smallest level above 0 (-1: the key has no row above level 0)."""
    n = table.num_rows
    levels = table.column(LEVEL).to_numpy()
    starts = key_starts(sizes)
    above = np.where(levels > 0, levels, np.iinfo(np.int32).max).astype(np.int64)
    lowest = np.repeat(np.minimum.reduceat(above, starts), sizes)
    candidate = np.where((levels > 0) & (above == lowest), np.arange(n), n)
    picked = np.minimum.reduceat(candidate, starts)
    return np.where(picked < n, picked, -1)


def merge_lookup_sorted(table: pa.Table, spec: MergeSpec, every_key: bool = False,
                        inputs_up_to: int | None = None) -> pa.Table:
    """Java's LookupMergeFunction over a table sorted by `sort_indices` with a LEVEL column:
    of each key, its level-0 rows and its high-level row (`high_level_rows`) are merged, rows
    of deeper levels ignored. `every_key=False` wraps it in ReducerMergeFunctionWrapper (a key
    with one row passes through, as on read); `every_key=True` merges every key, single rows
    included (compactions that consume level-0 files). `inputs_up_to`: rows above that level
    were looked up, keys holding only such rows are dropped. Output keeps the LEVEL column."""
    if spec.ignore_delete:
        table = drop_retracts(table)
    if table.num_rows == 0:
        return table
    sizes = key_sizes(table, spec.key_columns)
    if inputs_up_to is not None:
        has_input = np.logical_or.reduceat(table.column(LEVEL).to_numpy() <= inputs_up_to, key_starts(sizes))
        if not has_input.all():
            table = table.filter(pa.array(np.repeat(has_input, sizes)))
            sizes = sizes[has_input]
            if table.num_rows == 0:
                return table
    picked = high_level_rows(table, sizes)
    keep = table.column(LEVEL).to_numpy() <= 0
    keep[picked[picked >= 0]] = True
    chosen = np.ones(len(sizes), dtype=bool) if every_key else sizes > 1
    if not keep.all():
        table = filter_rows(table, keep)
        sizes = np.add.reduceat(keep.astype(np.int64), key_starts(sizes))  # every key keeps a row
    return merge_chosen_keys(table, sizes, chosen, lambda rows: merge_every_key(rows, spec))


def merge_every_key(table: pa.Table, spec: MergeSpec) -> pa.Table:
    """The engine's merge function applied to every key, a key with a single row included
    (no ReducerMergeFunctionWrapper): such a row comes out as the engine makes it (+I kind,
    values through the field aggregators) rather than unchanged."""
    if table.num_rows == 0:
        return table
    if spec.engine == "aggregation":
        return merge_aggregate_keys(table.combine_chunks(), key_sizes(table, spec.key_columns), spec)
    if spec.engine == "partial-update":
        _refuse_lone_retracts(table, spec)
        return merge_partial_update(table, spec)
    return merge_sorted(table, spec)


def newest_wins_applies(spec: MergeSpec) -> bool:
    """Deduplicate on system sequence only: between runs whose sequence ranges do not
    interleave, the newer run's row for a key wins outright."""
    return spec.engine == "deduplicate" and spec.plain_order and not spec.ignore_delete



def keys_in(keys: pa.Table, newer: list[pa.Table]) -> np.ndarray:
    """Boolean mask: does each row of `keys` (sorted, unique) occur in any of the `newer` key
    tables (each sorted, unique)? Sorted numeric keys use binary search; others a hash set or
    a hash join."""
    hit = np.zeros(keys.num_rows, dtype=bool)
    if not newer or keys.num_rows == 0:
        return hit
    if keys.num_columns == 1:
        column = keys.column(0)
        if _numpy_comparable(column.type) and not column.null_count and not any(t.column(0).null_count for t in newer):
            probe = column.to_numpy()
            for other in newer:
                hit |= in_sorted(probe, other.column(0).to_numpy())
            return hit
        value_set = pa.chunked_array([c for t in newer for c in t.column(0).chunks], type=column.type)
        return _to_numpy_bool(pc.is_in(column, value_set=value_set.combine_chunks()))
    left, right = _null_safe(keys, pa.concat_tables(newer).group_by(keys.column_names).aggregate([]))
    names = left.column_names
    indexed = left.append_column("__row", pa.array(np.arange(keys.num_rows)))
    joined = indexed.join(right, keys=names, join_type="left semi", use_threads=True)
    hit[joined.column("__row").to_numpy()] = True
    return hit


def _null_safe(left: pa.Table, right: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Key tables an Arrow join matches null-safely (nullable primary keys: NULL equals NULL):
    a key column holding NULLs becomes an is-null flag and the column with its NULLs filled by a
    value it holds."""
    if not any(left.column(n).null_count or right.column(n).null_count for n in left.column_names):
        return left, right
    out_left, out_right, names = [], [], []
    for i, name in enumerate(left.column_names):
        a, b = left.column(name), right.column(name)
        if a.null_count or b.null_count:
            out_left.append(a.is_null())
            out_right.append(b.is_null())
            names.append(f"__null_{i}")
            valid = pa.chunked_array(a.chunks + b.chunks, a.type).drop_null()
            if len(valid):
                a, b = pc.fill_null(a, valid[0]), pc.fill_null(b, valid[0])
            else:
                continue
        out_left.append(a)
        out_right.append(b)
        names.append(f"__key_{i}")
    return pa.table(out_left, names=names), pa.table(out_right, names=names)


@dataclass
class NewerKeys:
    """The keys of the newer runs seen so far, for a newest-first read: `shadowed(keys)` tells
    which rows of an older run a newer run overrides, `add(keys, shadowed)` takes in that run's
    other keys. A single numeric key is kept as one sorted unique array (one binary search per
    older run, and a linear merge of only the keys it adds); other keys as the runs' key tables."""
    numeric: np.ndarray | None = None
    tables: list = field(default_factory=list)

    def shadowed(self, keys: pa.Table) -> np.ndarray:
        if self.numeric is None:  # nothing yet, or keys kept as tables
            return keys_in(keys, self.tables)
        probe = keys.column(0).to_numpy()
        if len(probe) == 0 or len(self.numeric) == 0 or probe[-1] < self.numeric[0] or probe[0] > self.numeric[-1]:
            return np.zeros(len(probe), dtype=bool)
        return in_sorted(probe, self.numeric)

    def add(self, keys: pa.Table, shadowed: np.ndarray | None = None) -> None:
        if self.tables or not (keys.num_columns == 1 and _numpy_comparable(keys.column(0).type)) \
                or keys.column(0).null_count:
            self.tables.append(keys)  # every run of a table has the same key columns
            return
        fresh = keys.column(0).to_numpy()
        if shadowed is not None and shadowed.any():
            fresh = fresh[~shadowed]
        if self.numeric is None or len(self.numeric) == 0:
            self.numeric = fresh
        elif len(fresh):
            both = np.concatenate([self.numeric, fresh])
            both.sort(kind="stable")  # two sorted runs: a linear merge
            self.numeric = both


def _numpy_comparable(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_time(t)


def merge_spec_of(schema: TableSchema, options: Options) -> MergeSpec:
    """How this table merges rows of one bucket. Engines that compute values column by column
    also treat the partition columns as keys (constant within a bucket, never aggregated)."""
    engine = options.get("merge-engine") or "deduplicate"
    keys = list(schema.trimmed_primary_keys)
    if engine in ("aggregation", "partial-update"):
        keys += [k for k in schema.partition_keys if k not in keys]
    padding = [p.strip().lower() for p in options.list("sequence.auto-padding")]
    return MergeSpec(tuple(keys), engine, _ignore_delete(options), tuple(options.list("sequence.field")),
                     tuple(schema.fields), options,
                     sequence_descending=(options.get("sequence.field.sort-order") or "").lower() == "descending",
                     row_kind_flag="row-kind-flag" in padding)


def _ignore_delete(options: Options) -> bool:
    """`ignore-delete` (Options resolves its older spellings such as first-row.ignore-delete)."""
    return bool(options.bool("ignore-delete"))
