"""Many small splits read as one: their files by one Arrow scan per schema, each file's
surviving rows found from its key and row-kind columns alone, then one filter for all of them.

A table of many small buckets (a partitioned table, a few buckets per partition) costs Python
little this way: per file only a few numpy calls on its keys, never a table operation."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from tarn.arrays import filter_rows
from tarn.data.layout import VALUE_KIND_FIELD
from tarn.data.reader import keep_mask
from tarn.lsm.kv import DELETE, UPDATE_BEFORE, VALUE_KIND
from tarn.lsm.merge import NewerKeys
from tarn.meta.manifest import DataFileMeta
from tarn.scan.planner import Split

# splits are read together when their files number at least MIN_FILES, average at most
# FILE_ROWS rows and hold at most MAX_ROWS rows in all
MIN_FILES, FILE_ROWS, MAX_ROWS = 8, 200_000, 8_000_000


def read_together(reader, splits: list[Split]) -> tuple[list[pa.Table], list[Split]]:
    """The rows of the splits read together by `reader` (a SplitReader; one table per scan)
    and the splits left to read one by one: those that need a merge beyond newest-wins, or
    have a file the scan could not take."""
    plain = [s for s in splits if reader.plain(s)]
    files = [(s.bucket_path, meta) for s in plain for meta in s.files]
    rows = sum(meta.row_count for _, meta in files)
    if len(files) < MIN_FILES or rows > MAX_ROWS or rows > FILE_ROWS * len(files):
        return [], splits
    kinds = any(reader.system_of(s, meta) for s in plain for meta in s.files)
    scans = reader.files.read_together(files, reader.value_fields, (VALUE_KIND_FIELD,) if kinds else ())
    scanned = {(b, meta.file_name) for _, together in scans for b, meta in together}
    done = [s for s in plain if all((s.bucket_path, meta.file_name) in scanned for meta in s.files)]
    masks: dict[tuple[str, str], np.ndarray | None] = {}
    starts = _file_starts(scans)
    for split in done:
        masks.update(_split_masks(reader, split, starts))
    split_of = {(s.bucket_path, meta.file_name): s for s in done for meta in s.files}
    tables = []
    for table, together in scans:
        if any((b, meta.file_name) in split_of for b, meta in together):
            tables.append(_kept(reader, table, together, masks, split_of))
    left = {id(s) for s in done}
    return [t for t in tables if t.num_rows], [s for s in splits if id(s) not in left]


def _file_starts(scans) -> dict[tuple[str, str], tuple[pa.Table, int]]:
    """Each scanned file's table and first row in it."""
    starts = {}
    for table, together in scans:
        offsets = np.cumsum([0] + [meta.row_count for _, meta in together])
        for (bucket_path, meta), start in zip(together, offsets):
            starts[(bucket_path, meta.file_name)] = (table, int(start))
    return starts


def _split_masks(reader, split: Split, starts) -> dict:
    """Each file of the split: its rows that are the split's content (None: every row).
    Raw splits keep every row not deleted by a deletion vector; otherwise the newest file
    wins a key, and a key whose newest row is a retraction is gone."""
    files_reader = reader.files_of(split)

    def rows_of(meta: DataFileMeta) -> pa.Table:
        table, start = starts[(split.bucket_path, meta.file_name)]
        return table.slice(start, meta.row_count)

    def alive(meta: DataFileMeta) -> np.ndarray | None:
        deleted = files_reader.deleted_rows(meta)
        return None if deleted is None else keep_mask(deleted, 0, meta.row_count)

    if split.raw_convertible:
        return {(split.bucket_path, meta.file_name): alive(meta) for meta in split.files}
    key_names = list(reader.merge_spec.key_columns)
    newer, masks = NewerKeys(), {}
    for meta in sorted(split.files, key=lambda f: f.min_sequence_number, reverse=True):
        rows, live = rows_of(meta), alive(meta)
        if live is not None:
            rows = filter_rows(rows, live)
        keys = rows.select(key_names)
        shadowed = newer.shadowed(keys)
        newer.add(keys, shadowed)
        keep = ~shadowed
        if VALUE_KIND in rows.column_names:
            kind = rows.column(VALUE_KIND).to_numpy()
            keep &= (kind != UPDATE_BEFORE) & (kind != DELETE)
        if live is not None:
            full = np.zeros(meta.row_count, dtype=bool)
            full[np.flatnonzero(live)[keep]] = True
            keep = full
        masks[(split.bucket_path, meta.file_name)] = None if keep.all() else keep
    return masks


def _kept(reader, table: pa.Table, together, masks, split_of) -> pa.Table:
    """One scan's rows of the splits read together, masked, with partition columns, finished."""
    parts, runs = [], []
    for bucket_path, meta in together:
        key = (bucket_path, meta.file_name)
        mask = masks[key] if key in split_of else np.zeros(meta.row_count, dtype=bool)
        parts.append(np.ones(meta.row_count, dtype=bool) if mask is None else mask)
        if key in split_of:
            runs.append((split_of[key].partition_values, meta.row_count if mask is None else int(mask.sum())))
    table = filter_rows(table, np.concatenate(parts))
    if VALUE_KIND in table.column_names:
        table = table.drop_columns([VALUE_KIND])
    return reader.finish(reader.with_partition(table, runs))
