"""Compaction of primary-key tables with `pk-clustering-override`, as Java Paimon 2.0's
ClusteringCompactManager does it: a bucket's files are level 0 (written, sorted by key) or level
1 (sorted by `clustering.columns`); batch reads skip level 0 and read level 1 with its deletion
vectors, never merging.

Each compaction:

1. every level-0 file, in sequence order, is sorted by the clustering columns (ascending, NULLs
   first; Java ignores `clustering.strategy` here) and written as level-1 files (COMPACT). Each
   key is looked up in the bucket's level-1 keys: deduplicate marks the older row deleted in the
   deletion vectors and writes the new one; first-row drops the new row. tarn writes no
   retractions into level 1 (a -D row deletes its key's older row and is dropped; Java keeps it
   and reads those files merged);
2. the level-1 files that existed before step 1 are merged where their clustering ranges
   overlap or they are small (sections below half of `target-file-size`; a full compaction
   merges all of them): read with their deletion vectors applied, sorted, written again.

A level-1 file's `_MIN_KEY`/`_MAX_KEY` hold the clustering columns of its first and last row,
not the primary key (Java's KeyValueClusteringFileWriter).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tarn.codec.binary_row import deserialize_row, serialize_row
from tarn.data.clustering import columns_and_strategy

from tarn.data.lookup import KeyCodec
from tarn.data.reader import FileReader
from tarn.data.writer import FileWriter, file_paths
from tarn.lsm.kv import DELETE, UPDATE_BEFORE, VALUE_KIND
from tarn.meta.manifest import COMPACT_SOURCE, DataFileMeta


def compact(writer, state, full: bool) -> None:
    """One clustering compaction of a bucket (the module docstring): `writer` a BucketWriter,
    `state` its BucketState (tarn/write/bucket_writer.py, which calls this)."""
    schema, options = writer.schema, writer.options
    columns, _ = columns_and_strategy(options, writer.name)
    first_row = (options.get("merge-engine") or "deduplicate").lower() == "first-row"
    level0 = sorted((m for m in state.files if m.level == 0), key=lambda m: (m.min_sequence_number, m.file_name))
    existing = [m for m in state.files if m.level > 0]
    groups = _merge_groups(existing, columns, schema, options.target_file_size(has_primary_key=True), full)
    if not level0 and not groups:
        return
    codec = KeyCodec(tuple(writer.layout.key_names), tuple(schema.field(k) for k in writer.layout.key_names))
    reader = FileReader(writer.file_io, schema, writer.schemas, options, deletions=state.deleted_rows)
    fields = list(schema.fields)
    index = _KeyIndex.of(reader, state, existing, codec)
    before: list[DataFileMeta] = []
    after: list[DataFileMeta] = []
    for meta in level0:
        rows = reader.read(state.path, meta, fields, with_system=True)
        rows = rows.take(_clustered(rows, columns))
        hits, files, positions = index.find(codec.encode(rows))
        retract = pc.is_in(rows.column(VALUE_KIND), pa.array([UPDATE_BEFORE, DELETE], pa.int8()))
        retract = retract.to_numpy(zero_copy_only=False)
        if first_row:
            keep = ~hits & ~retract
        else:
            for name in np.unique(files[hits & (files >= 0)]):
                chosen = hits & (files == name)
                state.vectors.mark(index.names[name], np.sort(positions[chosen]))
            keep = ~retract
            index.remove(hits)
        written = _write(writer, state, rows.filter(pa.array(keep)), columns, schema)
        for out in written:
            index.add(reader, state.path, out, codec)
        before.append(meta)
        after += written
    for group in groups:
        parts = [reader.read(state.path, m, fields, with_system=True) for m in group]
        rows = pa.concat_tables(parts)
        rows = rows.take(_clustered(rows, columns))
        written = _write(writer, state, rows, columns, schema)
        index.forget({m.file_name for m in group})
        for out in written:
            index.add(reader, state.path, out, codec)
        if state.vectors is not None:
            state.vectors.drop(m.file_name for m in group)
        before += group
        after += written
    for meta in state.apply_compaction(before, after):
        for path in file_paths(writer.file_io, state.path, meta):
            writer.file_io.delete(path)


def _clustered(rows: pa.Table, columns: list[str]) -> pa.Array:
    """Row order by the clustering columns, ascending, NULLs first (stable)."""
    return pc.sort_indices(rows, sort_keys=[(c, "ascending", "at_start") for c in columns])


def _write(writer, state, rows: pa.Table, columns: list[str], schema) -> list[DataFileMeta]:
    """Level-1 files of `rows` (sorted, with sequence and kind), keys replaced by the clustering
    columns of each file's first and last row."""
    if not rows.num_rows:
        return []
    metas = FileWriter(writer.file_io, state.path, schema, writer.options).write(rows, 1, COMPACT_SOURCE, None)
    types = [schema.field(c).type for c in columns]
    out, start = [], 0
    for meta in metas:
        first = [rows.column(c)[start].as_py() for c in columns]
        last = [rows.column(c)[start + meta.row_count - 1].as_py() for c in columns]
        out.append(replace(meta, min_key=serialize_row(first, types), max_key=serialize_row(last, types)))
        start += meta.row_count
    return out


