"""The `aggregation` merge engine: each value column of a key folded by its aggregate function.

Paimon's AggregateMergeFunction folds the rows of one key in order, each column through its
field aggregator: `agg(acc, value)` for +I/+U rows and `retract(acc, value)` for -U/-D rows,
starting from a null accumulator. Here this module classifies the rows of all keys at once (a
`tarn.lsm.folds.Fold`) and every column goes through its function in tarn.lsm.field_aggs, the
field aggregators the partial-update engine uses too.

Facts from Java Paimon this module follows:
- a key with a single row is not merged (ReducerMergeFunctionWrapper): the row passes through
  unchanged, kind included; merged rows take the last row's key and sequence number, kind +I;
- columns: primary keys keep the last row's value, `sequence.field` columns use last_value,
  others `fields.<f>.aggregate-function`, else `fields.default-aggregate-function`, else
  last_non_null_value;
- retraction: sum subtracts, product divides, last_value / last_non_null_value clear,
  nested_update removes elements, collect removes equal elements (one per element retracted),
  merge_map removes keys; any other function raises unless `fields.<f>.ignore-retract`, which
  skips the retract rows for that column;
- rbm32 / rbm64 / hll_sketch / theta_sketch hold serialised structures: every merge (a write's
  included) checks each value's header first, so a malformed value fails the write naming the
  column (Java fails later, at the first merge that reads it);
- `aggregation.remove-record-on-delete`: a -D row resets the whole row to the -D row's values
  (later rows aggregate on top of it); if a -D is a key's last row, the merged row is a -D;
- `ignore-delete` drops -U/-D rows before merging (Java does it when writing).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from tarn.errors import InvalidOption, TarnError
from tarn.lsm import kv
from tarn.lsm.field_aggs import (BINARY, LAST_NON_NULL, PRIMARY_KEY, RETRACTABLE, FieldAgg, aggregate,
                                 check_binary_values, check_field, check_name, field_agg)
from tarn.lsm.folds import Fold, last_where
from tarn.options import Options, as_options
from tarn.types import DataField

# ---------------------------------------------------------------------------------------------
# configuration


def function_name(column: str, options: Options, primary_keys, sequence_fields) -> str:
    """The aggregate function of a column, as Paimon picks it."""
    if column in sequence_fields:
        return "last_value"
    if column in primary_keys:
        return PRIMARY_KEY
    name = options.get(f"fields.{column}.aggregate-function") or options.get("fields.default-aggregate-function")
    return (name or LAST_NON_NULL).strip()


def engine_field_agg(f: DataField, options: Options, primary_keys, sequence_fields) -> FieldAgg:
    return field_agg(f, options, function_name(f.name, options, primary_keys, sequence_fields))


def validate_aggregation(fields, primary_keys, options, table_name: str) -> None:
    """Reject unknown aggregate functions and functions that do not fit their column's type."""
    options = as_options(options)
    sequence_fields = options.list("sequence.field")
    default = options.get("fields.default-aggregate-function")
    if default is not None:
        check_name(default.strip(), "fields.default-aggregate-function", table_name)
    remove_on_delete = options.bool("aggregation.remove-record-on-delete")
    for f in fields:
        key = f"fields.{f.name}.aggregate-function"
        explicit = options.get(key)
        if explicit is not None:
            check_name(explicit.strip(), key, table_name)
            if f.name in sequence_fields:
                raise InvalidOption(f"table {table_name}: option '{key}': sequence field '{f.name}' "
                                    "cannot have an aggregate function")
        agg = engine_field_agg(f, options, primary_keys, sequence_fields)
        check_field(agg, key if explicit is not None else "fields.default-aggregate-function", table_name)
        if agg.ignore_retract and remove_on_delete:
            raise InvalidOption(f"table {table_name}: 'aggregation.remove-record-on-delete' and "
                                f"'fields.{f.name}.ignore-retract' cannot both be enabled")


# ---------------------------------------------------------------------------------------------
# merging


