"""pypaimon-rust 0.4.0 interoperability peer.

Runs under the pypaimon-rust venv (``pypaimon_rust`` + pyarrow, stdlib only) as
``python rust_peer.py <command>`` with a JSON spec on stdin; prints one JSON object on stdout.
Rows travel through Arrow IPC files (format v5). Tables are named by ``warehouse`` (a
filesystem catalog) and ``table`` (``db.t``; ``db.t$branch_b1`` names a branch).

pypaimon-rust's API as this peer uses it (module ``pypaimon_rust.datafusion``):
``PaimonCatalog({"warehouse": dir}).get_table("db.t")`` -> Table;
``table.new_read_builder()`` -> ReadBuilder with ``with_projection([names])``,
``with_filter(predicate dict)``, ``new_scan().plan().splits()``, ``new_read().read(splits)``
(a list of RecordBatches); ``table.new_batch_write_builder()`` -> ``new_write().write_arrow(batch)``,
``prepare_commit()``, ``new_commit().commit(messages)``; ``SQLContext().register_catalog(name,
{"warehouse": dir})`` then ``ctx.sql(text)`` (a list of RecordBatches) runs DataFusion SQL with
DDL/DML (``CREATE TABLE ... WITH ('bucket' = '4', ...)``, ``INSERT``, ``SELECT ... WHERE``,
``EXPLAIN``). A predicate dict is pypaimon's shape: ``{"method": "equal", "field": "id",
"literals": [5]}``, methods equal, notEqual, lessThan, lessOrEqual, greaterThan, greaterOrEqual,
in, notIn, between, isNull, isNotNull, startsWith, ... and ``{"method": "and" | "or",
"children": [...]}``. Scans prune buckets by the table's ``bucket-function.type`` (``default``
or ``mod``): a filter on the bucket key reads only the bucket the function names.

Commands:
  read     read ``table`` into ``out_ipc``: every column, or ``projection``; ``predicate`` (a dict
           as above) is pushed into the scan; ``where`` (SQL text) reads through
           ``SELECT <projection or *> FROM <table> WHERE <where>`` instead. Prints ``{"rows": n,
           "schema": [[name, arrow type], ...], "splits": n}`` (``splits``: the scan's split count,
           read-builder reads only). No rows: the columns keep their names (and simple types).
           SQL's ``SELECT *`` on a row-tracking table includes ``_ROW_ID``; the read builder's
           reads name it only in a ``projection``.
  write    one commit of the rows of ``rows_ipc`` (taken by name; integer, float, boolean, string
           and date columns cast to the table's types, others must match); with
           ``create`` (a SQL ``CREATE TABLE`` statement, catalog name ``paimon``) the table is
           created first. Prints ``{"snapshot_id": id}``.
  sql      run ``statements`` (a list of SQL texts, catalog ``paimon``) in order; the last one's
           result goes to ``out_ipc`` when given. Prints ``{"rows": n, "text": [...]}`` where
           ``text`` is the last result as JSON rows when it is small (EXPLAIN plans).
  batch    ``{"calls": [[command, spec], ...]}`` -> ``{"results": [answer, ...]}``; with
           ``"errors": "return"`` a failing call answers ``{"error": "<class>: <message>"}``.
"""

import sys

import pyarrow as pa
import pyarrow.ipc as ipc

import bridge

from pypaimon_rust.datafusion import PaimonCatalog, SQLContext

CATALOG_NAME = "paimon"


def catalog(spec):
    return PaimonCatalog({"warehouse": spec["warehouse"]})


def sql_context(spec):
    context = SQLContext()
    context.register_catalog(CATALOG_NAME, {"warehouse": spec["warehouse"]})
    return context


def sql_table_name(identifier):
    database, name = identifier.split(".", 1)
    return "%s.%s.`%s`" % (CATALOG_NAME, database, name) if "$" in name else \
        "%s.%s.%s" % (CATALOG_NAME, database, name)


def without_field_metadata(rows):
    """The rows with plain fields (pypaimon-rust tags every field with ``PARQUET:field_id``)."""
    fields = [pa.field(f.name, f.type, f.nullable) for f in rows.schema]
    return pa.Table.from_batches(rows.to_batches(), pa.schema(fields)) if rows.num_rows else \
        pa.schema(fields).empty_table()


