"""DataFrame-level helpers: `tarn.spark.write` shuffles a DataFrame so each (partition, bucket)
of the table reaches one task (`by_bucket`), then writes it through the "tarn" data source;
`rescale` rewrites a table's rows into another bucket count the same way.

Dynamic-bucket tables (`bucket` = -1 with a primary key) get their buckets on executors first,
as Paimon's Spark writer does: rows are shuffled by key hash to assigner tasks
(`tarn.bucket.assigner_channels`), each task loads the HASH index entries of its own hash
range and assigns buckets (`tarn.write.assign.HashAssigner`), then rows are shuffled by
(partition, bucket) to the writer tasks. The bucket travels in the column `__tarn_bucket`
together with the snapshot whose index the assigner read (`snapshot * 32768 + bucket`), so
the writer maintains the index against that same snapshot and the commit fails if another
writer changed it in between.
"""

from __future__ import annotations

import os
import time
import uuid
import pickle
from functools import partial

import pyarrow as pa

from tarn.spark.ref import check_storage, drop_table, for_tasks, open_table, resolved, table_location
from tarn.commit.result import landed_of, result_of
from tarn.errors import InvalidOption, SchemaMismatch
from tarn.spark.bucket_expr import supported as bucket_expr_supported
from tarn.spark.bucket_expr import with_bucket, with_hash
from tarn.spark.cross_partition import place
from tarn import partition as partitions
from tarn.spark.batch_write import (BUCKET_COLUMN, ROUTE_OPTION, ROUTE_SNAPSHOT_OPTION, check_fits, collect_messages,
                                   find_or_create, given_buckets, job_prefixes, new_job_token)
from tarn.spark.session import register
from tarn.spark.target import storage_of
from tarn.spark.types import arrow_of
from tarn.write.assign import (AssignerSpec, HashAssigner, HashIndexFiles, assign_rows, channels_of_rows,
                               index_fits_routing, pack_bucket)
from tarn.ops.rescale import RescalePlan, commit_rescale, plan_rescale, rescale_writer
from tarn.bucket import bucket_function, check_bucket_function, partition_hash
from tarn.write.conform import conform
from tarn.meta.shape import BucketMode, shape_with
from tarn.commit.abort import aborting

CHANNEL_COLUMN = "__tarn_assigner"
# how big a dynamic-bucket table's index may be for `routable` to read it on the driver before
# a write (the check reads every partition's index, the write's tasks only those they touch)
ROUTABLE_MOST_KEYS = 50_000_000  # 200 MB of HASH files
ROUTABLE_MOST_FILES = 256


def bucket_udf(key_fields: list, num_buckets: int, table_name: str, function: str = "default"):
    """An Arrow UDF computing tarn's bucket of each row from its bucket-key columns (by the
    table's bucket function `function`)."""
    from pyspark.sql.functions import arrow_udf

    @arrow_udf("int")
    def bucket_of(*columns: pa.Array) -> pa.Array:
        from tarn.bucket import bucket_ids
        keys = pa.Table.from_arrays(list(columns), names=[f.name for f in key_fields])
        keys = conform(keys, key_fields, table_name)  # hash the table's types, not the DataFrame's
        return pa.array(bucket_ids(keys, key_fields, num_buckets, function))

    return bucket_of


