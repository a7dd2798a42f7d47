"""Filesystem catalog: `<warehouse>/<db>.db/<table>`, as Paimon's FileSystemCatalog lays it out."""

from __future__ import annotations

import os

import pyarrow as pa

from tarn.errors import InvalidArgument, SchemaMismatch, TableAlreadyExists, TableNotFound, TarnError
from tarn.fs import FileIO, file_io_for, join
from tarn.meta.schema import new_schema
from tarn.scan.arguments import location_argument, names_argument
from tarn.ops.validate import validate_table
from tarn.store.branches import branch_of
from tarn.store.schemas import SchemaStore
from tarn.table import Table
from tarn.types import DataField

DB_SUFFIX = ".db"
DEFAULT_DATABASE = "default"


class Catalog:
    """A filesystem catalog: tables live at `<warehouse>/<database>.db/<table>`, as Java
    Paimon's filesystem catalog keeps them; identifiers are `"database.table"` (a bare name is
    in database `default`).

    `warehouse`: a local path (a string or a `pathlib.Path`), `s3://bucket/path` or a path
    inside `filesystem` (a pyarrow or fsspec filesystem); `storage_options` (`s3.endpoint`,
    ...) and `lock` as in docs/object-stores.md."""

    def __init__(self, warehouse: str | os.PathLike, storage_options: dict | None = None, *, filesystem=None,
                 lock=None):
        warehouse = location_argument(warehouse, "warehouse")
        if storage_options is not None and not isinstance(storage_options, dict):
            raise InvalidArgument(f"storage_options must be a dict, got {type(storage_options).__name__}")
        self.file_io, self.warehouse = file_io_for(warehouse, storage_options, filesystem, lock)
        self.file_io.mkdirs(self.warehouse)

    def __repr__(self) -> str:
        return f"Catalog({self.warehouse!r})"

    # ------------------------------------------------------------------ identifiers

    @staticmethod
    def split_identifier(identifier: str) -> tuple[str, str]:
        """`"db.t"` -> `("db", "t")`, `"t"` -> `("default", "t")`; InvalidArgument for other forms."""
        if not isinstance(identifier, str):
            raise InvalidArgument(f"table identifier must be a string 'database.table', got {identifier!r}")
        parts = identifier.split(".")
        if len(parts) == 1:
            parts = [DEFAULT_DATABASE, parts[0]]
        if len(parts) != 2:
            raise InvalidArgument(f"table identifier '{identifier}' must be 'database.table'")
        check_name("database", parts[0])
        check_name("table", parts[1])
        return parts[0], parts[1]

    def database_path(self, database: str) -> str:
        """The directory of a database: `<warehouse>/<database>.db`."""
        check_name("database", database)
        return join(self.warehouse, database + DB_SUFFIX)

    def table_path(self, identifier: str) -> str:
        """The directory of a table (whether or not it exists); `tarn.load_table` opens it."""
        database, name = self.split_identifier(identifier)
        return join(self.database_path(database), name)

    # ------------------------------------------------------------------ databases

    def create_database(self, database: str, ignore_if_exists: bool = True) -> None:
        """Create the database directory (`create_table` does it too, when needed)."""
        path = self.database_path(database)
        if self.file_io.exists(path) and not ignore_if_exists:
            raise TarnError(f"database {database} already exists")
        self.file_io.mkdirs(path)

    def list_databases(self) -> list[str]:
        """Names of the databases in the warehouse."""
        return [n[: -len(DB_SUFFIX)] for n in self.file_io.list_dir(self.warehouse) if n.endswith(DB_SUFFIX)]

    def list_tables(self, database: str = DEFAULT_DATABASE) -> list[str]:
        """Names of the tables in a database (directories holding a schema file)."""
        path = self.database_path(database)
        return [n for n in self.file_io.list_dir(path)
                if SchemaStore(self.file_io, join(path, n)).list_ids()]

    # ------------------------------------------------------------------ tables

    def create_table(self, identifier: str, schema, primary_key: list[str] | str | None = None,
                     partition_keys: list[str] | str | None = None, options: dict | None = None,
                     comment: str | None = None, ignore_if_exists: bool = False) -> Table:
        """Create a table; options are validated (unknown or invalid ones fail, naming the
        closest known option) before anything is written.

        `schema`: a `pyarrow.Schema`, a list of `pyarrow.Field`s or of tarn `DataField`s, or
        the schema of data (a pandas or polars DataFrame, a pyarrow Table: its columns, not its
        rows). `primary_key` and `partition_keys`: lists of column names, or one name."""
        path = self.table_path(identifier)
        if SchemaStore(self.file_io, path).list_ids():
            if ignore_if_exists:
                return self.load_table(identifier)
            raise TableAlreadyExists(f"table {identifier} already exists at {path}")
        return create_table_at(self.file_io, path, identifier, schema, primary_key, partition_keys, options,
                               comment)

    def load_table(self, identifier: str) -> Table:
        """Open an existing table; `"db.t$branch_dev"` opens its branch `dev` (Paimon's
        identifiers). TableNotFound names the path looked in."""
        identifier, branch = self._branch_of(identifier)
        path = self.table_path(identifier)
        if not SchemaStore(self.file_io, path).list_ids():
            raise TableNotFound(f"table {identifier} does not exist (looked in {path})")
        if branch == "main":
            return Table(self.file_io, path, identifier)
        return Table(self.file_io, path, f"{identifier}$branch_{branch}", branch=branch)

    @staticmethod
    def _branch_of(identifier: str) -> tuple[str, str]:
        """`"db.t$branch_dev"` -> (`"db.t"`, 'dev'); system tables are opened with
        `table.system_table(name)`."""
        if not isinstance(identifier, str) or "$" not in identifier:
            return identifier, "main"
        return branch_of(identifier, f"table identifier '{identifier}'")

    def table_exists(self, identifier: str) -> bool:
        """Whether the table has a schema file."""
        return bool(SchemaStore(self.file_io, self.table_path(identifier)).list_ids())

    def drop_table(self, identifier: str, ignore_if_missing: bool = False) -> None:
        """Delete the table's directory with all its files and snapshots (tags too)."""
        if not self.table_exists(identifier):
            if ignore_if_missing:
                return
            raise TableNotFound(f"table {identifier} does not exist")
        self.file_io.delete_dir(self.table_path(identifier))


def create_table(path, schema, primary_key=None, partition_keys=None, options: dict | None = None,
                 comment: str | None = None, storage_options: dict | None = None, *, filesystem=None,
                 lock=None) -> Table:
    """Create a table at a path, without a catalog (`tarn.load_table(path)` opens it again):
    a local path, `s3://bucket/path` or a path inside `filesystem`; the rest as
    `Catalog.create_table` (TableAlreadyExists when the path holds a table)."""
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
    file_io.mkdirs(path)
    SchemaStore(file_io, path).create(table_schema)
    return Table(file_io, path, name)


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
