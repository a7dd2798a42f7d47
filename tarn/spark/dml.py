"""DELETE, UPDATE and MERGE INTO on Spark, as helpers: Spark SQL's `DELETE FROM`, `UPDATE` and
`MERGE INTO` need a DSv2 table that supports row-level operations, which a Python data source
cannot declare, so Spark refuses them on "tarn" before tarn sees them.

Both run the same way: Spark reads the table at one snapshot and computes the changed rows
(each with its row kind: '+I' inserted, '+U' updated, '-D' deleted), shuffles them so that
every (partition, bucket) reaches one task (`by_bucket`; dynamic buckets assigned on
executors, where a known key keeps its bucket), the tasks write them as tarn does, and the
driver commits every task's files in one snapshot; if the job fails, their files are deleted.
Only primary-key tables take row kinds; `delete` on an append table runs `Table.delete` on the
driver (its condition must then be SQL-like text tarn parses: copy-on-write or deletion vectors).
"""

from __future__ import annotations

import time
import pickle
from dataclasses import dataclass
from functools import partial

import pyarrow as pa

import tarn
from tarn.spark.ref import check_storage, for_tasks, open_table, table_location
from tarn.ops.update import literal_array
from tarn.errors import InvalidArgument, InvalidFilter, SchemaMismatch
from tarn.meta.snapshot import Snapshot
from tarn.spark.batch_write import collect_messages, given_buckets, job_prefixes, new_job_token
from tarn.spark.dataframe import by_bucket
from tarn.meta.row_ranges import ROW_ID
from tarn.spark.row_updates import commit_column_updates
from tarn.spark.session import register
from tarn.spark.types import spark_schema
from tarn.ops.update import check_settable
from tarn.commit.abort import abort, aborting

KIND_COLUMN = "__tarn_row_kind"
SOURCE, TARGET = "source", "target"  # the aliases merge_into's expressions use
_MATCHED = "__tarn_matched"
_FROM_SOURCE = "__tarn_from_source"
_UPDATABLE_ENGINES = ("deduplicate", "partial-update")


def delete(spark, path: str, condition, storage_options: dict | None = None):
    """Delete the rows of the table at `path` matching `condition` (a Spark SQL string such as
    "dt = '2026-11-20' and amount < 0", or a Column), in one commit; None if nothing matched.

    Primary-key tables: Spark reads the latest snapshot, keeps the matching rows and writes
    them as -D rows, one task per bucket, committed once on the driver. Append tables: the
    condition must be a string tarn's filter parser reads, and `Table.delete(filter=...)` runs
    on the driver (deletion vectors, or a copy-on-write rewrite of the files holding matches)."""
    started = time.perf_counter()
    register(spark)
    storage_options = for_tasks(storage_options)
    path = table_location(path, storage_options)
    table = open_table(path, storage_options)
    if not table.primary_keys:
        return _delete_append(table, condition)
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return None
    rows = _read(spark, path, snapshot, storage_options).filter(_column(condition))
    from pyspark.sql import functions as F
    return commit_rows(spark, table, rows.withColumn(KIND_COLUMN, F.lit("-D")), storage_options, "delete", started)


def _delete_append(table: tarn.Table, condition):
    if not isinstance(condition, str):
        raise InvalidArgument(f"table {table.name}: tarn.spark.delete on an append table takes the condition "
                              "as SQL-like text tarn parses (the files are rewritten on the driver by "
                              "Table.delete), not a Column")
    try:
        return table.delete(filter=condition)
    except InvalidFilter as e:
        raise InvalidFilter(f"{e} (tarn.spark.delete on an append table reads the condition with tarn's "
                            "filter parser: comparisons, IN, BETWEEN, LIKE, IS NULL, AND/OR/NOT)") from None