def _merge_groups(files: list[DataFileMeta], columns: list[str], schema, target: int,
                  full: bool) -> list[list[DataFileMeta]]:
    """ClusteringFileRewriter.pickMergeCandidates (every file when `full`): files in clustering
    order of their first rows, sections of overlapping ranges; sections of two or more files or
    below half the target size gather until a section that is neither ends the group."""
    if len(files) < 2:
        return []
    if full:
        return [list(files)]
    types = [schema.field(c).type for c in columns]

    def bounds(meta: DataFileMeta) -> tuple:
        return _order(deserialize_row(meta.min_key, types)), _order(deserialize_row(meta.max_key, types))

    ranged = sorted(files, key=lambda m: bounds(m)[0])
    sections, current, high = [], [ranged[0]], bounds(ranged[0])[1]
    for meta in ranged[1:]:
        low, top = bounds(meta)
        if high >= low:
            current.append(meta)
            high = max(high, top)
        else:
            sections.append(current)
            current, high = [meta], top
    sections.append(current)
    groups, pending = [], []
    for section in sections:
        if len(section) >= 2 or sum(m.file_size for m in section) < target // 2:
            pending += section
            continue
        if len(pending) >= 2:
            groups.append(pending)
        pending = []
    if len(pending) >= 2:
        groups.append(pending)
    return groups


def _order(values: list) -> tuple:
    """A sort key for a row of clustering values: NULLs first, strings by UTF-8 bytes."""
    return tuple((0,) if v is None else (1, v.encode() if isinstance(v, str) else v) for v in values)


class _KeyIndex:
    """The bucket's level-1 keys: encoded key -> (file, row position) of its live row."""

    def __init__(self, keys: np.ndarray, files: np.ndarray, positions: np.ndarray, names: list[str]):
        self.keys, self.files, self.positions, self.names = keys, files, positions, names
        self._last = np.array([], dtype=np.int64)  # the index rows the last `find` hit (-1: none)

    @classmethod
    def of(cls, reader: FileReader, state, existing: list[DataFileMeta], codec: KeyCodec) -> "_KeyIndex":
        index = cls(np.array([], dtype=np.int64), np.array([], dtype=np.int64), np.array([], dtype=np.int64), [])
        for meta in existing:
            index.add(reader, state.path, meta, codec)
        return index

    def add(self, reader: FileReader, path: str, meta: DataFileMeta, codec: KeyCodec) -> None:
        keys = codec.encode(reader.read(path, meta, list(codec.fields), with_system=False, skip_deleted=False))
        positions = np.arange(len(keys), dtype=np.int64)
        gone = reader.deleted_rows(meta)
        if gone is not None:
            live = np.ones(len(keys), dtype=bool)
            live[np.asarray(gone, dtype=np.int64)] = False
            keys, positions = keys[live], positions[live]
        self.names.append(meta.file_name)
        number = len(self.names) - 1
        if len(self.keys) == 0:
            self.keys = keys
        else:
            self.keys = np.concatenate([self.keys, keys])
        self.files = np.concatenate([self.files, np.full(len(keys), number, dtype=np.int64)])
        self.positions = np.concatenate([self.positions, positions])
        self._sort()

    def _sort(self) -> None:
        order = np.argsort(self.keys, kind="stable")
        self.keys, self.files, self.positions = self.keys[order], self.files[order], self.positions[order]

    def find(self, probes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per probe: found?, its file number (-1) and position."""
        if len(self.keys) == 0 or len(probes) == 0:
            missing = np.zeros(len(probes), dtype=bool)
            self._last = np.full(len(probes), -1, dtype=np.int64)
            return missing, np.full(len(probes), -1, dtype=np.int64), np.zeros(len(probes), dtype=np.int64)
        at = np.searchsorted(self.keys, probes)
        clipped = np.minimum(at, len(self.keys) - 1)
        hit = (at < len(self.keys)) & (self.keys[clipped] == probes)
        self._last = np.where(hit, clipped, -1)
        return hit, np.where(hit, self.files[clipped], -1), np.where(hit, self.positions[clipped], 0)

    def remove(self, hits: np.ndarray) -> None:
        """Drop the entries the last `find` hit (their rows are deleted now)."""
        gone = self._last[hits]
        if len(gone):
            keep = np.ones(len(self.keys), dtype=bool)
            keep[gone] = False
            self.keys, self.files, self.positions = self.keys[keep], self.files[keep], self.positions[keep]

    def forget(self, file_names: set[str]) -> None:
        numbers = [i for i, n in enumerate(self.names) if n in file_names]
        keep = ~np.isin(self.files, numbers)
        self.keys, self.files, self.positions = self.keys[keep], self.files[keep], self.positions[keep]


__all__ = ["compact"]
