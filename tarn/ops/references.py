"""What a snapshot (or tag) refers to: its metadata files and its data files, with each
manifest and manifest list read at most once per `TableFiles` instance.

Data files are identified as Paimon's deletion code does, by (partition, bucket, file name):
a compaction that only moves a file to another level DELETEs and re-ADDs the same file, which
must never delete it.

Branches share the table's manifest, index, statistics and data directories with main
(tarn.store.branches). `branch_references` names every file the other branches' snapshots,
tags and long-lived changelogs reach; every maintenance path that deletes files leaves those
alone (`BranchReferences.keep_out`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

from tarn import progress
from tarn import partition as partitions
from tarn import paths
from tarn.errors import CorruptFile, FileMissing
from tarn.fs import FileIO, basename, join, parent
from tarn.meta.manifest import ADD, DELETE, IndexManifestEntry, ManifestEntry, ManifestFileMeta
from tarn.meta.snapshot import Snapshot
from tarn.store.branches import Branch, all_branches, branch_names

if TYPE_CHECKING:
    from tarn.store.context import TableContext

FileKey = tuple[bytes, int, str]  # (partition, bucket, file name)

STATISTICS_DIR = "statistics"


def file_key(entry: ManifestEntry) -> FileKey:
    return (entry.partition, entry.bucket, entry.file.file_name)


@dataclass
class TableFiles:
    """Reads a table's manifests once each and maps entries to paths."""

    table: "TableContext"
    schema: object = None
    manifests: object = None
    manifest_reads: int = 0
    _lists: dict[str, list[ManifestFileMeta]] = field(default_factory=dict)
    _entries: dict[str, list[ManifestEntry]] = field(default_factory=dict)
    _index: dict[str, list[IndexManifestEntry]] = field(default_factory=dict)
    _bucket_dirs: dict[tuple[bytes, int], str] = field(default_factory=dict)

    def __post_init__(self):
        self.schema = self.schema or self.table.schema()
        self.manifests = self.manifests or self.table.manifests(self.schema)
        self.options = self.schema.shape.options

    @property
    def file_io(self) -> FileIO:
        return self.table.file_io

    @property
    def root(self) -> str:
        return self.table.root

    # ------------------------------------------------------------------ cached reads

    def manifest_list(self, name: str | None, missing_ok: bool = False) -> list[ManifestFileMeta]:
        if name is None:
            return []
        if name not in self._lists:
            try:
                self._lists[name] = self.manifests.read_manifest_list(name)
            except (CorruptFile, FileMissing):
                if not missing_ok or self.file_io.exists(self.manifests.path(name)):
                    raise
                return []
        return self._lists[name]

    def manifest(self, name: str, missing_ok: bool = False) -> list[ManifestEntry]:
        if name not in self._entries:
            try:
                self._entries[name] = self.manifests.read_manifest(name)
                self.manifest_reads += 1
            except (CorruptFile, FileMissing):
                if not missing_ok or self.file_io.exists(self.manifests.path(name)):
                    raise
                return []
        return self._entries[name]

    def index_manifest(self, name: str | None, missing_ok: bool = False) -> list[IndexManifestEntry]:
        if name is None:
            return []
        if name not in self._index:
            try:
                self._index[name] = self.manifests.read_index_manifest(name)
            except (CorruptFile, FileMissing):
                if not missing_ok or self.file_io.exists(self.manifests.path(name)):
                    raise
                return []
        return self._index[name]

    # ------------------------------------------------------------------ snapshot contents

    def data_manifests(self, snapshot: Snapshot, missing_ok: bool = False) -> list[ManifestFileMeta]:
        return (self.manifest_list(snapshot.base_manifest_list, missing_ok)
                + self.manifest_list(snapshot.delta_manifest_list, missing_ok))

    def live_files(self, snapshot: Snapshot | None, missing_ok: bool = False) -> dict[FileKey, ManifestEntry]:
        """The data files a snapshot holds, by (partition, bucket, name)."""
        if snapshot is None:
            return {}
        entries = [e for m in self.data_manifests(snapshot, missing_ok)
                   for e in self.manifest(m.file_name, missing_ok)]
        live = self.manifests.merge_live(entries)
        return {file_key(e): e for e in live}

    def deleted_in_delta(self, snapshot: Snapshot) -> dict[FileKey, ManifestEntry]:
        """Files a snapshot's delta removes for good: DELETE entries not re-ADDed (by name) after."""
        doomed: dict[FileKey, ManifestEntry] = {}
        for meta in self.manifest_list(snapshot.delta_manifest_list, missing_ok=True):
            for entry in self.manifest(meta.file_name, missing_ok=True):
                if entry.kind == ADD:
                    doomed.pop(file_key(entry), None)
                elif entry.kind == DELETE:
                    doomed[file_key(entry)] = entry
        return doomed

    def added_in_delta(self, snapshot: Snapshot) -> dict[FileKey, ManifestEntry]:
        added: dict[FileKey, ManifestEntry] = {}
        for meta in self.manifest_list(snapshot.delta_manifest_list, missing_ok=True):
            for entry in self.manifest(meta.file_name, missing_ok=True):
                if entry.kind == ADD:
                    added[file_key(entry)] = entry
        return added

    def changelog_files(self, snapshot: Snapshot) -> list[ManifestEntry]:
        return [e for m in self.manifest_list(snapshot.changelog_manifest_list, missing_ok=True)
                for e in self.manifest(m.file_name, missing_ok=True) if e.kind == ADD]

    def data_manifest_names(self, snapshot: Snapshot) -> set[str]:
        """The base and delta manifest lists of a snapshot and their manifests."""
        names = {snapshot.base_manifest_list, snapshot.delta_manifest_list}
        names.update(m.file_name for m in self.data_manifests(snapshot, missing_ok=True))
        return names

    def metadata_names(self, snapshot: Snapshot, changelog: bool = False,
                       missing_ok: bool = False) -> list[str]:
        """Manifest lists, manifests, index manifest, index files and statistics file names."""
        names: list[str] = []
        lists = [snapshot.base_manifest_list, snapshot.delta_manifest_list]
        if changelog and snapshot.changelog_manifest_list:
            lists.append(snapshot.changelog_manifest_list)
        for list_name in lists:
            names.append(list_name)
            names.extend(m.file_name for m in self.manifest_list(list_name, missing_ok))
        if snapshot.index_manifest:
            names.append(snapshot.index_manifest)
            names.extend(e.file_name for e in self.index_manifest(snapshot.index_manifest, missing_ok))
        if snapshot.statistics:
            names.append(snapshot.statistics)
        return names

    # ------------------------------------------------------------------ paths

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        key = (partition, bucket)
        if key not in self._bucket_dirs:
            values = partitions.from_bytes(self.schema, partition)
            self._bucket_dirs[key] = partitions.bucket_path(
                self.root, self.schema, self.options.get("partition.default-name"), values, bucket)
        return self._bucket_dirs[key]

    def data_paths(self, entry: ManifestEntry) -> list[str]:
        """The data file and its extra files (they sit beside it)."""
        f = entry.file
        main = self.file_io.native(f.external_path) if f.external_path else \
            join(self.bucket_dir(entry.partition, entry.bucket), f.file_name)
        directory = parent(main)
        return [main, *(join(directory, extra) for extra in f.extra_files)]

    def index_path(self, entry: IndexManifestEntry) -> str:
        if entry.external_path:
            return self.file_io.native(entry.external_path)
        if self.options.bool("index-file-in-data-file-dir"):
            return join(self.bucket_dir(entry.partition, entry.bucket), entry.file_name)
        return join(self.root, paths.INDEX_DIR, entry.file_name)

    def metadata_paths(self, snapshot: Snapshot, names: set[str]) -> list[str]:
        """Paths of those of the snapshot's metadata files whose names are in `names`."""
        out = []
        index_entries = {e.file_name: e for e in self.index_manifest(snapshot.index_manifest, True)}
        for name in names:
            if name in index_entries:
                out.append(self.index_path(index_entries[name]))
            elif name == snapshot.statistics:
                out.append(join(self.root, STATISTICS_DIR, name))
            else:
                out.append(self.manifests.path(name))
        return out


