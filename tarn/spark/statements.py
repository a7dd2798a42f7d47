"""`tarn.spark.sql(spark, statement)`: Paimon's Spark SQL for what Spark cannot route to a
Python data source (this module: `statements`, so that `tarn.spark.sql` is the function), run through tarn's Spark helpers over the attached catalog
(tarn/spark/attach.py); every other statement goes to `spark.sql`.

The statement is read by tarn/spark/sql_plan.py (sqlglot); here each record runs:
CREATE TABLE -> the catalog's create_table; INSERT INTO/OVERWRITE -> tarn.spark.write (by
position, as Spark inserts); UPDATE / DELETE FROM / MERGE INTO -> tarn.spark.update / delete /
merge_into; CALL sys.<procedure> -> tarn.spark.compact, expire_snapshots, expire_partitions, create_tag,
delete_tag, rollback_to, remove_orphan_files, Table.create_branch / fast_forward; ALTER TABLE
-> the catalog's alter_table. Reads of attached tables (a SELECT, an INSERT's query, a MERGE's
source) go through views remade for the statement, so they see the latest commits.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from tarn.errors import InvalidArgument
from tarn.meta.schema import AddColumn, DropColumn, RemoveOption, RenameColumn, SetOption
from tarn.spark.attach import Attached, attach, last_attached, quoted
from tarn.types import from_arrow_field
from tarn.spark.sql_plan import (AlterTable, Call, CreateTable, Delete, Insert, Merge, Passthrough, Update,
                                 merge_arguments, plan)


def sql(spark, statement: str, catalog=None):
    """Run `statement` (see the module docstring) with table names in `catalog` (a catalog as
    `tarn.spark.attach` takes, attached now if not already; default: the one attached last).
    Returns a DataFrame for what Spark runs, else the helper's result (a CommitResult, a
    snapshot, a count, the schema, ...)."""
    attached = _attached(spark, catalog)
    if attached is None:
        return spark.sql(statement)
    action = plan(statement, attached.resolve)
    runner = _RUNNERS[type(action)]
    return runner(spark, attached, action)


def _attached(spark, catalog) -> Attached | None:
    if isinstance(catalog, Attached):
        return catalog
    last = last_attached()
    if catalog is None:
        return last
    if last is not None and (last.catalog is catalog or last.name == catalog):
        return last
    return attach(spark, catalog)


def _frame(spark, attached: Attached, query: Passthrough):
    """A DataFrame of `query`, its attached tables read at their latest snapshot (or the one
    its time travel names)."""
    for view, identifier, options in query.reads:
        attached.frame(identifier, **dict(options)).createOrReplaceTempView(quoted(view))
    return spark.sql(query.sql)


def _run_query(spark, attached: Attached, query: Passthrough):
    return _frame(spark, attached, query)


def _options(attached: Attached) -> dict:
    return dict(attached.options)


def _run_create(spark, attached: Attached, create: CreateTable):
    from pyspark.sql.types import StructField, StructType

    from tarn.spark.types import arrow_target

    if create.catalog is not None and create.catalog.lower() != attached.name.lower():
        raise InvalidArgument(f"catalog {attached.name}: CREATE TABLE {create.catalog}.{create.identifier} names "
                              f"another catalog; attach it (tarn.spark.attach) or pass catalog=")
    rows = _frame(spark, attached, create.query) if create.query is not None else None
    if rows is not None:  # CREATE TABLE ... AS SELECT: the query's columns
        fields = [from_arrow_field(f, -1) for f in arrow_target(rows.schema)]
    else:
        struct = StructType([StructField(c.name, StructType.fromDDL(f"x {c.type}")[0].dataType, c.nullable)
                             for c in create.columns])
        # column COMMENTs become the fields' descriptions, as Paimon's Spark DDL stores them
        fields = [replace(from_arrow_field(f, -1), description=c.comment)
                  for f, c in zip(arrow_target(struct), create.columns)]
    database = create.identifier.split(".")[0]
    attached.catalog.create_database(database, ignore_if_exists=True)
    existed = create.if_not_exists and attached.catalog.table_exists(create.identifier)
    table = attached.catalog.create_table(create.identifier, fields, list(create.primary_key),
                                          list(create.partition_keys), create.options, create.comment,
                                          ignore_if_exists=create.if_not_exists)
    attached.refresh([create.identifier])
    if rows is None or existed:  # CTAS IF NOT EXISTS over an existing table writes nothing, as Spark
        return table
    from tarn.spark.dataframe import write

    result = write(rows, create.identifier, mode="append", **_options(attached))
    attached.refresh([create.identifier])
    return result


def _run_insert(spark, attached: Attached, insert: Insert):
    from pyspark.sql import functions as F

    from tarn.spark.dataframe import write
    from tarn.spark.types import spark_schema

    table = attached.table(insert.identifier)
    fields = list(table.schema().fields)
    unknown = [k for k in insert.static if k not in table.partition_keys]
    if unknown:
        raise InvalidArgument(f"table {table.name}: INSERT ... PARTITION names {unknown}, which are not partition "
                              f"keys {list(table.partition_keys)}")
    df = _frame(spark, attached, insert.query)
    if insert.by_name:
        names = _by_name(table, df.columns, fields)
    else:
        names = list(insert.columns) if insert.columns is not None else [
            f.name for f in fields if f.name not in insert.static]
    if len(df.columns) != len(names):
        raise InvalidArgument(f"table {table.name}: INSERT gives {len(df.columns)} column(s) for {len(names)} "
                              f"({names})")
    df = df.toDF(*names)
    types = {f.name: f.dataType for f in spark_schema(fields)}
    columns = [(F.lit(insert.static[f.name]) if f.name in insert.static else
                F.col(f"`{f.name}`") if f.name in names else F.lit(None)).cast(types[f.name]).alias(f.name)
               for f in fields]
    options = _options(attached)
    if insert.overwrite and insert.static:
        options["overwrite-partition"] = ",".join(f"{k}={v}" for k, v in insert.static.items())
    return write(df.select(*columns), insert.identifier, mode="overwrite" if insert.overwrite else "append",
                 **options)


def _by_name(table, query_columns: list[str], fields) -> list[str]:
    """The table columns the query's columns name (INSERT ... BY NAME, case-insensitive as
    Spark); the others get NULL."""
    by_lower = {f.name.lower(): f.name for f in fields}
    unknown = [c for c in query_columns if c.lower() not in by_lower]
    if unknown:
        raise InvalidArgument(f"table {table.name}: INSERT ... BY NAME: the query's column(s) {unknown} are not "
                              f"columns of the table ({[f.name for f in fields]})")
    return [by_lower[c.lower()] for c in query_columns]


def _run_update(spark, attached: Attached, update: Update):
    from pyspark.sql import functions as F

    from tarn.spark.dml import update as spark_update

    return spark_update(spark, update.identifier, {k: F.expr(v) for k, v in update.set.items()}, update.where,
                        storage_options=_options(attached))


def _run_delete(spark, attached: Attached, delete: Delete):
    from tarn.spark.dml import delete as spark_delete

    return spark_delete(spark, delete.identifier, delete.where if delete.where is not None else "true",
                        storage_options=_options(attached))


def _run_merge(spark, attached: Attached, merge: Merge):
    from tarn.spark.dml import merge_into

    table = attached.table(merge.identifier)
    arguments = merge_arguments(merge, table.schema().field_names, table.name)
    source = _frame(spark, attached, merge.source)
    return merge_into(spark, merge.identifier, source, on=list(merge.on), storage_options=_options(attached),
                      **arguments)


def _run_alter(spark, attached: Attached, alter: AlterTable):
    from pyspark.sql.types import StructType

    from tarn.spark.types import arrow_target

    changes = []
    for change in alter.changes:
        kind = change[0]
        if kind == "add":
            column = change[1]
            arrow = arrow_target(StructType.fromDDL(f"`{column.name}` {column.type}"))[0]
            changes.append(AddColumn(column.name, arrow.type, column.comment, column.position))
        elif kind == "rename":
            changes.append(RenameColumn(change[1], change[2]))
        elif kind == "drop":
            changes.append(DropColumn(change[1]))
        elif kind == "set":
            changes.append(SetOption(change[1], change[2]))
        else:
            changes.append(RemoveOption(change[1]))
    schema = attached.catalog.alter_table(alter.identifier, *changes)
    attached.refresh([alter.identifier])
    return schema


def _run_call(spark, attached: Attached, call: Call):
    from tarn.spark import maintenance

    identifier = attached.resolve(call.identifier.split("."))
    if identifier is None:
        raise InvalidArgument(f"catalog {attached.name}: CALL sys.{call.procedure}: no table {call.identifier}")
    args, options = call.args, _options(attached)
    procedure = call.procedure
    if procedure == "compact":
        strategy = str(args.get("compact_strategy", "full")).lower()
        if strategy not in ("full", "minor"):
            raise InvalidArgument(f"table {identifier}: CALL sys.compact compact_strategy is 'full' or 'minor', "
                                  f"got '{strategy}'")
        return maintenance.compact(spark, identifier, full=strategy == "full",
                                   partitions=_partitions(args.get("partitions"), identifier), storage_options=options)
    if procedure == "expire_snapshots":
        return maintenance.expire_snapshots(spark, identifier, retain_min=args.get("retain_min"),
                                            retain_max=args.get("retain_max"),
                                            older_than_ms=_millis(args.get("older_than"), identifier),
                                            max_deletes=args.get("max_deletes"), storage_options=options)
    if procedure == "create_tag":
        return maintenance.create_tag(spark, identifier, str(args["tag"]), snapshot_id=args.get("snapshot"),
                                      time_retained=args.get("time_retained"), storage_options=options)
    if procedure == "delete_tag":
        for tag in str(args["tag"]).split(","):
            maintenance.delete_tag(spark, identifier, tag.strip(), storage_options=options)
        return None
    if procedure == "rollback":
        return maintenance.rollback_to(spark, identifier, _rollback_target(args, identifier), storage_options=options)
    if procedure == "remove_orphan_files":
        return maintenance.remove_orphan_files(spark, identifier, _millis(args.get("older_than"), identifier),
                                               dry_run=bool(args.get("dry_run", False)),
                                               parallelism=args.get("parallelism"), storage_options=options)
    if procedure == "expire_partitions":
        return maintenance.expire_partitions(spark, identifier, args.get("expiration_time"),
                                             args.get("timestamp_formatter"), args.get("timestamp_pattern"),
                                             args.get("expire_strategy"), args.get("max_expires"),
                                             args.get("options"), storage_options=options)
    table = attached.table(identifier)
    if procedure == "create_branch":
        ignore = str(args.get("ignoreIfExists", "false")).lower() == "true"
        return table.create_branch(str(args["branch"]), from_tag=args.get("tag"), ignore_if_exists=ignore)
    return table.fast_forward(str(args["branch"]))


def _partitions(text, identifier: str) -> list[dict] | None:
    """Paimon's `partitions` argument, 'p1=0,p2=0;p1=0,p2=1', as a list of {key: value}."""
    if text is None:
        return None
    found = []
    for spec in str(text).split(";"):
        values = {}
        for pair in spec.split(","):
            key, sep, value = pair.partition("=")
            if not sep:
                raise InvalidArgument(f"table {identifier}: CALL sys.compact partitions '{text}' is not "
                                      "'k=v,k2=v2;k=v3,...'")
            values[key.strip()] = value.strip()
        found.append(values)
    return found


def _millis(text, identifier: str) -> int | None:
    """Paimon's `older_than` ('2026-11-20 10:00:00', local time) as epoch millis."""
    if text is None:
        return None
    try:
        return int(dt.datetime.fromisoformat(str(text).strip()).timestamp() * 1000)
    except ValueError:
        raise InvalidArgument(f"table {identifier}: older_than '{text}' is not a date-time like "
                              "'2026-11-20 10:00:00'") from None


def _rollback_target(args: dict, identifier: str) -> int | str:
    given = [k for k in ("version", "snapshot", "tag") if args.get(k) is not None]
    if len(given) != 1:
        raise InvalidArgument(f"table {identifier}: CALL sys.rollback takes one of version, snapshot or tag, "
                              f"got {given or 'none'}")
    value = args[given[0]]
    if given[0] == "tag":
        return str(value)
    if given[0] == "snapshot" or str(value).strip().isdigit():
        return int(value)
    return str(value)


_RUNNERS = {Passthrough: _run_query, CreateTable: _run_create, Insert: _run_insert, Update: _run_update,
            Delete: _run_delete, Merge: _run_merge, AlterTable: _run_alter, Call: _run_call}