def by_bucket(df, table_path: str, storage_options: dict | None = None, num_buckets: int | None = None):
    """`df` repartitioned so that all rows of one (partition, bucket) of the table are in one
    Spark partition (tarn's bucket function as Spark expressions for integer/date/boolean keys,
    else in an Arrow UDF); for dynamic-bucket tables with the buckets assigned on executors
    (`assign_dynamic`, each batch of a stream against the latest snapshot); for cross-partition
    upsert tables with the rows placed by key-hash assigner tasks (`cross_partition.place`,
    row kinds and buckets added, each batch of a stream against the latest snapshot, the
    commit failing if another writer committed since); unchanged for
    bucket-unaware append tables. Write the result with option `write.bucket-owned`=true
    (tarn.spark.write does both); works for streaming DataFrames too. `num_buckets`: another
    fixed bucket count than the table's (rescale)."""
    from pyspark.sql import functions as F

    table = open_table(table_path, storage_options)
    schema = table.schema()
    shape = shape_with(schema, schema.shape.options_with(None if num_buckets is None else {"bucket": str(num_buckets)}))
    num_buckets = shape.num_buckets
    if shape.cross_partition:  # placed against the latest snapshot when tasks run
        return place(df, table, storage_options)
    if shape.bucket_mode is BucketMode.DYNAMIC:
        return assign_dynamic(df, table_path, storage_options)
    if num_buckets <= 0:
        return df
    by_lower = {c.lower(): c for c in df.columns}
    missing = [k for k in schema.bucket_keys if k.lower() not in by_lower]
    if missing:
        raise SchemaMismatch(f"table {table_path}: the DataFrame lacks the bucket key column(s) {missing}")
    key_fields = [schema.field(k) for k in schema.bucket_keys]
    key_columns = [by_lower[f.name.lower()] for f in key_fields]
    function = bucket_function(schema.options)
    check_bucket_function(schema, table_path, {**schema.options, "bucket": str(num_buckets)})
    if bucket_expr_supported(key_fields, function):  # the hash in generated JVM code
        df = with_bucket(df, key_columns, key_fields, num_buckets, BUCKET_COLUMN, function)
    else:  # strings, decimals, timestamps, ...: BinaryRows built in Python
        bucket = bucket_udf(key_fields, num_buckets, table_path, function)(*[F.col(c) for c in key_columns])
        df = df.withColumn(BUCKET_COLUMN, bucket)
    if schema.partition_keys:
        tasks = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions"))
        df = df.repartition(tasks, *[F.col(by_lower[k.lower()]) for k in schema.partition_keys],
                            F.col(BUCKET_COLUMN))
    else:
        df = df.repartitionById(num_buckets, F.col(BUCKET_COLUMN))
    return df.drop(BUCKET_COLUMN)


def _keyed_columns(df, schema, names: list[str]) -> list[str]:
    by_lower = {c.lower(): c for c in df.columns}
    missing = [k for k in names if k.lower() not in by_lower]
    if missing:
        raise SchemaMismatch(f"the DataFrame lacks the column(s) {missing} the dynamic bucket assignment needs")
    return [by_lower[k.lower()] for k in names]


def _as_table_columns(batch: pa.RecordBatch, columns: list[str], fields: list) -> pa.Table:
    """The key and partition columns of a batch, named and typed as in the table."""
    data = pa.Table.from_arrays([batch.column(c) for c in columns], names=[f.name for f in fields])
    return conform(data, fields, "dynamic bucket assignment")


def assigner_spec(spark, table, parallelism: int | None = None) -> AssignerSpec:
    """The assigner tasks of a dynamic-bucket write: one per core or shuffle partition,
    whichever is more, unless `parallelism` or the table's options say otherwise."""
    if parallelism is None:
        parallelism = max(spark.sparkContext.defaultParallelism,
                          int(spark.conf.get("spark.sql.shuffle.partitions")))
    return AssignerSpec.of(table.schema().shape.options, parallelism)


def _routed(df, table, parallelism: int | None = None):
    """(`df` with the column CHANNEL_COLUMN, each row's assigner task, repartitioned so that
    Spark partition i holds the rows of assigner task i; the AssignerSpec)."""
    from pyspark.sql import functions as F

    schema = table.schema()
    spec = assigner_spec(df.sparkSession, table, parallelism)
    fields = [schema.field(k) for k in schema.trimmed_primary_keys] + [schema.field(k) for k in schema.partition_keys]
    columns = _keyed_columns(df, schema, [f.name for f in fields])
    name = table.name

    if bucket_expr_supported(fields[:len(schema.trimmed_primary_keys)]) and (
            not schema.partition_keys or bucket_expr_supported(fields[len(schema.trimmed_primary_keys):])):
        routed = _with_channel(df, schema, columns, fields, spec)  # in generated JVM code
    else:
        @F.arrow_udf("int")
        def channel_of(*arrays: pa.Array) -> pa.Array:
            data = conform(pa.Table.from_arrays(list(arrays), names=[f.name for f in fields]), fields, name)
            return pa.array(channels_of_rows(data, schema, spec))

        routed = df.withColumn(CHANNEL_COLUMN, channel_of(*[F.col(c) for c in columns]))
    return routed.repartitionById(spec.channels, F.col(CHANNEL_COLUMN)), spec


