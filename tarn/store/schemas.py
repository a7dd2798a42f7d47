"""Persist table schemas as `<table>/schema/schema-<id>` (one JSON file per schema version)."""

from __future__ import annotations

from typing import Iterable

from tarn.errors import CommitConflict, CorruptFile, FileMissing, SchemaEvolutionError, TableAlreadyExists
from tarn.fs import FileIO, join
from tarn.meta.schema import SchemaChange, TableSchema, apply_changes

SCHEMA_PREFIX = "schema-"


def branch_root(table_root: str, branch: str | None) -> str:
    """The directory holding a branch's metadata (the table root for the main branch)."""
    if branch is None or branch == "main":
        return table_root
    return join(table_root, "branch", f"branch-{branch}")


class SchemaStore:
    """Reads and creates the schema files of one table (branch)."""

    def __init__(self, file_io: FileIO, table_root: str, branch: str | None = None):
        self.file_io = file_io
        self.table_root = table_root
        self.schema_dir = join(branch_root(table_root, branch), "schema")

    def path(self, schema_id: int) -> str:
        return join(self.schema_dir, f"{SCHEMA_PREFIX}{schema_id}")

    def list_ids(self) -> list[int]:
        """Ids of every schema file, ascending (temp files and other names are ignored)."""
        ids = []
        for name in self.file_io.list_dir(self.schema_dir):
            suffix = name[len(SCHEMA_PREFIX):]
            if name.startswith(SCHEMA_PREFIX) and suffix.isdigit():
                ids.append(int(suffix))
        return sorted(ids)

    def get(self, schema_id: int) -> TableSchema:
        """The schema with this id; CorruptFile naming the file if it is missing or unreadable."""
        path = self.path(schema_id)
        try:
            data = self.file_io.read_bytes(path)
        except FileMissing:
            raise
        except OSError as e:
            raise CorruptFile(f"cannot read schema file {path}: {e}") from e
        schema = TableSchema.from_json(data, source=path)
        if schema.id != schema_id:
            raise CorruptFile(f"schema file {path} holds schema id {schema.id}")
        return schema

    def latest(self) -> TableSchema | None:
        """The schema with the highest id, or None for a table without schema files."""
        ids = self.list_ids()
        return self.get(ids[-1]) if ids else None

    def all(self) -> list[TableSchema]:
        return [self.get(i) for i in self.list_ids()]

    def create(self, schema: TableSchema) -> TableSchema:
        """Write the first schema of a new table; TableAlreadyExists if it has schema files."""
        if self.list_ids() or not self.file_io.write_if_absent(self.path(schema.id), schema.to_json().encode()):
            raise TableAlreadyExists(f"table at {self.table_root} already has a schema")
        return schema

    def commit(self, new_schema: TableSchema) -> TableSchema:
        """Create `schema-<id>`; CommitConflict if another writer created that id first."""
        if not self.file_io.write_if_absent(self.path(new_schema.id), new_schema.to_json().encode()):
            raise CommitConflict(f"schema file {self.path(new_schema.id)} already exists")
        return new_schema

    def alter(self, changes: Iterable[SchemaChange], max_attempts: int = 10) -> TableSchema:
        """Apply `changes` to the latest schema and commit it, retrying on concurrent ALTERs."""
        changes = list(changes)
        for _ in range(max_attempts):
            latest = self.latest()
            if latest is None:
                raise SchemaEvolutionError(f"table at {self.table_root} has no schema to alter")
            try:
                return self.commit(apply_changes(latest, changes))
            except CommitConflict:
                continue
        raise CommitConflict(f"schema of {self.table_root} changed concurrently {max_attempts} times")