def save_rows(path, rows):
    rows = without_field_metadata(rows)
    with ipc.new_file(path, rows.schema) as sink:
        sink.write_table(rows)
    return {"rows": rows.num_rows, "schema": [[f.name, str(f.type)] for f in rows.schema]}


def batches_table(batches, empty_schema=None):
    if batches:
        return pa.Table.from_batches(batches)
    return (empty_schema or pa.schema([])).empty_table()


# Arrow types of the Paimon types the peer casts to (pypaimon-rust refuses e.g. int64 for INT).
ARROW_OF_PAIMON = {"TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "INTEGER": pa.int32(),
                   "BIGINT": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(),
                   "BOOLEAN": pa.bool_(), "STRING": pa.string(), "DATE": pa.date32()}


def arrow_type(paimon_type):
    """The Arrow type of a simple Paimon type string (``INT NOT NULL``, ``VARCHAR(10)``), or None."""
    base = paimon_type.replace(" NOT NULL", "").strip()
    if base.startswith("VARCHAR") or base.startswith("CHAR"):
        return pa.string()
    return ARROW_OF_PAIMON.get(base)


def empty_rows(table, projection=None):
    """No rows, with the table's column names (types of simple columns; null for others)."""
    fields = {f.name(): pa.field(f.name(), arrow_type(f.field_type()) or pa.null())
              for f in table.schema().fields()}
    names = projection or list(fields)
    return pa.schema([fields.get(name, pa.field(name, pa.int64())) for name in names]).empty_table()


def cmd_read(spec):
    table = catalog(spec).get_table(spec["table"])
    empty = empty_rows(table, spec.get("projection"))
    if spec.get("where") is not None:
        columns = ", ".join('"%s"' % name for name in spec["projection"]) if spec.get("projection") else "*"
        query = "SELECT %s FROM %s WHERE %s" % (columns, sql_table_name(spec["table"]), spec["where"])
        rows = batches_table(sql_context(spec).sql(query), empty.schema)
        return save_rows(spec["out_ipc"], rows)
    builder = table.new_read_builder()
    if spec.get("projection"):
        builder = builder.with_projection(list(spec["projection"]))
    if spec.get("predicate"):
        builder = builder.with_filter(spec["predicate"])
    splits = builder.new_scan().plan().splits()
    batches = builder.new_read().read(splits) if splits else []
    answer = save_rows(spec["out_ipc"], batches_table(batches, empty.schema))
    answer["splits"] = len(splits)
    return answer


def cast_to_table(rows, table):
    """``rows`` with the table's column order, simple types cast to the table's Arrow types."""
    columns = []
    for field in table.schema().fields():
        column = rows.column(field.name())
        target = arrow_type(field.field_type())
        columns.append(column.cast(target) if target is not None and column.type != target else column)
    return pa.table(columns, names=[field.name() for field in table.schema().fields()])


def cmd_write(spec):
    if spec.get("create"):
        sql_context(spec).sql(spec["create"])
    table = catalog(spec).get_table(spec["table"])
    with pa.memory_map(spec["rows_ipc"]) as source:
        rows = cast_to_table(ipc.open_file(source).read_all(), table)
    builder = table.new_batch_write_builder()
    writer = builder.new_write()
    try:
        for batch in rows.combine_chunks().to_batches():
            writer.write_arrow(batch)
        messages = writer.prepare_commit()
    finally:
        writer.close()
    committer = builder.new_commit()
    try:
        committer.commit(messages)
    finally:
        committer.close()
    snapshot = catalog(spec).get_table(spec["table"]).latest_snapshot()
    return {"snapshot_id": None if snapshot is None else snapshot.id()}


def json_cell(value):
    if isinstance(value, dict):
        return {k: json_cell(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_cell(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def cmd_sql(spec):
    context = sql_context(spec)
    result = []
    for statement in spec["statements"]:
        result = context.sql(statement)
    rows = batches_table(result)
    answer = {"rows": rows.num_rows}
    if spec.get("out_ipc"):
        answer.update(save_rows(spec["out_ipc"], rows))
    if rows.num_rows <= 100:
        answer["text"] = json_cell(rows.to_pylist())
    return answer



COMMANDS = {"read": cmd_read, "write": cmd_write, "sql": cmd_sql}


if __name__ == "__main__":
    sys.exit(bridge.run(COMMANDS, sys.argv))
