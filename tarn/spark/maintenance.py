"""Maintenance on Spark: compaction spread over executors, committed once on the driver; expiry,
tag deletion, rollback and orphan cleanup planned on the driver, their data files deleted by
a Spark job (`delete_on_executors`), then metadata, snapshot files and hints from the driver in
the order the local calls use (an interrupted run leaves only orphans).

Compaction reuses Spark's write protocol through an internal data source ("tarn_compact"):
the input rows are the (partition, bucket) pairs to compact, spread over tasks so each bucket
is compacted by exactly one task; tasks return commit messages; the driver commits them as one
COMPACT snapshot, or, if the job fails, deletes every file the tasks wrote.
"""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass
from functools import partial
from typing import Iterator

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter
from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType

import tarn
from tarn.spark.ref import open_table
from tarn.ops import append_compaction, postpone
from tarn import partition as partitions
from tarn.errors import TarnError
from tarn.fs import FileIO, join
from tarn.ops import expire, orphans, rollback, tags
from tarn.ops.references import delete_paths
from tarn.spark.ref import check_storage
from tarn.spark.batch_write import (TaskMessages, job_prefixes, kept_after_unknown_outcome, new_job_token,
                                   noting_unknown_outcome, sweep_job)
from tarn.spark.target import storage_of
from tarn.commit.abort import abort, aborting

COMPACT_FORMAT = "tarn_compact"
BUCKETS_SCHEMA = StructType([StructField("partition", BinaryType(), False),
                             StructField("bucket", IntegerType(), False),
                             StructField("task", IntegerType(), False)])


@dataclass
class CompactPlan:
    path: str
    full: bool
    job_token: str  # in the name of every file the job writes (see batch_write.WritePlan)
    storage: dict | None = None  # storage options (s3.endpoint, ...) the tasks open the table with

    def open(self) -> tarn.Table:
        return open_table(self.path, self.storage)


class CompactWriter(DataSourceArrowWriter):
    def __init__(self, plan: CompactPlan):
        self.plan = plan

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskMessages:
        buckets = []
        for batch in iterator:
            buckets += list(zip(batch.column("partition").to_pylist(), batch.column("bucket").to_pylist()))
        if not buckets:
            return TaskMessages([])
        table = self.plan.open()
        schema = table.schema()
        writer = table.new_writer(options=job_prefixes(schema.options, self.plan.job_token))
        messages = writer.compact(sorted(buckets), self.plan.full)
        if table.file_io.exists(self.marker(table)):  # the job was aborted while this task ran
            abort(table.file_io, table.root, schema, messages)
            raise TarnError(f"table {table.name}: the compaction was aborted")
        return TaskMessages(messages)

    def marker(self, table: tarn.Table) -> str:
        return join(table.root, ".tarn-spark", "aborted-" + self.plan.job_token.rstrip("-"))

    def commit(self, messages: list) -> None:
        table = self.plan.open()
        with noting_unknown_outcome(self.plan.job_token):
            table.commit([m for r in messages if r is not None for m in r.messages])

    def abort(self, messages: list) -> None:
        """Delete the job's files, unless its commit raised OutcomeUnknown (the COMPACT
        snapshot may exist: every file stays)."""
        if kept_after_unknown_outcome(self.plan.job_token, f"table {self.plan.path}"):
            return
        table = self.plan.open()
        table.file_io.write_bytes(self.marker(table), b"")
        abort(table.file_io, table.root, table.schema(),
              [m for r in messages if r is not None for m in r.messages])
        sweep_job(table, self.plan.job_token)


class CompactSource(DataSource):
    """Internal: the write side of distributed compaction."""

    @classmethod
    def name(cls) -> str:
        return COMPACT_FORMAT

    def writer(self, schema, overwrite):
        options = {k.lower(): v for k, v in dict(self.options).items()}
        return CompactWriter(CompactPlan(options["path"], options.get("full", "false") == "true",
                                         options["job-token"], storage_of(options)))


def bucket_sizes(table: tarn.Table, partition_filter: list[dict] | None) -> dict[tuple[bytes, int], int]:
    """Bytes in each live (partition, bucket) of the latest snapshot."""
    schema = table.schema()
    wanted = None
    if partition_filter is not None:
        wanted = {partitions.to_bytes(schema, [p.get(k) for k in schema.partition_keys]) for p in partition_filter}
    sizes: dict[tuple[bytes, int], int] = {}
    for entry in table.live_entries(table.latest_snapshot(), schema):
        if wanted is None or entry.partition in wanted:
            key = (entry.partition, entry.bucket)
            sizes[key] = sizes.get(key, 0) + entry.file.file_size
    return sizes


