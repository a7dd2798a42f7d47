"""Filesystem catalog: `<warehouse>/<db>.db/<table>`, as Paimon's FileSystemCatalog lays it out."""

from __future__ import annotations

import pyarrow as pa

from tarn.errors import InvalidArgument, InvalidOption, SchemaMismatch, TableAlreadyExists, TableNotFound, TarnError
from tarn.fs import file_io_for, join
from tarn.meta.schema import new_schema
from tarn.lsm.aggregate import validate_aggregation
from tarn.lsm.first_row import validate_first_row
from tarn.lsm.partial_update import validate_partial_update
from tarn.maintenance.expire import check_retention_options
from tarn.maintenance.tags import check_tag_options
from tarn.options import Options, validate_options
from tarn.store.schemas import SchemaStore
from tarn.table import Table
from tarn.types import DataField

DB_SUFFIX = ".db"
DEFAULT_DATABASE = "default"


class Catalog:
    """`warehouse`: a local path, `s3://bucket/path` or a path inside `filesystem` (a pyarrow
    or fsspec filesystem); `storage_options` (`s3.endpoint`, ...) and `lock` as in
    docs/object-stores.md."""

    def __init__(self, warehouse: str, storage_options: dict | None = None, *, filesystem=None, lock=None):
        self.file_io, self.warehouse = file_io_for(warehouse, storage_options, filesystem, lock)
        self.file_io.mkdirs(self.warehouse)

    # ------------------------------------------------------------------ identifiers

    @staticmethod
    def split_identifier(identifier: str) -> tuple[str, str]:
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
        check_name("database", database)
        return join(self.warehouse, database + DB_SUFFIX)

    def table_path(self, identifier: str) -> str:
        database, name = self.split_identifier(identifier)
        return join(self.database_path(database), name)

    # ------------------------------------------------------------------ databases

    def create_database(self, database: str, ignore_if_exists: bool = True) -> None:
        path = self.database_path(database)
        if self.file_io.exists(path) and not ignore_if_exists:
            raise TarnError(f"database {database} already exists")
        self.file_io.mkdirs(path)

    def list_databases(self) -> list[str]:
        return [n[: -len(DB_SUFFIX)] for n in self.file_io.list_dir(self.warehouse) if n.endswith(DB_SUFFIX)]

    def list_tables(self, database: str = DEFAULT_DATABASE) -> list[str]:
        path = self.database_path(database)
        return [n for n in self.file_io.list_dir(path)
                if SchemaStore(self.file_io, join(path, n)).list_ids()]

    # ------------------------------------------------------------------ tables

    def create_table(self, identifier: str, schema: pa.Schema | list[DataField],
                     primary_key: list[str] | None = None, partition_keys: list[str] | None = None,
                     options: dict | None = None, comment: str | None = None,
                     ignore_if_exists: bool = False) -> Table:
        """Create a table; options are validated (unknown or invalid ones fail, naming the
        closest known option) before anything is written."""
        path = self.table_path(identifier)
        options = {str(k): str(v) for k, v in (options or {}).items()}
        if SchemaStore(self.file_io, path).list_ids():
            if ignore_if_exists:
                return self.load_table(identifier)
            raise TableAlreadyExists(f"table {identifier} already exists at {path}")
        leftovers = [d for d in ("snapshot", "manifest") if self.file_io.list_dir(join(path, d))]
        if leftovers:
            raise TableAlreadyExists(f"table {identifier}: {path} holds {' and '.join(leftovers)} files but no "
                                     "schema file; refusing to create a table over existing data "
                                     "(restore the schema files or drop the table)")
        table_schema = new_schema(schema, partition_keys or (), primary_key or (), options, comment)
        if not table_schema.fields:
            raise SchemaMismatch(f"table {identifier}: a table needs at least one column")
        field_names = [f.name for f in table_schema.fields]
        validate_options(dict(table_schema.options), identifier, field_names)
        check_creatable(table_schema, identifier)
        self.file_io.mkdirs(self.database_path(self.split_identifier(identifier)[0]))
        SchemaStore(self.file_io, path).create(table_schema)
        return Table(self.file_io, path, identifier)

    def load_table(self, identifier: str) -> Table:
        path = self.table_path(identifier)
        if not SchemaStore(self.file_io, path).list_ids():
            raise TableNotFound(f"table {identifier} does not exist (looked in {path})")
        return Table(self.file_io, path, identifier)

    def table_exists(self, identifier: str) -> bool:
        return bool(SchemaStore(self.file_io, self.table_path(identifier)).list_ids())

    def drop_table(self, identifier: str, ignore_if_missing: bool = False) -> None:
        if not self.table_exists(identifier):
            if ignore_if_missing:
                return
            raise TableNotFound(f"table {identifier} does not exist")
        self.file_io.delete_dir(self.table_path(identifier))


