"""`tarn.spark.write` into a cross-partition upsert table (bucket -1, a primary key without every
partition column), as Paimon's distributed writers do it:

1. rows are shuffled by a hash of their primary key to `channels` assigner tasks;
2. each assigner task reads the keys of its hash range from the snapshot the write started
   from into its own key index (`tarn.write.cross_partition.CrossPartitionAssigner` with
   `channel=(task, channels)`), and places its rows: partition columns set to where each key
   lives, the -D rows of moved keys added, new keys in buckets `b % channels == task` (so tasks
   never hand out the same bucket); each row leaves with its row kind and bucket;
3. rows are shuffled by (partition, bucket) to writer tasks, which write them as given;
4. the driver commits every task's messages at once (nothing lands when a task fails).

Each assigner task reads the key columns of the whole snapshot (keeping its own range): the
reading grows with the number of tasks (Paimon splits that reading over the tasks and
shuffles the keys instead).
"""

from __future__ import annotations

import pickle
from functools import partial

import numpy as np
import pyarrow as pa

import tarn
from tarn.data.reader import FileReader
from tarn.lsm.merge import INSERT, ROW_KIND_NAMES, VALUE_KIND
from tarn.options import Options
from tarn.spark.batch_write import collect_messages, job_prefixes, new_job_token
from tarn.spark.types import spark_schema
from tarn.write.conform import conform
from tarn.write.cross_partition import CrossPartitionAssigner, key_channels
from tarn.store.deletion_vectors import DeletionVectorFiles
from tarn.write.writer import abort, restore_from, restored_buckets

CHANNEL = "__tarn_assigner"
KIND = "__tarn_kind"
BUCKET = "__tarn_bucket"


def write(df, table, storage: dict | None, parallelism: int | None = None):
    """Write `df` into the cross-partition `table` in one commit (module docstring); returns
    the snapshot (None: nothing written)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ByteType, IntegerType, StructField, StructType

    spark = df.sparkSession
    schema = table.schema()
    latest = table.latest_snapshot()
    base = latest.id if latest is not None else 0
    if parallelism is None:
        parallelism = max(spark.sparkContext.defaultParallelism, int(spark.conf.get("spark.sql.shuffle.partitions")))
    by_lower = {c.lower(): c for c in df.columns}
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
                               + [StructField(KIND, ByteType(), False), StructField(BUCKET, IntegerType(), False)])
    assign = partial(_assign_task, table.root, storage, base, parallelism)
    placed = routed.mapInArrow(assign, placed_schema)
    tasks = int(spark.conf.get("spark.sql.shuffle.partitions"))
    placed = placed.repartition(tasks, *[F.col(k) for k in schema.partition_keys], F.col(BUCKET))
    token = new_job_token()
    messages = collect_messages(table, token, placed, partial(_write_task, table.root, storage, token))
    return table.commit(messages) if messages else None


def _assign_task(root: str, storage: dict | None, base: int, channels: int, batches):
    from pyspark import TaskContext

    table = tarn.load_table(root, storage)
    schema = table.schema()
    options = Options(schema.options)
    reader = FileReader(table.file_io, schema, table.schema_by_id, options)
    assigner = CrossPartitionAssigner(schema, options, reader, _buckets_at(table, schema, base),
                                      channel=(TaskContext.get().partitionId(), channels))
    try:
        for batch in batches:
            if not batch.num_rows:
                continue
            rows = conform(pa.Table.from_batches([batch]), list(schema.fields), table.name, schema.primary_keys)
            rows = rows.append_column(VALUE_KIND, _row_kinds(rows, options))
            placed, buckets = assigner.route(rows)
            kinds = placed.column(VALUE_KIND).combine_chunks().cast(pa.int8())
            placed = placed.drop_columns([VALUE_KIND])
            out = placed.append_column(KIND, kinds).append_column(BUCKET, pa.array(buckets, pa.int32()))
            yield from out.to_batches()
    finally:
        assigner.close()


def _row_kinds(rows: pa.Table, options: Options) -> pa.Array:
    """+I, or the row kinds of the `rowkind.field` column."""
    field = options.get("rowkind.field")
    if not field:
        return pa.array(np.full(rows.num_rows, INSERT, dtype=np.int8))
    import pyarrow.compute as pc

    codes = pc.index_in(rows.column(field).cast(pa.string()), value_set=pa.array(list(ROW_KIND_NAMES)))
    if codes.null_count:
        raise tarn.TarnError(f"column '{field}' holds values other than {list(ROW_KIND_NAMES)}")
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


def _write_task(root: str, storage: dict | None, token: str, batches):
    table = tarn.load_table(root, storage)
    schema = table.schema()
    writer = table.new_writer(options=job_prefixes(schema.options, token))
    try:
        for batch in batches:
            if not batch.num_rows:
                continue
            data = pa.Table.from_batches([batch])
            kinds, buckets = data.column(KIND), data.column(BUCKET)
            writer.write(data.drop_columns([KIND, BUCKET]), row_kind=kinds, buckets=buckets)
        messages = writer.prepare_commit()
    except BaseException:
        abort(table.file_io, table.root, schema, writer.messages())
        raise
    yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(messages)], pa.binary())], names=["messages"])
