"""Compaction of append tables (`Table.compact` and `tarn.spark.compact` on tables without a
primary key): which files are merged, the rewrite of a group of files, and the commit.

Three steps, so that Spark can run the middle one on executors:

1. `plan(table, full, partitions)` reads the latest snapshot and picks groups of files
   (`Group`): each group is rewritten into new files of one (partition, bucket).
2. `rewrite(table, group)` reads the group's files in sequence order, minus the rows their
   deletion vectors mark, and writes them again (`_FILE_SOURCE` = COMPACT) rolled at
   `target-file-size`, numbered from the first input's minimum sequence number: the outputs
   hold one contiguous sequence range. Returns a `CommitMessage` (compact before / after).
3. `finish(table, messages)` merges the messages per (partition, bucket) and, in tables with
   `deletion-vectors.enabled`, replaces each index file that held vectors of rewritten files by
   one holding the others. `Table.commit` then makes one COMPACT snapshot.

Which files (Paimon's rules; `compaction.small-file-ratio` x `target-file-size` is the "small"
bound, Java's compactionFileSize):

- Fixed buckets (`bucket` = N, BucketedAppendCompactManager): per bucket, files in sequence
  order; a window grows file by file until it holds `compaction.min.file-num` files (picked),
  its first file leaving it whenever its size reaches 2 x target. A picked window's output is
  offered again while it stays small, as Java's writer adds its last small output back, so one
  call ends where Java's writer settles, and every input is still rewritten once. Full:
  FullCompactTask (leading large files without a vector stay; the rest is rewritten when small
  files outnumber large ones and there are at least 3, always with deletion vectors, all of
  them with `compaction.force-rewrite-all-files`).
- Unaware buckets (`bucket` = -1, AppendCompactCoordinator in batch mode): the candidates are
  small files and files whose deleted rows exceed `compaction.delete-ratio-threshold` of their
  rows (at most `compaction.file-num-limit` of them); per partition they are packed into bins,
  a bin closing at 2 files or more and 2 x target bytes (each file counted with
  `source.split.open-file-cost`), the last bin kept if it holds `compaction.min.file-num`
  files. Candidates over the delete ratio left in no bin are rewritten together anyway. Full:
  the FullCompactTask rule per partition (Java's unaware compaction has no full mode).
  Differences from Java: candidates are packed in sequence order (Java sorts them by size to
  pack better), so merged rows keep their write order; with deletion vectors Java also forces
  every small candidate that has a vector at all into a bin, tarn only those over the ratio
  (the others are packed like files without vectors).
- Fixed buckets with deletion vectors: files over the delete ratio that no window took are
  rewritten alone (tarn's addition: Java rewrites them only at a full compaction).

Concurrent commits: an append adding files while this runs loses nothing (the inputs stay live,
the compaction removes only them); a commit that removed an input, or replaced an index file
this compaction replaces, makes the commit fail with CommitConflict (nothing committed, the
outputs deleted). `finish` also refuses to commit when a compacted bucket's deletion-vector
index files changed since the plan, so rows deleted meanwhile are never written back.
"""

from __future__ import annotations

import heapq
import logging
import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Iterable

import pyarrow as pa

from tarn import progress
from tarn import features
from tarn import partition as partitions
from tarn.data.reader import FileReader
from tarn.data.writer import FileWriter
from tarn.errors import CommitConflict, TarnError
from tarn.data import clustering
from tarn.lsm import policy
from tarn.lsm.levels import LevelSortedRun, SortedRun
from tarn.meta.manifest import APPEND_SOURCE, COMPACT_SOURCE, DELETE, DataFileMeta, IndexManifestEntry
from tarn.meta.shape import BucketMode
from tarn.options import Options
from tarn.data.layout import ROW_TRACKING_FIELDS
from tarn.meta.row_ranges import group_by_range, is_column_file, row_range
from tarn.scan.stitch import read_group
from tarn.store.deletion_vectors import DeletionVectorFiles, deletion_vectors_by_file, live_index_entries
from tarn.write.message import CommitMessage
from tarn.commit.abort import aborting

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from tarn.meta.schema import TableSchema
    from tarn.meta.snapshot import Snapshot
    from tarn.core import TableCore

