"""Table statistics on Spark: `analyze` gathers them on executors and commits them once;
`statistics` shows them as a DataFrame; `count` answers a row count from metadata.

`analyze` plans on the driver (the latest snapshot, its splits, the columns), spreads the
splits over Spark tasks by size, and each task reads its splits with tarn (merged rows, as a
read of the table returns them) into a `StatsCollector`: counts, minima and maxima, lengths,
and per column an exact set of value hashes or a HyperLogLog sketch. The driver merges the
collectors (set union, register maximum) and commits one ANALYZE snapshot. Merging is exact,
so the numbers are those a local `Table.analyze` gets.

Spark's optimizer cannot use them: PySpark's Python Data Source API has no way to report
statistics (no SupportsReportStatistics) nor to answer `count()` from metadata (no aggregate
push-down), so `spark.read.format("tarn").load(path).count()` reads every row. Use
`tarn.spark.count` (or `Table.scan().count()`) for metadata counts, and
`tarn.spark.statistics` to look at the statistics, or to feed them to your own planning.
"""

from __future__ import annotations

from functools import partial
from typing import Iterator

from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from tarn.spark.ref import open_table
from tarn.ops import analyze as table_stats
from tarn.meta.snapshot import Snapshot
from tarn.s3 import check_options as check_storage

STATISTICS_SCHEMA = StructType([
    StructField("snapshot_id", LongType(), False), StructField("schema_id", LongType(), False),
    StructField("merged_record_count", LongType(), True), StructField("merged_record_size", LongType(), True),
    StructField("column_name", StringType(), True), StructField("col_id", IntegerType(), True),
    StructField("distinct_count", LongType(), True), StructField("min", StringType(), True),
    StructField("max", StringType(), True), StructField("null_count", LongType(), True),
    StructField("avg_len", LongType(), True), StructField("max_len", LongType(), True)])


def _spread(splits: list, tasks: int) -> list[list]:
    """The splits in `tasks` groups of similar byte size (largest first, to the lightest)."""
    groups: list[list] = [[] for _ in range(tasks)]
    load = [0] * tasks
    for split in sorted(splits, key=lambda s: -sum(f.file_size for f in s.files)):
        task = load.index(min(load))
        groups[task].append(split)
        load[task] += sum(f.file_size for f in split.files)
    return [g for g in groups if g]


def _collect_task(path: str, storage: dict | None, snapshot_id: int, schema_id: int, columns: list[str],
                  groups: Iterator[list]) -> Iterator[table_stats.StatsCollector]:
    """One Spark task: the statistics of its splits of snapshot `snapshot_id`."""
    table = open_table(path, storage)
    snapshot = table.snapshot(snapshot_id)
    schema = table.schema_by_id(schema_id)
    plan = table_stats.AnalyzePlan(snapshot, schema, columns, 0)
    for splits in groups:
        yield table_stats.collect(table, plan, splits)


def analyze(spark, table_path: str, columns: list[str] | None = None, parallelism: int | None = None,
            storage_options: dict | None = None) -> Snapshot | None:
    """`Table.analyze` with the reading spread over Spark executors: the statistics of the
    latest snapshot (all columns, or `columns`), committed from the driver as one ANALYZE
    snapshot, which is returned (None: the table has no snapshot)."""
    table = open_table(table_path, storage_options)
    plan = table_stats.plan_analyze(table, columns)
    if plan is None:
        return None
    splits = [part for split in table.scan_snapshot(plan.snapshot, schema=plan.schema).plan()
              for part in split.by_file()]
    collector = table_stats.StatsCollector(plan.fields)
    if splits:
        tasks = max(1, min(len(splits), parallelism or spark.sparkContext.defaultParallelism * 2))
        groups = _spread(splits, tasks)
        storage = check_storage(storage_options) or None
        job = spark.sparkContext.parallelize(groups, len(groups)).mapPartitions(
            partial(_collect_task, table.location if "://" not in table_path else table_path, storage,
                    plan.snapshot.id, plan.schema.id, plan.columns))
        for part in job.collect():
            collector.merge(part)
    return table_stats.commit_statistics(table, plan.statistics(collector))


def statistics(spark, table_path: str, snapshot_id: int | None = None, storage_options: dict | None = None):
    """The statistics the latest snapshot (or `snapshot_id`) carries, as a DataFrame with one
    row per analysed column (`column_name` null when none was): the table-wide
    merged_record_count and merged_record_size on every row, min/max as Paimon's text. Empty
    when the snapshot carries no statistics."""
    table = open_table(table_path, storage_options)
    stats = table.statistics(snapshot_id)
    rows = []
    if stats is not None:
        head = (stats.snapshot_id, stats.schema_id, stats.merged_record_count, stats.merged_record_size)
        for name, c in stats.col_stats.items():
            rows.append(head + (name, c.col_id, c.distinct_count, c.serialized_min, c.serialized_max,
                                c.null_count, c.avg_len, c.max_len))
        if not rows:
            rows.append(head + (None,) * 8)
    return spark.createDataFrame(rows, STATISTICS_SCHEMA)


def count(spark, table_path: str, storage_options: dict | None = None) -> int:
    """The rows of the table's latest snapshot, from metadata where it tells (see
    `Scan.count`), computed on the driver: what `df.count()` of the tarn source cannot do."""
    return open_table(table_path, storage_options).scan().count()
