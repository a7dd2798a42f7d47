"""Updates and deletes of row-tracking tables (Paimon 1.3), which keep every row's `_ROW_ID`.

- Data-evolution tables (`data-evolution.enabled`): an update writes, for each row-id group
  holding a changed row, one file of only the updated columns covering the group's whole range
  (unchanged rows copied, so positions line up), `_FIRST_ROW_ID` the group's; readers take each
  column from the newest file holding it. No row is rewritten. `update_columns` takes the rows'
  `_ROW_ID`s and new values; `update(set=, filter=)` finds them with a scan. Deletes need
  `deletion-vectors.enabled` (Paimon's rule): the group's anchor file's vector marks the rows.
  The commit checks that each group is still one file range and that no commit since the plan
  wrote the same rows' columns (tarn/commit/row_id_conflicts.py); on such a conflict the whole
  update is planned again, up to `write.data-evolution.update-conflict-retry.max-attempts`.
- Row-tracking tables without data evolution: copy-on-write as for other append tables, the
  rewritten files storing `_ROW_ID` and `_SEQUENCE_NUMBER` columns (updated rows get a null
  sequence number, which the commit turns into its snapshot id), as Java's Spark writes them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from tarn import features
from tarn.commit.abort import aborting
from tarn.data.layout import STORED_ROW_TRACKING_FIELDS
from tarn.data.reader import FileReader
from tarn.data.writer import FileWriter
from tarn.errors import CommitConflict, InvalidArgument, SchemaMismatch
from tarn.meta.row_ranges import ROW_ID, anchor_of, row_range
from tarn.meta.schema import TableSchema
from tarn.scan.planner import planner_for
from tarn.scan.stitch import read_group
from tarn.types import arrow_schema
from tarn.write.conform import to_arrow_table
from tarn.write.message import CommitMessage

if TYPE_CHECKING:
    from tarn.core import TableCore
    from tarn.meta.snapshot import Snapshot


# ---------------------------------------------------------------------------------------------
# data evolution: files of some columns


def update_columns(table: "TableCore", data) -> "Snapshot | None":
    """Set columns of the rows `data` names by `_ROW_ID` (its other columns: the new values),
    writing only those columns; one commit. None when `data` has no rows."""
    schema = table.schema()
    features.check_write(table.name, schema)
    _require_evolution(table.name, schema, "update_columns")
    rows = to_arrow_table(data, table.name)
    ids, values = _checked_input(table.name, schema, rows)
    if not len(ids):
        return None
    return with_retries(table, lambda snapshot: _column_messages(table, schema, snapshot, ids, values))


def update_where(table: "TableCore", parsed, filter) -> "Snapshot | None":
    """`Table.update` on a data-evolution table: the matched rows' new values of the set
    columns, written as files of those columns (`parsed`: tarn.ops.update.Assignments)."""
    schema = table.schema()
    set_only = replace(parsed, fields=tuple(f for f in parsed.fields
                                            if f.name in parsed.literals or f.name in parsed.expressions))
    # literals need only the matched rows' ids; expressions read the row
    columns = [*schema.field_names, ROW_ID] if parsed.expressions else [ROW_ID]

    def plan(snapshot):
        matched = table.scan_snapshot(snapshot, filter=filter, columns=columns, schema=schema).to_arrow()
        if not matched.num_rows:
            return []
        new = set_only.apply(matched)
        return _column_messages(table, schema, snapshot, matched.column(ROW_ID).to_numpy(), new)

    return with_retries(table, plan)


def with_retries(table: "TableCore", plan) -> "Snapshot | None":
    """Plan on the latest snapshot, commit; a row-id conflict plans again (Paimon's retry of a
    data-evolution UPDATE), up to `write.data-evolution.update-conflict-retry.max-attempts`."""
    options = table.schema().shape.options
    attempts = max(1, options.int("write.data-evolution.update-conflict-retry.max-attempts") or 1)
    wait = (options.int("write.data-evolution.update-conflict-retry.wait-ms") or 0) / 1000
    for attempt in range(attempts):
        snapshot = table.latest_snapshot()
        messages: list[CommitMessage] = []
        with aborting(table.file_io, table.root, table.schema(), messages):
            messages.extend(plan(snapshot))
        if not messages:
            return None
        try:
            return table.commit(messages, row_ids_read_at=snapshot.id if snapshot is not None else 0)
        except CommitConflict:
            if attempt == attempts - 1:
                raise
            time.sleep(wait * (attempt + 1))
    return None


def _checked_input(table_name: str, schema: TableSchema, rows: pa.Table) -> tuple[np.ndarray, pa.Table]:
    if ROW_ID not in rows.column_names:
        raise SchemaMismatch(f"table {table_name}: update_columns needs a '{ROW_ID}' column naming the rows")
    names = [n for n in rows.column_names if n != ROW_ID]
    _check_set_columns(table_name, schema, names, "update_columns")
    ids = rows.column(ROW_ID)
    if ids.null_count:
        raise InvalidArgument(f"table {table_name}: update_columns: '{ROW_ID}' holds nulls")
    try:
        ids = ids.cast(pa.int64()).to_numpy()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise InvalidArgument(f"table {table_name}: update_columns: '{ROW_ID}' must be integers: {e}") from None
    if len(np.unique(ids)) != len(ids):
        raise InvalidArgument(f"table {table_name}: update_columns: '{ROW_ID}' names a row more than once")
    fields = [schema.field(n) for n in names]
    try:
        values = rows.select(names).cast(arrow_schema(fields))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise SchemaMismatch(f"table {table_name}: update_columns: values do not fit the columns: "
                             f"{str(e).splitlines()[0]}") from None
    for f in fields:
        if not f.type.nullable and values.column(f.name).null_count:
            raise SchemaMismatch(f"table {table_name}: update_columns sets NOT NULL column '{f.name}' to null")
    return ids, values


def _check_set_columns(table_name: str, schema: TableSchema, names: list[str], what: str) -> None:
    """Columns an update or upsert sets: at least one, known, no partition column."""
    if not names:
        raise InvalidArgument(f"table {table_name}: {what} needs at least one column to set")
    unknown = [n for n in names if n not in schema.field_names]
    if unknown:
        raise SchemaMismatch(f"table {table_name}: {what} sets unknown column(s) {unknown} (columns: "
                             f"{schema.field_names})")
    partition = [n for n in names if n in schema.partition_keys]
    if partition:
        raise InvalidArgument(f"table {table_name}: {what} cannot set partition column(s) {partition}")


def _require_evolution(table_name: str, schema: TableSchema, what: str) -> None:
    if not schema.shape.evolves:
        raise InvalidArgument(f"table {table_name}: {what} needs a data-evolution table ('row-tracking.enabled' "
                              "and 'data-evolution.enabled' set when it was created)")


@dataclass
class RowGroups:
    """The row-id groups of a snapshot (one split each, in row-id order) and their ranges."""

    splits: list
    starts: np.ndarray
    ends: np.ndarray  # exclusive

    @classmethod
    def of(cls, table: "TableCore", schema: TableSchema, snapshot) -> "RowGroups":
        splits = [s for s in planner_for(table, schema).plan(snapshot) if row_range(s.files[0]) is not None]
        splits.sort(key=lambda s: s.files[0].first_row_id)
        starts = np.array([s.files[0].first_row_id for s in splits], dtype=np.int64)
        ends = starts + np.array([s.files[0].row_count for s in splits], dtype=np.int64)
        return cls(splits, starts, ends)

    def locate(self, ids: np.ndarray, table_name: str) -> np.ndarray:
        return locate(self.starts, self.ends, ids, table_name)


def locate(starts: np.ndarray, ends: np.ndarray, ids: np.ndarray, table_name: str) -> np.ndarray:
    """The group of each row id (groups: sorted `starts`, exclusive `ends`); InvalidArgument
    for ids in no group."""
    group = np.searchsorted(starts, ids, side="right") - 1
    inside = (group >= 0) & (ids < ends[np.maximum(group, 0)]) if len(starts) else np.zeros(len(ids), bool)
    if not inside.all():
        outside = ids[~inside][:5].tolist()
        raise InvalidArgument(f"table {table_name}: row id(s) {outside} are in no data file's range (the "
                              f"table's row ids: {_ranges_text(starts, ends)})")
    return group


def _column_messages(table: "TableCore", schema: TableSchema, snapshot, ids: np.ndarray,
                     values: pa.Table) -> list[CommitMessage]:
    """One file of `values`' columns per row-id group holding some of `ids`."""
    groups = RowGroups.of(table, schema, snapshot)
    group = groups.locate(ids, table.name)
    order = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.diff(group[order])) + 1
    messages = []
    for chosen in np.split(order, bounds):
        index = group[chosen[0]]
        messages.append(column_file(table, schema, groups.splits[index], int(groups.starts[index]), ids[chosen],
                                    values.take(pa.array(chosen))))
    return messages


