"""Branches: create (empty or from a tag), delete, list, fast-forward, as Paimon's
FileSystemBranchManager does them.

A branch `b` is a second line of snapshots of the same table: its schemas, snapshots, tags,
changelogs and consumers live under `<table>/branch/branch-b/`, its manifests and data files in
the table's shared directories (tarn/store/branches.py). A `TableContext(..., branch="b")`
reads and writes it like any table.

- create, empty: every schema file of the current branch is copied (same ids); the first commit
  on the branch is snapshot 1.
- create from a tag: the tag file, then the tagged snapshot (main's file if it still exists,
  else one written from the tag), then schemas 0 .. the snapshot's schema id. The schema comes
  last: until it exists the branch cannot be opened (and orphan removal waits).
- delete: the branch directory only; files only the branch used are orphans for
  `remove_orphan_files`. A branch named by `scan.fallback-branch` / `scan.primary-branch` stays.
- fast_forward(b): the current branch drops its snapshots from b's earliest id on, the tags on
  them and the schemas from that snapshot's schema id on, then takes b's schemas, snapshots
  (oldest first) and tags. At every step the current branch reads as a prefix of one of the
  two histories; a crash leaves it readable and running fast_forward again finishes. Files
  only the dropped snapshots used become orphans, as in Paimon.

Names: Paimon refuses 'main', blank and all-digit names; tarn also refuses names no identifier
or path can address ('$', '/', '\\', NUL, leading or trailing blanks, '.' and '..').
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow.fs as pafs

from tarn import paths
from tarn.errors import FileMissing, InvalidArgument, SnapshotNotFound, TableNotFound
from tarn.fs import join
from tarn.meta.snapshot import Snapshot
from tarn.store.branches import BRANCH_DIR, MAIN_BRANCH, branch_names
from tarn.store.commit_point import check_writes_metadata
from tarn.store.schemas import SchemaStore, branch_root
from tarn.store.snapshots import SnapshotStore
from tarn.store.tags import TagStore

if TYPE_CHECKING:
    from tarn.store.context import TableContext

BRANCH_OPTIONS = ("scan.fallback-branch", "scan.primary-branch")


@dataclass(frozen=True)
class BranchInfo:
    """One branch other than main: its name and when its directory was made (local time)."""

    name: str
    create_time: dt.datetime | None


@dataclass(frozen=True)
class FastForward:
    """What `fast_forward` did to the branch it ran on."""

    branch: str  # the branch fast-forwarded to
    dropped_snapshots: tuple[int, ...]
    dropped_tags: tuple[str, ...]
    latest: Snapshot


def check_branch_name(name, table_name: str) -> str:
    """Paimon's rules for a new branch's name, and the characters no identifier can address."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument(f"table {table_name}: branch name {name!r} is blank")
    if name == MAIN_BRANCH:
        raise InvalidArgument(f"table {table_name}: branch name 'main' is the default branch and cannot be used")
    if name.isdigit():
        raise InvalidArgument(f"table {table_name}: branch name '{name}' is numeric; Paimon refuses pure "
                              "numeric branch names")
    if name != name.strip() or name in (".", "..") or any(c in name for c in "/\\\0$"):
        raise InvalidArgument(f"table {table_name}: branch name {name!r} cannot be addressed: it must not "
                              "contain '/', '\\', '$' or NUL, be '.' or '..', or start or end with blanks")
    return name


def branch_exists(table: "TableContext", name: str) -> bool:
    return name == MAIN_BRANCH or bool(SchemaStore(table.file_io, table.root, name).list_ids())


def _branch_dir(table: "TableContext", name: str) -> str:
    return branch_root(table.root, name)


def create_branch(table: "TableContext", name: str, from_tag: str | None = None,
                  ignore_if_exists: bool = False) -> bool:
    """Create branch `name` from the table's branch: empty (its schemas) or from tag `from_tag`
    (the tagged snapshot and the schemas up to its own). False when it existed and
    `ignore_if_exists`."""
    check_writes_metadata(table, "create_branch")
    if ignore_if_exists and isinstance(name, str) and name in branch_names(table.file_io, table.root):
        return False
    check_branch_name(name, table.name)
    if table.file_io.is_dir(_branch_dir(table, name)):
        raise InvalidArgument(f"table {table.name}: branch '{name}' already exists")
    io, target = table.file_io, _branch_dir(table, name)
    if from_tag is None:
        last_schema = table.schema_store.list_ids()[-1]
    else:
        tag = table.tag_store.get(from_tag)
        io.write_bytes(paths.tag_path(target, from_tag), io.read_bytes(table.tag_store.path(from_tag)))
        source = table.snapshot_store.path(tag.snapshot.id)
        try:
            snapshot_bytes = io.read_bytes(source)
        except FileMissing:
            snapshot_bytes = tag.snapshot.to_json().encode()  # expired on the branch it came from
        io.write_bytes(paths.snapshot_path(target, tag.snapshot.id), snapshot_bytes)
        last_schema = tag.snapshot.schema_id
    _copy_schemas(table, SchemaStore(io, table.root, name), last_schema)
    return True


def _copy_schemas(table: "TableContext", target: SchemaStore, last_id: int, first_id: int = 0) -> None:
    for schema_id in table.schema_store.list_ids():
        if first_id <= schema_id <= last_id:
            table.file_io.write_bytes(target.path(schema_id), table.file_io.read_bytes(table.schema_store.path(schema_id)))


