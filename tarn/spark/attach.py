"""`tarn.spark.attach`: every table of a catalog readable by name in Spark SQL.

Spark lets a temporary view have one name part only, and a Python data source cannot be a
table of Spark's catalog (Spark 4.3 hands a catalog table's source no options when it is read),
so each table `db.t` becomes two temporary views named by one quoted identifier each:
`` `db.t` `` and `` `<name>.db.t` `` (`name`: the attached catalog's name in SQL, "tarn" by
default). A view is `tarn.spark.read` of the table: Spark plans it when first queried and keeps
that plan, so a view shows the commits made before its first query since it was (re)made.
`tarn.spark.sql` remakes the views a statement reads before running it (each statement sees the
latest commits) and resolves unquoted `db.t`, `<name>.db.t` and time travel (`VERSION AS OF`,
`TIMESTAMP AS OF`, which Spark refuses on views); `Attached.refresh()` remakes them all.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import tarn
from tarn.catalog import FileSystemCatalog
from tarn.errors import InvalidArgument
from tarn.spark.ref import CATALOG, CATALOG_PREFIX, open_table

DEFAULT_NAME = "tarn"


@dataclass
class Attached:
    """A catalog attached to a Spark session: `options` are the read options that name it
    (`catalog` / `catalog.<key>`), `tables` the identifiers with views."""

    spark: object
    catalog: object
    name: str
    options: dict[str, str]
    tables: set[str] = field(default_factory=set)

    def view_names(self, identifier: str) -> tuple[str, str]:
        """The two views of table `identifier`, as Spark SQL spells them."""
        return quoted(identifier), quoted(f"{self.name}.{identifier}")

    def frame(self, identifier: str, **read_options):
        """A DataFrame of the table's latest snapshot, or of the one `read_options` select."""
        from tarn.spark.native_read import read

        return read(self.spark, identifier, **self.options, **read_options)

    def table(self, identifier: str) -> "tarn.Table":
        """The table `identifier`, opened as the connector opens tables (tarn/spark/ref.py)."""
        return open_table(identifier, self.options)

    def refresh(self, identifiers=None) -> None:
        """Remake the views of `identifiers` (default: every attached table), so their next
        query plans the latest snapshot."""
        for identifier in sorted(self.tables if identifiers is None else identifiers):
            frame = self.frame(identifier)
            for view in self.view_names(identifier):
                frame.createOrReplaceTempView(view)
            self.tables.add(identifier)

    def resolve(self, parts: list[str]) -> str | None:
        """The identifier `db.t` that name parts ([db, t] or [name, db, t]) give in this
        catalog, or None when they name none of its tables."""
        if len(parts) == 3 and parts[0].lower() == self.name.lower():
            parts = parts[1:]
        if len(parts) != 2:
            return None
        identifier = ".".join(parts)
        if identifier in self.tables or self.catalog.table_exists(identifier):
            return identifier
        return None


_LAST: list[Attached] = []  # the catalog attached last: tarn.spark.sql's default


def attach(spark, catalog, name: str | None = None) -> Attached:
    """Make every table of `catalog` readable by name in Spark SQL (see the module docstring).
    `catalog`: a tarn catalog (`tarn.Catalog(path)`, `tarn.load_catalog(...)`), a catalog
    name of the config file (~/.tarn.yaml) or a warehouse directory; `name`: how SQL names
    the catalog (`name.db.t`; default: the config file's name, else "tarn")."""
    from tarn.spark.session import register

    register(spark)
    opened, options, given_name = _opened(catalog)
    attached = Attached(spark, opened, name or given_name or DEFAULT_NAME, options)
    attached.refresh({f"{db}.{t}" for db in opened.list_databases() for t in opened.list_tables(db)})
    _LAST[:] = [attached]
    return attached


def last_attached() -> Attached | None:
    return _LAST[0] if _LAST else None


def quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _opened(catalog) -> tuple[object, dict[str, str], str | None]:
    """(the catalog, the read options naming it, its config-file name or None)."""
    if isinstance(catalog, os.PathLike) or isinstance(catalog, str) and _is_location(catalog):
        catalog = FileSystemCatalog(os.fspath(catalog))
    if isinstance(catalog, str):
        return tarn.load_catalog(catalog), {CATALOG: catalog}, catalog
    if isinstance(catalog, FileSystemCatalog):
        return catalog, {CATALOG_PREFIX + "warehouse": catalog.warehouse}, None
    options = getattr(catalog, "options", None)
    if not isinstance(options, dict) or not hasattr(catalog, "list_tables"):
        raise InvalidArgument(f"tarn.spark.attach takes a tarn catalog, a catalog name of the config file or a "
                              f"warehouse directory, got {type(catalog).__name__}")
    options = {str(k): str(v) for k, v in options.items()}
    options.setdefault("metastore", _METASTORES.get(type(catalog).__name__, "filesystem"))
    return catalog, {CATALOG_PREFIX + k: v for k, v in options.items()}, None


_METASTORES = {"JdbcCatalog": "jdbc", "RestCatalog": "rest"}


def _is_location(text: str) -> bool:
    return "://" in text or os.sep in text or os.path.isdir(text)
