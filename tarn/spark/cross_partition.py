"""Spark writes into a cross-partition upsert table (bucket -1, a primary key without every
partition column), as Paimon's distributed writers do them. `place` turns a DataFrame (batch
or streaming) into placed rows:

1. rows are shuffled by a hash of their primary key to `channels` assigner tasks;
2. each assigner task loads the keys of its hash range, as of one snapshot, into its own key
   index (`tarn.write.cross_partition.CrossPartitionAssigner` with `channel=(task, channels)`),
   and places its rows: partition columns set to where each key lives, the -D rows of moved
   keys added, new keys in buckets `b % channels == task` (so tasks never hand out the same
   bucket); each row leaves with its row kind (`KIND_COLUMN`) and its bucket packed with that
   snapshot's id (`BUCKET_COLUMN`, `tarn.write.assign.pack_bucket`);
3. rows are repartitioned by (partition, bucket), so each bucket reaches one writer task.

The "tarn" sink (`tarn.spark.batch_write`) writes them with their row kinds and buckets, and
the driver commits every task's messages at once, only directly on top of the snapshot the
rows were placed against (`Table.commit(expected_base=...)`): if another writer committed in
between, the commit fails naming the table and nothing lands (Paimon's single-writer rule for
these tables; write again).

Which snapshot: `tarn.spark.write` pins the latest one when the write starts. A streaming
query (`tarn.spark.by_bucket(stream, path)` then `writeStream.format("tarn")`) places each
micro-batch against the latest snapshot when its assigner tasks run, so each batch sees the
previous ones, as Paimon's Spark sink bootstraps per batch. Tasks of one batch that saw
different snapshots (a commit landed while they started) fail the batch's commit; a restarted
query re-runs the batch against the new snapshot. A replayed batch that had already landed
is dropped by the sink's exactly-once check before any of this.

Where the keys come from (step 2). With the snapshot pinned on the driver (`tarn.spark.write`)
the write takes Paimon's bootstrap topology (PaimonSparkWriter.bootstrapAndRepartitionByKeyHash):
the driver lists the snapshot's buckets (`key_splits`, `cross-partition-upsert.index-ttl`
applied), a stage of bootstrap tasks reads each bucket once (`key_rows`: its live keys as
`CrossPartitionAssigner.live_key_rows` finds them, deletion vectors applied) and emits them as
key rows: the raw key columns, the partition (BinaryRow bytes) and the bucket. They are unioned
with the input rows, whose key columns are conformed to the table's types, and shuffled by the
same key hash (`key_channels`), so each assigner task receives exactly the existing keys of its
range, which it loads (`CrossPartitionAssigner.load_keys`) before placing its rows. Keys come
first through a sort within each task on one long column, `ORDER`: -1 for key rows, the input
position (`monotonically_increasing_id`) for data rows. Spark sorts it with its radix sort and
spills it past its memory, the Python task streams, and the data rows keep their input order
(the order that decides which row of a key wins). The table's keys are then read once per
write, not once per assigner task. That pays only when the assigner tasks are many per core
(over SPLIT_BOOTSTRAP_TASKS_PER_CORE, as with 200 shuffle partitions on a cluster); with fewer,
and in a streaming query (whose snapshot is not known when the plan is built), each assigner
task reads the key columns of the whole snapshot itself, keeping its own range. INSERT
OVERWRITE stays refused (keys in other partitions would stay).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
import pyarrow as pa

from tarn.spark.ref import open_table
from tarn.data.reader import FileReader
from tarn.errors import SchemaMismatch, TarnError
from tarn.lsm.merge import INSERT, ROW_KIND_NAMES, VALUE_KIND
from tarn.options import Options
from tarn.spark.batch_write import BUCKET_COLUMN, KIND_COLUMN
from tarn.meta.manifest import IndexManifestEntry
from tarn.spark.maintenance import spread_groups
from tarn.spark.types import arrow_target, fit_batch, spark_schema
from tarn.store.deletion_vectors import DeletionVectorFiles
from tarn.write.assign import BUCKET_SPAN, pack_bucket
from tarn.write.conform import conform
from tarn.write.cross_partition import BucketFiles, CrossPartitionAssigner, key_channels, now_millis, within_ttl
from tarn.write.deletions import BucketVectors
from tarn.write.writer import restore_from, restored_buckets

CHANNEL = "__tarn_assigner"
ORDER = "__tarn_order"  # data rows: their order in the input (>= 0); key rows: -1, so they sort first
KEY_PARTITION = "__tarn_key_partition"  # key rows: the partition (BinaryRow bytes) the key lives in
KEY_BUCKET = "__tarn_key_bucket"  # key rows: its bucket
TAG_COLUMNS = (ORDER, KEY_PARTITION, KEY_BUCKET)


def place(df, table, storage: dict | None, snapshot_id: int | None = None, parallelism: int | None = None):
    """`df` (batch or streaming) as placed rows of the cross-partition `table`: its columns plus
    KIND_COLUMN and BUCKET_COLUMN, repartitioned by (partition, bucket) (module docstring).
    `snapshot_id`: place against that snapshot (0: an empty table); None: the latest one when
    the assigner tasks run."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ByteType, LongType, StructField, StructType

    spark = df.sparkSession
    schema = table.schema()
    if parallelism is None:
        parallelism = max(spark.sparkContext.defaultParallelism, int(spark.conf.get("spark.sql.shuffle.partitions")))
    by_lower = {c.lower(): c for c in df.columns}
    missing = [f.name for f in schema.fields if f.name.lower() not in by_lower]
    if missing:
        raise SchemaMismatch(f"table {table.name}: the DataFrame lacks the column(s) {missing} a "
                               "cross-partition upsert needs (every column of the table)")
    columns = [by_lower[f.name.lower()] for f in schema.fields]
    keys = [by_lower[k.lower()] for k in schema.primary_keys]

    if snapshot_id and split_bootstrap(spark, parallelism):  # the keys read once, shuffled with the rows
        named = df.select(*[F.col(c).alias(f.name) for c, f in zip(columns, schema.fields)])
        routed = _with_existing_keys(named, table, storage, snapshot_id, parallelism)
        assign = partial(_assign_given_keys, table.location, storage, snapshot_id, parallelism)
    else:  # each assigner task reads the keys of its range when it runs
        routed = _by_channel(df.select(*columns), table, keys, parallelism)
        assign = partial(_assign_task, table.location, storage, snapshot_id, parallelism)
    placed_schema = StructType(list(spark_schema(list(schema.fields)).fields)
                               + [StructField(KIND_COLUMN, ByteType(), False),
                                  StructField(BUCKET_COLUMN, LongType(), False)])
    placed = routed.mapInArrow(assign, placed_schema)
    tasks = int(spark.conf.get("spark.sql.shuffle.partitions"))
    return placed.repartition(tasks, *[F.col(k) for k in schema.partition_keys],
                              F.pmod(F.col(BUCKET_COLUMN), F.lit(BUCKET_SPAN)))