def _with_channel(df, schema, columns: list[str], fields: list, spec: AssignerSpec):
    """`df` with CHANNEL_COLUMN computed as Spark SQL (`tarn.bucket.assigner_channels`:
    abs(partition hash % channels) + abs(key hash % assigners), mod channels), for keys and
    partition columns `bucket_expr` can hash."""
    from pyspark.sql import functions as F

    keys = len(schema.trimmed_primary_keys)
    out = with_hash(df, columns[:keys], fields[:keys], "__tarn_key_hash")
    if schema.partition_keys:
        out = with_hash(out, columns[keys:], fields[keys:], "__tarn_part_hash")
        start = F.abs(F.col("__tarn_part_hash")) % F.lit(spec.channels)
    else:  # abs(h % n) == abs(h) % n: the one partition's start channel, computed here
        start = F.lit(abs(partition_hash(partitions.to_bytes(schema, []))) % spec.channels)
    offset = F.abs(F.col("__tarn_key_hash")) % F.lit(spec.assigners)
    channel = ((start + offset) % F.lit(spec.channels)).cast("int")
    return out.withColumn(CHANNEL_COLUMN, channel).drop("__tarn_key_hash", "__tarn_part_hash")


def route_dynamic(df, table_path: str, storage_options: dict | None = None, parallelism: int | None = None):
    """A dynamic-bucket write in one shuffle, as Paimon's Spark writer does an empty table's
    first one: `df` shuffled by key hash into exactly `assigner_spec(...).channels` Spark
    partitions, partition i holding the rows of assigner task i; each writer task assigns the
    buckets of its own rows (it creates only buckets it owns, so no bucket gets rows from two
    tasks and the second shuffle of `assign_dynamic` is not needed). tarn.spark.write takes it
    for a table with an index too when the index fits the routing (`routable`). No column
    carries the route: write the result with options `write.assigner-channels` = the channel
    count and `write.assigner-snapshot` = the snapshot whose index the tasks assign against
    (0: none; tarn.spark.write sets both), and each task takes its Spark partition id as its
    assigner task (keys of another task's hash range are refused, so a mismatched layout fails
    instead of splitting keys)."""
    routed, _ = _routed(df, open_table(table_path, storage_options), parallelism)
    return routed.drop(CHANNEL_COLUMN)


def routable(table, snapshot, spec: AssignerSpec) -> bool:
    """May a write into `table` at `snapshot` take the one-shuffle topology of `route_dynamic`
    (writer tasks assigning their own keys against the snapshot's HASH index)? When every key
    of the index sits in a bucket owned by the task its hash is routed to, as tarn's routed
    writes with the same channel count leave it (`index_fits_routing`); the index is read on
    the driver for that, up to ROUTABLE_MOST_KEYS keys in ROUTABLE_MOST_FILES files (a table
    of many partitions keeps the two shuffles, whose tasks read only the partitions they
    touch). Otherwise Paimon's two shuffles."""
    if not snapshot.index_manifest:
        return True
    entries = table.manifests(table.schema()).read_index_manifest(snapshot.index_manifest)
    return index_fits_routing(HashIndexFiles(table.file_io, table.root, table.schema()), entries, spec, ROUTABLE_MOST_KEYS,
                              ROUTABLE_MOST_FILES)


