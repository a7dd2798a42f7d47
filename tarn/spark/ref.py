"""The one way the Spark connector opens a table, on the driver and in tasks.

`open_table(location, storage_options)` takes what a user or a task was given: a local path
(made absolute: tasks do not share the driver's working directory) or a URI (`s3://...`,
kept whole: a path without its scheme would be opened as a local one), with `$branch_<name>`
for a branch. What tasks receive is a table's `location` (TableContext.location), which keeps
the scheme.

A table of a catalog is named by its identifier (`db.table`) with catalog options among the
storage options: `catalog` (a name of the config file, ~/.tarn.yaml) and/or `catalog.<key>`
(Paimon's catalog options: `catalog.metastore`, `catalog.uri`, `catalog.token`, ...).
`for_tasks` turns them into what tasks receive: explicit options (tasks need no config file),
a JDBC catalog as the directory catalog of its warehouse (its tables live there; tasks never
get the database's password), a REST catalog with its uri and token (its tables commit
through the server wherever they are opened).
"""

from __future__ import annotations

import os

import tarn
from tarn import s3
from tarn.errors import InvalidArgument

CATALOG = "catalog"
CATALOG_PREFIX = "catalog."


def table_location(path: str, storage_options: dict | None = None) -> str:
    """`path` as tasks must receive it: absolute, or the URI as given, or a catalog's
    identifier when catalog options are given."""
    if "://" in path or catalog_options(storage_options) is not None:
        return path
    return os.path.abspath(path)


def open_table(location: str, storage_options: dict | None = None) -> "tarn.Table":
    """The table at `location` (a path or URI; see the module docstring), or the table of that
    identifier in the catalog the options name."""
    options = catalog_options(storage_options)
    if options is not None:
        return tarn.load_catalog(**options).load_table(identifier_of(location))
    return tarn.load_table(table_location(location), storage_options)


def identifier_of(location: str) -> str:
    """The identifier of a catalog's table from its identifier or its location
    (`<warehouse>/<db>.db/<table>[$branch_x]`, Paimon's layout: what tasks get as `location`)."""
    if "/" not in location:
        return location
    parts = location.rstrip("/").split("/")
    if len(parts) < 2 or not parts[-2].endswith(".db"):
        raise InvalidArgument(f"table location {location} is not <warehouse>/<database>.db/<table>, so no table of "
                              "a catalog: give its identifier (database.table)")
    return f"{parts[-2][:-3]}.{parts[-1]}"


def catalog_options(storage_options: dict | None) -> dict[str, str] | None:
    """The catalog options among storage options (the config file's entry for `catalog`, with
    `catalog.<key>` over it), None when there are none."""
    given = {str(k).lower(): str(v) for k, v in (storage_options or {}).items()}
    explicit = {k[len(CATALOG_PREFIX):]: v for k, v in given.items() if k.startswith(CATALOG_PREFIX)}
    if CATALOG not in given and not explicit:
        return None
    from tarn.catalog.loader import catalog_options as resolve

    options, _ = resolve(given.get(CATALOG), explicit)
    return options


def check_storage(storage_options: dict | None) -> dict[str, str]:
    """Storage options as plain strings: `s3.` keys checked (tarn/s3.py), catalog keys kept."""
    given = {str(k).lower(): v for k, v in (storage_options or {}).items() if v is not None}
    catalog = {k: str(v) for k, v in given.items() if k == CATALOG or k.startswith(CATALOG_PREFIX)}
    return s3.check_options({k: v for k, v in given.items() if k not in catalog}) | catalog


def for_tasks(storage_options: dict | None) -> dict[str, str] | None:
    """Storage options as tasks receive them: a named catalog resolved to explicit options, a
    JDBC catalog replaced by the directory catalog of its warehouse (see the module docstring)."""
    options = catalog_options(storage_options)
    plain = check_storage(storage_options)
    if options is None:
        return plain or None
    rest = {k: v for k, v in plain.items() if k != CATALOG and not k.startswith(CATALOG_PREFIX)}
    metastore = options.get("metastore", "filesystem").lower()
    if metastore == "jdbc":
        options = {k: v for k, v in options.items() if k == "warehouse" or k.startswith(("s3.", "fs."))}
    shipped = {k: v for k, v in options.items() if not k.startswith("jdbc.")}
    return rest | {CATALOG_PREFIX + k: v for k, v in shipped.items()}


def create_table(location: str, storage_options: dict | None, schema, primary_key: list[str],
                 partition_keys: list[str], options: dict[str, str], comment: str | None = None) -> "tarn.Table":
    """Create the table `location` names (a path or URI, or an identifier of the catalog the
    options name) and open it."""
    catalog = catalog_options(storage_options)
    if catalog is not None:  # as the directory catalog does, a missing database is created too
        opened = tarn.load_catalog(**catalog)
        identifier = identifier_of(location)
        opened.create_database(identifier.split("$")[0].rsplit(".", 1)[0] if "." in identifier else "default",
                               ignore_if_exists=True)
        return opened.create_table(identifier, schema, primary_key, partition_keys, options, comment)
    from tarn.catalog import create_table_at
    from tarn.fs import file_io_for

    file_io, root = file_io_for(location, check_storage(storage_options) or None)
    create_table_at(file_io, root, location, schema, primary_key, partition_keys, options, comment)
    return open_table(location, storage_options)


def drop_table(table: "tarn.Table", location: str, storage_options: dict | None) -> None:
    """Remove a table this connector created (a write that failed before its first commit)."""
    catalog = catalog_options(storage_options)
    if catalog is not None:
        tarn.load_catalog(**catalog).drop_table(location, ignore_if_missing=True)
    else:
        table.file_io.delete_dir(table.root)


def resolved(options: dict[str, str]) -> dict[str, str]:
    """Data source options with a named catalog replaced by what tasks receive (`for_tasks`):
    what the driver's helpers hand to `format("tarn")`, whose Python workers may not see the
    driver's config file."""
    catalog = {k: v for k, v in options.items() if k == CATALOG or k.startswith(CATALOG_PREFIX)}
    if not catalog:
        return options
    plain = {k: v for k, v in options.items() if k not in catalog}
    return plain | (for_tasks(catalog) or {})