FULL_COMPACT_MIN_FILES = 3  # Java's FULL_COMPACT_MIN_FILE
UNBOUNDED = str(1 << 60)  # target-file-size handed to FileWriter: the rewrite rolls files itself


@dataclass(frozen=True)
class Input:
    """One file of a group and the deletion-vector index file holding its vector (None: no
    deleted rows)."""

    meta: DataFileMeta
    vector: IndexManifestEntry | None = None


@dataclass(frozen=True)
class Group:
    """Files of one (partition, bucket) rewritten together, in sequence order. `index` holds
    every deletion-vector index file of that (partition, bucket) when the plan was made (tables
    with deletion vectors; `finish` checks it is still what the table holds)."""

    partition: bytes
    bucket: int
    total_buckets: int
    files: tuple[Input, ...]
    index: tuple[IndexManifestEntry, ...] | None = None
    # incremental clustering: the rows sorted by (columns, strategy, var-length bytes), the
    # outputs raised to `output_level`; unaware-bucket outputs are APPEND files numbered from 0
    cluster: tuple | None = None
    output_level: int = 0
    append_source: bool = False

    @property
    def size(self) -> int:
        return sum(i.meta.file_size for i in self.files)


@dataclass
class Settings:
    """The compaction options of a table (CoreOptions of Java)."""

    target: int
    small: int  # compactionFileSize: files below it are small
    min_files: int
    file_num_limit: int
    delete_ratio: float
    open_file_cost: int
    force_all: bool
    vectors: bool

    @classmethod
    def of(cls, options: Options) -> "Settings":
        target = options.target_file_size(has_primary_key=False)
        return cls(target=target, small=int(target * options.float("compaction.small-file-ratio")),
                   min_files=options.int("compaction.min.file-num"),
                   file_num_limit=options.int("compaction.file-num-limit"),
                   delete_ratio=options.float("compaction.delete-ratio-threshold"),
                   open_file_cost=options.memory_bytes("source.split.open-file-cost"),
                   force_all=bool(options.bool("compaction.force-rewrite-all-files")),
                   vectors=bool(options.bool("deletion-vectors.enabled")))


@dataclass
class _Bucket:
    """The live files of one (partition, bucket) with their vectors, in sequence order."""

    partition: bytes
    bucket: int
    total_buckets: int
    files: list[Input] = field(default_factory=list)
    deleted: dict[str, int | None] = field(default_factory=dict)  # file name -> deleted rows (None: unknown)
    index: tuple[IndexManifestEntry, ...] = ()


# ---------------------------------------------------------------------------------------------
# planning


def plan(table: "TableCore", full: bool = False, partitions_filter: list[dict] | None = None) -> list[Group]:
    """The groups a compaction of the append table's latest snapshot rewrites ([] when none)."""
    schema = table.schema()
    features.check_write(table.name, schema)
    if schema.primary_keys:
        raise TarnError(f"table {table.name}: append-table compaction on a primary-key table")
    settings = Settings.of(schema.shape.options)
    buckets = _live_buckets(table, schema, settings, partitions_filter)
    if schema.shape.options.bool("clustering.incremental") and not schema.shape.evolves:
        groups = [g for b in buckets for g in _cluster_units(table, schema, b, settings, full)]
        history = _history_partitions(table, schema, settings, partitions_filter)
        return groups + [g for b in history for g in _cluster_units(table, schema, b, settings, True)]
    if schema.shape.evolves:
        return [g for b in buckets for g in _row_id_bins(b, settings, full)]
    if schema.shape.bucket_mode is BucketMode.FIXED:
        picker = _full_bucket if full else _bucket_windows
        return [g for b in buckets for g in picker(b, settings)]
    if full:
        return [g for b in buckets for g in _full_bucket(b, settings)]
    return _unaware(buckets, settings)