def column_file(table: "TableCore", schema: TableSchema, split, start: int, ids: np.ndarray,
                values: pa.Table, overrides: dict | None = None) -> CommitMessage:
    """The file of one row-id group (`split`, first row id `start`) holding `values`' columns:
    the rows `ids` set to `values`, every other row of the range as it is. `overrides`:
    options for the new file (a Spark job's file-name prefix)."""
    options = schema.shape.options_with(overrides)
    positions = ids - start
    _refuse_deleted(table, split, positions, ids)
    reader = FileReader(table.file_io, schema, table.schema_by_id, options)
    fields = [schema.field(n) for n in values.column_names]
    current = read_group(reader, split.bucket_path, split.files, fields, table.name, keep_deleted=True)
    merged = _placed(current, positions, values)
    writer = FileWriter(table.file_io, split.bucket_path, schema, options, columns=values.column_names)
    meta = writer.write_one(merged)
    return CommitMessage(split.partition, split.bucket, -1, new_files=[replace(meta, first_row_id=start)])


# ---------------------------------------------------------------------------------------------
# upserts keyed on business columns


def upsert(table: "TableCore", data, on, columns: list[str] | None = None) -> "Snapshot | None":
    """Data-evolution tables: rows of `data` whose `on` columns match rows of the table set
    those rows' `columns` (default: every column of `data` but `on`), as files of those columns;
    the other rows are appended (they get new row ids); one commit. A key found in several table
    rows updates each; a key given several times in `data` keeps its last row (pypaimon's
    upsert_by_arrow_with_key)."""
    schema = table.schema()
    features.check_write(table.name, schema)
    _require_evolution(table.name, schema, "upsert")
    rows = to_arrow_table(data, table.name)
    keys = [on] if isinstance(on, str) else list(on or ())
    _check_upsert(table.name, schema, rows, keys)
    columns = [n for n in rows.column_names if n not in keys] if columns is None else list(columns)
    _check_set_columns(table.name, schema, columns, "upsert")
    rows = _last_per_key(rows, keys)
    try:
        full = rows.select(schema.field_names).cast(arrow_schema(schema.fields))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise SchemaMismatch(f"table {table.name}: upsert: rows do not fit the columns: "
                             f"{str(e).splitlines()[0]}") from None

    def plan(snapshot):
        target = table.scan_snapshot(snapshot, columns=[*keys, ROW_ID], schema=schema).to_arrow()
        source = full.select(keys).append_column("__tarn_source", pa.array(np.arange(full.num_rows)))
        pairs = source.join(target, keys, join_type="inner")
        messages = []
        if pairs.num_rows:
            index = pairs.column("__tarn_source").to_numpy()
            ids = pairs.column(ROW_ID).to_numpy()
            values = full.select(columns).take(pa.array(index))
            messages += _column_messages(table, schema, snapshot, ids, values)
        fresh = np.setdiff1d(np.arange(full.num_rows), pairs.column("__tarn_source").to_numpy())
        if len(fresh):
            writer = table.new_writer()
            with aborting(table.file_io, table.root, schema, writer.messages):
                writer.write(full.take(pa.array(fresh)))
                messages += writer.prepare_commit()
        return messages

    return with_retries(table, plan)


