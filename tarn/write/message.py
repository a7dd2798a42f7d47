"""CommitMessage: what a writer hands to the committer (picklable; crosses Spark executor -> driver)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tarn import partition
from tarn.store.deletion_vectors import index_dir_of
from tarn.fs import join, parent
from tarn.meta.manifest import DELETION_VECTORS_INDEX, DataFileMeta, IndexManifestEntry
from tarn.meta.schema import TableSchema


@dataclass
class CommitMessage:
    partition: bytes  # serialized BinaryRow of the partition values
    bucket: int
    total_buckets: int
    new_files: list[DataFileMeta] = field(default_factory=list)
    compact_before: list[DataFileMeta] = field(default_factory=list)
    compact_after: list[DataFileMeta] = field(default_factory=list)
    changelog_files: list[DataFileMeta] = field(default_factory=list)  # input changelog of new files
    new_index_files: list[IndexManifestEntry] = field(default_factory=list)
    deleted_index_files: list[IndexManifestEntry] = field(default_factory=list)
    compact_changelog_files: list[DataFileMeta] = field(default_factory=list)  # changelog of compactions
    deleted_files: list[DataFileMeta] = field(default_factory=list)  # data files a rewrite replaces (copy-on-write)
    # deletion vectors that belong with the new rows (an append table's merge: old versions
    # marked, new ones added): committed in the APPEND snapshot, as Java's append tables do
    vectors_with_data: bool = False

    @property
    def is_empty(self) -> bool:
        return not (self.new_files or self.compact_before or self.compact_after
                    or self.changelog_files or self.new_index_files or self.deleted_index_files
                    or self.compact_changelog_files or self.deleted_files)

    def added_files(self) -> list[DataFileMeta]:
        """Every file this message adds: data, compaction outputs, changelog (an upgraded
        compaction output keeps the name of its input)."""
        return [*self.new_files, *self.compact_after, *self.changelog_files, *self.compact_changelog_files]

    def unreferenced_paths(self, root: str, schema: TableSchema, keep=frozenset()) -> list[str]:
        """The paths of the files this message added that no snapshot references: never a
        compaction input (an upgraded file keeps its name), never an index file the message
        also deletes (a live file added again unchanged), never a name in `keep`."""
        directory = partition.bucket_dir(root, schema, self.partition, self.bucket)
        new = {m.file_name for m in self.new_files}
        kept = ({m.file_name for m in self.compact_before} - new) | set(keep)
        out = [join(parent(meta.external_path) if meta.external_path else directory, name)
               for meta in self.added_files() if meta.file_name not in kept
               for name in (meta.file_name, *meta.extra_files)]  # a data file and its .index file
        unchanged = {e.file_name for e in self.deleted_index_files}  # added again as they were
        index_dir = index_dir_of(root, schema)
        out += [entry.external_path or join(index_dir(entry.partition, entry.bucket), entry.file_name)
                for entry in self.new_index_files if entry.file_name not in keep and entry.file_name not in unchanged]
        return out

    def append_part(self) -> "CommitMessage":
        """The new files, their changelog and index changes other than deletion vectors:
        committed as an APPEND snapshot."""
        if self.vectors_with_data:
            return replace(self, compact_before=[], compact_after=[], compact_changelog_files=[])
        return replace(self, compact_before=[], compact_after=[], compact_changelog_files=[],
                       new_index_files=[e for e in self.new_index_files if not _is_dv(e)],
                       deleted_index_files=[e for e in self.deleted_index_files if not _is_dv(e)])

    def compact_part(self) -> "CommitMessage":
        """The compaction changes, their changelog and the deletion-vector index changes (as
        Java commits them): committed after the append part as a COMPACT snapshot."""
        if self.vectors_with_data:
            return replace(self, new_files=[], changelog_files=[], deleted_files=[], new_index_files=[],
                           deleted_index_files=[])
        return replace(self, new_files=[], changelog_files=[], deleted_files=[],
                       new_index_files=[e for e in self.new_index_files if _is_dv(e)],
                       deleted_index_files=[e for e in self.deleted_index_files if _is_dv(e)])


def _is_dv(entry: IndexManifestEntry) -> bool:
    return entry.index_type == DELETION_VECTORS_INDEX
