"""Orphan file removal (Paimon OrphanFilesClean / LocalOrphanFilesClean).

A file under the table is an orphan when no snapshot, tag or long-lived changelog of any branch
refers to it and it is older than the bound (files of writes still in flight are younger; the
bound may be any time, Paimon insists on one in the past). Looked at: `manifest/`, `index/`,
`statistics/`, the bucket directories (`<partition dirs>/bucket-*`), which every branch shares,
and, for main and each branch (`branch/branch-<name>/`), the non-snapshot files of `snapshot/`
(leftover temp files) and `changelog/`, and the temp files (`.<name>.<uuid>.tmp`) a killed
writer left in `tag/`, `schema/` and `consumer/`. Used files are matched by name, as Paimon
does; schema, snapshot, tag and consumer files themselves are never touched. As in Paimon, a
branch without a schema file stops the run (a branch being created, or a broken one).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from tarn import partition, paths
from tarn.errors import FileMissing, InvalidArgument
from tarn.fs import basename, is_temp_file, join
from tarn.ops.references import (TableFiles, branch_snapshots, delete_empty_dirs, delete_paths,
                                         referenced_names)
from tarn.store.branches import MAIN_BRANCH, Branch, all_branches

if TYPE_CHECKING:
    from tarn.store.context import TableContext

DEFAULT_AGE_MS = 24 * 3600 * 1000  # Paimon's default: files older than one day


def used_file_names(table: "TableContext", files: TableFiles | None = None) -> set[str]:
    """Names of every file a snapshot, tag or long-lived changelog of any branch (main
    included) refers to: metadata files, the data files some of them can read (with their
    extra files) and changelog files."""
    files = files or TableFiles(table)
    used: set[str] = set()
    for branch in all_branches(table.file_io, table.root, table.name):
        used |= referenced_names(files, *branch_snapshots(table.file_io, branch))
    return used


def check_branches(table: "TableContext") -> list[Branch]:
    """Every branch, main first; FileMissing when a branch has no schema file (Paimon's
    OrphanFilesClean refuses to run then: what such a branch uses cannot be trusted)."""
    branches = all_branches(table.file_io, table.root, table.name)
    broken = [b for b in branches if b.name != MAIN_BRANCH and not b.schemas.list_ids()]
    if broken:
        listed = ", ".join(f"'{b.name}' ({b.root})" for b in broken)
        raise FileMissing(f"table {table.name}: branch {listed} has no schema file; orphan file removal "
                          "stopped. A branch being created gets its schema last: retry later, or "
                          "check (or drop) the branch directory")
    return branches


def candidate_files(table: "TableContext", partition_depth: int, branches: list[Branch] | None = None) -> list:
    """FileInfo of every file orphan removal may delete."""
    io, root = table.file_io, table.root
    found = []
    for directory in (paths.MANIFEST_DIR, paths.INDEX_DIR, "statistics"):
        found += io.list_files(join(root, directory), recursive=False)
    for directory in _bucket_dirs(table, partition.data_root(root, table.schema()), partition_depth):
        found += io.list_files(directory, recursive=False)
    for branch in branches if branches is not None else all_branches(io, root, table.name):
        found += _metadata_leftovers(table, branch.root)
    return found


def _metadata_leftovers(table: "TableContext", branch_dir: str) -> list:
    """The non-snapshot files of a branch's `snapshot/` and `changelog/` directories, and the
    temp files in its `tag/`, `schema/` and `consumer/` directories."""
    io = table.file_io
    found = []
    for directory, prefix in ((paths.SNAPSHOT_DIR, paths.SNAPSHOT_PREFIX), (paths.CHANGELOG_DIR, "changelog-")):
        for info in io.list_files(join(branch_dir, directory), recursive=False):
            name = basename(info.path)
            if not name.startswith(prefix) and name not in (paths.LATEST, paths.EARLIEST):
                found.append(info)
    for directory in (paths.TAG_DIR, "schema", "consumer"):  # only the temp files a killed writer left
        found += [info for info in io.list_files(join(branch_dir, directory), recursive=False)
                  if is_temp_file(basename(info.path))]
    return found


def _bucket_dirs(table: "TableContext", directory: str, depth: int) -> list[str]:
    names = table.file_io.list_dir(directory)
    if depth == 0:
        return [join(directory, n) for n in names if n.startswith("bucket-")
                and table.file_io.is_dir(join(directory, n))]
    out = []
    for name in names:
        sub = join(directory, name)
        if "=" in name and table.file_io.is_dir(sub):
            out += _bucket_dirs(table, sub, depth - 1)
    return out


def remove_orphan_files(table: "TableContext", older_than: int | dt.datetime | None = None,
                        dry_run: bool = False) -> list[str]:
    """Delete (or, with `dry_run`, only list) the orphan files last modified before
    `older_than` (epoch millis, or a datetime; naive means local time; default: one day ago).
    Returns their paths, sorted."""
    orphans = find_orphan_files(table, older_than)
    if not dry_run:
        delete_orphan_files(table, orphans)
    return orphans


def find_orphan_files(table: "TableContext", older_than: int | dt.datetime | None = None) -> list[str]:
    """The sorted paths `remove_orphan_files` deletes; changes nothing."""
    if older_than is None:
        older_than_ms = int(time.time() * 1000) - DEFAULT_AGE_MS
    elif isinstance(older_than, dt.datetime):
        older_than_ms = int(older_than.timestamp() * 1000)
    elif isinstance(older_than, int) and not isinstance(older_than, bool):
        older_than_ms = older_than
    else:
        raise InvalidArgument(f"table {table.name}: older_than must be epoch millis or a datetime, "
                              f"got {older_than!r}")
    schema = table.schema()
    branches = check_branches(table)
    files = TableFiles(table, schema)
    used = used_file_names(table, files)
    return sorted(
        info.path for info in candidate_files(table, len(schema.partition_keys), branches)
        if basename(info.path) not in used
        and info.mtime_ns is not None and info.mtime_ns // 1_000_000 < older_than_ms
    )


def delete_orphan_files(table: "TableContext", orphans: list[str],
                        delete: Callable[[list[str]], object] | None = None) -> None:
    """Delete `orphans` with `delete(paths)` (default: from this process), then the bucket
    directories left empty."""
    if orphans:
        (delete or partial(delete_paths, table.file_io))(list(orphans))
    delete_empty_dirs(table.file_io, table.root, [p for p in orphans if "/bucket-" in p])