def delete_branch(table: "TableContext", name: str) -> None:
    """Delete branch `name`'s directory (its snapshots, schemas, tags); its data files stay
    until orphan removal."""
    check_writes_metadata(table, "delete_branch")
    if name == MAIN_BRANCH or name == table.branch:
        raise InvalidArgument(f"table {table.name}: cannot delete the branch '{name}' the table is on")
    for key in BRANCH_OPTIONS:
        if table.schema().options.get(key) == name:
            raise InvalidArgument(f"table {table.name}: cannot delete branch '{name}': it is the table's "
                                  f"'{key}'; unset '{key}' first")
    if name not in branch_names(table.file_io, table.root):
        raise TableNotFound(f"table {table.name}: branch '{name}' does not exist "
                            f"(branches: {branch_names(table.file_io, table.root)})")
    table.file_io.delete_dir(_branch_dir(table, name))


def list_branches(table: "TableContext") -> list[BranchInfo]:
    """Every branch but main, by name."""
    out = []
    for name in branch_names(table.file_io, table.root):
        info = table.file_io.info(_branch_dir(table, name))
        if info.mtime_ns is None:  # object stores keep no directory times: the first schema's
            info = table.file_io.info(SchemaStore(table.file_io, table.root, name).path(0))
        out.append(BranchInfo(name, _local_millis(info)))
    return out


def _same_file(io, path: str, other: str) -> bool:
    """Do both files exist with the same bytes?"""
    try:
        return io.read_bytes(path) == io.read_bytes(other)
    except FileMissing:
        return False


def _local_millis(info: pafs.FileInfo) -> dt.datetime | None:
    """A file's modification time as local wall clock to the millisecond (Java's TIMESTAMP(3))."""
    if info.type == pafs.FileType.NotFound or info.mtime_ns is None:
        return None
    millis = info.mtime_ns // 1_000_000
    return dt.datetime.fromtimestamp(millis // 1000).replace(microsecond=millis % 1000 * 1000)


def fast_forward(table: "TableContext", name: str) -> FastForward:
    """Make the table's branch (usually main) hold branch `name`'s history from the branch's
    earliest snapshot on (Paimon's fast-forward)."""
    check_writes_metadata(table, "fast_forward")
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument(f"table {table.name}: branch name {name!r} is blank")
    if name == MAIN_BRANCH:
        raise InvalidArgument(f"table {table.name}: branch 'main' cannot be fast-forwarded to")
    if name == table.branch:
        raise InvalidArgument(f"table {table.name}: cannot fast-forward branch '{name}' to itself")
    if name not in branch_names(table.file_io, table.root):
        raise TableNotFound(f"table {table.name}: branch '{name}' does not exist")
    io, source_root = table.file_io, _branch_dir(table, name)
    source = SnapshotStore(io, source_root, f"{table.name} (branch '{name}')")
    source_ids = source.list_ids()
    if not source_ids:
        raise SnapshotNotFound(f"table {table.name}: branch '{name}' has no snapshot to fast-forward to")
    earliest = source_ids[0]
    first_schema = source.get(earliest).schema_id
    own = table.snapshot_store
    source_tags = TagStore(io, source_root)
    io.delete(join(own.dir, paths.LATEST))
    # the snapshot (and tag) the branch was made from is the same file on both: it stays
    dropped = [i for i in own.list_ids() if i >= earliest and not _same_file(io, own.path(i), source.path(i))]
    for snapshot_id in reversed(dropped):  # newest first: the branch stays a readable prefix
        own.delete(snapshot_id)
    dropped_tags = [t.name for t in table.tag_store.tags() if t.snapshot.id >= earliest
                    and not _same_file(io, table.tag_store.path(t.name), source_tags.path(t.name))]
    for tag in dropped_tags:
        table.tag_store.delete(tag)
    source_schemas = SchemaStore(io, table.root, name)
    wanted = set(source_schemas.list_ids())
    for schema_id in table.schema_store.list_ids():
        if schema_id >= first_schema and schema_id not in wanted:
            io.delete(table.schema_store.path(schema_id))
    for schema_id in sorted(wanted):
        if schema_id >= first_schema or not io.exists(table.schema_store.path(schema_id)):
            io.write_bytes(table.schema_store.path(schema_id), io.read_bytes(source_schemas.path(schema_id)))
    for snapshot_id in source_ids:
        if snapshot_id in dropped or not own.exists(snapshot_id):
            io.write_bytes(own.path(snapshot_id), io.read_bytes(source.path(snapshot_id)))
    for tag in source_tags.names():
        if not _same_file(io, table.tag_store.path(tag), source_tags.path(tag)):
            io.write_bytes(table.tag_store.path(tag), io.read_bytes(source_tags.path(tag)))
    if not any(i < earliest for i in own.list_ids()):
        own.write_hint(paths.EARLIEST, earliest)
    own.write_hint(paths.LATEST, source_ids[-1])
    table.forget_schemas()
    return FastForward(name, tuple(dropped), tuple(dropped_tags), own.get(source_ids[-1]))


__all__ = ["BRANCH_DIR", "BranchInfo", "FastForward", "branch_exists", "check_branch_name", "create_branch",
           "delete_branch", "fast_forward", "list_branches"]
