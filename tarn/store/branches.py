"""Every branch of a table, as maintenance needs them: names and metadata roots.

A branch `b` keeps its own `snapshot/`, `schema/`, `tag/`, `changelog/` and `consumer/`
directories under `<table>/branch/branch-b/` (FORMAT.md section 1); its manifests, index files,
statistics and data files sit in the table's shared directories, next to main's. The branches
are the `branch-*` directories of `<table>/branch/` (Java's FileSystemBranchManager lists them
the same way). Nothing here creates or changes a branch.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow.fs as pafs

from tarn import paths
from tarn.fs import FileIO, basename, join
from tarn.store.schemas import SchemaStore, branch_root
from tarn.store.snapshots import SnapshotStore
from tarn.store.tags import TagStore

MAIN_BRANCH = "main"
BRANCH_DIR = "branch"
BRANCH_PREFIX = "branch-"


def branch_names(file_io: FileIO, table_root: str) -> list[str]:
    """Names of the table's branches other than main, sorted (directories `branch/branch-<name>`)."""
    names = []
    for info in file_io.entries(join(table_root, BRANCH_DIR)):
        entry = basename(info.path)
        name = entry[len(BRANCH_PREFIX):]
        if info.type == pafs.FileType.Directory and entry.startswith(BRANCH_PREFIX) and name:
            names.append(name)
    return sorted(names)


@dataclass(frozen=True)
class Branch:
    """The metadata stores of one branch (main included)."""

    name: str
    root: str  # the directory holding its snapshot/, schema/, tag/, changelog/
    snapshots: SnapshotStore
    tags: TagStore
    schemas: SchemaStore

    @property
    def changelog_dir(self) -> str:
        return join(self.root, paths.CHANGELOG_DIR)


def branch(file_io: FileIO, table_root: str, name: str, table_name: str = "") -> Branch:
    root = branch_root(table_root, name)
    label = table_name or table_root
    if name != MAIN_BRANCH:
        label = f"{label} (branch '{name}')"
    return Branch(name, root, SnapshotStore(file_io, root, label), TagStore(file_io, root, label),
                  SchemaStore(file_io, table_root, name))


def all_branches(file_io: FileIO, table_root: str, table_name: str = "") -> list[Branch]:
    """Main first, then every other branch by name."""
    return [branch(file_io, table_root, name, table_name)
            for name in [MAIN_BRANCH, *branch_names(file_io, table_root)]]