def _live_buckets(table, schema: "TableSchema", settings: Settings, wanted: list[dict] | None) -> list[_Bucket]:
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return []
    found: dict[tuple[bytes, int], _Bucket] = {}
    for entry in table.live_entries(snapshot, schema):
        if wanted is not None and not _in_partitions(schema, entry.partition, wanted):
            continue
        key = (entry.partition, entry.bucket)
        bucket = found.get(key)
        if bucket is None:
            bucket = found[key] = _Bucket(entry.partition, entry.bucket, entry.total_buckets)
        bucket.files.append(Input(entry.file))
    if settings.vectors and found:
        index = [e for e in live_index_entries(table.manifests(schema), snapshot) if e.dv_ranges is not None]
        holders = deletion_vectors_by_file(index)
        by_bucket = _by_bucket(index)
        for key, bucket in found.items():
            held = holders.get(key, {})
            bucket.index = tuple(by_bucket.get(key, ()))
            bucket.files = [Input(i.meta, held.get(i.meta.file_name)) for i in bucket.files]
            for entry in bucket.index:
                for r in entry.dv_ranges:
                    bucket.deleted[r.data_file] = r.cardinality
    for bucket in found.values():
        bucket.files.sort(key=lambda i: _order(i.meta))
    return [found[k] for k in sorted(found)]


def _by_bucket(entries: Iterable[IndexManifestEntry]) -> dict[tuple[bytes, int], list[IndexManifestEntry]]:
    found: dict[tuple[bytes, int], list[IndexManifestEntry]] = {}
    for e in entries:
        found.setdefault((e.partition, e.bucket), []).append(e)
    return found


def _order(meta: DataFileMeta) -> tuple:
    """Sequence order (ties, as in Java-written unaware tables whose writers restart at 0,
    by creation time, then name)."""
    return meta.min_sequence_number, meta.max_sequence_number, meta.creation_time or 0, meta.file_name


def _in_partitions(schema: "TableSchema", partition: bytes, wanted: list[dict]) -> bool:
    values = dict(zip(schema.partition_keys, partitions.from_bytes(schema, partition)))
    for spec in wanted:
        unknown = [k for k in spec if k not in values]
        if unknown:
            raise TarnError(f"{unknown} are not partition keys (partition keys: {list(schema.partition_keys)})")
        if all(values[k] == v or str(values[k]) == str(v) for k, v in spec.items()):
            return True
    return False


def _over_ratio(bucket: _Bucket, item: Input, settings: Settings) -> bool:
    """Java's tooHighDeleteRatio: deleted rows > rows x threshold (an unknown count counts)."""
    if item.vector is None or item.meta.file_name not in bucket.deleted:
        return False
    deleted = bucket.deleted[item.meta.file_name]
    return deleted is None or deleted > item.meta.row_count * settings.delete_ratio


def _group(bucket: _Bucket, files: Iterable[Input], settings: Settings) -> Group:
    ordered = tuple(sorted(files, key=lambda i: _order(i.meta)))
    return Group(bucket.partition, bucket.bucket, bucket.total_buckets, ordered,
                 bucket.index if settings.vectors else None)


