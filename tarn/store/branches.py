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
from tarn.errors import InvalidArgument
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


BRANCH_MARK = "branch_"  # `t$branch_dev`: table t on branch dev (Paimon's Identifier)


def split_object_name(name: str) -> tuple[str, str, str | None]:
    """Paimon's object names: `t` -> (t, main, None), `t$branch_dev` -> (t, dev, None),
    `t$snapshots` -> (t, main, snapshots), `t$branch_dev$snapshots` -> (t, dev, snapshots).
    ValueError for other forms (more '$' parts, or three parts without a branch)."""
    parts = name.split("$")
    if len(parts) == 1:
        return name, MAIN_BRANCH, None
    if len(parts) == 2:
        if parts[1].startswith(BRANCH_MARK):
            return parts[0], parts[1][len(BRANCH_MARK):] or MAIN_BRANCH, None
        return parts[0], MAIN_BRANCH, parts[1]
    if len(parts) == 3 and parts[1].startswith(BRANCH_MARK):
        return parts[0], parts[1][len(BRANCH_MARK):] or MAIN_BRANCH, parts[2]
    raise ValueError(f"'{name}' is not 'table', 'table$branch_<name>', 'table$<system table>' or "
                     "'table$branch_<name>$<system table>'")


def branch_of(name: str, what: str) -> tuple[str, str]:
    """`t$branch_dev` -> (`t`, 'dev'), `t` -> (`t`, 'main'); InvalidArgument naming `what` for
    a system table (opened with `table.system_table(name)`) or a malformed name."""
    try:
        table, branch, system = split_object_name(name)
    except ValueError as exc:
        raise InvalidArgument(f"{what}: {exc}") from None
    if system is not None:
        raise InvalidArgument(f"{what}: '${system}' names a system table; open the table and call "
                              f"table.system_table('{system}')")
    return table, branch