def update(spark, path: str, set: dict, condition=None, storage_options: dict | None = None):
    """UPDATE the primary-key table at `path`: on every row matching `condition` (a Spark SQL
    string or a Column; None: every row) set the columns of `set` ({column: value or Column}:
    a value, strings included, is converted with the column's type as `Table.update` does; a
    Column such as F.expr("amount * 2") is evaluated over the row's current values; a string
    quoted like a SQL literal ("'paid'") is refused as ambiguous), in one commit; None if
    nothing matched. Spark reads the latest snapshot, computes the new rows and writes them as an
    upsert, one task per bucket. Key and partition columns cannot be set, as in
    `Table.update`; append tables are refused (use `Table.update`, a copy-on-write rewrite)."""
    from pyspark.sql import functions as F

    started = time.perf_counter()
    register(spark)
    storage_options = for_tasks(storage_options)
    path = table_location(path, storage_options)
    table = open_table(path, storage_options)
    evolving = table.schema().shape.evolves
    if not table.primary_keys and not evolving:
        raise InvalidArgument(f"table {table.name}: tarn.spark.update needs a primary-key or data-evolution "
                              "table; update an append table with Table.update (a copy-on-write rewrite on the "
                              "driver)")
    if not isinstance(set, dict) or not set:
        raise InvalidArgument(f"table {table.name}: update needs set={{column: expression, ...}}, got {set!r}")
    check_settable(set, table.schema(), table.name)
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return None
    rows = _read(spark, path, snapshot, storage_options, row_ids=evolving)
    if condition is not None:
        rows = rows.filter(_column(condition))
    fields = {f.name: f for f in table.schema().fields}
    new = {name: _set_value(value, fields[name], table.name).cast(spark_schema([fields[name]])[0].dataType)
           for name, value in set.items()}
    if evolving:  # files of the set columns per row-id group (tarn/spark/row_updates.py)
        changed = rows.select(F.col(ROW_ID), *[column.alias(name) for name, column in new.items()])
        return table.recorded("update", lambda: commit_column_updates(spark, table, snapshot, changed,
                                                                      storage=storage_options), started=started)
    rows = rows.withColumns(new).withColumn(KIND_COLUMN, F.lit("+U"))
    return commit_rows(spark, table, rows, storage_options, "update", started)


def merge_into(spark, path: str, source, on=None, when_matched_update=None, when_matched_delete=None,
               when_not_matched_insert="*", storage_options: dict | None = None, *, matched_update_if=None,
               not_matched_insert_if=None, when_not_matched_by_source_delete=None):
    """MERGE INTO the primary-key table at `path` from the DataFrame `source`, in one commit
    (None: no row changed).

    `on`: the key columns that match a source row with a table row; they must be the table's
    primary key (the default), so each source row matches at most one row. A key may appear
    only once in `source` (InvalidArgument otherwise, as Spark's MERGE refuses it).
    `when_matched_delete`: True, or a condition (SQL string or Column over `source.<col>` and
    `target.<col>`): matched rows it selects are deleted. `when_matched_update`: for the other
    matched rows, "*" (every column from the source row) or {column: SQL string or Column} over
    `source.<col>` and `target.<col>` (columns not named keep the table's value); None leaves
    them (`matched_update_if`: only the rows this condition selects). `when_not_matched_insert`:
    "*" (the source row, default), {column: expression over `source.<col>`} (others NULL), or
    None to insert nothing (`not_matched_insert_if`: a condition on those source rows).
    `when_not_matched_by_source_delete`: True or a condition over `target.<col>`: table rows no
    source row matched are deleted (the whole table is read). The source may hold columns the
    table lacks (a CDC `op`): conditions and expressions use them, "*" leaves them out. The
    options are `Table.merge`'s, and the result counts the same rows.

    The table is read at its latest snapshot; the changed rows are written as an upsert plus -D
    rows (merge engines deduplicate and partial-update), so a row another writer changes
    meanwhile takes the merge's value (last writer wins)."""
    started = time.perf_counter()
    register(spark)
    storage_options = for_tasks(storage_options)
    path = table_location(path, storage_options)
    table = open_table(path, storage_options)
    schema = table.schema()
    if not table.primary_keys and schema.shape.evolves:
        return _merge_evolving(spark, table, path, source, on, when_matched_update, when_matched_delete,
                               when_not_matched_insert, storage_options)
    keys = _merge_keys(table, on, source)
    _check_merge_engine(table, when_matched_update, when_matched_delete)
    _check_insert(table, when_not_matched_insert)
    _check_unique(source, keys, table.name)
    snapshot = table.latest_snapshot()
    whole = when_not_matched_by_source_delete is not None  # rows no source row matches are read too
    target = (_read(spark, path, snapshot, storage_options,
                    filter_text=None if whole else _keys_filter(source, keys, schema))
              if snapshot is not None else spark.createDataFrame([], spark_schema(list(schema.fields))))
    actions = _Actions(when_matched_update, when_matched_delete, when_not_matched_insert, matched_update_if,
                       not_matched_insert_if, when_not_matched_by_source_delete)
    return commit_rows(spark, table, _merged_rows(source, target, table, keys, actions), storage_options, "merge",
                       started)


