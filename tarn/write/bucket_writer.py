"""The per-bucket LSM writer: a bucket's level-0 flushes (merged, sequence-numbered, with the
input changelog), its universal compaction after them, and the deletion vectors a compaction
marks. `TableWriter` (tarn/write/writer.py) buffers, routes rows to buckets and commits; this
module writes and compacts one bucket's files, held in its `BucketState`."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from tarn.data.record_expire import RecordExpire
from tarn.arrays import in_sorted
from tarn.data.layout import FileLayout
from tarn.data.lookup import KeyCodec, KeyLookup, sorted_unique
from tarn.data.reader import FileReader
from tarn.data.writer import FileWriter, file_paths
from tarn.errors import FileMissing
from tarn.fs import FileIO
from tarn.lsm.levels import Levels
from tarn.lsm.merge import (SEQUENCE, MergeSpec, drop_retracts, merge_sorted, merge_table, newest_wins_applies,
                            sort_indices)
from tarn.lsm.policy import (CompactUnit, PickState, drops_deletes, full_compaction_unit, num_levels, pick,
                             should_stop_writes)
from tarn.meta.manifest import DataFileMeta, IndexManifestEntry
from tarn.meta.schema import TableSchema
from tarn.options import Options
from tarn.write.assign import BucketHashes
from tarn.write import cluster_compact
from tarn.write.compact import FULL_COMPACTION, LOOKUP, BucketCompactor
from tarn.write.deletions import BucketVectors
from tarn.write.grouping import Group
from tarn.write.message import CommitMessage

log = logging.getLogger(__name__)


@dataclass
class BucketState:
    """One bucket as this writer sees it: live files, next sequence number, pending changes."""

    partition: bytes
    partition_values: tuple
    bucket: int
    path: str
    files: list[DataFileMeta]
    next_sequence: int
    new_files: list[DataFileMeta] = field(default_factory=list)
    compact_before: list[DataFileMeta] = field(default_factory=list)
    compact_after: list[DataFileMeta] = field(default_factory=list)
    changelog: list[DataFileMeta] = field(default_factory=list)  # input changelog of new files
    compact_changelog: list[DataFileMeta] = field(default_factory=list)
    pick_state: PickState = field(default_factory=PickState)
    vectors: BucketVectors | None = None  # deletion vectors (deletion-vectors.enabled)
    hashes: BucketHashes | None = None  # the bucket's HASH index (dynamic bucket mode)
    new_index: list[IndexManifestEntry] = field(default_factory=list)
    deleted_index: list[IndexManifestEntry] = field(default_factory=list)

    def deleted_rows(self, file_name: str):
        return self.vectors.of(file_name) if self.vectors is not None else None

    def add_new(self, metas: list[DataFileMeta]) -> None:
        self.new_files.extend(metas)
        self.files.extend(metas)
        if metas:
            self.next_sequence = max(self.next_sequence, max(m.max_sequence_number for m in metas) + 1)

    def apply_compaction(self, before: list[DataFileMeta], after: list[DataFileMeta]) -> list[str]:
        """Record a compaction as Java's MergeTreeWriter does: new files stay new (the APPEND
        snapshot adds them, so streaming readers see every write) and become compaction inputs
        (the COMPACT snapshot removes them). Returns the files that can be deleted right
        away: outputs of an earlier compaction of this writer, merged away unseen."""
        after_names = {m.file_name for m in after}
        gone = {(m.file_name, m.level) for m in before}
        pending = {(m.file_name, m.level) for m in self.compact_after}
        self.files = [m for m in self.files if (m.file_name, m.level) not in gone] + list(after)
        self.compact_after = [m for m in self.compact_after if (m.file_name, m.level) not in gone]
        doomed = []
        for meta in before:
            before_names = {m.file_name for m in self.compact_before}
            if (meta.file_name, meta.level) in pending:  # an output of this writer, compacted again
                if meta.file_name not in before_names and meta.file_name not in after_names:
                    doomed.append(meta)
            elif meta.file_name not in before_names:
                self.compact_before.append(meta)  # the COMPACT snapshot removes it
        self.compact_after.extend(after)
        return doomed

    def message(self, total_buckets: int) -> CommitMessage:
        return CommitMessage(self.partition, self.bucket, total_buckets, new_files=list(self.new_files),
                             compact_before=list(self.compact_before), compact_after=list(self.compact_after),
                             changelog_files=list(self.changelog),
                             compact_changelog_files=list(self.compact_changelog),
                             new_index_files=list(self.new_index), deleted_index_files=list(self.deleted_index))


class BucketWriter:
    """Writes and compacts the buckets of one table writer (the same schema, options and
    merge for every bucket; each call takes the bucket's `BucketState`)."""

    def __init__(self, file_io: FileIO, name: str, schema: TableSchema, options: Options, schemas, layout: FileLayout,
                 spec: MergeSpec, producer: str):
        self.file_io = file_io
        self.name = name
        self.schema = schema
        self.options = options
        self.schemas = schemas
        self.layout = layout
        self.spec = spec
        # `changelog-producer`: none, input, full-compaction or lookup (none when the table
        # writer produces no changelog)
        self.producer = producer

    def compact_after_flush(self, state: BucketState) -> None:
        """Universal compaction; past `num-sorted-run.stop-trigger` sorted runs, compact until
        below it (Java blocks writes on the same condition)."""
        if self.options.bool("pk-clustering-override"):  # Java's ClusteringCompactManager
            self.compact(state, full=False)
            return
        self.compact(state, full=False)
        for _ in range(3):
            if not should_stop_writes(self.runs(state), self.options):
                return
            self.compact(state, full=False)
        if should_stop_writes(self.runs(state), self.options):
            self.compact(state, full=True)

    def runs(self, state: BucketState):
        """The bucket's sorted runs."""
        key_types = [self.schema.field(k).type for k in self.layout.key_names]
        return Levels.from_files(state.files, num_levels(self.options), key_types).sorted_runs()

    def flush(self, group: Group, state: BucketState) -> None:
        """Write one group's rows (one bucket's, sorted by key) as a level-0 run of the bucket."""
        writer = FileWriter(self.file_io, state.path, self.schema, self.options)
        base = state.next_sequence
        spec = self.spec
        if self.layout.is_key_value and self.producer != "input" and newest_wins_applies(spec):
            # deduplicate: the newest row of each key is the merge; numbered in key order
            merged = group.last_of_each_key(list(self.layout.key_names))
            group.source = None  # the buffer is freed once every group has its rows, before encoding
            sequence = pa.array(np.arange(base, base + merged.num_rows, dtype=np.int64))
            state.add_new(writer.write(merged.append_column(SEQUENCE, sequence)))
            return
        rows = group.rows()
        group.source = None
        if not self.layout.is_key_value:
            # row tracking: each file numbered from 0, which the commit stamps with its snapshot id
            first = None if self.schema.shape.tracks_rows else base
            state.add_new(writer.write(rows, first_sequence=first))
            state.next_sequence = base + rows.num_rows
            return
        # Rows are sorted by key with arrival order kept among equal keys, which is the
        # order sequence numbers would give them. After the merge each key appears once,
        # so numbering the merged rows in key order (all above the bucket's previous
        # maximum) orders every key exactly as arrival-order numbering would. With an input
        # changelog the merged rows keep the numbers of the input rows they came from.
        count = rows.num_rows
        rows = rows.append_column(SEQUENCE, pa.array(np.arange(base, base + count, dtype=np.int64)))
        changelog = self._input_changelog(rows, spec, state) if self.producer == "input" else []
        try:
            merged = merge_sorted(rows, spec) if spec.plain_order else merge_table(rows, spec)
            if not changelog:
                sequence = pa.array(np.arange(base, base + merged.num_rows, dtype=np.int64))
                merged = merged.set_column(merged.schema.get_field_index(SEQUENCE), SEQUENCE, sequence)
            state.add_new(writer.write(merged))
        except BaseException:
            for meta in changelog:
                for path in file_paths(self.file_io, state.path, meta):
                    self.file_io.delete(path)
            raise
        state.changelog.extend(changelog)
        if changelog:  # every input row used a sequence number, as in Java
            state.next_sequence = max(state.next_sequence, base + count)

    def _input_changelog(self, rows: pa.Table, spec: MergeSpec, state: BucketState) -> list[DataFileMeta]:
        """`changelog-producer=input`: every buffered row as it came (row kind kept), in key
        then sequence order, into changelog files (Java's MergeTreeWriter flush). The merged
        data rows then keep the sequence number of the row they came from."""
        if spec.ignore_delete:  # Java drops ignored retractions before they reach the buffer
            rows = drop_retracts(rows)
        if not spec.plain_order and rows.num_rows:
            rows = rows.take(sort_indices(rows, spec))
        if rows.num_rows == 0:
            return []
        writer = FileWriter(self.file_io, state.path, self.schema, self.options, changelog=True)
        return writer.write(rows)

    def compact(self, state: BucketState, full: bool) -> None:
        if self.options.bool("pk-clustering-override"):
            cluster_compact.compact(self, state, full)
            return
        levels_count = num_levels(self.options)
        key_types = [self.schema.field(k).type for k in self.layout.key_names]
        levels = Levels.from_files(state.files, levels_count, key_types)
        runs = levels.sorted_runs()
        vectors = state.vectors
        record_expire = RecordExpire.of(self.schema, self.options, self.name)
        if full:
            with_vectors = [m.file_name for m in state.files if vectors is not None and vectors.of(m.file_name) is not None]
            if record_expire is not None:
                with_vectors += [m.file_name for m in state.files
                                 if record_expire.expired_file(m, self.schemas(m.schema_id))]
            unit = full_compaction_unit(runs, levels_count, files_to_rewrite=with_vectors)
        else:
            unit, state.pick_state = pick(levels_count, runs, self.options, state.pick_state)
            if unit is None and vectors is not None:
                unit = self._mostly_deleted(state)
        if unit is None or not unit.files:
            return
        drop_deletes = drops_deletes(unit, levels, vectors is not None)
        in_unit = {(m.file_name, m.level) for m in unit.files}
        other_runs = [(r.level, [m for m in r.run.files if (m.file_name, m.level) not in in_unit])
                      for r in runs]
        producer = self.producer if self.producer in (FULL_COMPACTION, LOOKUP) else None
        compactor = BucketCompactor(
            reader=FileReader(self.file_io, self.schema, self.schemas, self.options, deletions=state.deleted_rows),
            writer=FileWriter(self.file_io, state.path, self.schema, self.options),
            bucket_path=state.path, spec=self.spec, key_types=key_types,
            fields=list(self.schema.fields), min_file_size=self._compaction_file_size(),
            other_runs=[(level, files) for level, files in other_runs if files],
            changelog=producer, num_levels=levels_count, compare=self._changelog_compare(),
            changelog_writer=FileWriter(self.file_io, state.path, self.schema, self.options,
                                        changelog=True) if producer else None,
            rewrite_files=frozenset(m.file_name for m in state.files if full and vectors is not None
                                    and vectors.of(m.file_name) is not None),
            upgrade_lone_file=vectors is not None, record_expire=record_expire)
        try:
            result = compactor.run(unit, drop_deletes)
            if vectors is not None:
                self._update_vectors(state, compactor, unit, result)
        except FileMissing as exc:  # another job compacted the inputs away and expiry deleted them
            log.warning("table %s: compaction of bucket %s given up: %s", self.name, state.bucket, exc)
            return
        state.compact_changelog.extend(result.changelog)
        for meta in state.apply_compaction(result.before, result.after):
            for path in file_paths(self.file_io, state.path, meta):
                self.file_io.delete(path)

    def _mostly_deleted(self, state: BucketState) -> CompactUnit | None:
        """Files whose deleted share reached `compaction.delete-ratio-threshold`, each rewritten
        at its level without its deleted rows."""
        threshold = self.options.float("compaction.delete-ratio-threshold")
        doomed = [m for m in state.files if m.level > 0 and m.row_count
                  and state.vectors.deleted_count(m.file_name) / m.row_count >= threshold]
        if not doomed:
            return None
        return CompactUnit(max(m.level for m in doomed), tuple(doomed), file_rewrite=True)

    def _update_vectors(self, state: BucketState, compactor: BucketCompactor, unit: CompactUnit, result) -> None:
        """PIP rules a-c: a key reaching the upper levels only from level 0 marks its live
        older row (looked up in the levels above the output) deleted; the vectors of the files
        the compaction replaced go with them."""
        level0 = [m for m in unit.files if m.level == 0]
        if level0 and unit.output_level > 0:
            above = [(level, files) for level, files in compactor.other_runs if level > unit.output_level]
            if above:
                codec = KeyCodec(tuple(self.layout.key_names),
                                 tuple(self.schema.field(k) for k in self.layout.key_names))
                probes = self._level0_only_keys(compactor.reader, state.path, unit, codec)
                lookup = KeyLookup(compactor.reader, state.path, codec,
                                   self.options.memory_bytes("lookup.cache-max-memory-size"),
                                   self.options.memory_bytes("lookup.cache-max-disk-size"))
                for file_name, positions in lookup.find(probes, above, state.deleted_rows).items():
                    state.vectors.mark(file_name, positions)
        kept = {m.file_name for m in result.after}
        state.vectors.drop(m.file_name for m in result.before if m.file_name not in kept)

    @staticmethod
    def _level0_only_keys(reader: FileReader, path: str, unit: CompactUnit, codec: KeyCodec):
        """Encoded keys of the unit's level-0 files that no upper-level input holds."""
        fields = list(codec.fields)
        level0 = [codec.encode(reader.read(path, m, fields, with_system=False)) for m in unit.files if m.level == 0]
        keys = sorted_unique(np.concatenate(level0))
        upper = [codec.encode(reader.read(path, m, fields, with_system=False)) for m in unit.files if m.level > 0]
        if upper and len(keys):
            keys = _setdiff(keys, np.concatenate(upper))
        return keys

    def _changelog_compare(self) -> tuple | None:
        """The fields `changelog-producer.row-deduplicate` compares (None when it is off)."""
        if not self.options.bool("changelog-producer.row-deduplicate"):
            return None
        ignored = {name.strip() for name in self.options.list("changelog-producer.row-deduplicate-ignore-fields")}
        return tuple(f for f in self.schema.fields if f.name not in ignored)

    def _compaction_file_size(self) -> int:
        """Java's compactionFileSize: files below 70% of the target are rewritten, not upgraded."""
        return self.options.target_file_size(has_primary_key=True) // 10 * 7


def _setdiff(keys: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Sorted unique `keys` not in `other` (bytes columns of different widths compared alike)."""
    if keys.dtype.kind == "S" and keys.dtype != other.dtype:
        width = max(keys.dtype.itemsize, other.dtype.itemsize)
        keys, other = keys.astype(f"S{width}"), other.astype(f"S{width}")
    return keys[~in_sorted(keys, np.sort(other))]