def _bucket_windows(bucket: _Bucket, settings: Settings) -> list[Group]:
    """BucketedAppendCompactManager.pickCompactBefore, repeated until nothing is picked; a
    picked window whose files add up to less than the small bound is offered again (as Java's
    writer re-queues a small last output) as one item with its inputs' sequence start."""
    queue = [(i.meta.min_sequence_number, n, (i,)) for n, i in enumerate(bucket.files)]
    heapq.heapify(queue)
    counter = len(queue)
    done: list[tuple[Input, ...]] = []

    def size(items: tuple[Input, ...]) -> int:
        return sum(i.meta.file_size for i in items)

    while True:
        window: list[tuple] = []
        total = 0
        picked = False
        while queue:
            item = heapq.heappop(queue)
            window.append(item)
            total += size(item[2])
            if len(window) >= settings.min_files:
                picked = True
                break
            if total >= settings.target * 2:
                dropped = window.pop(0)  # leaves the queue for good, as in Java
                total -= size(dropped[2])
                if len(dropped[2]) > 1:
                    done.append(dropped[2])
        if not picked:
            done.extend(item[2] for item in window if len(item[2]) > 1)
            break
        merged = tuple(i for item in window for i in item[2])
        if size(merged) < settings.small:
            heapq.heappush(queue, (merged[0].meta.min_sequence_number, counter, merged))
            counter += 1
        else:
            done.append(merged)
    groups = [_group(bucket, files, settings) for files in done]
    if settings.vectors:  # mostly deleted files no window took: rewritten alone
        taken = {i.meta.file_name for files in done for i in files}
        groups += [_group(bucket, [i], settings) for i in bucket.files
                   if i.meta.file_name not in taken and _over_ratio(bucket, i, settings)]
    return groups


def _full_bucket(bucket: _Bucket, settings: Settings) -> list[Group]:
    """BucketedAppendCompactManager's full compaction (FullCompactTask) of one bucket or, in
    unaware-bucket tables, one partition."""
    files = list(bucket.files)
    if not settings.force_all and (not files or (not settings.vectors and len(files) < FULL_COMPACT_MIN_FILES)):
        return []
    if not settings.force_all:
        while files and files[0].meta.file_size >= settings.small and files[0].vector is None:
            files.pop(0)  # leading large files without deleted rows stay
    if not files:
        return []
    if not settings.force_all and not settings.vectors:
        big = sum(1 for i in files if i.meta.file_size >= settings.small)
        if not (len(files) - big > big and len(files) >= FULL_COMPACT_MIN_FILES):
            return []
    if len(files) == 1 and files[0].vector is None and not settings.force_all:
        return []  # a lone file without deleted rows would be written again unchanged
    return [_group(bucket, files, settings)]


def _cluster_units(table, schema: "TableSchema", bucket: _Bucket, settings: Settings, full: bool) -> list[Group]:
    """Incremental clustering (IncrementalClusterStrategy): each level-0 file a run (sequence
    order), each higher level one run; a full pick takes everything to the top level (unless
    it is one top-level run already clustered by these columns), a minor pick is universal
    compaction without its early-full step."""
    options = schema.shape.options
    columns, strategy = clustering.columns_and_strategy(options, table.name)
    max_level = policy.num_levels(options) - 1
    runs = [LevelSortedRun(0, SortedRun((i.meta,))) for i in bucket.files if i.meta.level == 0]
    for level in sorted({i.meta.level for i in bucket.files if i.meta.level > 0}):
        runs.append(LevelSortedRun(level, SortedRun(tuple(i.meta for i in bucket.files if i.meta.level == level))))
    if not runs:
        return []
    if full:
        first = runs[0].run.files[0]
        done_before = clustering.columns_and_strategy(table.schema_by_id(first.schema_id).shape.options,
                                                      table.name)[0]
        if len(runs) == 1 and runs[0].level == max_level and done_before == columns:
            return []
        unit = policy.CompactUnit(max_level, tuple(f for r in runs for f in r.run.files))
    else:
        unit = policy.minor_pick(runs, max_level, options)
        if unit is None:
            return []
    chosen = {f.file_name for f in unit.files}
    group = _group(bucket, [i for i in bucket.files if i.meta.file_name in chosen], settings)
    var_length = options.int("zorder.var-length-contribution") or 8
    return [replace(group, cluster=(tuple(columns), strategy, var_length), output_level=unit.output_level,
                    append_source=schema.shape.bucket_mode is not BucketMode.FIXED)]