# ---------------------------------------------------------------------------------------------
# branches


def branch_snapshots(file_io: FileIO, branch: Branch) -> tuple[list[Snapshot], list[Snapshot]]:
    """(a branch's snapshots by id, its tag and long-lived changelog snapshots); files deleted
    while listing (a concurrent expiry) are skipped."""
    snapshots = [s for s in (branch.snapshots.find(i) for i in branch.snapshots.list_ids()) if s is not None]
    others = branch.tags.tagged_snapshots()
    for i in paths.ids_with_prefix(file_io.list_dir(branch.changelog_dir), "changelog-"):
        path = join(branch.changelog_dir, f"changelog-{i}")
        try:
            others.append(Snapshot.from_json(file_io.read_bytes(path), path))
        except FileMissing:
            continue
    return snapshots, others


def referenced_names(files: TableFiles, snapshots: list[Snapshot], others: list[Snapshot]) -> set[str]:
    """Names of every file `snapshots` (one branch's, by id) and `others` (tags, long-lived
    changelogs) refer to: manifest lists, manifests, index manifests, index files, statistics,
    the data files some of them can read with their extra files, and changelog files.

    Paimon also counts files named only by DELETE entries; tarn does not: no snapshot kept
    reads them. The live files of consecutive snapshots are the first one's plus what each later delta
    adds, so every manifest is read once."""
    used: set[str] = set()
    entries = []
    previous = None
    for snapshot in snapshots:
        if previous is not None and previous == snapshot.id - 1:
            entries.extend(files.added_in_delta(snapshot).values())
        else:
            entries.extend(files.live_files(snapshot, missing_ok=True).values())
        previous = snapshot.id
    for snapshot in others:
        entries.extend(files.live_files(snapshot, missing_ok=True).values())
    for snapshot in [*snapshots, *others]:
        used.update(files.metadata_names(snapshot, changelog=True, missing_ok=True))
        entries.extend(files.changelog_files(snapshot))
    for entry in entries:
        used.add(entry.file.file_name)
        used.update(entry.file.extra_files)
    return used


