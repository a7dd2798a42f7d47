"""Running a compaction unit of one bucket: merge its files into a sorted run at the output level.

Like Java's MergeTreeCompactTask: the unit's files are split into key-overlapping sections;
sections of several runs are rewritten (a streaming k-way merge through the merge engine, so
memory stays bounded), a section that is one run keeps its large files and only changes their
level ("upgrade"), small files are rewritten together with their neighbours.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pyarrow as pa

from tarn.lsm.intervals import partition_sections
from tarn.lsm.levels import SortedRun
from tarn.lsm.merge import MergeSpec, drop_retracts, keys_in, merge_table
from tarn.lsm.policy import CompactUnit
from tarn.lsm.stream_merge import merge_streams
from tarn.meta.manifest import DataFileMeta
from tarn.scan.reader import FileReader, oldest_first
from tarn.write.files import FILE_SOURCE_COMPACT, FileWriter


@dataclass
class CompactResult:
    before: list[DataFileMeta] = field(default_factory=list)
    after: list[DataFileMeta] = field(default_factory=list)


@dataclass
class BucketCompactor:
    """Compacts files of one bucket directory."""

    reader: FileReader
    writer: FileWriter
    bucket_path: str
    spec: MergeSpec
    key_types: list
    fields: list  # the current schema's fields: compaction rewrites every column
    min_file_size: int
    # first-row only: the bucket's other runs, (level, files); a key already held at a level
    # above the output is dropped from the output (Java's FirstRowMergeTreeCompactRewriter),
    # so each key lives in one file above level 0 and readers that skip merging stay right.
    other_runs: list = field(default_factory=list)

    @property
    def first_row(self) -> bool:
        return self.spec.engine == "first-row"

    def run(self, unit: CompactUnit, drop_deletes: bool) -> CompactResult:
        result = CompactResult()
        if unit.file_rewrite:
            for meta in unit.files:
                self._rewrite([[SortedRun((meta,))]], unit.output_level, drop_deletes, result)
            return result
        pending: list[list[SortedRun]] = []
        for section in partition_sections(list(unit.files), self.key_types):
            if len(section) > 1:
                pending.append(section)
                continue
            for meta in section[0].files:
                if meta.file_size < self.min_file_size or (self.first_row and meta.level == 0):
                    pending.append([SortedRun((meta,))])
                else:
                    self._rewrite(pending, unit.output_level, drop_deletes, result)
                    pending = []
                    self._upgrade(meta, unit.output_level, drop_deletes, result)
        self._rewrite(pending, unit.output_level, drop_deletes, result)
        return result

    def _upgrade(self, meta: DataFileMeta, level: int, drop_deletes: bool, result: CompactResult) -> None:
        if meta.level == level:
            return
        if drop_deletes and (meta.delete_row_count is None or meta.delete_row_count > 0):
            self._rewrite([[SortedRun((meta,))]], level, drop_deletes, result)
            return
        result.before.append(meta)
        result.after.append(replace(meta, level=level))

    def _rewrite(self, sections: list[list[SortedRun]], level: int, drop_deletes: bool,
                 result: CompactResult) -> None:
        runs = [run for section in sections for run in section]
        if not runs:
            return
        if len(runs) == 1 and len(runs[0].files) == 1 and runs[0].files[0].level == level and not drop_deletes:
            return
        streams = [self.reader.run_chunks(self.bucket_path, list(run.files), self.fields)
                   for run in oldest_first(runs)]

        higher = self._higher_keys(level) if self.first_row else []

        def merge(rows):
            merged = merge_table(rows, self.spec)
            merged = drop_retracts(merged) if drop_deletes else merged
            if higher:
                merged = merged.filter(~keys_in(merged.select(list(self.key_names)), higher))
            return merged

        chunks = merge_streams(streams, list(self.spec.key_columns), merge)
        result.before.extend(f for run in runs for f in run.files)
        result.after.extend(self.writer.write_stream(chunks, level, FILE_SOURCE_COMPACT))


    @property
    def key_names(self) -> list[str]:
        return list(self.spec.key_columns)

    def _higher_keys(self, output_level: int) -> list[pa.Table]:
        """Key columns of every run above the output level (each sorted, unique keys)."""
        key_fields = [f for f in self.fields if f.name in self.spec.key_columns]
        tables = []
        for level, files in self.other_runs:
            if level <= output_level:
                continue
            parts = [self.reader.read(self.bucket_path, meta, key_fields, with_system=False) for meta in files]
            if parts:
                tables.append(pa.concat_tables(parts).select(self.key_names))
        return tables