def _history_partitions(table, schema: "TableSchema", settings: Settings, wanted: list[dict] | None) -> list[_Bucket]:
    """HistoryPartitionCluster: with a partition filter and
    `clustering.history-partition.idle-to-full-sort`, up to `clustering.history-partition.limit`
    other partitions with files below the top level and no file newer than the idle time get a
    full clustering too."""
    options = schema.shape.options
    idle = options.duration_ms("clustering.history-partition.idle-to-full-sort")
    if not wanted or idle is None or not schema.partition_keys:
        return []
    max_level = policy.num_levels(options) - 1
    cutoff = local_wall_millis_now() - idle
    found = []
    for bucket in _live_buckets(table, schema, settings, None):
        if _in_partitions(schema, bucket.partition, wanted):
            continue
        metas = [i.meta for i in bucket.files]
        if any(m.level < max_level for m in metas) and max(m.creation_time or 0 for m in metas) < cutoff:
            found.append(bucket)
    return found[:options.int("clustering.history-partition.limit")]


def local_wall_millis_now() -> int:
    """Now as the local wall clock in epoch-style millis (how data files record creation time)."""
    import datetime as dt

    now = dt.datetime.now()
    return int((now - dt.datetime(1970, 1, 1)).total_seconds() * 1000)


def _unaware(buckets: list[_Bucket], settings: Settings) -> list[Group]:
    """AppendCompactCoordinator (batch): candidates, then bins per partition."""
    groups = []
    budget = settings.file_num_limit
    for bucket in buckets:
        candidates = []
        for item in bucket.files:
            if budget <= 0:
                break
            if item.meta.file_size < settings.small or _over_ratio(bucket, item, settings):
                candidates.append(item)
                budget -= 1
        bins = _pack(candidates, settings)
        groups += [_group(bucket, files, settings) for files in bins]
        taken = {i.meta.file_name for files in bins for i in files}
        forced = [i for i in candidates if i.meta.file_name not in taken and _over_ratio(bucket, i, settings)]
        if forced:  # files with too many deleted rows are rewritten whatever their number
            groups.append(_group(bucket, forced, settings))
    return groups


def _pack(files: list[Input], settings: Settings) -> list[list[Input]]:
    """The coordinator's FileBin: a bin closes once it holds 2 files or more adding up (with the
    open-file cost each) to 2 x target; the rest forms a bin if it has min.file-num files."""
    bins, current, total = [], [], 0
    for item in files:
        current.append(item)
        total += item.meta.file_size + settings.open_file_cost
        if len(current) > 1 and total >= settings.target * 2:
            bins.append(current)
            current, total = [], 0
    if current and len(current) >= settings.min_files:
        bins.append(current)
    return bins


def _row_id_bins(bucket: _Bucket, settings: Settings, full: bool) -> list[Group]:
    """Data-evolution tables (Java's DataEvolutionCompactCoordinator): row-id groups of
    adjacent ranges packed into bins of about `target-file-size`, each rewritten into one
    whole-row file covering the bin's range; a bin is rewritten when it holds
    `compaction.min.file-num` files (full: 2). Groups whose rows have a deletion vector are left
    as they are (tarn does not move vectors onto the new file)."""
    normal = [i for i in bucket.files if not is_column_file(i.meta)]
    if len(normal) != len(bucket.files):
        return []  # blob / vector files: tarn does not compact their tables
    by_name = {i.meta.file_name: i for i in normal}
    groups = [g for g in group_by_range([i.meta for i in normal]) if row_range(g[0]) is not None]
    needed = 2 if full else max(2, settings.min_files)
    bins, current, size, end = [], [], 0, None
    for files in groups:
        lo = row_range(files[0])[0]
        vectored = any(by_name[f.file_name].vector is not None for f in files)
        if current and (vectored or lo != end + 1 or size >= settings.target):
            bins.append(current)
            current, size = [], 0
        if vectored:
            continue
        current.append(files)
        size += sum(max(f.file_size, settings.open_file_cost) for f in files)
        end = max(row_range(f)[1] for f in files)
    if current:
        bins.append(current)
    out = []
    for chosen in bins:
        files = [f for g in chosen for f in g]
        if len(files) >= needed:
            out.append(_group(bucket, [by_name[f.file_name] for f in files], settings))
    return out