def _merge_evolving(spark, table: tarn.Table, path: str, source, on, update, delete_when, insert,
                    storage_options):
    """merge_into on a data-evolution table, matched on the business columns `on`: matched rows
    get files of the columns the update sets (a key matching several rows updates each), the
    others are appended; one commit."""
    from pyspark.sql import functions as F

    if delete_when is not None:
        raise InvalidArgument(f"table {table.name}: merge_into on a data-evolution table does not delete matched "
                              "rows; use tarn.spark.delete (deletion vectors) for them")
    keys = [on] if isinstance(on, str) else list(on or ())
    if not keys:
        raise InvalidArgument(f"table {table.name}: merge_into on a table without a primary key needs on=[column, "
                              "...], the columns matching source rows to table rows")
    schema = table.schema()
    missing = [k for k in keys if k not in source.columns or k not in schema.field_names]
    if missing:
        raise SchemaMismatch(f"table {table.name}: merge_into on=[...] column(s) {missing} are not in both the "
                             f"source ({source.columns}) and the table ({schema.field_names})")
    _check_unique(source, keys, table.name)
    snapshot = table.latest_snapshot()
    fields = {f.name: f for f in schema.fields}
    changed = inserted = None
    if snapshot is not None and update is not None:
        target = _read(spark, path, snapshot, storage_options, row_ids=True)
        joined = source.alias(SOURCE).join(target.alias(TARGET),
                                           [F.col(f"{SOURCE}.{k}") == F.col(f"{TARGET}.{k}") for k in keys], "inner")
        names = [n for n in schema.field_names if n not in keys] if update == "*" else list(update)
        check_settable({n: None for n in names}, schema, table.name)
        changed = joined.select(F.col(f"{TARGET}.{ROW_ID}").alias(ROW_ID), *[
            _value(update, n, source, table.name, keep=F.col(f"{TARGET}.{n}"))
            .cast(spark_schema([fields[n]])[0].dataType).alias(n) for n in names])
    if insert is not None:
        fresh = source
        if snapshot is not None:
            target_keys = _read(spark, path, snapshot, storage_options).select(*keys).distinct()
            fresh = source.join(target_keys, keys, "left_anti")
        inserted = fresh.alias(SOURCE).select(*[
            _value(insert, n, source, table.name, keep=F.lit(None)).cast(spark_schema([fields[n]])[0].dataType)
            .alias(n) for n in schema.field_names])
    if changed is None:
        if inserted is None:
            return None
        changed = spark.createDataFrame([], spark_schema([]).add(ROW_ID, "long"))
    return table.recorded("merge", lambda: commit_column_updates(spark, table, snapshot, changed, inserted,
                                                                 storage_options))


@dataclass(frozen=True)
class _Actions:
    update: object
    delete: object
    insert: object
    update_if: object = None
    insert_if: object = None
    by_source_delete: object = None


def _merged_rows(source, target, table: tarn.Table, keys: list[str], actions: _Actions):
    """The rows a merge changes, the table's columns plus KIND_COLUMN ('+U', '+I', '-D')."""
    from pyspark.sql import functions as F

    target = target.withColumn(_MATCHED, F.lit(True))
    source = source.withColumn(_FROM_SOURCE, F.lit(True))
    how = "full" if actions.by_source_delete is not None else "left"
    joined = source.alias(SOURCE).join(target.alias(TARGET),
                                       [F.col(f"{SOURCE}.{k}") == F.col(f"{TARGET}.{k}") for k in keys], how)
    in_target = F.col(f"{TARGET}.{_MATCHED}").isNotNull()
    in_source = F.col(f"{SOURCE}.{_FROM_SOURCE}").isNotNull()
    matched = in_target & in_source
    deleted = matched & F.coalesce(_condition(actions.delete), F.lit(False))
    update_if = F.lit(True) if actions.update_if is None else F.coalesce(_condition(actions.update_if), F.lit(False))
    updated = matched & ~deleted & update_if if actions.update is not None else F.lit(False)
    insert_if = F.lit(True) if actions.insert_if is None else F.coalesce(_condition(actions.insert_if), F.lit(False))
    inserted = in_source & ~in_target & insert_if if actions.insert is not None else F.lit(False)
    gone = (in_target & ~in_source & F.coalesce(_condition(actions.by_source_delete), F.lit(False))
            if actions.by_source_delete is not None else F.lit(False))
    kind = (F.when(deleted, F.lit("-D")).when(updated, F.lit("+U")).when(inserted, F.lit("+I"))
            .when(gone, F.lit("-D")))
    columns = []
    for f in table.schema().fields:
        column = F.col(f"{TARGET}.{f.name}")
        if actions.update is not None:
            new = _value(actions.update, f.name, source, table.name, keep=column)
            column = F.when(updated, new).otherwise(column)
        if actions.insert is not None:
            new = _value(actions.insert, f.name, source, table.name, keep=F.lit(None))
            column = F.when(inserted, new).otherwise(column)
        columns.append(column.cast(spark_schema([f])[0].dataType).alias(f.name))
    return joined.select(*columns, kind.alias(KIND_COLUMN)).filter(F.col(KIND_COLUMN).isNotNull())


