"""Running a compaction unit of one bucket: merge its files into a sorted run at the output level.

Like Java's MergeTreeCompactTask: the unit's files are split into key-overlapping sections;
sections of several runs are rewritten (a streaming k-way merge through the merge engine, so
memory stays bounded), a section that is one run keeps its large files and only changes their
level ("upgrade"), small files are rewritten together with their neighbours.

Lookup tables (`lookup_merge_applies`: changelog-producer=lookup, deletion vectors, force-lookup;
not first-row) keep each key's full merged value at every level above 0, as Java's
LookupMergeTreeCompactRewriter writes them: a rewrite consuming level-0 files merges each key's
level-0 rows with its high-level row, found among the inputs or, failing that, looked up in the
levels above the output (the first level holding the key); rows of deeper levels are ignored
(`merge_lookup_sorted`). Level-0 files are then rewritten, not upgraded, below the max level
(unless deduplicate without sequence fields, where the newest row is the merged value).

With a changelog producer the compactor also writes changelog files (`changelog-*`, level = the
output level, file source APPEND), computed in a second streaming pass over the unit's files
(`tarn.lsm.changelog`): `full-compaction` when the unit goes to the max level, `lookup` when it
consumes level-0 files (then the levels above the output are read too, for the keys' old values).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

import pyarrow as pa

from tarn.data.record_expire import RecordExpire
from tarn.data.reader import FileReader
from tarn.data.runs import LookupMerge, merge_runs
from tarn.data.writer import FileWriter, file_paths
from tarn.lsm.changelog import first_row_changelog, full_compaction_changelog, lookup_changelog
from tarn.lsm.intervals import partition_sections
from tarn.lsm.levels import SortedRun, key_order
from tarn.lsm.merge import MergeSpec, lookup_merge_applies, newest_wins_applies
from tarn.lsm.policy import CompactUnit
from tarn.lsm.stream_merge import merge_streams
from tarn.meta.manifest import APPEND_SOURCE, COMPACT_SOURCE, DataFileMeta

log = logging.getLogger(__name__)

FULL_COMPACTION, LOOKUP = "full-compaction", "lookup"  # changelog producers that compaction serves


@dataclass
class CompactResult:
    before: list[DataFileMeta] = field(default_factory=list)
    after: list[DataFileMeta] = field(default_factory=list)
    changelog: list[DataFileMeta] = field(default_factory=list)

    def written(self) -> list[DataFileMeta]:
        """Files this compaction wrote (not the upgraded ones, which keep their file)."""
        kept = {m.file_name for m in self.before}
        return [m for m in self.after if m.file_name not in kept] + self.changelog


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
    # the bucket's other runs, (level, files). first-row: a key already held at a level above
    # the output is dropped from the output (Java's FirstRowMergeTreeCompactRewriter), so each
    # key lives in one file above level 0 and readers that skip merging stay right. Lookup
    # changelog: the old values of the keys the unit changes are looked up there.
    other_runs: list = field(default_factory=list)
    # the changelog producer served here (FULL_COMPACTION, LOOKUP or None), the writer of its
    # files, the bucket's number of levels, and the fields row-deduplicate compares (None: off)
    changelog: str | None = None
    changelog_writer: FileWriter | None = None
    num_levels: int = 0
    compare: tuple | None = None
    # files rewritten even where they would keep their place (a full compaction of a table
    # with deletion vectors rewrites every file that has one)
    rewrite_files: frozenset = frozenset()
    # Java's MergeTreeCompactTask upgrades a unit's lone small file instead of rewriting it;
    # tarn does so for tables with deletion vectors (where every commit pushes its level-0 file
    # up), other tables keep rewriting it
    upgrade_lone_file: bool = False
    # record-level.expire-time: rows it expires are dropped as they are read, and a file whose
    # oldest row has expired is rewritten rather than moved up (tarn/data/record_expire.py)
    record_expire: RecordExpire | None = None

    @property
    def first_row(self) -> bool:
        return self.spec.engine == "first-row"

    @property
    def lookup(self) -> bool:
        """Java's LookupMergeFunction: levels above 0 hold each key's full merged value."""
        return lookup_merge_applies(self.spec)

    def run(self, unit: CompactUnit, drop_deletes: bool) -> CompactResult:
        result = CompactResult()
        try:
            self._compact(unit, drop_deletes, result)
            result.changelog = self._changelog(unit)
        except BaseException:
            for meta in result.written():
                for path in file_paths(self.writer.file_io, self.bucket_path, meta):  # with its .index file
                    self.writer.file_io.delete(path)
            raise
        _log_compaction(self.bucket_path, unit, result)
        return result

    def _compact(self, unit: CompactUnit, drop_deletes: bool, result: CompactResult) -> None:
        if unit.file_rewrite:
            for meta in unit.files:
                self._rewrite([[SortedRun((meta,))]], meta.level, drop_deletes, result, force=True)
            return
        pending: list[list[SortedRun]] = []
        for section in partition_sections(list(unit.files), self.key_types):
            if len(section) > 1:
                pending.append(section)
                continue
            for meta in section[0].files:
                if meta.file_size < self.min_file_size or (self.first_row and meta.level == 0):
                    pending.append([SortedRun((meta,))])
                else:
                    self._rewrite_pending(pending, unit.output_level, drop_deletes, result)
                    pending = []
                    self._upgrade(meta, unit.output_level, drop_deletes, result)
        self._rewrite_pending(pending, unit.output_level, drop_deletes, result)

    def _rewrite_pending(self, pending: list[list[SortedRun]], level: int, drop_deletes: bool,
                         result: CompactResult) -> None:
        """Java's MergeTreeCompactTask.rewrite: small files and overlapping sections are merged
        together, but a lone small file has nothing to merge with and is upgraded instead (its
        level changes, its bytes stay) where `_upgrade` allows it (`upgrade_lone_file`). (One already at the output
        level is left to `_rewrite`, which rewrites it only to drop its deletes.)"""
        lone = pending[0][0].files if self.upgrade_lone_file and len(pending) == 1 and len(pending[0]) == 1 else ()
        if len(lone) == 1 and (lone[0].level != level or lone[0].file_name in self.rewrite_files):
            self._upgrade(lone[0], level, drop_deletes, result)
            return
        self._rewrite(pending, level, drop_deletes, result)

    def _upgrade(self, meta: DataFileMeta, level: int, drop_deletes: bool, result: CompactResult) -> None:
        if meta.file_name in self.rewrite_files:
            self._rewrite([[SortedRun((meta,))]], level, True, result, force=True)
            return
        if self.record_expire is not None and self.record_expire.expired_file(meta, self.reader.schemas(meta.schema_id)):
            self._rewrite([[SortedRun((meta,))]], level, drop_deletes, result, force=True)
            return
        if meta.level == level:
            return
        if drop_deletes and (meta.delete_row_count is None or meta.delete_row_count > 0):
            self._rewrite([[SortedRun((meta,))]], level, drop_deletes, result)
            return
        if self._rewrites_level0(meta, level):  # Java's CHANGELOG_WITH_REWRITE keeps deletes
            self._rewrite([[SortedRun((meta,))]], level, False, result)
            return
        result.before.append(meta)
        result.after.append(replace(meta, level=level))

    def _rewrites_level0(self, meta: DataFileMeta, level: int) -> bool:
        """Java's lookup upgrade strategy: a level-0 file going below the max level is merged
        with the keys' high-level values (first-row: its keys already held above are dropped),
        unless the newest row is the merged value anyway (deduplicate, no sequence field)."""
        if not (self.lookup or self.first_row) or meta.level != 0 or level >= self.num_levels - 1:
            return False
        return not (self.spec.engine == "deduplicate" and not self.spec.sequence_columns)

    def _rewrite(self, sections: list[list[SortedRun]], level: int, drop_deletes: bool,
                 result: CompactResult, force: bool = False) -> None:
        """Merge the runs into new files at `level`; a lone file already there stays as it is
        unless it has rows to drop or `force`."""
        runs = [run for section in sections for run in section]
        if not runs:
            return
        if len(runs) == 1 and len(runs[0].files) == 1 and runs[0].files[0].level == level and not force:
            only = runs[0].files[0]
            if not drop_deletes or only.delete_row_count == 0:
                return
        higher = self._higher_keys(level) if self.first_row else []
        chunks = merge_runs(self.reader, self.bucket_path, runs, self.fields, self.spec,
                            self._lookup_merge(runs, level), drop_deletes=drop_deletes, drop_keys=higher,
                            keep=self.record_expire.keep if self.record_expire is not None else None)
        result.before.extend(f for run in runs for f in run.files)
        result.after.extend(self.writer.write_stream(chunks, level, COMPACT_SOURCE))

    def _lookup_merge(self, runs: list[SortedRun], level: int) -> LookupMerge | None:
        """Java's LookupMergeTreeCompactRewriter: with level-0 inputs (and an output above 0)
        every key is merged from its level-0 rows and its high-level row, looked up in the
        levels above the output when the inputs hold none; otherwise a key with several rows
        keeps its high-level row merged alone, a single row passes through. None: the merge
        engine alone (no lookup table, or the newest row already is the full value)."""
        if not self.lookup or newest_wins_applies(self.spec):
            return None
        level0 = [f for run in runs for f in run.files if f.level == 0]
        consumes_level0 = level > 0 and bool(level0)
        looked_up = self._runs_above(level, level0) if consumes_level0 else []
        return LookupMerge(every_key=consumes_level0, above=tuple(looked_up),
                           inputs_up_to=level if looked_up else None)

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

    # ------------------------------------------------------------------ changelog

    def _changelog(self, unit: CompactUnit) -> list[DataFileMeta]:
        """Changelog files of this unit (Java's ChangelogMergeTreeRewriter decides when)."""
        max_level = self.num_levels - 1
        if self.changelog == FULL_COMPACTION:
            if unit.output_level != max_level or all(m.level == max_level for m in unit.files):
                return []
            looked_up = []

            def diff(rows):
                return full_compaction_changelog(rows, self.spec, max_level, self.compare)
        elif self.changelog == LOOKUP:
            level0 = [m for m in unit.files if m.level == 0]
            if unit.output_level == 0 or not level0:
                return []
            looked_up = self._runs_above(unit.output_level, level0)

            def diff(rows):
                if self.first_row:
                    return first_row_changelog(rows, self.spec)
                return lookup_changelog(rows, self.spec, self.compare)
        else:
            return []
        runs = self._level_runs(list(unit.files)) + looked_up
        streams = [self.reader.run_chunks(self.bucket_path, files, self.fields, with_level=True)
                   for _, files in runs]
        chunks = merge_streams(streams, list(self.spec.key_columns), diff)
        return self.changelog_writer.write_stream(chunks, unit.output_level, APPEND_SOURCE)

    def _level_runs(self, files: list[DataFileMeta]) -> list[tuple[int, list[DataFileMeta]]]:
        """(level, files in key order) sorted runs, oldest first: high levels, then level 0."""
        order = key_order(self.key_types)
        levels = sorted({m.level for m in files if m.level > 0}, reverse=True)
        runs = [(level, sorted((m for m in files if m.level == level), key=lambda m: order(m.min_key)))
                for level in levels]
        level0 = sorted((m for m in files if m.level == 0), key=lambda m: m.max_sequence_number)
        return runs + [(0, [m]) for m in level0]

    def _runs_above(self, output_level: int, level0: list[DataFileMeta]) -> list[tuple[int, list]]:
        """The files of the levels above the output whose key range meets the level-0 files'
        (where a lookup finds the old values of the keys the compaction changes), deepest
        level first."""
        order = key_order(self.key_types)
        low = min(order(m.min_key) for m in level0)
        high = max(order(m.max_key) for m in level0)
        runs = []
        for level, files in sorted(self.other_runs, key=lambda run: -run[0]):
            if level <= output_level:
                continue
            hits = [m for m in files if order(m.max_key) >= low and order(m.min_key) <= high]
            if hits:
                runs.append((level, sorted(hits, key=lambda m: order(m.min_key))))
        return runs


def _log_compaction(bucket_path: str, unit: CompactUnit, result: CompactResult) -> None:
    """The debug record of one compaction: files in (by level), files written and moved up a level."""
    if not log.isEnabledFor(logging.DEBUG):
        return
    written = len(result.written()) - len(result.changelog)
    levels = sorted({m.level for m in unit.files})
    log.debug("%s: compacted %d files of levels %s into level %d: %d files written, %d moved up, "
              "%d changelog files", bucket_path, len(unit.files), levels, unit.output_level, written,
              len(result.after) - written, len(result.changelog))
