"""Merging sorted runs of data files into one key-ordered stream: the pipeline merge-on-read and
compaction share (runs -> streaming k-way merge -> merge engine), like LevelDB's one merging
iterator under both reads and compactions.

Runs are read oldest first, chunk by chunk (`FileReader.run_chunks`), and merged by
`lsm.stream_merge.merge_streams`, so memory stays bounded whatever the runs' sizes. Each key
range goes through the table's merge engine (`lsm.merge.merge_table`), or, for lookup tables,
through Java's LookupMergeFunction (`lsm.merge.merge_lookup_sorted` over rows tagged with their
level).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa

from tarn.data.reader import FileReader
from tarn.lsm.intervals import partition_sections
from tarn.lsm.levels import SortedRun
from tarn.lsm.merge import (LEVEL, MergeSpec, drop_retracts, keys_in, merge_lookup_sorted, merge_table,
                            sort_indices)
from tarn.lsm.stream_merge import merge_streams
from tarn.meta.manifest import DataFileMeta
from tarn.types import DataField, DataType


@dataclass(frozen=True)
class LookupMerge:
    """Merge as Java's LookupMergeFunction: levels above 0 hold each key's full merged value, so
    per key only its level-0 rows and its row at the smallest level above 0 are merged.

    `every_key`: merge keys with a single row too (compactions consuming level 0); `above`:
    (level, files) runs read before the inputs, deepest level first, where keys without a
    high-level row among the inputs find their full value; `inputs_up_to`: keys found only at
    levels above this one (only in `above`) are dropped."""

    every_key: bool = False
    above: tuple[tuple[int, list[DataFileMeta]], ...] = ()
    inputs_up_to: int | None = None


def merge_runs(reader: FileReader, bucket_path: str, runs: Sequence[SortedRun], fields: list[DataField],
               spec: MergeSpec, lookup: LookupMerge | None = None, drop_deletes: bool = True,
               drop_keys: Sequence[pa.Table] = (), keep=None) -> Iterator[pa.Table]:
    """The runs' rows (columns `fields` plus system columns) merged into key-ordered tables.

    `drop_deletes`: rows whose merged kind is -U/-D are dropped; `drop_keys`: key tables (each
    sorted, unique) whose keys are dropped from the output (first-row compaction: keys already
    held above the output level); `keep`: rows -> mask of the rows read that take part in the
    merge at all (record-level expiry, tarn/data/record_expire.py)."""
    with_level = lookup is not None
    streams = [reader.run_chunks(bucket_path, files, fields, with_level=True) for _, files in
               (lookup.above if lookup is not None else ())]
    streams += [reader.run_chunks(bucket_path, list(run.files), fields, with_level)
                for run in oldest_first(runs)]
    key_columns = list(spec.key_columns)

    def merge(rows: pa.Table) -> pa.Table:
        if keep is not None:
            rows = rows.filter(keep(rows))
        if lookup is None:
            merged = merge_table(rows, spec)
        else:
            rows = rows.take(sort_indices(rows, spec))
            merged = merge_lookup_sorted(rows, spec, every_key=lookup.every_key,
                                         inputs_up_to=lookup.inputs_up_to).drop_columns([LEVEL])
        if drop_deletes:
            merged = drop_retracts(merged)
        if drop_keys:
            merged = merged.filter(~keys_in(merged.select(key_columns), list(drop_keys)))
        return merged

    return merge_streams(streams, key_columns, merge)


def merge_sections(reader: FileReader, bucket_path: str, files: Iterable[DataFileMeta],
                   fields: list[DataField], spec: MergeSpec, key_types: Sequence[DataType],
                   lookup: LookupMerge | None = None) -> Iterator[pa.Table]:
    """All rows of a bucket's files, merged, without -U/-D rows: the files are split into
    key-overlapping sections (`lsm.intervals`); a section of one sorted run is read as is,
    the others go through `merge_runs` one at a time (memory bounded per section)."""
    for section in partition_sections(files, key_types):
        if len(section) == 1:
            for meta in section[0].files:
                yield drop_retracts(reader.read(bucket_path, meta, fields, True))
            continue
        yield from merge_runs(reader, bucket_path, section, fields, spec, lookup)


def oldest_first(runs: Iterable[SortedRun]) -> list[SortedRun]:
    """Runs ordered by their newest sequence number, so that a merge concatenating their rows
    meets the versions of a key oldest first."""
    return sorted(runs, key=lambda run: max(f.max_sequence_number for f in run.files))