# A pinned snapshot's keys are read once by bootstrap tasks and shuffled to the assigner tasks
# with the rows (Paimon's topology) when there are more than this many assigner tasks per core;
# with fewer, each assigner task reading its own keys costs less than shuffling and sorting them
# (local[2], 8 tasks, 1M keys in the table, 1M upserts: 3.7 s per-task, 5.3 s split).
SPLIT_BOOTSTRAP_TASKS_PER_CORE = 4


def split_bootstrap(spark, channels: int) -> bool:
    """Are the keys of a pinned snapshot read once and shuffled (True), or by each of the
    `channels` assigner tasks for its own range (False)?"""
    return channels > SPLIT_BOOTSTRAP_TASKS_PER_CORE * spark.sparkContext.defaultParallelism


def _by_channel(df, table, keys: list[str], channels: int):
    """The rows shuffled to the assigner task of their key."""
    from pyspark.sql import functions as F

    schema = table.schema()

    @F.arrow_udf("int")
    def channel_of(*arrays: pa.Array) -> pa.Array:
        rows = conform(pa.Table.from_arrays(list(arrays), names=list(schema.primary_keys)),
                       [schema.field(k) for k in schema.primary_keys], table.name)
        return pa.array(key_channels(rows, schema, channels).astype(np.int32))

    routed = df.withColumn(CHANNEL, channel_of(*[F.col(k) for k in keys]))
    return routed.repartitionById(channels, F.col(CHANNEL)).drop(CHANNEL)


# ---------------------------------------------------------------------------------------------
# pinned snapshot: Paimon's bootstrap topology (PaimonSparkWriter.bootstrapAndRepartitionByKeyHash)


@dataclass(frozen=True)
class KeySplit:
    """One bucket of the pinned snapshot whose live keys a bootstrap task reads (picklable:
    its deletion vectors as the index entry, read in the task)."""

    bucket: BucketFiles  # without `deleted_rows`
    vectors: IndexManifestEntry | None

    @property
    def size(self) -> int:
        return sum(m.file_size for m in self.bucket.files)

    def bucket_files(self, vector_files: DeletionVectorFiles) -> BucketFiles:
        if self.vectors is None:
            return self.bucket
        vectors = BucketVectors(vector_files, self.bucket.partition, self.bucket.bucket, self.vectors)
        return replace(self.bucket, deleted_rows=vectors.of)