def assign_dynamic(df, table_path: str, storage_options: dict | None = None, fresh: bool = False,
                   snapshot_id: int | None = None, parallelism: int | None = None):
    """`df` with the column `__tarn_bucket` (packed snapshot and bucket, `pack_bucket`) for a
    dynamic-bucket table, repartitioned so each (partition, bucket) is in one Spark partition.

    Rows go by key hash to `channels` assigner tasks; task i assigns with the index entries of
    its hash range, as of `snapshot_id` (default: the latest snapshot when the task runs, so a
    streaming query's batches each see the previous ones). `fresh`: ignore the existing index
    (INSERT OVERWRITE, rescale): buckets fill from 0 as in an empty table."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    storage_options = for_tasks(storage_options)
    path = table_location(table_path, storage_options)
    table = open_table(path, storage_options)
    schema = table.schema()
    spark = df.sparkSession
    routed, spec = _routed(df, table, parallelism)
    routed = routed.drop(CHANNEL_COLUMN)
    key_fields = [schema.field(k) for k in schema.trimmed_primary_keys]
    fields = key_fields + [schema.field(k) for k in schema.partition_keys]
    columns = _keyed_columns(df, schema, [f.name for f in fields])
    out_schema = StructType(list(routed.schema.fields) + [StructField(BUCKET_COLUMN, LongType(), False)])

    def assign_task(batches):
        from pyspark import TaskContext

        task = open_table(path, storage_options)
        pinned = 0 if fresh else snapshot_id
        if pinned is None:
            latest = task.latest_snapshot()
            pinned = latest.id if latest is not None else 0
        entries = {}
        if pinned:
            snap = task.snapshot(pinned)
            if snap.index_manifest:
                for entry in task.manifests(schema).read_index_manifest(snap.index_manifest):
                    if entry.index_type == "HASH":
                        entries.setdefault(entry.partition, []).append(entry)
        assigner = HashAssigner(HashIndexFiles(task.file_io, task.root, schema), spec,
                                lambda part: entries.get(part, []), ids=(TaskContext.get().partitionId(),))
        for batch in batches:
            if batch.num_rows:
                data = _as_table_columns(batch, columns, fields)
                buckets = assign_rows(assigner, data, schema)
                batch = pa.RecordBatch.from_arrays(
                    list(batch.columns) + [pa.array(pack_bucket(pinned, buckets))],
                    names=list(batch.schema.names) + [BUCKET_COLUMN])
            else:
                batch = pa.RecordBatch.from_arrays(
                    list(batch.columns) + [pa.array([], pa.int64())],
                    names=list(batch.schema.names) + [BUCKET_COLUMN])
            yield batch

    assigned = routed.mapInArrow(assign_task, out_schema)
    tasks = int(spark.conf.get("spark.sql.shuffle.partitions"))
    by_lower = {c.lower(): c for c in assigned.columns}
    keys = [F.col(by_lower[k.lower()]) for k in schema.partition_keys]
    return assigned.repartition(tasks, *keys, F.pmod(F.col(BUCKET_COLUMN), F.lit(32768)))


def write(df, table_path: str, mode: str = "append", **options):
    """Write a DataFrame to a tarn table, shuffled so that each bucket is written by one task.

    For fixed-bucket tables (primary-key tables, append tables with `bucket-key`) rows are
    repartitioned by (partition, tarn bucket) (`by_bucket`): each bucket gets one writer, one
    level-0 run per commit, and compacts as its options say. Dynamic-bucket tables (`bucket`
    -1 with a primary key, Paimon's default) get their buckets on executors first
    (`assign_dynamic`); the first write of one, and an append whose table's index fits the
    routing (`routable`), is shuffled once, to writer tasks that assign as they write
    (`route_dynamic`, Paimon's topology for a first write). `options` are the writer's
    (`primary-key`, `partition`, table options, ...); the table is created from the DataFrame
    schema when missing. Returns the `CommitResult` of the snapshots the write made (None:
    nothing committed)."""
    if mode not in ("append", "overwrite"):
        raise InvalidOption(f"mode '{mode}' is not supported (append, overwrite)")
    started = time.perf_counter()
    register(df.sparkSession)
    text_options = resolved({str(k).lower(): str(v) for k, v in options.items()})
    path = table_location(table_path, text_options)
    table, created, _ = find_or_create(path, arrow_of(df.schema), {**text_options, "path": path})
    try:
        check_fits(table, arrow_of(df.schema))
        schema = table.schema()
        if mode == "append" and upserting(schema):
            # Paimon's Spark turns INSERT INTO an upsert-key table into a MERGE: merged on the driver
            return table.write(df.toArrow())
        if schema.shape.cross_partition:
            df = _placed(df, table, mode, storage_of(text_options))
        elif schema.shape.bucket_mode is BucketMode.DYNAMIC:
            latest = table.latest_snapshot()
            spec = assigner_spec(df.sparkSession, table)
            if latest is None or (mode == "append" and routable(table, latest, spec)):
                # one shuffle, buckets assigned by the writer tasks
                df = route_dynamic(df, path, storage_of(text_options))
                text_options[ROUTE_OPTION] = str(spec.channels)
                text_options[ROUTE_SNAPSHOT_OPTION] = str(latest.id if latest is not None else 0)
            else:
                df = assign_dynamic(df, path, storage_of(text_options), fresh=mode == "overwrite",
                                    snapshot_id=latest.id)
        else:
            df = by_bucket(df, path, storage_of(text_options))
        if table.primary_keys:
            text_options["write.bucket-owned"] = "true"
        user = text_options.setdefault("commit-user", str(uuid.uuid4()))
        before = table.snapshot_store.latest_id() or 0
        writer = df.write.format("tarn").mode(mode)
        for key, value in text_options.items():
            writer = writer.option(key, value)
        writer.save(path)
        return _result_of_user(open_table(path, storage_of(text_options)), "write", user, before, started)
    except BaseException:
        if created and open_table(path, storage_of(text_options)).latest_snapshot() is None:
            drop_table(table, path, storage_of(text_options))
        raise


def upserting(schema) -> bool:
    """Does an append into this table merge on its `upsert-key` (tarn/ops/upsert_key.py)?"""
    return bool(schema.shape.options.get("upsert-key")) and not schema.primary_keys


def _result_of_user(table, operation: str, user: str, before: int, started: float):
    """The CommitResult of the snapshots `user` committed after snapshot `before` (a Spark
    job commits in a Python worker of the driver, not in this process)."""
    latest = table.snapshot_store.latest_id() or 0
    made = [s for s in (table.snapshot_store.find(i) for i in range(before + 1, latest + 1))
            if s is not None and s.commit_user == user]
    return result_of(table.name, operation, [landed_of(table, s) for s in made], time.perf_counter() - started)


def _placed(df, table, mode: str, storage: dict | None):
    """Cross-partition upsert tables: `df` placed by assigner tasks against the latest snapshot
    now, which the commit must land on (tarn/spark/cross_partition.py)."""
    if mode == "overwrite":
        raise InvalidOption(f"table {table.name}: INSERT OVERWRITE of a cross-partition upsert table is not "
                            "supported: keys in other partitions would stay")
    latest = table.latest_snapshot()
    return place(df, table, storage, snapshot_id=latest.id if latest is not None else 0)


# ---------------------------------------------------------------------------------------------
# rescale: the rows read and rewritten on executors, one OVERWRITE committed on the driver


def rescale(spark, table_path: str, bucket: int | None = None, partitions: list[dict] | None = None,
            storage_options: dict | None = None):
    """`Table.rescale` on Spark: the latest snapshot's rows of the table (or of `partitions`)
    are read by the "tarn" source, shuffled to `bucket` buckets (dynamic-bucket tables: assigned
    afresh on executors), written by one task per bucket and committed on the driver as one
    OVERWRITE that fails if another writer changed those partitions meanwhile; then `bucket`
    becomes the table's option. Returns the snapshot, or None when there is nothing to rescale."""
    from pyspark.sql import functions as F

    path = table_path if "://" in table_path else os.path.abspath(table_path)
    table = open_table(path, storage_options)
    plan = plan_rescale(table, bucket, partitions)
    if plan is None:
        return None
    reader = spark.read.format("tarn").option("scan.snapshot-id", str(plan.base.id))
    if plan.postpone:  # the placed rows only: the postponed ones stay for their compaction
        reader = reader.option("postpone.merge-on-read", "false")
    for key, value in check_storage(storage_options).items():
        reader = reader.option(key, value)
    df = reader.load(path)
    if plan.partitions is not None:
        df = df.filter(_partition_condition(F, plan))
    if plan.bucket == -1:
        df = assign_dynamic(df, path, storage_options, fresh=True)
    else:
        df = by_bucket(df, path, storage_options, num_buckets=plan.bucket)
    token = new_job_token()
    task = partial(_rescale_task, path, storage_options, plan, token)
    messages = collect_messages(table, token, df, task)
    return commit_rescale(table, plan, messages)


def _partition_condition(F, plan: RescalePlan):
    keys = list(plan.schema.partition_keys)
    condition = None
    for part in sorted(plan.partitions):
        values = partitions.from_bytes(plan.schema, part)
        match = None
        for key, value in zip(keys, values):
            term = F.col(key).isNull() if value is None else F.col(key) == F.lit(value)
            match = term if match is None else match & term
        condition = match if condition is None else condition | match
    return condition


def _rescale_task(path: str, storage: dict | None, plan: RescalePlan, token: str, batches):
    table = open_table(path, storage)
    writer = rescale_writer(table, plan, job_prefixes(plan.schema.options, token))
    with aborting(table.file_io, table.root, plan.schema, writer.messages):
        for batch in batches:
            if not batch.num_rows:
                continue
            data = pa.Table.from_batches([batch])
            if plan.bucket == -1:
                data, buckets = given_buckets(data, {})
                writer.write(data, buckets=buckets)
            else:
                writer.write(data)
        messages = writer.prepare_commit()
    yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(messages)], pa.binary())], names=["messages"])