# ---------------------------------------------------------------------------------------------
# rewriting one group


def rewrite(table: "TableCore", group: Group, options: dict | None = None) -> CommitMessage:
    """Rewrite the group's files (minus deleted rows) into new files numbered from the first
    input's minimum sequence number. `options` override table options for the new files (the
    file-name prefixes of a Spark job). On failure the new files are deleted."""
    schema = table.schema()
    features.check_write(table.name, schema)
    table_options = schema.shape.options_with(options)
    if schema.shape.evolves:
        return _rewrite_range(table, schema, table_options, group)
    store = DeletionVectorFiles(table.file_io, table.root, table.schema())
    vectors = {i.meta.file_name: i.vector for i in group.files if i.vector is not None}
    reader = FileReader(table.file_io, schema, table.schema_by_id, table_options,
                        deletions=lambda name: store.read_one(vectors[name], name) if name in vectors else None)
    path = table.bucket_dir(schema, group.partition, group.bucket)
    # row tracking: the rows keep their ids; consecutive ranges with every row live stay ranges
    # (`_FIRST_ROW_ID`, which every engine reads), others are stored in the new files (Java's way)
    ranged = schema.shape.tracks_rows and not vectors and _consecutive(group)
    if ranged:
        group = replace(group, files=tuple(sorted(group.files, key=lambda i: i.meta.first_row_id)))
    ids = schema.shape.tracks_rows and not ranged
    writer = FileWriter(table.file_io, path, schema, table_options.updated({"target-file-size": UNBOUNDED}),
                        row_ids=ids)
    message = CommitMessage(group.partition, group.bucket, group.total_buckets,
                            deleted_index_files=[_as_delete(e) for e in group.index or ()])
    first_sequence = 0 if group.append_source else group.files[0].meta.min_sequence_number
    roller = _Roller(writer, table_options.target_file_size(has_primary_key=False), first_sequence,
                     message.compact_after, group.files,
                     file_source=APPEND_SOURCE if group.append_source else COMPACT_SOURCE)
    fields = list(schema.fields)
    with aborting(table.file_io, table.root, schema, lambda: [replace(message, deleted_index_files=[])]):
        if group.cluster is not None:
            _add_clustered(roller, reader, path, group, fields)
            message.compact_after = [replace(m, level=group.output_level) for m in message.compact_after]
            message.compact_before = [i.meta for i in group.files]
            return message
        for item in group.files:
            if ids:
                roller.add(read_group(reader, path, [item.meta], fields + list(ROW_TRACKING_FIELDS), table.name))
                continue
            for rows in reader.iter(path, item.meta, fields, with_system=False):
                roller.add(rows)
        roller.finish()
    if ranged:
        message.compact_after = _ranged(message.compact_after, [i.meta for i in group.files])
    message.compact_before = [i.meta for i in group.files]
    return message


def _add_clustered(roller: "_Roller", reader: FileReader, path: str, group: Group, fields) -> None:
    """Every row of the group (deleted ones dropped), sorted by the clustering key, then rolled."""
    parts = [rows for item in group.files for rows in reader.iter(path, item.meta, fields, with_system=False)]
    if not parts:
        return
    rows = pa.concat_tables(parts)
    columns, strategy, var_length = group.cluster
    roller.add(rows.take(pa.array(clustering.order_of(rows, list(columns), strategy, var_length))))
    roller.finish()


def _consecutive(group: Group) -> bool:
    """The group's files hold consecutive row-id ranges, no rows stored with their ids."""
    metas = sorted((i.meta for i in group.files), key=lambda m: -1 if m.first_row_id is None else m.first_row_id)
    if any(m.first_row_id is None or m.write_cols is not None for m in metas):
        return False
    return all(a.first_row_id + a.row_count == b.first_row_id for a, b in zip(metas, metas[1:]))