def spread(sizes: dict[tuple[bytes, int], int], tasks: int) -> list[tuple[bytes, int, int]]:
    """(partition, bucket, task) rows: largest buckets first, each to the least loaded task."""
    load = [0] * tasks
    rows = []
    for (part, bucket), size in sorted(sizes.items(), key=lambda kv: -kv[1]):
        task = load.index(min(load))
        load[task] += size
        rows.append((part, bucket, task))
    return rows


def compact(spark, table_path: str, full: bool = False, partitions: list[dict] | None = None,
            parallelism: int | None = None, storage_options: dict | None = None):
    """Compact a table on Spark, committed once on the driver; returns the new COMPACT snapshot
    or None (nothing to do). `storage_options` (s3.endpoint, ...) reach the executors with the
    job. Primary-key tables: each bucket compacted by one task (files whose deleted share
    reaches `compaction.delete-ratio-threshold` included). Append tables: the driver picks the
    groups of files as `Table.compact` does (tarn/ops/append_compaction.py), executors rewrite them,
    the driver replaces the deletion-vector index files and commits."""
    _register(spark)
    table = open_table(table_path, storage_options)
    if not table.primary_keys:
        return _compact_append(spark, table, table_path, full, partitions, parallelism, storage_options)
    if table.schema().shape.postpone:
        return _compact_postpone(spark, table, table_path, full, partitions, parallelism, storage_options)
    before = table.snapshot_store.latest_id()
    sizes = bucket_sizes(table, partitions)
    if not sizes:
        return None
    tasks = min(len(sizes), parallelism or spark.sparkContext.defaultParallelism * 2)
    rows = spread(sizes, tasks)
    frame = spark.createDataFrame(rows, BUCKETS_SCHEMA).repartitionById(tasks, "task")
    writer = (frame.write.format(COMPACT_FORMAT).mode("append").option("job-token", new_job_token())
              .option("full", str(bool(full)).lower()))
    for key, value in check_storage(storage_options).items():
        writer = writer.option(key, value)
    writer.save(table_path if "://" in table_path else table.location)
    latest = table.latest_snapshot()
    return latest if latest is not None and latest.id != before else None


APPEND_COMPACT_FORMAT = "tarn_append_compact"
GROUPS_SCHEMA = StructType([StructField("group", BinaryType(), False), StructField("task", IntegerType(), False)])


