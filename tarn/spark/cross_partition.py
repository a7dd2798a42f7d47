"""Spark writes into a cross-partition upsert table (bucket -1, a primary key without every
partition column), as Paimon's distributed writers do them. `place` turns a DataFrame (batch
or streaming) into placed rows:

1. rows are shuffled by a hash of their primary key to `channels` assigner tasks;
2. each assigner task reads the keys of its hash range from one snapshot into its own key
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

Each assigner task reads the key columns of the whole snapshot (keeping its own range): the
reading grows with the number of tasks (Paimon splits that reading over the tasks and
shuffles the keys instead). INSERT OVERWRITE stays refused (keys in other partitions would
stay).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pyarrow as pa

import tarn
from tarn.data.reader import FileReader
from tarn.errors import SchemaMismatch, TarnError
from tarn.lsm.merge import INSERT, ROW_KIND_NAMES, VALUE_KIND
from tarn.options import Options
from tarn.spark.batch_write import BUCKET_COLUMN, KIND_COLUMN
from tarn.spark.types import spark_schema
from tarn.store.deletion_vectors import DeletionVectorFiles
from tarn.write.assign import BUCKET_SPAN, pack_bucket
from tarn.write.conform import conform
from tarn.write.cross_partition import CrossPartitionAssigner, key_channels
from tarn.write.writer import restore_from, restored_buckets

CHANNEL = "__tarn_assigner"


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

    @F.arrow_udf("int")
    def channel_of(*arrays: pa.Array) -> pa.Array:
        rows = conform(pa.Table.from_arrays(list(arrays), names=list(schema.primary_keys)),
                       [schema.field(k) for k in schema.primary_keys], table.name)
        return pa.array(key_channels(rows, schema, parallelism).astype(np.int32))

    routed = df.select(*columns).withColumn(CHANNEL, channel_of(*[F.col(k) for k in keys]))
    routed = routed.repartitionById(parallelism, F.col(CHANNEL)).drop(CHANNEL)
    placed_schema = StructType(list(spark_schema(list(schema.fields)).fields)
                               + [StructField(KIND_COLUMN, ByteType(), False),
                                  StructField(BUCKET_COLUMN, LongType(), False)])
    assign = partial(_assign_task, table.root, storage, snapshot_id, parallelism)
    placed = routed.mapInArrow(assign, placed_schema)
    tasks = int(spark.conf.get("spark.sql.shuffle.partitions"))
    return placed.repartition(tasks, *[F.col(k) for k in schema.partition_keys],
                              F.pmod(F.col(BUCKET_COLUMN), F.lit(BUCKET_SPAN)))


def _assign_task(root: str, storage: dict | None, snapshot_id: int | None, channels: int, batches):
    from pyspark import TaskContext

    table = tarn.load_table(root, storage)
    schema = table.schema()
    if snapshot_id is None:
        latest = table.latest_snapshot()
        snapshot_id = latest.id if latest is not None else 0
    options = Options(schema.options)
    reader = FileReader(table.file_io, schema, table.schema_by_id, options)
    assigner = CrossPartitionAssigner(schema, options, reader, _buckets_at(table, schema, snapshot_id),
                                      channel=(TaskContext.get().partitionId(), channels))
    try:
        for batch in batches:
            if not batch.num_rows:
                continue
            rows = conform(pa.Table.from_batches([batch]), list(schema.fields), table.name, schema.primary_keys)
            rows = rows.append_column(VALUE_KIND, _row_kinds(rows, options, table.name))
            placed, buckets = assigner.route(rows)
            kinds = placed.column(VALUE_KIND).combine_chunks().cast(pa.int8())
            placed = placed.drop_columns([VALUE_KIND]).append_column(KIND_COLUMN, kinds)
            out = placed.append_column(BUCKET_COLUMN, pa.array(pack_bucket(snapshot_id, buckets)))
            yield from out.to_batches()
    finally:
        assigner.close()


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
        if not base:
            return []
        restored = restore_from(table, schema, snapshot_id=base)()
        return restored_buckets(restored, DeletionVectorFiles(table.file_io, table.root), table.root, schema,
                                Options(schema.options))
    return buckets