def _check_upsert(table_name: str, schema: TableSchema, rows: pa.Table, keys: list[str]) -> None:
    if not keys:
        raise InvalidArgument(f"table {table_name}: upsert needs on=[column, ...] naming the columns that match rows")
    missing = [n for n in schema.field_names if n not in rows.column_names]
    if missing:
        raise SchemaMismatch(f"table {table_name}: upsert needs whole rows; the data lacks column(s) {missing}")
    unknown = [k for k in keys if k not in schema.field_names]
    if unknown:
        raise SchemaMismatch(f"table {table_name}: upsert on unknown column(s) {unknown}")


def _last_per_key(rows: pa.Table, keys: list[str]) -> pa.Table:
    """One row per key: the last one given."""
    numbered = rows.select(keys).append_column("__tarn_at", pa.array(np.arange(rows.num_rows)))
    last = numbered.group_by(keys, use_threads=False).aggregate([("__tarn_at", "max")])
    kept = np.sort(last.column("__tarn_at_max").to_numpy())
    return rows if len(kept) == rows.num_rows else rows.take(pa.array(kept))


def _refuse_deleted(table, split, positions: np.ndarray, ids: np.ndarray) -> None:
    if not split.deletion_files:
        return
    from tarn.store.deletion_vectors import DeletionVectorFiles
    anchor = anchor_of(split.files)
    held = split.deletion_files.get(anchor.file_name)
    if held is None:
        return
    deleted = DeletionVectorFiles(table.file_io, table.root, table.schema()).read_one(held, anchor.file_name)
    gone = np.isin(positions, deleted)
    if gone.any():
        raise InvalidArgument(f"table {table.name}: row id(s) {ids[gone][:5].tolist()} were deleted; nothing "
                              "was updated")


