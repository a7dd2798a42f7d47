"""The directory catalog: `<warehouse>/<db>.db/<table>`, as Paimon's FileSystemCatalog lays it
out; tables commit through their own commit point (tarn/store/commit_point.py)."""

from __future__ import annotations

import os

from tarn.catalog.creation import check_name, create_table_at
from tarn.errors import InvalidArgument, TableAlreadyExists, TableNotFound, TarnError
from tarn.fs import file_io_for, join
from tarn.meta.schema import TableSchema
from tarn.scan.arguments import location_argument
from tarn.store.branches import branch_of
from tarn.store.commit_point import FileSystemCommit
from tarn.store.schemas import SchemaStore
from tarn.table import Table

DB_SUFFIX = ".db"
DEFAULT_DATABASE = "default"


class FileSystemCatalog:
    """A filesystem catalog (`tarn.Catalog`): tables live at `<warehouse>/<database>.db/<table>`, as Java
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

    @property
    def name(self) -> str:
        """How messages name this catalog: its warehouse."""
        return self.warehouse

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

    def drop_database(self, database: str, ignore_if_missing: bool = False, cascade: bool = False) -> None:
        """Delete a database directory; one holding tables only with `cascade` (which drops
        them, files and all), else TarnError naming them."""
        path = self.database_path(database)
        if not self.file_io.exists(path):
            if ignore_if_missing:
                return
            raise TarnError(f"database {database} does not exist (looked in {path})")
        tables = self.list_tables(database)
        if tables and not cascade:
            raise TarnError(f"database {database} is not empty: it holds table(s) {sorted(tables)[:5]}; drop them "
                            "first or pass cascade=True")
        for name in tables:
            self.drop_table(f"{database}.{name}", ignore_if_missing=True)
        self.file_io.delete_dir(path)

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

    def rename_table(self, identifier: str, new_identifier: str) -> None:
        """Move a table to another name (Paimon's FileSystemCatalog renames its directory). On
        a local disk the move is one rename; object stores have no directory rename, so it is
        refused there (TarnError) rather than copied file by file under readers."""
        identifier, branch = self._branch_of(identifier)
        target, target_branch = self._branch_of(new_identifier)
        if branch != "main" or target_branch != "main":
            raise InvalidArgument(f"rename_table({identifier!r}, {new_identifier!r}): branches are renamed with "
                                  "the table, not on their own")
        source, dest = self.table_path(identifier), self.table_path(target)
        if not self.table_exists(identifier):
            raise TableNotFound(f"table {identifier} does not exist (looked in {source})")
        if self.file_io.exists(dest):
            raise TableAlreadyExists(f"table {target} already exists at {dest}")
        if not self.file_io.is_local:
            raise TarnError(f"table {identifier}: rename_table on {self.file_io.store} is not supported: an object "
                            "store has no atomic directory rename (Paimon's filesystem catalog cannot rename "
                            "there either); copy the table or use a catalog that keeps names apart from paths")
        self.file_io.mkdirs(self.database_path(self.split_identifier(target)[0]))
        self.file_io.fs.move(source, dest)

    def alter_table(self, identifier: str, *changes) -> TableSchema:
        """Apply schema changes (tarn.AddColumn, SetOption, ...) as one new schema version;
        see `Table.alter`."""
        return self.load_table(identifier).alter(*changes)

    def commit_point(self, table: Table) -> FileSystemCommit:
        """Where the table's snapshots are committed: its own snapshot directory."""
        return table.snapshot_commit