def _ranged(outputs: list[DataFileMeta], inputs: list[DataFileMeta]) -> list[DataFileMeta]:
    """Outputs of consecutive inputs numbered on from the first input's row id, each with the
    inputs' sequence range."""
    start = min(m.first_row_id for m in inputs)
    low, high = min(m.min_sequence_number for m in inputs), max(m.max_sequence_number for m in inputs)
    out = []
    for meta in outputs:
        out.append(replace(meta, first_row_id=start, min_sequence_number=low, max_sequence_number=high))
        start += meta.row_count
    return out


def _rewrite_range(table: "TableCore", schema, options: Options, group: Group) -> CommitMessage:
    """A bin of a data-evolution table as one whole-row file of the bin's row-id range: the
    first row id of its first group, the inputs' sequence range (Java's
    DataEvolutionNormalCompactTask)."""
    path = table.bucket_dir(schema, group.partition, group.bucket)
    reader = FileReader(table.file_io, schema, table.schema_by_id, options)
    metas = [i.meta for i in group.files]
    fields = list(schema.fields)
    message = CommitMessage(group.partition, group.bucket, group.total_buckets,
                            deleted_index_files=[_as_delete(e) for e in group.index or ()])
    with aborting(table.file_io, table.root, schema, lambda: [replace(message, deleted_index_files=[])]):
        rows = [read_group(reader, path, files, fields, table.name, keep_deleted=True)
                for files in group_by_range(metas)]
        writer = FileWriter(table.file_io, path, schema, options.updated({"target-file-size": UNBOUNDED}))
        meta = writer.write_one(pa.concat_tables(rows))
        message.compact_after = [replace(meta, first_row_id=min(m.first_row_id for m in metas),
                                         min_sequence_number=min(m.min_sequence_number for m in metas),
                                         max_sequence_number=max(m.max_sequence_number for m in metas))]
    message.compact_before = metas
    return message


class _Roller:
    """Rows in, files of about `target` bytes out (appended to `out` as they are written), with
    sequence numbers counted on from `first_sequence`. A file takes `target` / (disk bytes per
    row) rows: first those of the inputs, then those of the files this rewrite wrote."""

    def __init__(self, writer: FileWriter, target: int, first_sequence: int, out: list[DataFileMeta],
                 inputs: tuple[Input, ...], file_source: int = COMPACT_SOURCE):
        self.writer = writer
        self.file_source = file_source
        self.target = target
        self.next_sequence = first_sequence
        self.out = out
        rows = sum(i.meta.row_count for i in inputs)
        self.bytes_per_row = sum(i.meta.file_size for i in inputs) / rows if rows else 1.0
        self.pending: list[pa.Table] = []
        self.pending_rows = 0

    def _file_rows(self) -> int:
        return max(1, math.ceil(self.target / max(self.bytes_per_row, 1e-9)))

    def add(self, rows: pa.Table) -> None:
        if not rows.num_rows:
            return
        self.pending.append(rows)
        self.pending_rows += rows.num_rows
        while self.pending_rows >= self._file_rows():
            table = pa.concat_tables(self.pending)
            count = self._file_rows()
            self._write(table.slice(0, count))
            rest = table.slice(count)
            self.pending = [rest] if rest.num_rows else []
            self.pending_rows = rest.num_rows

    def finish(self) -> None:
        if self.pending:
            self._write(pa.concat_tables(self.pending))
            self.pending, self.pending_rows = [], 0

    def _write(self, rows: pa.Table) -> None:
        metas = self.writer.write(rows, file_source=self.file_source, first_sequence=self.next_sequence)
        self.out.extend(metas)
        self.next_sequence += rows.num_rows
        written = sum(m.row_count for m in self.out)
        if written:
            self.bytes_per_row = sum(m.file_size for m in self.out) / written


def _as_delete(entry: IndexManifestEntry) -> IndexManifestEntry:
    return replace(entry, kind=DELETE)


# ---------------------------------------------------------------------------------------------
# finishing and the local run


