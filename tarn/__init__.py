"""tarn: the Apache Paimon table format in Python, on Arrow."""

from tarn.catalog import Catalog
from tarn.commit.committer import Overwrite
from tarn.errors import (
    CommitConflict, CorruptFile, FileMissing, InvalidArgument, InvalidFilter, InvalidOption, MissingDependency,
    SchemaEvolutionError, SchemaMismatch, SnapshotNotFound, TableAlreadyExists, TableNotFound, TarnError,
)
from tarn.meta.schema import (
    AddColumn, DropColumn, RemoveOption, RenameColumn, SetOption, UpdateColumnComment,
    UpdateColumnNullability, UpdateColumnType, UpdateComment,
)
from tarn.scan.predicate import col
from tarn.table import Scan, Table, load_table

__all__ = [
    "Catalog", "Table", "Scan", "load_table", "col", "Overwrite",
    "TarnError", "InvalidArgument", "SchemaMismatch", "InvalidOption", "TableNotFound", "TableAlreadyExists",
    "SnapshotNotFound", "CorruptFile", "FileMissing", "CommitConflict", "SchemaEvolutionError", "InvalidFilter",
    "MissingDependency",
    "AddColumn", "DropColumn", "RenameColumn", "UpdateColumnType", "UpdateColumnComment",
    "UpdateColumnNullability", "SetOption", "RemoveOption", "UpdateComment",
]