def key_splits(table, snapshot_id: int) -> list[KeySplit]:
    """The buckets of the snapshot whose keys the key indexes start from (index TTL applied)."""
    schema = table.schema()
    options = schema.shape.options
    restored, buckets = _restored(table, schema, snapshot_id)
    ttl, now = options.duration_ms("cross-partition-upsert.index-ttl"), now_millis()
    return [KeySplit(replace(b, deleted_rows=None), restored.vectors.get((b.partition, b.bucket)))
            for b in buckets if within_ttl(b, ttl, now)]


def key_rows(spark, table, storage: dict | None, snapshot_id: int, channels: int):
    """The live keys of the snapshot as rows (key columns, CHANNEL, ORDER = -1, KEY_PARTITION,
    KEY_BUCKET), each bucket read by one task; None when there is none."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

    splits = key_splits(table, snapshot_id)
    if not splits:
        return None
    schema = table.schema()
    tasks = min(len(splits), channels)
    frame = spark.createDataFrame(spread_groups(splits, tasks), "split binary, task int")
    out = StructType(list(spark_schema([schema.field(k) for k in schema.primary_keys]).fields)
                     + [StructField(CHANNEL, IntegerType(), False), StructField(ORDER, LongType(), False),
                        StructField(KEY_PARTITION, BinaryType(), False), StructField(KEY_BUCKET, IntegerType(), False)])
    emit = partial(_emit_keys, table.location, storage, channels, out)
    return frame.repartitionById(tasks, F.col("task")).mapInArrow(emit, out)


def _emit_keys(root: str, storage: dict | None, channels: int, out, batches):
    """A bootstrap task: the live keys of its buckets, as `CrossPartitionAssigner` finds them."""
    table = open_table(root, storage)
    schema = table.schema()
    options = schema.shape.options
    reader = FileReader(table.file_io, schema, table.schema_by_id, options)
    assigner = CrossPartitionAssigner(schema, options, reader, list)  # one channel: every key
    vector_files, target = DeletionVectorFiles(table.file_io, table.root, table.schema()), arrow_target(out)
    try:
        for batch in batches:
            for blob in batch.column(0).to_pylist():  # one split each
                bucket = pickle.loads(blob).bucket_files(vector_files)
                keys = assigner.live_key_rows(bucket)
                if keys.num_rows:
                    yield from fit_batch(_tagged_keys(keys, bucket, schema, channels), target).to_batches()
    finally:
        assigner.close()


def _tagged_keys(keys: pa.Table, bucket: BucketFiles, schema, channels: int) -> pa.Table:
    n = keys.num_rows
    zeros = pa.array(np.zeros(n, dtype=np.int32))
    return (keys.append_column(CHANNEL, pa.array(key_channels(keys, schema, channels).astype(np.int32)))
            .append_column(ORDER, pa.array(np.full(n, -1, dtype=np.int64)))
            .append_column(KEY_PARTITION, pa.array([bucket.partition], pa.binary()).take(zeros))
            .append_column(KEY_BUCKET, pa.array(np.full(n, bucket.bucket, dtype=np.int32))))


def _with_existing_keys(df, table, storage: dict | None, snapshot_id: int, channels: int):
    """The rows (key columns conformed, each with its ORDER) and the snapshot's live keys,
    shuffled together to the assigner task of their key, key rows first in each task."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, StructField, StructType

    schema = table.schema()
    key_fields = {f.name: f for f in spark_schema([schema.field(k) for k in schema.primary_keys]).fields}
    tagged = StructType([key_fields.get(f.name, f) for f in df.schema.fields]
                        + [StructField(CHANNEL, IntegerType(), False)])
    rows = df.mapInArrow(partial(_channel_rows, schema, table.name, channels, tagged), tagged)
    rows = rows.withColumn(ORDER, F.monotonically_increasing_id())
    keys = key_rows(df.sparkSession, table, storage, snapshot_id, channels)
    if keys is not None:
        rows = rows.unionByName(keys, allowMissingColumns=True)
    # a sort on one long column: Spark's radix sort, spilled past its memory, input order kept
    return rows.repartitionById(channels, F.col(CHANNEL)).sortWithinPartitions(ORDER).drop(CHANNEL)