def _placed(current: pa.Table, positions: np.ndarray, new: pa.Table) -> pa.Table:
    """`current` with rows at `positions` replaced by `new`'s rows (one take, vectorised)."""
    n = current.num_rows
    order = np.arange(n, dtype=np.int64)
    order[positions] = n + np.arange(len(positions), dtype=np.int64)
    both = pa.concat_tables([current, new.select(current.column_names).cast(current.schema)])
    return both.take(pa.array(order))


def _ranges_text(starts: np.ndarray, ends: np.ndarray) -> str:
    if not len(starts):
        return "none, the table is empty"
    return f"{int(starts.min())}..{int(ends.max()) - 1}"


def check_delete(table_name: str, schema: TableSchema) -> None:
    """A delete on a data-evolution table marks rows in deletion vectors (Paimon's rule)."""
    if schema.shape.evolves and not schema.shape.deletion_vectors:
        raise InvalidArgument(f"table {table_name}: delete on a data-evolution table needs "
                              "'deletion-vectors.enabled' = 'true' (rewriting rows would change their row ids; "
                              "Paimon refuses it too)")


# ---------------------------------------------------------------------------------------------
# row tracking without data evolution: copy-on-write keeping row ids


def stored_id_rows(reader: FileReader, split, meta, table_name: str, schema: TableSchema) -> pa.Table:
    """A file's live rows with their `_ROW_ID` and `_SEQUENCE_NUMBER` (nullable: an update nulls it)."""
    return read_group(reader, split.bucket_path, [meta], [*schema.fields, *STORED_ROW_TRACKING_FIELDS], table_name)