def merge_aggregate(table: pa.Table, spec) -> pa.Table:
    """Merge a key-value table sorted by key (then sequence): one row per key, key-ordered,
    every value column aggregated by its function."""
    if spec.ignore_delete:
        table = kv.drop_retracts(table)
    _check_binary(table, spec)
    if table.num_rows <= 1:
        return table
    last_of_key = kv.key_changes(table, spec.key_columns)
    sizes = np.diff(np.concatenate([[-1], np.flatnonzero(last_of_key)]))
    multi = sizes > 1
    if not multi.any():
        return table
    row_in_multi = np.repeat(multi, sizes)
    if multi.all():
        return merge_keys(table, sizes, spec)
    merged = merge_keys(table.filter(pa.array(row_in_multi)), sizes[multi], spec)
    singles = table.filter(pa.array(~row_in_multi))
    order = np.where(multi, len(singles) + np.cumsum(multi) - 1, np.cumsum(~multi) - 1)
    return pa.concat_tables([singles, merged]).take(pa.array(order))


def _check_binary(table: pa.Table, spec) -> None:
    """Every value of a bitmap or sketch column must look like one (each merge - a write's
    included - checks all its rows, so a malformed value fails the write that brings it)."""
    if table.num_rows == 0 or spec.options is None:
        return
    options = as_options(spec.options)
    for f in spec.fields:
        if f.name in spec.key_columns or f.name not in table.column_names:
            continue
        agg = engine_field_agg(f, options, spec.key_columns, spec.sequence_columns)
        if agg.function in BINARY:
            check_binary_values(table.column(f.name), agg)


def merge_keys(rows: pa.Table, sizes: np.ndarray, spec) -> pa.Table:
    """Aggregate every key of key-sorted `rows` (`sizes` rows each), single-row keys included."""
    options = as_options(spec.options)
    remove_on_delete = bool(options.bool("aggregation.remove-record-on-delete"))
    aggs = {f.name: engine_field_agg(f, options, spec.key_columns, spec.sequence_columns) for f in spec.fields}
    _reject_retractions(rows, aggs, remove_on_delete)
    rows = rows.combine_chunks()
    fold, merged_kind = _fold(rows, sizes, remove_on_delete)
    lasts = pa.array(fold.lasts)
    columns = []
    for name, column in zip(rows.column_names, rows.columns):
        column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        if name == kv.VALUE_KIND:
            columns.append(pa.array(merged_kind).cast(column.type))
        elif name in aggs and name not in spec.key_columns:
            columns.append(aggregate(column, fold, aggs[name]))
        else:
            columns.append(column.take(lasts))
    return pa.Table.from_arrays(columns, schema=rows.schema)


def _fold(rows: pa.Table, sizes: np.ndarray, remove_on_delete: bool) -> tuple[Fold, np.ndarray]:
    """How the field aggregators see the key runs of `rows`, and the kind of each merged row.

    +I/+U rows are added, -U rows (and -D rows without remove-record-on-delete) retracted.
    Under remove-record-on-delete each -D restarts the row from its own values: only a key's
    last -D (its initial row) and what follows it count; the rows added before it are `seen`
    (first_value keeps their state)."""
    lasts = np.cumsum(sizes) - 1
    starts = lasts - sizes + 1
    key_of = np.repeat(np.arange(len(sizes)), sizes)
    kinds = rows.column(kv.VALUE_KIND).to_numpy()
    add = (kinds == kv.INSERT) | (kinds == kv.UPDATE_AFTER)
    merged_kind = np.full(len(sizes), kv.INSERT, dtype=np.int8)
    if not remove_on_delete:
        return Fold.of(starts, key_of, agg=add, retract=~add), merged_kind
    is_delete = kinds == kv.DELETE
    merged_kind[is_delete[lasts]] = kv.DELETE
    init = last_where(is_delete, starts)
    after = np.arange(len(kinds)) > init[key_of]
    fold = Fold.of(starts, key_of, init, agg=add & after, retract=(kinds == kv.UPDATE_BEFORE) & after,
                   seen=add & ~after)
    return fold, merged_kind


def _reject_retractions(rows: pa.Table, aggs: Mapping[str, FieldAgg], remove_on_delete: bool) -> None:
    """Java raises when a function without retraction meets a -U (or -D) row."""
    kinds = rows.column(kv.VALUE_KIND).to_numpy()
    retracting = kinds == kv.UPDATE_BEFORE
    if not remove_on_delete:
        retracting |= kinds == kv.DELETE
    if not retracting.any():
        return
    for agg in aggs.values():
        if agg.function not in RETRACTABLE and not agg.ignore_retract:
            raise TarnError(f"column '{agg.name}': aggregate function '{agg.function}' cannot retract -U/-D "
                            f"rows; set 'fields.{agg.name}.ignore-retract'='true' to skip them")
