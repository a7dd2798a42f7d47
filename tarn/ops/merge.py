"""MERGE INTO on one machine (`Table.merge`), vectorised: Arrow joins, masks and takes.

The source rows are joined to the table's rows on the `on` columns (SQL equality: NULL keys
match nothing). Each joined row is one of: matched (a table row and a source row), not matched
(a source row only) or not matched by source (a table row only). In that order of precedence:

- `when_matched_delete` (True or a condition) deletes matched rows it selects;
- `when_matched_update` ("*": every column from the source; or {column: value}) updates the
  other matched rows (`matched_update_if`: only those its condition selects);
- `when_not_matched_insert` ("*" or {column: value}; others NULL) inserts source-only rows
  (`not_matched_insert_if`: a condition on them);
- `when_not_matched_by_source_delete` (True or a condition) deletes table rows no source row
  matched (this reads the whole table).

Conditions are the filter language over `source.<column>` and `target.<column>` (SQL-like
text such as "source.op = 'D'", a tarn predicate, or a pyarrow Expression); values are
literals (converted with the column's type, as `update` does) or pyarrow Expressions over
`pc.field("source.x")` / `pc.field("target.x")`. A key may occur once in the source. Source
columns the table lacks (a CDC `op`) are usable in conditions and values; "*" leaves them out.

Without `when_not_matched_by_source_delete` only the table rows whose keys the source holds
are read (an IN filter on each key column: partitions, buckets and files pruned).

Primary-key tables: one commit of +U rows (updates), +I rows (inserts) and -D rows (deletes);
key and partition columns cannot be set. Append tables: the files holding matched rows are
rewritten (copy-on-write) and the inserted rows added, in one OVERWRITE snapshot; on append
tables with deletion vectors the old versions are marked in deletion vectors and the updated
and inserted rows appended, in one APPEND snapshot (as Java's append tables commit them).
Row-tracking tables use `upsert`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.arrays import repeat, without_hidden_nulls
from tarn import features
from tarn.data.reader import FileReader
from tarn.errors import InvalidArgument, SchemaMismatch
from tarn.meta.schema import TableSchema
from tarn.ops import delete as deletes
from tarn.ops.update import check_settable, check_unambiguous, literal_array
from tarn.scan.filters import scan_filter
from tarn.scan.predicate import In, IsNull, to_arrow
from tarn.types import DataField, arrow_schema, from_arrow_type
from tarn.write.conform import conform, to_arrow_table
from tarn.commit.abort import aborting

if TYPE_CHECKING:
    from tarn.core import TableCore

SOURCE, TARGET = "source.", "target."
_IN_TARGET, _IN_SOURCE = "__tarn_in_target", "__tarn_in_source"
_TARGET_ROW = "__tarn_target_row"
MAX_KEY_FILTER = 100_000  # distinct keys per column the target read is filtered by


@dataclass(frozen=True)
class Actions:
    matched_delete: object = None
    matched_update: object = None
    matched_update_if: object = None
    insert: object = None
    insert_if: object = None
    by_source_delete: object = None


def merge(table: "TableCore", source, on, actions: Actions, null_safe: bool = False):
    """See the module docstring; returns the snapshot (None: nothing changed). `null_safe`:
    keys compare as SQL's `<=>` (NULL matches NULL) and a source key may repeat as long as it
    matches no table row (Spark's rule; Paimon's upsert-key writes merge so)."""
    schema = table.schema()
    features.check_write(table.name, schema)
    if schema.shape.tracks_rows:
        raise InvalidArgument(f"table {table.name}: merge on a row-tracking table: use table.upsert(data, on=...) "
                              "(updates write only the changed columns) and delete(filter=...)")
    keys = _keys(on, schema, table.name)
    rows = to_arrow_table(source, table.name)
    _check_source(rows, keys, schema, table.name, actions, unique=not null_safe)
    target = _target_rows(table, schema, rows, keys, actions.by_source_delete is not None, null_safe)
    joined = _join(target, rows, keys, schema, null_safe)
    fields = _joined_fields(schema, rows)
    in_target = joined.column(_IN_TARGET).is_valid().to_numpy(zero_copy_only=False)
    in_source = joined.column(_IN_SOURCE).is_valid().to_numpy(zero_copy_only=False)
    matched = in_target & in_source
    if null_safe:
        _check_matched_once(joined, matched, table.name, keys)
    deleted = matched & _mask(joined, actions.matched_delete, fields, table.name)
    updated = matched & ~deleted & (actions.matched_update is not None) \
        & _mask(joined, actions.matched_update_if, fields, table.name, default=True)
    inserted = in_source & ~in_target & (actions.insert is not None) \
        & _mask(joined, actions.insert_if, fields, table.name, default=True)
    gone = in_target & ~in_source & _mask(joined, actions.by_source_delete, fields, table.name)
    counts = {"rows_matched": int(matched.sum()), "rows_updated": int(updated.sum()),
              "rows_inserted": int(inserted.sum()), "rows_deleted": int((deleted | gone).sum())}
    table.counted.update(counts)
    new_rows = _assigned(joined, updated, actions.matched_update, schema, rows, table.name, keep_target=True)
    added = _assigned(joined, inserted, actions.insert, schema, rows, table.name, keep_target=False)
    removed = _target_side(joined, deleted | gone, schema)
    if not (new_rows.num_rows or added.num_rows or removed.num_rows):
        return None
    if schema.primary_keys:
        return _commit_upserts(table, schema, new_rows, added, removed)
    return _commit_append(table, schema, joined, updated, deleted | gone, new_rows, added, keys)


# ---------------------------------------------------------------------------------------------
# arguments


def _keys(on, schema: TableSchema, table_name: str) -> list[str]:
    keys = [on] if isinstance(on, str) else list(on or schema.primary_keys)
    if not keys:
        raise InvalidArgument(f"table {table_name}: merge needs on=[columns] (the table has no primary key)")
    unknown = [k for k in keys if k not in schema.field_names]
    if unknown:
        raise SchemaMismatch(f"table {table_name}: merge on unknown column(s) {unknown} (columns: {schema.field_names})")
    return keys


def _check_source(rows: pa.Table, keys: list[str], schema: TableSchema, table_name: str, actions: Actions,
                  unique: bool = True) -> None:
    missing = [k for k in keys if k not in rows.column_names]
    if missing:
        raise SchemaMismatch(f"table {table_name}: the merge source lacks the key column(s) {missing}")
    for action, what in ((actions.matched_update, "when_matched_update"), (actions.insert, "when_not_matched_insert")):
        if action == "*":
            absent = [n for n in schema.field_names if n not in rows.column_names]
            if absent:
                raise SchemaMismatch(f"table {table_name}: {what}='*' needs every column in the source; it lacks "
                                     f"{absent} (name the columns to set in a dict)")
        elif action is not None and not isinstance(action, dict):
            raise InvalidArgument(f"table {table_name}: {what} takes '*' or {{column: value}}, got {action!r}")
        elif isinstance(action, dict):
            for name, value in action.items():
                check_unambiguous(value, name, table_name)
    if isinstance(actions.matched_update, dict):
        check_settable(actions.matched_update, schema, table_name)
    elif actions.matched_update == "*":
        settable = {n: None for n in schema.field_names if n not in schema.primary_keys
                    and n not in schema.partition_keys}
        if settable:
            check_settable(settable, schema, table_name)
    key_table = rows.select(keys)
    if unique and key_table.num_rows and key_table.group_by(keys).aggregate([]).num_rows != key_table.num_rows:
        raise InvalidArgument(f"table {table_name}: the merge source holds a key {keys} more than once; each "
                              "table row may match one source row")


# ---------------------------------------------------------------------------------------------
# reading and joining


def _target_rows(table: "TableCore", schema: TableSchema, rows: pa.Table, keys: list[str],
                 whole: bool, null_safe: bool = False) -> pa.Table:
    """The table rows the merge can touch: those whose keys the source holds (IN filters on
    each key column prune partitions, buckets and files; `null_safe`: or NULL where the source
    has a NULL key), or every row."""
    predicate = None
    if not whole:
        for key in keys:
            values = pc.unique(rows.column(key).drop_null())
            if len(values) > MAX_KEY_FILTER:
                predicate = None
                break
            term = In(key, tuple(values.to_pylist()))
            if null_safe and rows.column(key).null_count:
                term = term | IsNull(key)
            predicate = term if predicate is None else predicate & term
        if predicate is None and rows.num_rows == 0:
            return arrow_schema(list(schema.fields)).empty_table()
    return table.scan_latest(filter=predicate).to_arrow()


def _join(target: pa.Table, source: pa.Table, keys: list[str], schema: TableSchema,
          null_safe: bool = False) -> pa.Table:
    """Target and source rows side by side (full outer join on `keys`): target columns as
    `target.<name>` and `_IN_TARGET`, then source columns as `source.<name>` and `_IN_SOURCE`
    (True, or null where the side has no row). Arrow joins only the keys and row numbers; the
    columns are taken by those numbers (its join carries no nested non-key columns)."""
    left_row, right_row = _TARGET_ROW, "__tarn_source_row"
    left, right = join_keys(target, source, keys, null_safe)
    names = list(left.column_names)
    left = left.append_column(left_row, pa.array(np.arange(target.num_rows, dtype=np.int64)))
    right = right.append_column(right_row, pa.array(np.arange(source.num_rows, dtype=np.int64)))
    pairs = left.join(right, names, names, join_type="full outer", left_suffix=".t", right_suffix=".s",
                      coalesce_keys=False)
    columns, names = [], []
    for side, prefix, rows, flag in ((target, TARGET, pairs.column(left_row), _IN_TARGET),
                                     (source, SOURCE, pairs.column(right_row), _IN_SOURCE)):
        for name in side.column_names:
            columns.append(side.column(name).take(rows))
            names.append(prefix + name)
        columns.append(pc.if_else(pc.is_valid(rows), True, pa.scalar(None, pa.bool_())))
        names.append(flag)
    return pa.table(columns + [pairs.column(left_row)], names=names + [_TARGET_ROW])


def join_keys(left: pa.Table, right: pa.Table, keys: list[str], null_safe: bool) -> tuple[pa.Table, pa.Table]:
    """The columns two tables are joined on for `keys` (right's cast to left's types). Arrow's
    join never matches NULL keys; `null_safe` adds per key an is-null column and fills NULLs
    with one value the column holds, so NULL matches NULL and nothing else (SQL's `<=>`)."""
    left_columns, right_columns, names = [], [], []
    for i, key in enumerate(keys):
        a, b = left.column(key), right.column(key).cast(left.column(key).type)
        if null_safe:
            valid = pa.chunked_array(a.chunks + b.chunks, a.type).drop_null()
            left_columns.append(a.is_null())
            right_columns.append(b.is_null())
            names.append(f"__tarn_null_{i}")
            if not len(valid):
                continue
            a, b = pc.fill_null(a, valid[0]), pc.fill_null(b, valid[0])
        left_columns.append(a)
        right_columns.append(b)
        names.append(f"__tarn_key_{i}")
    return pa.table(left_columns, names=names), pa.table(right_columns, names=names)


def _check_matched_once(joined: pa.Table, matched: np.ndarray, table_name: str, keys: list[str]) -> None:
    """Spark's MERGE rule: one table row may be matched by one source row only."""
    rows = joined.column(_TARGET_ROW).filter(pa.array(matched))
    if len(rows) != len(pc.unique(rows)):
        raise InvalidArgument(f"table {table_name}: a table row matches more than one source row on {keys}; "
                              "each table row may be updated by one source row (deduplicate the source, or set "
                              "'sequence.field' so the latest row per key wins)")


def _joined_fields(schema: TableSchema, source: pa.Table) -> list[DataField]:
    """The joined row's fields for conditions: `target.<column>`, then `source.<column>` (a
    source column the table lacks, such as a CDC `op`, typed from its Arrow type)."""
    fields = [DataField(i, TARGET + f.name, replace(f.type, nullable=True)) for i, f in enumerate(schema.fields)]
    base = len(fields)
    for i, name in enumerate(source.column_names):
        if name in schema.field_names:
            kind = schema.field(name).type
        else:
            kind = from_arrow_type(source.schema.field(name).type, True, name)
        fields.append(DataField(base + i, SOURCE + name, replace(kind, nullable=True)))
    return fields


def _mask(joined: pa.Table, condition, fields: list[DataField], table_name: str, default: bool = False) -> np.ndarray:
    """Rows a condition selects (True: all; None: `default`); a NULL condition is false."""
    if condition is None or condition is True or condition is False:
        value = default if condition is None else condition
        return np.full(joined.num_rows, value, dtype=bool)
    found = scan_filter(condition, fields, table_name)
    parts = ([to_arrow(found.predicate)] if found.predicate is not None else []) + \
        ([found.row_filter] if found.row_filter is not None else [])
    expression = parts[0] if len(parts) == 1 else parts[0] & parts[1]
    import pyarrow.dataset as ds  # imports pandas when installed: only where used

    result = ds.dataset(joined).to_table(columns={"m": expression}).column("m")
    return pc.fill_null(result, False).to_numpy(zero_copy_only=False)


# ---------------------------------------------------------------------------------------------
# new values


def _assigned(joined: pa.Table, chosen: np.ndarray, action, schema: TableSchema, source: pa.Table,
              table_name: str, keep_target: bool) -> pa.Table:
    """The table's columns for the `chosen` joined rows: updated (starting from the target row)
    or inserted (starting from NULLs), with the action's values."""
    shape = arrow_schema(list(schema.fields))
    if not chosen.any():
        return shape.empty_table()
    rows = joined.filter(pa.array(chosen))
    assignments = ({n: pc.field(SOURCE + n) for n in source.column_names if n in schema.field_names}
                   if action == "*" else dict(action))
    columns = {}
    for f, arrow_field in zip(schema.fields, shape):
        value = assignments.get(f.name)
        if f.name not in assignments:
            column = rows.column(TARGET + f.name) if keep_target else pa.nulls(rows.num_rows, arrow_field.type)
        elif isinstance(value, pc.Expression):
            import pyarrow.dataset as ds  # imports pandas when installed: only where used

            column = ds.dataset(rows).to_table(columns={"v": value}).column("v")
        else:
            literal = literal_array(value, f, table_name)
            column = repeat(literal[0], rows.num_rows)
        columns[f.name] = without_hidden_nulls(column).cast(arrow_field.type)
    return conform(pa.table(columns), list(schema.fields), table_name, schema.primary_keys)


def _target_side(joined: pa.Table, chosen: np.ndarray, schema: TableSchema) -> pa.Table:
    rows = joined.filter(pa.array(chosen))
    shape = arrow_schema(list(schema.fields))
    return pa.table({f.name: without_hidden_nulls(rows.column(TARGET + f.name)).cast(f.type) for f in shape},
                    schema=shape)


# ---------------------------------------------------------------------------------------------
# committing


def _commit_upserts(table: "TableCore", schema: TableSchema, updated: pa.Table, inserted: pa.Table,
                    removed: pa.Table):
    kinds = ["+U"] * updated.num_rows + ["+I"] * inserted.num_rows + ["-D"] * removed.num_rows
    rows = pa.concat_tables([updated, inserted, removed.cast(updated.schema)])
    writer = table.new_writer()
    with aborting(table.file_io, table.root, writer.schema, writer.messages):
        writer.write(rows, row_kind=pa.array(kinds))
        messages = writer.prepare_commit()
    return table.commit(messages)


def _commit_append(table: "TableCore", schema: TableSchema, joined: pa.Table, updated: np.ndarray,
                   removed: np.ndarray, new_rows: pa.Table, added: pa.Table, keys: list[str]):
    """Copy-on-write of the files holding changed rows (rewritten without them), plus the
    updated and inserted rows, in one commit. Updated rows are written anew rather than in
    place: an append table may hold a key twice, and each copy gets its own new version."""
    options = schema.shape.options
    changed = joined.filter(pa.array(updated | removed))
    changed_keys = changed.select([TARGET + k for k in keys]).rename_columns(keys)
    scan = table.scan_latest(filter=_key_filter(changed_keys, keys)) if changed.num_rows else None
    messages = []
    reader = FileReader(table.file_io, schema, table.schema_by_id, options)
    total = schema.shape.fixed_buckets
    exact = _exact_keys(changed_keys, keys) if scan is not None else None
    if scan is not None and schema.shape.deletion_vectors:
        fields = [schema.field(k) for k in keys]
        marks = deletes.vector_messages(table, scan.plan(), reader, fields, exact, total)
        messages += [replace(m, vectors_with_data=True) for m in marks]  # one snapshot with the new rows
        if new_rows.num_rows:  # updated rows: the old versions marked above, the new ones appended
            added = pa.concat_tables([new_rows, added]) if added.num_rows else new_rows
    elif scan is not None:  # the files holding changed rows rewritten without them; new versions appended
        def change(rows: pa.Table, _matched) -> pa.Table:
            return rows.filter(pa.array(_positions_of(rows, changed_keys, keys) < 0))
        messages += deletes.rewrite_messages(table, scan.plan(), reader, exact, total, change)
        if new_rows.num_rows:
            added = pa.concat_tables([new_rows, added]) if added.num_rows else new_rows
    with aborting(table.file_io, table.root, schema, messages):
        if added.num_rows:
            writer = table.new_writer()
            writer.write(added)
            messages += writer.prepare_commit()
    return table.commit(messages) if messages else None


def _key_filter(key_rows: pa.Table, keys: list[str]):
    predicate = None
    for key in keys:
        column = key_rows.column(key)
        term = In(key, tuple(pc.unique(column.drop_null()).to_pylist()))
        if column.null_count:
            term = term | IsNull(key)
        predicate = term if predicate is None else predicate & term
    return predicate


def _positions_of(rows: pa.Table, key_rows: pa.Table, keys: list[str]) -> np.ndarray:
    """For each row of `rows`: the index of its key in `key_rows`, -1 when absent."""
    left, right = join_keys(rows, key_rows, keys, null_safe=True)
    names = list(left.column_names)
    left = left.append_column("__pos", pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    right = right.append_column("__hit", pa.array(np.arange(key_rows.num_rows, dtype=np.int64)))
    first = right.group_by(names).aggregate([("__hit", "min")])  # a key once, where it first occurs
    right = first.select([*names, "__hit_min"]).rename_columns([*names, "__hit"])
    found = left.join(right, names, join_type="left outer").sort_by("__pos")
    return pc.fill_null(found.column("__hit"), -1).to_numpy(zero_copy_only=False)


def _exact_keys(key_rows: pa.Table, keys: list[str]) -> pc.Expression:
    """An Arrow expression true exactly on rows whose key is one of `key_rows` (several key
    columns compared as one joined text, so no other combination of their values matches; a
    NULL key value matches NULL: the rows came from a join that matched them)."""
    if len(keys) == 1:
        return pc.field(keys[0]).isin(pc.unique(key_rows.column(keys[0])))
    spell = dict(null_handling="replace", null_replacement="\x00")
    joined = pc.binary_join_element_wise(*[pc.cast(key_rows.column(k), pa.string()) for k in keys], "\x1f",
                                         **spell)
    expression = pc.binary_join_element_wise(*[pc.field(k).cast(pa.string()) for k in keys], "\x1f", **spell)
    return expression.isin(pc.unique(joined))


__all__ = ["Actions", "merge"]