PRUNE_KEYS = 100_000  # a source with at most this many keys prunes the target read by them


def _keys_filter(source, keys: list[str], schema) -> str | None:
    """tarn filter text holding the source's keys (`k IN (...)` per key column), so the
    target read skips partitions, buckets and files without them; None for a large source or
    key types the text cannot spell."""
    if any(schema.field(k).type.root not in _SPELLED for k in keys):
        return None
    rows = source.select(*keys).distinct().limit(PRUNE_KEYS + 1).collect()
    if len(rows) > PRUNE_KEYS:
        return None
    terms = []
    for i, key in enumerate(keys):
        values = sorted({row[i] for row in rows if row[i] is not None}, key=str)
        if not values:
            return f"{_quoted_name(key)} IS NULL AND {_quoted_name(key)} IS NOT NULL"  # nothing can match
        terms.append(f"{_quoted_name(key)} IN ({', '.join(_spelled(v) for v in values)})")
    return " AND ".join(terms)


_SPELLED = {"TINYINT", "SMALLINT", "INT", "BIGINT", "CHAR", "VARCHAR", "DATE", "BOOLEAN"}


def _quoted_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _spelled(value) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def _merge_keys(table: tarn.Table, on, source) -> list[str]:
    keys = list(table.primary_keys)
    if not keys:
        raise InvalidArgument(f"table {table.name}: merge_into needs a primary-key table (rows are matched by "
                              "key and written as upserts); append to an append table with df.write instead")
    given = [on] if isinstance(on, str) else list(on) if on is not None else keys
    if sorted(given) != sorted(keys):
        raise InvalidArgument(f"table {table.name}: merge_into matches rows on the primary key {keys}, "
                              f"got on={given}")
    missing = [k for k in keys if k not in source.columns]
    if missing:
        raise SchemaMismatch(f"table {table.name}: the merge_into source lacks the key column(s) {missing} "
                             f"(source columns: {source.columns})")
    return keys


def _check_insert(table: tarn.Table, insert) -> None:
    if isinstance(insert, dict):
        missing = [k for k in table.primary_keys if k not in insert]
        if missing:
            raise InvalidArgument(f"table {table.name}: when_not_matched_insert must set the primary key "
                                  f"column(s) {missing}")


def _check_merge_engine(table: tarn.Table, update, delete_when) -> None:
    engine = table.schema().shape.options.get("merge-engine") or "deduplicate"
    if engine not in _UPDATABLE_ENGINES and (update is not None or delete_when is not None):
        raise InvalidArgument(f"table {table.name}: merge_into updates or deletes only with merge-engine "
                              f"{list(_UPDATABLE_ENGINES)}, the table has '{engine}' (a written-back row would "
                              "be merged with itself)")


def _check_unique(source, keys: list[str], table_name: str) -> None:
    from pyspark.sql import functions as F

    twice = source.groupBy(*keys).count().filter(F.col("count") > 1).limit(1).collect()
    if twice:
        key = {k: twice[0][k] for k in keys}
        raise InvalidArgument(f"table {table_name}: merge_into source holds key {key} {twice[0]['count']} "
                              "times; a key may match one source row only")


def _value(action, name: str, source, table_name: str, keep):
    """The new value of column `name` for an update or insert action."""
    from pyspark.sql import functions as F

    if action == "*":
        if name not in source.columns:
            raise SchemaMismatch(f"table {table_name}: merge_into with '*' needs column '{name}' in the source "
                                 f"(source columns: {source.columns})")
        return F.col(f"{SOURCE}.{name}")
    if not isinstance(action, dict):
        raise InvalidArgument(f"table {table_name}: merge_into actions are '*' or {{column: expression}}, "
                              f"got {action!r}")
    return _column(action[name]) if name in action else keep


def _condition(condition):
    from pyspark.sql import functions as F

    if condition is None or condition is False:
        return F.lit(False)
    if condition is True:
        return F.lit(True)
    return _column(condition)


