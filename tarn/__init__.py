"""tarn: the Apache Paimon table format in Python, on Arrow.

Entry points:

- `Catalog(warehouse)` opens a filesystem (or `s3://`) warehouse: `create_table`, `load_table`,
  `list_tables`, `drop_table`; `load_catalog(name, **options)` opens any catalog (directory,
  JDBC, REST) by Paimon's catalog options or by its name in `~/.tarn.yaml`.
- `load_table(path)` opens one table directory without a catalog (`load_table("db.t",
  catalog="prod")`: a table of a configured catalog); `create_table(path, schema, ...)` creates one.
- `Table.write(data)` / `Table.delete(...)` / `Table.update(set={...}, filter=...)` commit rows;
  `Table.scan(filter=col("x") > 1, columns=[...])`
  returns a `Scan` (`to_arrow`, `to_pandas`, `to_polars`, `to_duckdb`, `to_arrow_batch_reader`);
  `Table.alter(AddColumn(...), ...)` evolves the schema.
- `col(name)` builds filters; the `TarnError` subclasses below are every error tarn raises.
- `tarn.spark` (the `spark` extra) and the `tarn` command line (`cli` extra) are separate modules.

Guides: docs/index.md (one guide per feature) and docs/architecture.md.

`import tarn` loads only this module, `tarn.errors` and `tarn.lazy`; the classes and functions named in
`__all__` are imported on first use (so `python -c "import tarn"` costs little).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tarn.lazy import lazy_getattr
from tarn.version import __version__  # the one source: tarn/version.py (pyproject.toml reads it)

from tarn.errors import (
    CommitConflict, CorruptFile, FileMissing, InvalidArgument, InvalidFilter, InvalidOption, MissingDependency,
    SchemaEvolutionError, SchemaMismatch, SnapshotNotFound, TableAlreadyExists, TableNotFound, TarnError, UnsupportedFeature, OutcomeUnknown,
    StorageError,
)

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time `__getattr__` imports these on use
    from tarn.catalog import Catalog, create_table
    from tarn.catalog.loader import load_catalog, load_table
    from tarn.commit.result import CommitResult
    from tarn.progress import show_progress
    from tarn.commit.committer import Overwrite
    from tarn.meta.schema import (
        AddColumn, DropColumn, RemoveOption, RenameColumn, SetOption, UpdateColumnComment,
        UpdateColumnNullability, UpdateColumnType, UpdateComment,
    )
    from tarn.scan.predicate import col
    from tarn.table import Scan, Table


# name -> module that defines it, imported by `__getattr__` the first time the name is used
_LAZY = {
    "Catalog": "tarn.catalog", "create_table": "tarn.catalog", "load_catalog": "tarn.catalog.loader",
    "CommitResult": "tarn.commit.result",
    "show_progress": "tarn.progress",
    "Table": "tarn.table", "Scan": "tarn.table", "load_table": "tarn.catalog.loader",
    "col": "tarn.scan.predicate",
    "Overwrite": "tarn.commit.committer",
    **dict.fromkeys(
        ["AddColumn", "DropColumn", "RenameColumn", "UpdateColumnType", "UpdateColumnComment",
         "UpdateColumnNullability", "SetOption", "RemoveOption", "UpdateComment"],
        "tarn.meta.schema",
    ),
}

__all__ = [
    "Catalog", "load_catalog", "Table", "Scan", "load_table", "create_table", "CommitResult", "col", "Overwrite", "show_progress",
    "TarnError", "InvalidArgument", "SchemaMismatch", "InvalidOption", "TableNotFound", "TableAlreadyExists",
    "SnapshotNotFound", "CorruptFile", "FileMissing", "CommitConflict", "SchemaEvolutionError", "InvalidFilter",
    "MissingDependency", "UnsupportedFeature", "OutcomeUnknown", "StorageError",
    "AddColumn", "DropColumn", "RenameColumn", "UpdateColumnType", "UpdateColumnComment",
    "UpdateColumnNullability", "SetOption", "RemoveOption", "UpdateComment",
]


__getattr__ = lazy_getattr(__name__, _LAZY, globals())


# the submodules users import by name (the rest are tarn's own layers)
PUBLIC_MODULES = ["types", "variant", "spark"]


def __dir__() -> list[str]:
    """The public API: `__all__`, `__version__` and the public submodules."""
    return sorted([*__all__, "__version__", *PUBLIC_MODULES])
