"""CommitMessage: what a writer hands to the committer (picklable; crosses Spark executor -> driver)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tarn.meta.manifest import DataFileMeta, IndexManifestEntry


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

    @property
    def is_empty(self) -> bool:
        return not (self.new_files or self.compact_before or self.compact_after
                    or self.changelog_files or self.new_index_files or self.deleted_index_files
                    or self.compact_changelog_files)

    def added_files(self) -> list[DataFileMeta]:
        """Every file this message adds: data, compaction outputs, changelog (an upgraded
        compaction output keeps the name of its input)."""
        return [*self.new_files, *self.compact_after, *self.changelog_files, *self.compact_changelog_files]

    def append_part(self) -> "CommitMessage":
        """The new files, their changelog and index changes: committed as an APPEND snapshot."""
        return replace(self, compact_before=[], compact_after=[], compact_changelog_files=[])

    def compact_part(self) -> "CommitMessage":
        """The compaction changes and their changelog: committed after the append part as a
        COMPACT snapshot."""
        return replace(self, new_files=[], changelog_files=[], new_index_files=[], deleted_index_files=[])