def other_branches(table: "TableContext") -> list[Branch]:
    """Every branch of the table but the one `table` reads and writes (main for a Table)."""
    own = table.snapshot_store.root.rstrip("/")
    return [b for b in all_branches(table.file_io, table.root, table.name) if b.root.rstrip("/") != own]


@dataclass(frozen=True)
class BranchReferences:
    """The files other branches still use, by name, and the branches seen when they were read."""

    names: frozenset[str] = frozenset()
    branches: tuple[str, ...] = ()

    def keep_out(self, paths_to_delete: Iterable[str]) -> list[str]:
        """`paths_to_delete` without the files a branch uses."""
        if not self.names:
            return list(paths_to_delete)
        return [p for p in paths_to_delete if basename(p) not in self.names]


def branch_references(table: "TableContext", files: TableFiles | None = None) -> BranchReferences:
    """What the other branches' snapshots, tags and long-lived changelogs refer to. Manifests
    shared with main are read once through `files`."""
    seen = tuple(branch_names(table.file_io, table.root))
    others = other_branches(table)
    if not others:
        return BranchReferences(branches=seen)
    files = files or TableFiles(table)
    names: set[str] = set()
    for branch in others:
        names |= referenced_names(files, *branch_snapshots(table.file_io, branch))
    return BranchReferences(frozenset(names), seen)


def branched_since(table: "TableContext", seen: tuple[str, ...]) -> bool:
    """Has a branch appeared since `seen` was listed (one created while files were planned)?"""
    return bool(set(branch_names(table.file_io, table.root)) - set(seen))


def delete_paths(file_io: FileIO, paths_to_delete: Iterable[str]) -> int:
    """Delete files (missing ones are fine), in parallel when there are many."""
    unique = list(dict.fromkeys(paths_to_delete))
    if len(unique) < 64:
        for path in unique:
            file_io.delete(path)
    else:
        with progress.task(f"deleting {len(unique):,} files", total=len(unique)) as bar, \
                ThreadPoolExecutor(max_workers=8) as pool:
            for _ in pool.map(file_io.delete, unique):
                bar.advance()
    return len(unique)


def delete_empty_dirs(file_io: FileIO, root: str, deleted: Iterable[str]) -> None:
    """Remove the now-empty directories that held `deleted` files, up to (not incl.) `root`."""
    dirs = {parent(p) for p in deleted}
    while dirs:
        next_dirs = set()
        for directory in sorted(dirs, key=len, reverse=True):
            if not directory.startswith(root + "/") or not file_io.is_dir(directory):
                continue
            if file_io.list_dir(directory):
                continue
            file_io.delete_dir(directory)
            next_dirs.add(parent(directory))
        dirs = next_dirs