def _channel_rows(schema, table_name: str, channels: int, out, batches):
    """Input rows with their key columns conformed to the table's types and their CHANNEL."""
    target = arrow_target(out)
    key_fields = [schema.field(k) for k in schema.primary_keys]
    for batch in batches:
        rows = pa.Table.from_batches([batch])
        keys = conform(rows.select(list(schema.primary_keys)), key_fields, table_name)
        for name in schema.primary_keys:
            rows = rows.set_column(rows.schema.get_field_index(name), name, keys.column(name))
        rows = rows.append_column(CHANNEL, pa.array(key_channels(keys, schema, channels).astype(np.int32)))
        yield from fit_batch(rows, target).to_batches()


def _assign_task(root: str, storage: dict | None, snapshot_id: int | None, channels: int, batches):
    """An assigner task reading the keys of its range from the snapshot's files itself."""
    table = open_table(root, storage)
    schema = table.schema()
    if snapshot_id is None:
        latest = table.latest_snapshot()
        snapshot_id = latest.id if latest is not None else 0
    assigner = _assigner(table, schema, channels, _buckets_at(table, schema, snapshot_id))
    try:
        for batch in batches:
            if batch.num_rows:
                yield from _placed(assigner, table, schema, snapshot_id, pa.Table.from_batches([batch]))
    finally:
        assigner.close()


def _assign_given_keys(root: str, storage: dict | None, snapshot_id: int, channels: int, batches):
    """An assigner task bootstrapped from the key rows shuffled to it, which come before its
    data rows (sorted by ORDER); then it places the data rows."""
    table = open_table(root, storage)
    schema = table.schema()
    assigner = _assigner(table, schema, channels, list)
    key_fields = [schema.field(k) for k in schema.primary_keys]
    placing = False
    try:
        for batch in batches:
            rows = pa.Table.from_batches([batch])
            cut = int(np.searchsorted(rows.column(ORDER).to_numpy(), 0))  # key rows first
            if cut and placing:
                raise TarnError(f"table {table.name}: key rows reached an assigner task after its data rows")
            if cut:
                keys = rows.slice(0, cut)
                assigner.load_keys(conform(keys.select(list(schema.primary_keys)), key_fields, table.name),
                                   keys.column(KEY_PARTITION).combine_chunks(), keys.column(KEY_BUCKET).to_numpy())
            data = rows.slice(cut).drop_columns([c for c in TAG_COLUMNS if c in rows.column_names])
            if data.num_rows:
                placing = True
                yield from _placed(assigner, table, schema, snapshot_id, data)
    finally:
        assigner.close()


def _assigner(table, schema, channels: int, buckets) -> CrossPartitionAssigner:
    from pyspark import TaskContext

    options = schema.shape.options
    reader = FileReader(table.file_io, schema, table.schema_by_id, options)
    return CrossPartitionAssigner(schema, options, reader, buckets, channel=(TaskContext.get().partitionId(), channels))


def _placed(assigner: CrossPartitionAssigner, table, schema, snapshot_id: int, rows: pa.Table):
    """The rows placed: conformed, with their row kind and packed snapshot + bucket."""
    options = schema.shape.options
    rows = conform(rows, list(schema.fields), table.name, schema.primary_keys)
    rows = rows.append_column(VALUE_KIND, _row_kinds(rows, options, table.name))
    placed, buckets = assigner.route(rows)
    kinds = placed.column(VALUE_KIND).combine_chunks().cast(pa.int8())
    placed = placed.drop_columns([VALUE_KIND]).append_column(KIND_COLUMN, kinds)
    return placed.append_column(BUCKET_COLUMN, pa.array(pack_bucket(snapshot_id, buckets))).to_batches()


def _row_kinds(rows: pa.Table, options: Options, table_name: str) -> pa.Array:
    """+I, or the row kinds of the `rowkind.field` column."""
    field = options.get("rowkind.field")
    if not field:
        return pa.array(np.full(rows.num_rows, INSERT, dtype=np.int8))
    import pyarrow.compute as pc

    codes = pc.index_in(rows.column(field).cast(pa.string()), value_set=pa.array(list(ROW_KIND_NAMES)))
    if codes.null_count:
        raise TarnError(f"table {table_name}: column '{field}' holds values other than {list(ROW_KIND_NAMES)}")
    return codes.combine_chunks().cast(pa.int8())


def _buckets_at(table, schema, base: int):
    """The buckets of snapshot `base` (files and deletion vectors), read when first needed."""
    def buckets():
        return _restored(table, schema, base)[1] if base else []
    return buckets


def _restored(table, schema, snapshot_id: int):
    """(the restored snapshot, its buckets with their files and deletion vectors)."""
    restored = restore_from(table, schema, snapshot_id=snapshot_id)()
    return restored, restored_buckets(restored, DeletionVectorFiles(table.file_io, table.root, table.schema()), table.root,
                                      schema, schema.shape.options)