def finish(table: "TableCore", messages: list[CommitMessage]) -> list[CommitMessage]:
    """One message per (partition, bucket); with deletion vectors, the index files holding
    vectors of rewritten files replaced by one new file with the remaining vectors. The
    `deleted_index_files` of `rewrite`'s messages are the bucket's index files when planned:
    when the table's differ now, CommitConflict (nothing written)."""
    merged: dict[tuple[bytes, int], CommitMessage] = {}
    planned: dict[tuple[bytes, int], dict[str, IndexManifestEntry]] = {}
    for m in messages:
        key = (m.partition, m.bucket)
        into = merged.get(key)
        if into is None:
            into = merged[key] = CommitMessage(m.partition, m.bucket, m.total_buckets)
        into.compact_before += m.compact_before
        into.compact_after += m.compact_after
        planned.setdefault(key, {}).update((e.file_name, e) for e in m.deleted_index_files)
    if not any(planned.values()) and not table.schema().shape.deletion_vectors:
        return list(merged.values())
    schema = table.schema()
    snapshot = table.latest_snapshot()
    current = _by_bucket(e for e in live_index_entries(table.manifests(schema), snapshot) if e.dv_ranges is not None)
    live: dict[tuple[bytes, int], set[str]] = {}
    for e in table.live_entries(snapshot, schema):
        live.setdefault((e.partition, e.bucket), set()).add(e.file.file_name)
    store = DeletionVectorFiles(table.file_io, table.root, table.schema())
    bitmap64 = bool(schema.shape.options.bool("deletion-vectors.bitmap64"))
    written: list[IndexManifestEntry] = []
    try:
        for key, message in merged.items():
            now = {e.file_name for e in current.get(key, ())}
            if now != set(planned.get(key, {})):
                raise CommitConflict(f"table {table.name}: the deletion vectors of bucket {key[1]} changed since this "
                                     "compaction was planned (a concurrent delete); nothing was committed")
            gone = {m.file_name for m in message.compact_before}
            touched = [e for e in planned.get(key, {}).values() if any(r.data_file in gone for r in e.dv_ranges)]
            if not touched:
                continue
            kept: dict = {}
            for entry in touched:
                kept.update((name, v) for name, v in store.read(entry).items()
                            if name not in gone and name in live.get(key, ()))
            entry = store.write(key[0], key[1], kept, bitmap64) if kept else None
            if entry is not None:
                written.append(entry)
                message.new_index_files = [entry]
            message.deleted_index_files = [_as_delete(e) for e in touched]
    except BaseException:
        for entry in written:
            table.file_io.delete(store.path(entry))
        raise
    return list(merged.values())


def compact(table: "TableCore", full: bool = False, partitions_filter: list[dict] | None = None) -> "Snapshot | None":
    """Plan, rewrite the groups in threads, commit once (COMPACT). None when nothing is due."""
    read_at = table.latest_snapshot()
    groups = plan(table, full, partitions_filter)
    if not groups:
        return None
    log.debug("table %s: compacting %d files in %d groups%s", table.name, sum(len(g.files) for g in groups),
              len(groups), " (full)" if full else "")
    messages: list[CommitMessage] = []
    with aborting(table.file_io, table.root, table.schema(),
                  lambda: [replace(m, deleted_index_files=[]) for m in messages]):
        with ThreadPoolExecutor(max_workers=max(1, min(len(groups), os.cpu_count() or 2))) as pool:
            futures = [pool.submit(rewrite, table, g) for g in groups]
            errors = []
            with progress.task(f"compacting {table.name}", total=len(futures)) as bar:
                for f in futures:
                    f.exception()
                    bar.advance()
            for f in futures:
                if f.exception() is None:
                    messages.append(f.result())
                else:
                    errors.append(f.exception())
        if errors:
            raise errors[0]
        finished = finish(table, messages)
    # data evolution: the outputs name their row ids; no update of those rows may land first
    return table.commit(finished, row_ids_read_at=read_at.id if table.schema().shape.evolves and read_at else None)
