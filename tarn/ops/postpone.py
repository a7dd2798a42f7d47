"""The postpone compaction of a `bucket = -2` table: rows waiting in `bucket-postpone/` files
are placed into real buckets and merged into each bucket's LSM tree, as Java's postpone
compaction does (Flink's CompactAction, Spark's compact procedure).

Per partition holding postponed files:
- the bucket count (Paimon 2.1's PostponeBucketNumResolver, which every engine's compaction
  uses): the one its bucket files already have (a partition has one), else
  `postpone.default-bucket-num` exactly when the table sets it, else ceil(postponed rows /
  `postpone.target-row-num-per-bucket`) when that is set, else ceil(postponed bytes on disk /
  `postpone.target-size-per-bucket` (1 gb)), at least 1. (2.0 took the row estimate before the
  option, defaulted to 1, and Spark to its parallelism; any count reads the same.)
- the postponed files are replayed in the order their commits landed (the snapshot's manifest
  entries), each file's rows in order, with their row kinds, through a
  fixed-bucket writer of that count: rows hash to buckets as in a `bucket = N` table, take
  sequence numbers after the bucket's newest, are merged with the table's merge engine and
  compacted (universal compaction; `full`: one sorted run per bucket); changelog producers act
  as on any write;
- one COMPACT snapshot removes the postponed files and adds the bucket files (totalBuckets =
  the partition's count), with the changelog the producer wrote.

Buckets with level-0 files but no postponed rows (another engine's fixed-bucket batch write)
are compacted too. Reads never see postponed rows (scan/planner.py), so rows written before
the compaction appear at it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tarn import partition as partitions
from tarn.data.writer import file_paths
from tarn.data.reader import FileReader
from tarn.errors import TarnError
from tarn.lsm.merge import VALUE_KIND
from tarn.meta.manifest import DataFileMeta
from tarn.meta.schema import TableSchema
from tarn.meta.snapshot import Snapshot
from tarn.options import Options
from tarn.write.message import CommitMessage
from tarn.write.writer import POSTPONE_BUCKET, TableWriter, restore_from

@dataclass(frozen=True)
class PostponedPartition:
    """One partition's postponed files (replay order) and the bucket count they go to."""

    partition: bytes
    files: tuple[DataFileMeta, ...]
    num_buckets: int
    level0_buckets: tuple[int, ...] = ()  # real buckets holding level-0 files


@dataclass(frozen=True)
class PostponePlan:
    """What a postpone compaction of one snapshot does."""

    snapshot: Snapshot
    schema: TableSchema
    parts: tuple[PostponedPartition, ...]


def plan(core, partition_specs: list[dict] | None = None, full: bool = False) -> PostponePlan | None:
    """The postponed files of the latest snapshot, per partition, with their bucket counts."""
    snapshot = core.latest_snapshot()
    if snapshot is None:
        return None
    schema = core.schema()
    options = schema.shape.options
    entries = core.live_entries(snapshot, schema)
    wanted = None
    if partition_specs is not None:
        wanted = {partitions.to_bytes(schema, [p.get(k) for k in schema.partition_keys]) for p in partition_specs}
    postponed: dict[bytes, list[DataFileMeta]] = {}
    totals: dict[bytes, set[int]] = {}
    level0: dict[bytes, set[int]] = {}
    for entry in entries:
        if wanted is not None and entry.partition not in wanted:
            continue
        if entry.bucket == POSTPONE_BUCKET:
            postponed.setdefault(entry.partition, []).append(entry.file)
            continue
        totals.setdefault(entry.partition, set()).add(entry.total_buckets)
        if entry.file.level == 0 or full:
            level0.setdefault(entry.partition, set()).add(entry.bucket)
    parts = []
    for part in sorted(set(postponed) | set(level0)):
        files = postponed.get(part, [])  # in the order their commits landed (the manifest order)
        count = _bucket_count(core.name, schema, options, part, totals.get(part, set()), files)
        parts.append(PostponedPartition(part, tuple(files), count, tuple(sorted(level0.get(part, ())))))
    return PostponePlan(snapshot, schema, tuple(parts))


def _bucket_count(table_name: str, schema: TableSchema, options: Options, part: bytes, totals: set[int],
                  files: list[DataFileMeta]) -> int:
    known = {t for t in totals if t > 0}
    if len(known) > 1:
        spec = dict(zip(schema.partition_keys, partitions.from_bytes(schema, part)))
        raise TarnError(f"table {table_name}: partition {spec} holds files of several bucket counts {sorted(known)}; "
                        "rescale it first (table.rescale(bucket=N, partitions=[...]))")
    if known:
        return known.pop()
    if "postpone.default-bucket-num" in schema.options:
        return max(1, options.int("postpone.default-bucket-num"))
    target = options.get("postpone.target-row-num-per-bucket")
    if target is not None:
        return _per_target(sum(f.row_count for f in files), int(target), "postpone.target-row-num-per-bucket",
                           table_name)
    return _per_target(sum(f.file_size for f in files), options.memory_bytes("postpone.target-size-per-bucket"),
                       "postpone.target-size-per-bucket", table_name)


