"""DataFrame-level helpers: `tarn.spark.write` shuffles a DataFrame so each (partition, bucket)
of the table reaches one task (`by_bucket`), then writes it through the "tarn" data source."""

from __future__ import annotations

import os

import pyarrow as pa

import tarn
from tarn.errors import InvalidOption, SchemaMismatch
from tarn.options import Options
from tarn.spark import bucket_expr
from tarn.spark.batch_write import check_fits, find_or_create
from tarn.spark.session import register
from tarn.spark.target import storage_of
from tarn.spark.types import arrow_of
from tarn.write.conform import conform

BUCKET_COLUMN = "__tarn_bucket"


def bucket_udf(key_fields: list, num_buckets: int, table_name: str):
    """An Arrow UDF computing tarn's bucket of each row from its bucket-key columns."""
    from pyspark.sql.functions import arrow_udf

    @arrow_udf("int")
    def bucket_of(*columns: pa.Array) -> pa.Array:
        from tarn.bucket import bucket_ids
        keys = pa.Table.from_arrays(list(columns), names=[f.name for f in key_fields])
        keys = conform(keys, key_fields, table_name)  # hash the table's types, not the DataFrame's
        return pa.array(bucket_ids(keys, key_fields, num_buckets))

    return bucket_of


def _absolute(path: str) -> str:
    return path if "://" in path else os.path.abspath(path)


def by_bucket(df, table_path: str, storage_options: dict | None = None):
    """`df` repartitioned so that all rows of one (partition, bucket) of the table are in one
    Spark partition (tarn's bucket function as Spark expressions for integer/date/boolean keys,
    else in an Arrow UDF); unchanged for tables without
    fixed buckets. Write the result with option `write.bucket-owned`=true (tarn.spark.write
    does both); works for streaming DataFrames too."""
    from pyspark.sql import functions as F

    schema = tarn.load_table(_absolute(table_path), storage_options).schema()
    num_buckets = Options(schema.options).int("bucket")
    if num_buckets <= 0:
        return df
    by_lower = {c.lower(): c for c in df.columns}
    missing = [k for k in schema.bucket_keys if k.lower() not in by_lower]
    if missing:
        raise SchemaMismatch(f"table {table_path}: the DataFrame lacks the bucket key column(s) {missing}")
    key_fields = [schema.field(k) for k in schema.bucket_keys]
    key_columns = [by_lower[f.name.lower()] for f in key_fields]
    if bucket_expr.supported(key_fields):  # the hash in generated JVM code
        df = bucket_expr.with_bucket(df, key_columns, key_fields, num_buckets, BUCKET_COLUMN)
    else:  # strings, decimals, timestamps, ...: BinaryRows built in Python
        bucket = bucket_udf(key_fields, num_buckets, table_path)(*[F.col(c) for c in key_columns])
        df = df.withColumn(BUCKET_COLUMN, bucket)
    if schema.partition_keys:
        tasks = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions"))
        df = df.repartition(tasks, *[F.col(by_lower[k.lower()]) for k in schema.partition_keys],
                            F.col(BUCKET_COLUMN))
    else:
        df = df.repartitionById(num_buckets, F.col(BUCKET_COLUMN))
    return df.drop(BUCKET_COLUMN)


def write(df, table_path: str, mode: str = "append", **options) -> None:
    """Write a DataFrame to a tarn table, shuffled so that each bucket is written by one task.

    For fixed-bucket tables (every primary-key table, append tables with `bucket-key`) rows are
    repartitioned by (partition, tarn bucket) (`by_bucket`): each bucket gets one writer, one
    level-0 run per commit, and compacts as its options say. `options` are the writer's
    (`primary-key`, `partition`, table options, ...); the table is created from the DataFrame
    schema when missing."""
    if mode not in ("append", "overwrite"):
        raise InvalidOption(f"mode '{mode}' is not supported (append, overwrite)")
    register(df.sparkSession)
    path = _absolute(table_path)
    text_options = {str(k).lower(): str(v) for k, v in options.items()}
    table, created, _ = find_or_create(path, arrow_of(df.schema), {**text_options, "path": path})
    try:
        check_fits(table, arrow_of(df.schema))
        df = by_bucket(df, path, storage_of(text_options))
        if table.primary_keys:
            text_options["write.bucket-owned"] = "true"
        writer = df.write.format("tarn").mode(mode)
        for key, value in text_options.items():
            writer = writer.option(key, value)
        writer.save(path)
    except BaseException:
        if created and tarn.load_table(path, storage_of(text_options)).latest_snapshot() is None:
            table.file_io.delete_dir(table.root)
        raise
