"""Maintenance on Spark: compaction spread over executors, committed once on the driver; expiry,
tags, rollback and orphan cleanup as driver calls.

Compaction reuses Spark's write protocol through an internal data source ("tarn_compact"):
the input rows are the (partition, bucket) pairs to compact, spread over tasks so each bucket
is compacted by exactly one task; tasks return commit messages; the driver commits them as one
COMPACT snapshot, or, if the job fails, deletes every file the tasks wrote.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter
from pyspark.sql.types import BinaryType, IntegerType, StructField, StructType

import tarn
from tarn import partition as partitions
from tarn.errors import TarnError
from tarn.fs import join
from tarn.options import Options
from tarn.spark.batch_write import TaskMessages, sweep
from tarn.write.writer import TableWriter, abort

COMPACT_FORMAT = "tarn_compact"
BUCKETS_SCHEMA = StructType([StructField("partition", BinaryType(), False),
                             StructField("bucket", IntegerType(), False),
                             StructField("task", IntegerType(), False)])


@dataclass
class CompactPlan:
    path: str
    full: bool
    file_prefix: str  # names every file the job writes (see batch_write.WritePlan)


class CompactWriter(DataSourceArrowWriter):
    def __init__(self, plan: CompactPlan):
        self.plan = plan

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskMessages:
        buckets = []
        for batch in iterator:
            buckets += list(zip(batch.column("partition").to_pylist(), batch.column("bucket").to_pylist()))
        if not buckets:
            return TaskMessages([])
        table = tarn.load_table(self.plan.path)
        schema = table.schema()
        options = Options({**schema.options, "data-file.prefix": self.plan.file_prefix})
        writer = TableWriter(table.file_io, table.root, table.name, schema, options,
                             table._restore_lookup(schema), table.schema_by_id)
        messages = writer.compact(sorted(buckets), self.plan.full)
        if table.file_io.exists(self.marker(table)):  # the job was aborted while this task ran
            abort(table.file_io, table.root, schema, messages)
            raise TarnError(f"table {table.name}: the compaction was aborted")
        return TaskMessages(messages)

    def marker(self, table: tarn.Table) -> str:
        return join(table.root, ".tarn-spark", "aborted-" + self.plan.file_prefix.rstrip("-"))

    def commit(self, messages: list) -> None:
        table = tarn.load_table(self.plan.path)
        table.commit([m for r in messages if r is not None for m in r.messages])

    def abort(self, messages: list) -> None:
        table = tarn.load_table(self.plan.path)
        table.file_io.write_bytes(self.marker(table), b"")
        abort(table.file_io, table.root, table.schema(),
              [m for r in messages if r is not None for m in r.messages])
        if sweep(table, self.plan.file_prefix):
            time.sleep(3)  # a killed task may still be finishing a file
            sweep(table, self.plan.file_prefix)


class CompactSource(DataSource):
    """Internal: the write side of distributed compaction."""

    @classmethod
    def name(cls) -> str:
        return COMPACT_FORMAT

    def writer(self, schema, overwrite):
        options = {k.lower(): v for k, v in dict(self.options).items()}
        return CompactWriter(CompactPlan(options["path"], options.get("full", "false") == "true",
                                         options["file-prefix"]))


def bucket_sizes(table: tarn.Table, partition_filter: list[dict] | None) -> dict[tuple[bytes, int], int]:
    """Bytes in each live (partition, bucket) of the latest snapshot."""
    schema = table.schema()
    wanted = None
    if partition_filter is not None:
        wanted = {partitions.to_bytes(schema, [p.get(k) for k in schema.partition_keys]) for p in partition_filter}
    sizes: dict[tuple[bytes, int], int] = {}
    for entry in table._planner(schema).live_entries(table.latest_snapshot()):
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
            parallelism: int | None = None):
    """Compact a primary-key table on Spark; returns the new snapshot or None (nothing to do)."""
    table = tarn.load_table(table_path)
    if not table.primary_keys:
        raise TarnError(f"table {table.name}: compaction of append tables is not supported yet")
    before = table.snapshot_store.latest_id()
    sizes = bucket_sizes(table, partitions)
    if not sizes:
        return None
    tasks = min(len(sizes), parallelism or spark.sparkContext.defaultParallelism * 2)
    rows = spread(sizes, tasks)
    frame = spark.createDataFrame(rows, BUCKETS_SCHEMA).repartitionById(tasks, "task")
    prefix = (table.options.get("data-file.prefix") or "data-") + f"spark-{uuid.uuid4().hex[:12]}-"
    (frame.write.format(COMPACT_FORMAT).mode("append").option("file-prefix", prefix)
     .option("full", str(bool(full)).lower()).save(table.root))
    latest = table.latest_snapshot()
    return latest if latest is not None and latest.id != before else None


# ---------------------------------------------------------------------------------------------
# driver-side maintenance (metadata work; the table files are read and deleted from the driver)


def expire_snapshots(spark, table_path: str, retain_min: int | None = None, retain_max: int | None = None,
                     older_than_ms: int | None = None, max_deletes: int | None = None) -> int:
    """Expire old snapshots (tarn.maintenance.expire); returns how many were removed."""
    from tarn.maintenance.expire import expire_snapshots as expire
    return expire(tarn.load_table(table_path), retain_min=retain_min, retain_max=retain_max,
                  older_than_ms=older_than_ms, max_deletes=max_deletes)


def create_tag(spark, table_path: str, name: str, snapshot_id: int | None = None, time_retained=None):
    from tarn.maintenance.tags import create_tag as create
    return create(tarn.load_table(table_path), name, snapshot_id=snapshot_id, time_retained=time_retained)


def delete_tag(spark, table_path: str, name: str) -> None:
    from tarn.maintenance.tags import delete_tag as delete
    delete(tarn.load_table(table_path), name)


def list_tags(spark, table_path: str) -> list:
    from tarn.maintenance.tags import list_tags as tags
    return tags(tarn.load_table(table_path))


def rollback_to(spark, table_path: str, target: int | str):
    """Roll back to snapshot id `target` (int) or tag `target` (str)."""
    from tarn.maintenance.rollback import rollback_to as rollback
    return rollback(tarn.load_table(table_path), target)


def remove_orphan_files(spark, table_path: str, older_than_ms: int | None = None, dry_run: bool = False) -> list[str]:
    from tarn.maintenance.orphans import remove_orphan_files as remove
    return remove(tarn.load_table(table_path), older_than_ms=older_than_ms, dry_run=dry_run)