class AppendCompactWriter(CompactWriter):
    """Tasks rewrite the groups of files planned on the driver (`append_compaction.rewrite`);
    the commit merges their messages per bucket, replaces index files (`finish`) and commits."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskMessages:
        groups = [pickle.loads(g) for batch in iterator for g in batch.column("group").to_pylist()]
        if not groups:
            return TaskMessages([])
        table = self.plan.open()
        schema = table.schema()
        prefixes = job_prefixes(schema.options, self.plan.job_token)
        messages = []
        with aborting(table.file_io, table.root, schema, messages):
            for group in groups:
                messages.append(append_compaction.rewrite(table, group, prefixes))
        if table.file_io.exists(self.marker(table)):  # the job was aborted while this task ran
            abort(table.file_io, table.root, schema, messages)
            raise TarnError(f"table {table.name}: the compaction was aborted")
        return TaskMessages(messages)

    def commit(self, messages: list) -> None:
        table = self.plan.open()
        rewritten = [m for r in messages if r is not None for m in r.messages]
        with aborting(table.file_io, table.root, table.schema(), rewritten):
            finished = append_compaction.finish(table, rewritten)
        with noting_unknown_outcome(self.plan.job_token):
            # deletes the new files itself when it fails (not when unknown); data evolution: the
            # outputs name their row ids, checked against updates since the plan
            table.commit(finished, row_ids_read_at=getattr(self, "row_ids_read_at", None))


class AppendCompactSource(DataSource):
    """Internal: the write side of distributed append-table compaction."""

    @classmethod
    def name(cls) -> str:
        return APPEND_COMPACT_FORMAT

    def writer(self, schema, overwrite):
        options = {k.lower(): v for k, v in dict(self.options).items()}
        writer = AppendCompactWriter(CompactPlan(options["path"], False, options["job-token"], storage_of(options)))
        writer.row_ids_read_at = int(options["row-ids-read-at"]) if options.get("row-ids-read-at") else None
        return writer


def spread_groups(groups: list, tasks: int) -> list[tuple[bytes, int]]:
    """(pickled group, task) rows: largest groups first, each to the least loaded task."""
    load = [0] * tasks
    rows = []
    for group in sorted(groups, key=lambda g: -g.size):
        task = load.index(min(load))
        load[task] += group.size
        rows.append((pickle.dumps(group), task))
    return rows


def _compact_append(spark, table: tarn.Table, table_path: str, full: bool, partitions: list[dict] | None,
                    parallelism: int | None, storage_options: dict | None):
    before = table.snapshot_store.latest_id()
    groups = append_compaction.plan(table, full, partitions)
    if not groups:
        return None
    _register(spark)
    tasks = min(len(groups), parallelism or spark.sparkContext.defaultParallelism * 2)
    frame = spark.createDataFrame(spread_groups(groups, tasks), GROUPS_SCHEMA).repartitionById(tasks, "task")
    writer = frame.write.format(APPEND_COMPACT_FORMAT).mode("append").option("job-token", new_job_token())
    if table.schema().shape.evolves and before is not None:
        writer = writer.option("row-ids-read-at", str(before))
    for key, value in check_storage(storage_options).items():
        writer = writer.option(key, value)
    writer.save(table_path if "://" in table_path else table.location)
    latest = table.latest_snapshot()
    return latest if latest is not None and latest.id != before else None


def _register(spark) -> None:
    """Register the internal compaction writers with the session, once (Spark warns on every
    re-registration); tarn.spark.session.register calls this too."""
    if getattr(spark, _COMPACTION_REGISTERED, False):
        return
    for source in (CompactSource, AppendCompactSource, PostponeCompactSource):
        spark.dataSource.register(source)
    try:
        setattr(spark, _COMPACTION_REGISTERED, True)
    except AttributeError:  # a session object that takes no attributes registers again next time
        pass


register_compaction = _register
_COMPACTION_REGISTERED = "_tarn_compaction_registered"


POSTPONE_COMPACT_FORMAT = "tarn_postpone_compact"
PARTS_SCHEMA = StructType([StructField("part", BinaryType(), False), StructField("task", IntegerType(), False)])


class PostponeCompactWriter(CompactWriter):
    """Tasks place the postponed rows of their partitions (`postpone.compact_partitions`); the
    driver commits every task's messages as one COMPACT snapshot."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskMessages:
        picked = [pickle.loads(p) for batch in iterator for p in batch.column("part").to_pylist()]
        if not picked:
            return TaskMessages([])
        table = self.plan.open()
        plan_ = picked[0][0]
        prefixes = job_prefixes(plan_.schema.options, self.plan.job_token)
        messages = postpone.compact_partitions(table, plan_, [part for _, part in picked], self.plan.full, prefixes)
        if table.file_io.exists(self.marker(table)):  # the job was aborted while this task ran
            abort(table.file_io, table.root, plan_.schema, messages)
            raise TarnError(f"table {table.name}: the compaction was aborted")
        return TaskMessages(messages)

    def commit(self, messages: list) -> None:
        table = self.plan.open()
        with noting_unknown_outcome(self.plan.job_token):
            table.commit([m for r in messages if r is not None for m in r.messages], schema=self.schema)


class PostponeCompactSource(DataSource):
    """Internal: the write side of the distributed postpone compaction."""

    @classmethod
    def name(cls) -> str:
        return POSTPONE_COMPACT_FORMAT

    def writer(self, schema, overwrite):
        options = {k.lower(): v for k, v in dict(self.options).items()}
        writer = PostponeCompactWriter(CompactPlan(options["path"], options.get("full", "false") == "true",
                                                   options["job-token"], storage_of(options)))
        writer.schema = pickle.loads(bytes.fromhex(options["schema"]))
        return writer


def _compact_postpone(spark, table: tarn.Table, table_path: str, full: bool, partitions: list[dict] | None,
                      parallelism: int | None, storage_options: dict | None):
    """The postpone compaction of a bucket = -2 table, one task per share of its partitions
    (largest first, each to the least loaded task); one COMPACT commit on the driver."""
    before = table.snapshot_store.latest_id()
    plan_ = postpone.plan(table, partitions, full)
    if plan_ is None or not plan_.parts:
        return None
    _register(spark)
    tasks = min(len(plan_.parts), parallelism or spark.sparkContext.defaultParallelism * 2)
    load = [0] * tasks
    rows = []
    for part in sorted(plan_.parts, key=lambda p: -sum(f.file_size for f in p.files)):
        task = load.index(min(load))
        load[task] += sum(f.file_size for f in part.files) + 1
        rows.append((pickle.dumps((plan_, part)), task))
    frame = spark.createDataFrame(rows, PARTS_SCHEMA).repartitionById(tasks, "task")
    writer = (frame.write.format(POSTPONE_COMPACT_FORMAT).mode("append").option("job-token", new_job_token())
              .option("full", str(bool(full)).lower()).option("schema", pickle.dumps(plan_.schema).hex()))
    for key, value in check_storage(storage_options).items():
        writer = writer.option(key, value)
    writer.save(table_path if "://" in table_path else table.location)
    latest = table.latest_snapshot()
    return latest if latest is not None and latest.id != before else None


# ---------------------------------------------------------------------------------------------
# expiry, tags, rollback, orphans: planned on the driver, data files deleted on the executors,
# metadata deleted and hints written on the driver in the order the local calls use