def check_name(kind: str, name) -> None:
    """Database and table names stay inside the warehouse: not empty, no path separators,
    not '.' or '..', no leading or trailing blanks, no '$' (Paimon's system-table separator)."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument(f"{kind} name must not be empty (got {name!r})")
    if name != name.strip() or name in (".", "..") or any(c in name for c in "/\\\0$"):
        raise InvalidArgument(f"{kind} name {name!r} is not allowed: names must not contain '/', '\\', "
                              "'$' or NUL, be '.' or '..', or start or end with blanks")


def check_creatable(schema, identifier: str) -> None:
    """Table-level rules tarn enforces at creation (beyond option validation)."""
    options = Options(schema.options)
    bucket = options.int("bucket")
    if schema.primary_keys and bucket <= 0:
        raise TarnError(f"table {identifier}: primary-key tables need a fixed 'bucket' > 0 in tarn "
                        f"(got bucket={bucket}; dynamic and postpone bucket modes are not supported yet)")
    file_format = (options.get("file.format") or "parquet").lower()
    if file_format not in ("parquet", "orc", "avro"):
        raise InvalidOption(f"table {identifier}: option 'file.format'='{file_format}' is a Paimon format "
                            "tarn cannot write yet (use parquet, orc or avro)")
    if not schema.primary_keys and bucket > 0 and not options.get("bucket-key"):
        raise TarnError(f"table {identifier}: an append table with bucket={bucket} needs 'bucket-key'")
    for key in schema.partition_keys:
        root = schema.field(key).type.root
        if root in ("ARRAY", "MAP", "MULTISET", "ROW"):
            raise TarnError(f"table {identifier}: partition column '{key}' has type {root}, "
                            "which cannot be encoded as a partition value")
    check_merge_engine(schema, options, identifier)
    check_retention_options(schema.options, identifier)
    check_tag_options(options, identifier)


def check_merge_engine(schema, options: Options, identifier: str) -> None:
    """Engine/option combinations Paimon rejects, named by field and option."""
    engine = options.get("merge-engine") or "deduplicate"
    for name in options.list("sequence.field"):
        if name not in schema.field_names:
            raise InvalidOption(f"table {identifier}: option 'sequence.field' names unknown column '{name}'")
    if not schema.primary_keys:
        if engine != "deduplicate" or options.get("sequence.field"):
            raise InvalidOption(f"table {identifier}: 'merge-engine' and 'sequence.field' need a primary key")
        return
    padding = [p.strip().lower() for p in options.list("sequence.auto-padding")]
    unknown = [p for p in padding if p not in ("row-kind-flag", "second-to-micro", "millis-to-micro")]
    if unknown:
        raise InvalidOption(f"table {identifier}: option 'sequence.auto-padding' has unknown mode(s) {unknown} "
                            "(row-kind-flag, second-to-micro, millis-to-micro)")
    if padding and not options.list("sequence.field"):
        raise InvalidOption(f"table {identifier}: option 'sequence.auto-padding' needs 'sequence.field'")
    fields, keys = list(schema.fields), list(schema.primary_keys)
    if engine == "aggregation":
        validate_aggregation(fields, keys, options, identifier)
    elif engine == "partial-update":
        validate_partial_update(fields, keys, options, identifier)
    elif engine == "first-row":
        validate_first_row(fields, keys, options, identifier)
