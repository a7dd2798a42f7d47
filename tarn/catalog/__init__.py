"""Catalogs: where tables are kept and found by name.

`TableCatalog` is the port every catalog implements (create, load, list, drop, rename, alter,
and the commit point of its tables, so that a catalog which owns commits, such as a REST
catalog, commits every snapshot itself). `FileSystemCatalog` (`tarn.Catalog`) is the
directory catalog; `create_table`/`create_table_at` create a table at a path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from tarn.catalog.creation import check_name, create_table, create_table_at, schema_argument
from tarn.catalog.filesystem import DEFAULT_DATABASE, FileSystemCatalog

if TYPE_CHECKING:
    from tarn.meta.schema import TableSchema
    from tarn.table import Table

Catalog = FileSystemCatalog  # `tarn.Catalog(warehouse)`: the directory catalog, as before


@runtime_checkable
class TableCatalog(Protocol):
    """What every catalog offers. Identifiers are `"database.table"` (a bare name is in
    database `default`); a table's branch is `"database.table$branch_<name>"`."""

    name: str

    def create_database(self, database: str, ignore_if_exists: bool = True) -> None: ...

    def drop_database(self, database: str, ignore_if_missing: bool = False, cascade: bool = False) -> None: ...

    def list_databases(self) -> list[str]: ...

    def list_tables(self, database: str = DEFAULT_DATABASE) -> list[str]: ...

    def table_exists(self, identifier: str) -> bool: ...

    def create_table(self, identifier: str, schema, primary_key=None, partition_keys=None,
                     options: dict | None = None, comment: str | None = None,
                     ignore_if_exists: bool = False) -> "Table": ...

    def load_table(self, identifier: str) -> "Table": ...

    def drop_table(self, identifier: str, ignore_if_missing: bool = False) -> None: ...

    def rename_table(self, identifier: str, new_identifier: str) -> None: ...

    def alter_table(self, identifier: str, *changes) -> "TableSchema": ...

    def commit_point(self, table: "Table"):
        """The object whose `publish(publication)` makes a snapshot of `table` its latest
        (tarn/store/commit_point.py); a catalog that owns commits returns its own."""
        ...


__all__ = ["Catalog", "FileSystemCatalog", "TableCatalog", "check_name", "create_table", "create_table_at",
           "schema_argument"]