@dataclass(frozen=True)
class DeleteTask:
    """What one Spark task of `delete_on_executors` did."""

    partition: int
    files: int
    pid: int


def delete_on_executors(spark, file_io: FileIO, paths: list[str], parallelism: int | None = None) -> list[DeleteTask]:
    """Delete `paths` (missing ones are fine) in a Spark job, spread evenly over tasks."""
    unique = list(dict.fromkeys(paths))
    if not unique:
        return []
    tasks = max(1, min(len(unique), parallelism or spark.sparkContext.defaultParallelism * 2))
    job = spark.sparkContext.parallelize(unique, tasks).mapPartitions(partial(_delete_task, file_io))
    return job.collect()


def _delete_task(file_io: FileIO, paths: Iterator[str]) -> Iterator[DeleteTask]:
    chunk = list(paths)
    delete_paths(file_io, chunk)
    context = TaskContext.get()
    yield DeleteTask(context.partitionId() if context else -1, len(chunk), os.getpid())


def _deleter(spark, table: tarn.Table, parallelism: int | None):
    return lambda paths: delete_on_executors(spark, table.file_io, paths, parallelism)


def expire_snapshots(spark, table_path: str, retain_min: int | None = None, retain_max: int | None = None,
                     older_than_ms: int | None = None, max_deletes: int | None = None,
                     parallelism: int | None = None, storage_options: dict | None = None) -> int:
    """Expire old snapshots (tarn.ops.expire); returns how many were removed. The data
    and changelog files go on the executors, the rest from the driver."""
    table = open_table(table_path, storage_options)
    plan = expire.plan_expire(table, retain_min=retain_min, retain_max=retain_max,
                              older_than_ms=older_than_ms, max_deletes=max_deletes)
    return expire.execute_expire(table, plan, delete=_deleter(spark, table, parallelism))


def expire_partitions(spark, table_path: str, expiration_time=None, timestamp_formatter: str | None = None,
                      timestamp_pattern: str | None = None, expire_strategy: str | None = None,
                      max_expires: int | None = None, options: dict | str | None = None,
                      storage_options: dict | None = None):
    """Paimon's `expire_partitions` procedure (`Table.expire_partitions`) on the driver: the
    drop is a metadata commit; the dropped files are freed by snapshot expiry later. Returns a
    DataFrame with one column `expired_partitions`, as Paimon's procedure ("No expired
    partitions." when none)."""
    table = open_table(table_path, storage_options)
    dropped = table.expire_partitions(expiration_time, timestamp_formatter, timestamp_pattern, expire_strategy,
                                      max_expires, options)
    rows = [(spec,) for spec in dropped] or [("No expired partitions.",)]
    return spark.createDataFrame(rows, "expired_partitions string")


def create_tag(spark, table_path: str, name: str, snapshot_id: int | None = None, time_retained=None,
               storage_options: dict | None = None):
    """`Table.create_tag` on the driver (a tag file only, nothing for executors to do):
    tag snapshot `snapshot_id` (default: the latest), `time_retained` as a timedelta, millis
    or "1 d"."""
    return tags.create_tag(open_table(table_path, storage_options), name, snapshot_id=snapshot_id, time_retained=time_retained)


def delete_tag(spark, table_path: str, name: str, parallelism: int | None = None,
               storage_options: dict | None = None) -> None:
    """Delete a tag; the data files only it kept go on the executors."""
    table = open_table(table_path, storage_options)
    tags.execute_delete_tags(table, tags.plan_delete_tag(table, name), delete=_deleter(spark, table, parallelism))


def list_tags(spark, table_path: str, storage_options: dict | None = None) -> list:
    """`Table.list_tags` on the driver: every tag, by tagged snapshot id then name."""
    return tags.list_tags(open_table(table_path, storage_options))


def rollback_to(spark, table_path: str, target: int | str, parallelism: int | None = None,
                storage_options: dict | None = None):
    """Roll back to snapshot id `target` (int) or tag `target` (str); the data files only the
    removed snapshots and tags held go on the executors."""
    table = open_table(table_path, storage_options)
    plan = rollback.plan_rollback(table, target)
    return rollback.execute_rollback(table, plan, delete=_deleter(spark, table, parallelism))


def remove_orphan_files(spark, table_path: str, older_than_ms: int | None = None, dry_run: bool = False,
                        parallelism: int | None = None, storage_options: dict | None = None) -> list[str]:
    """Delete (or only list) orphan files older than `older_than_ms` (default: one day); the
    files go on the executors. Returns their paths, sorted."""
    table = open_table(table_path, storage_options)
    found = orphans.find_orphan_files(table, older_than_ms)
    if not dry_run:
        orphans.delete_orphan_files(table, found, delete=_deleter(spark, table, parallelism))
    return found
