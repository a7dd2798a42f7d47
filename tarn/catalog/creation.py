"""Creating a table at a path: the one creation path of every catalog and of the Spark
connector (everything validated before anything is written), and the argument rules it uses."""

from __future__ import annotations

import pyarrow as pa

from tarn.errors import InvalidArgument, SchemaMismatch, TableAlreadyExists
from tarn.fs import FileIO, file_io_for, join
from tarn.meta.schema import TableSchema, new_schema
from tarn.ops.validate import validate_table
from tarn.scan.arguments import location_argument, names_argument
from tarn.store.schemas import SchemaStore
from tarn.table import Table
from tarn.types import DataField


def create_table(path, schema, primary_key=None, partition_keys=None, options: dict | None = None,
                 comment: str | None = None, storage_options: dict | None = None, *, filesystem=None,
                 lock=None) -> Table:
    """Create a table at a path, without a catalog (`tarn.load_table(path)` opens it again):
    a local path, `s3://bucket/path` or a path inside `filesystem`; the rest as
    `FileSystemCatalog.create_table` (TableAlreadyExists when the path holds a table)."""
    file_io, root = file_io_for(location_argument(path, "table path"), storage_options, filesystem, lock)
    if "$" in root.rsplit("/", 1)[-1]:
        raise InvalidArgument(f"table path {path}: a table name cannot hold '$' (Paimon's system-table and "
                              "branch separator); create a branch with table.create_branch(name)")
    return create_table_at(file_io, root, root, schema, primary_key, partition_keys, options, comment)


def create_table_at(file_io: FileIO, path: str, name: str, schema: pa.Schema | list[DataField],
                    primary_key=None, partition_keys=None, options: dict | None = None,
                    comment: str | None = None) -> Table:
    """Create the table at `path` (named `name` in messages): the one creation path of the
    catalog and the Spark connector. Everything is validated before anything is written."""
    if SchemaStore(file_io, path).list_ids():
        raise TableAlreadyExists(f"table {name} already exists at {path}")
    leftovers = [d for d in ("snapshot", "manifest") if file_io.list_dir(join(path, d))]
    if leftovers:
        raise TableAlreadyExists(f"table {name}: {path} holds {' and '.join(leftovers)} files but no "
                                 "schema file; refusing to create a table over existing data "
                                 "(restore the schema files or drop the table)")
    table_schema = new_table_schema(name, schema, primary_key, partition_keys, options, comment)
    file_io.mkdirs(path)
    SchemaStore(file_io, path).create(table_schema)
    return Table(file_io, path, name)


def new_table_schema(name: str, schema, primary_key=None, partition_keys=None, options: dict | None = None,
                     comment: str | None = None) -> TableSchema:
    """The first schema of a new table named `name`, from `create_table`'s arguments, validated
    (nothing is written): what a catalog checks before it creates anything."""
    if options is not None and not isinstance(options, dict):
        raise InvalidArgument(f"table {name}: options must be a dict of option -> value, got {options!r}")
    if comment is not None and not isinstance(comment, str):
        raise InvalidArgument(f"table {name}: comment must be a string, got {comment!r}")
    primary_key = names_argument(primary_key, name, "primary_key")
    partition_keys = names_argument(partition_keys, name, "partition_keys")
    options = {str(k): _option_value(v) for k, v in (options or {}).items()}
    table_schema = new_schema(schema_argument(schema, name), partition_keys or (), primary_key or (), options,
                              comment)
    if not table_schema.fields:
        raise SchemaMismatch(f"table {name}: a table needs at least one column")
    validate_table(table_schema, name)
    return table_schema


def schema_argument(schema, name: str) -> pa.Schema | list[DataField]:
    """The columns of a new table from what `create_table` accepts as `schema`."""
    if isinstance(schema, pa.Schema):
        return schema
    if isinstance(schema, (pa.Table, pa.RecordBatch)):
        return schema.schema
    try:
        if type(schema).__name__ == "DataFrame" and type(schema).__module__.startswith("pandas"):
            return pa.Schema.from_pandas(schema, preserve_index=False)
        if hasattr(schema, "__arrow_c_schema__"):
            return pa.schema(schema)
        if hasattr(schema, "__arrow_c_stream__"):  # a polars DataFrame, a RecordBatchReader: its schema
            return pa.RecordBatchReader.from_stream(schema).schema
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError) as e:
        raise SchemaMismatch(f"table {name}: cannot take the column types of a {type(schema).__name__}: {e}") from e
    if isinstance(schema, (list, tuple)) and schema:
        if all(isinstance(f, DataField) for f in schema):
            return list(schema)
        if all(isinstance(f, pa.Field) for f in schema):
            return pa.schema(schema)
    raise InvalidArgument(f"table {name}: schema must be a pyarrow.Schema, a list of pyarrow.Field or tarn "
                          f"DataField, or a DataFrame / pyarrow Table to take the columns of; got "
                          f"{type(schema).__name__}")


def _option_value(value) -> str:
    """Option values as Paimon writes them: booleans lower-case, everything else as text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def check_name(kind: str, name) -> None:
    """Database and table names stay inside the warehouse: not empty, no path separators,
    not '.' or '..', no leading or trailing blanks, no '$' (Paimon's system-table separator)."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument(f"{kind} name must not be empty (got {name!r})")
    if name != name.strip() or name in (".", "..") or any(c in name for c in "/\\\0$"):
        raise InvalidArgument(f"{kind} name {name!r} is not allowed: names must not contain '/', '\\', "
                              "'$' or NUL, be '.' or '..', or start or end with blanks")