def _per_target(total: int, target: int, key: str, table_name: str) -> int:
    """ceil(total / target), at least 1 (Java: (v <= 0) ? 1 : (v - 1) / t + 1)."""
    if target <= 0:
        raise TarnError(f"table {table_name}: option '{key}' must be greater than 0")
    return 1 if total <= 0 else (total - 1) // target + 1


def compact_partitions(core, plan_: PostponePlan, parts: list[PostponedPartition], full: bool = False,
                       options: dict | None = None) -> list[CommitMessage]:
    """Place and merge the postponed rows of `parts` (one writer per bucket count) and return
    the messages of a COMPACT commit removing their postponed files. `options`: writer
    overrides (a Spark job's file prefixes). Spark tasks each run it on some partitions."""
    messages: list[CommitMessage] = []
    for count in sorted({p.num_buckets for p in parts}):
        group = [p for p in parts if p.num_buckets == count]
        messages += _compact_group(core, plan_, group, count, full, options or {})
    return messages


def _compact_group(core, plan_: PostponePlan, parts: list[PostponedPartition], count: int,
                   full: bool, options: dict) -> list[CommitMessage]:
    schema = plan_.schema
    raw = {k: v for k, v in schema.options.items() if k != "rowkind.field"}  # kinds come from the files
    # a compaction compacts whatever `write-only` says of writers (Java's dedicated compaction)
    fixed = replace(schema, options={**raw, **options, "bucket": str(count), "write-only": "false"})
    writer = TableWriter(core.file_io, core.root, core.name, fixed, fixed.shape.options,
                         restore_from(core, fixed, snapshot_id=plan_.snapshot.id), core.schema_by_id)
    reader = FileReader(core.file_io, schema, core.schema_by_id, schema.shape.options)
    written: list[CommitMessage] = []
    try:
        for part in parts:
            values = partitions.from_bytes(schema, part.partition)
            path = partitions.bucket_path(core.root, schema, schema.options.get("partition.default-name"), values,
                                          POSTPONE_BUCKET)
            for meta in part.files:
                rows = reader.read(path, meta, list(schema.fields), with_system=True)
                kinds = rows.column(VALUE_KIND)
                writer.write(rows.select(schema.field_names), row_kind=kinds)
        writer.prepare_commit(full_compaction=full)
        level0 = [(part.partition, b) for part in parts for b in part.level0_buckets]
        written = writer.compact(level0, full) if level0 else writer.messages()
    except BaseException:
        writer.delete_written()
        raise
    return _as_compaction(core, written, parts, count)


def _as_compaction(core, written: list[CommitMessage], parts: list[PostponedPartition],
                   count: int) -> list[CommitMessage]:
    """The writer's messages as one compaction: files it wrote and compacted away unseen are
    deleted now; what stays is compaction output; the postponed files are its inputs."""
    out = []
    for m in written:
        new = {f.file_name for f in m.new_files}
        before = {f.file_name for f in m.compact_before}
        after = {f.file_name for f in m.compact_after}
        transient = (new & before) - after  # written, then compacted away before anyone saw them
        directory = core.bucket_dir(core.schema(), m.partition, m.bucket)
        for meta in m.new_files:
            if meta.file_name in transient:
                for path in file_paths(core.file_io, directory, meta):
                    core.file_io.delete(path)
        out.append(CommitMessage(
            m.partition, m.bucket, count,
            compact_before=[f for f in m.compact_before if f.file_name not in new],
            compact_after=[*m.compact_after, *(f for f in m.new_files if f.file_name not in before)],
            compact_changelog_files=[*m.changelog_files, *m.compact_changelog_files],
            new_index_files=list(m.new_index_files), deleted_index_files=list(m.deleted_index_files)))
    for part in parts:
        if part.files:
            out.append(CommitMessage(part.partition, POSTPONE_BUCKET, POSTPONE_BUCKET, compact_before=list(part.files)))
    return out


def compact(core, full: bool = False, partition_specs: list[dict] | None = None) -> Snapshot | None:
    """`table.compact()` of a postpone-bucket table: one COMPACT snapshot placing every
    postponed row (None: nothing was waiting)."""
    plan_ = plan(core, partition_specs, full)
    if plan_ is None or not plan_.parts:
        return None
    messages = compact_partitions(core, plan_, list(plan_.parts), full)
    if not messages:
        return None
    return core.commit(messages, schema=plan_.schema)


__all__ = ["PostponePlan", "PostponedPartition", "compact", "compact_partitions", "plan"]