def _set_value(value, field, table_name: str):
    """An update's value: a Column (F.expr("amount * 2") for SQL) as it is; anything else,
    strings included, a literal converted with the column's type as `Table.update` does."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if isinstance(value, Column):
        return value
    return F.lit(literal_array(value, field, table_name)[0].as_py())


def _column(expression):
    """A Column from a Column or a Spark SQL expression string."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if isinstance(expression, Column):
        return expression
    if isinstance(expression, str):
        return F.expr(expression)
    return F.lit(expression)


def _read(spark, path: str, snapshot: Snapshot, storage_options: dict | None, row_ids: bool = False,
          filter_text: str | None = None):
    reader = spark.read.format("tarn").option("scan.snapshot-id", str(snapshot.id))
    if filter_text:  # tarn prunes partitions, buckets and files by it (no pushdown needed)
        reader = reader.option("filter", filter_text)
    if row_ids:  # every column and `_ROW_ID` (a row-tracking table)
        names = open_table(path, storage_options).schema_by_id(snapshot.schema_id).field_names
        reader = reader.option("columns", ",".join([*names, ROW_ID]))
    for key, value in check_storage(storage_options).items():
        reader = reader.option(key, value)
    return reader.load(path)


# ---------------------------------------------------------------------------------------------
# rows with row kinds, written by one task per bucket, committed once


def commit_rows(spark, table: tarn.Table, rows, storage_options: dict | None = None, operation: str = "write",
                started: float | None = None):
    """Write `rows` (the table's columns plus KIND_COLUMN) to the primary-key `table` in one
    commit: one task per (partition, bucket), the messages committed on the driver; every file
    of the job is deleted if it fails. Returns the `CommitResult` of `operation`; None if there
    were no rows."""
    started = time.perf_counter() if started is None else started
    schema = table.schema()
    if schema.shape.cross_partition:
        raise InvalidArgument(f"table {table.name} is a cross-partition upsert table (primary key without every "
                              "partition key): tarn.spark.delete, update and merge_into do not place its keys; "
                              "use Table.delete / Table.update on the driver")
    kinds = {}
    if operation == "merge":  # Table.merge's counts: the rows of each kind (computed once, kept)
        rows = rows.persist()
        kinds = {r[KIND_COLUMN]: r["count"] for r in rows.groupBy(KIND_COLUMN).count().collect()}
    try:
        return _commit_kinds(spark, table, rows, storage_options, operation, started, kinds)
    finally:
        if operation == "merge":
            rows.unpersist()


def _commit_kinds(spark, table: tarn.Table, rows, storage_options, operation: str, started: float, kinds: dict):
    shuffled = by_bucket(rows, table.location, storage_options)
    token = new_job_token()
    task = partial(_write_task, table.location, storage_options, token)
    messages = collect_messages(table, token, shuffled, task)
    if not any(m.new_files for m in messages):
        abort(table.file_io, table.root, table.schema(), messages)
        return None
    written = [f for m in messages for f in m.new_files]
    counted = {"rows_written": sum(f.row_count for f in written)}
    if operation == "delete":
        counted["rows_deleted"] = sum(f.delete_row_count or 0 for f in written)
    elif operation == "update":
        counted["rows_updated"] = counted["rows_written"]
    elif kinds:
        counted.update(rows_inserted=kinds.get("+I", 0), rows_updated=kinds.get("+U", 0),
                       rows_deleted=kinds.get("-D", 0))
    return table.recorded(operation, lambda: table.commit(messages), started=started, counted=counted)


def _write_task(path: str, storage: dict | None, token: str, batches):
    from tarn.spark.batch_write import BUCKET_COLUMN

    table = open_table(path, storage)
    assigned: dict = {}
    writer = table.new_writer(options=job_prefixes(table.schema().options, token),
                              index_snapshot=lambda: assigned.get("snapshot"))
    with aborting(table.file_io, table.root, writer.schema, writer.messages):
        for batch in batches:
            if not batch.num_rows:
                continue
            data = pa.Table.from_batches([batch])
            kinds = data.column(KIND_COLUMN).combine_chunks()
            data = data.drop_columns([KIND_COLUMN])
            buckets = None
            if BUCKET_COLUMN in data.column_names:
                data, buckets = given_buckets(data, assigned)
                if buckets is None:  # routed to this task as an assigner (as WritePlan.write_task)
                    writer.assign_as(*assigned["route"])
            writer.write(data, row_kind=kinds, buckets=buckets)
        messages = writer.prepare_commit()
    yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(messages)], pa.binary())], names=["messages"])
