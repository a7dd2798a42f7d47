"""Batch writes through Spark: create from a DataFrame, append, overwrite (whole, dynamic,
static), the bucket-shuffled writer, and bad input / failed jobs leaving nothing behind."""

from __future__ import annotations

import os

import pytest
from pyspark.errors import PySparkException

import tarn
import tarn.spark

DDL = "dt string, id long, v string"


def files_under(path: str) -> list[str]:
    found = []
    for root, _, names in os.walk(path):
        found += [os.path.join(root, n) for n in names if n.startswith("data-")]
    return sorted(found)


def table_rows(path: str) -> list[tuple]:
    data = tarn.load_table(path).scan().to_arrow()
    return sorted(tuple(r.values()) for r in data.to_pylist())


def test_create_from_dataframe_then_append(spark, path):
    df = spark.createDataFrame([("a", 1, "x"), ("b", 2, "y")], DDL)
    (df.write.format("tarn").mode("append").option("primary-key", "dt,id").option("partition", "dt")
     .option("bucket", "2").option("file.format", "orc").save(path))
    table = tarn.load_table(path)
    assert table.primary_keys == ("dt", "id") and table.partition_keys == ("dt",)
    assert table.options.get("bucket") == "2" and table.options.get("file.format") == "orc"
    spark.createDataFrame([("a", 1, "x2")], DDL).write.format("tarn").mode("append").save(path)
    assert table_rows(path) == [("a", 1, "x2"), ("b", 2, "y")]
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND", "APPEND"]


def test_overwrite_whole_dynamic_and_static(spark, path):
    spark.createDataFrame([("a", 1, "x"), ("b", 2, "y"), ("c", 3, "z")], DDL).write.format("tarn") \
        .mode("append").option("partition", "dt").save(path)
    # dynamic: only partitions the new rows touch are replaced
    (spark.createDataFrame([("a", 10, "new")], DDL).write.format("tarn").mode("overwrite")
     .option("partitionOverwriteMode", "dynamic").save(path))
    assert table_rows(path) == [("a", 10, "new"), ("b", 2, "y"), ("c", 3, "z")]
    # static: the named partition is replaced, wherever the rows are
    (spark.createDataFrame([("b", 20, "new")], DDL).write.format("tarn").mode("overwrite")
     .option("overwrite-partition", "dt=b").save(path))
    assert table_rows(path) == [("a", 10, "new"), ("b", 20, "new"), ("c", 3, "z")]
    # Spark's default: the whole table
    spark.createDataFrame([("d", 4, "w")], DDL).write.format("tarn").mode("overwrite").save(path)
    assert table_rows(path) == [("d", 4, "w")]
    assert tarn.load_table(path).latest_snapshot().commit_kind == "OVERWRITE"


def test_bucket_shuffle_gives_each_bucket_one_writer(spark, path):
    df = spark.range(0, 4000, numPartitions=4).selectExpr("id % 2 AS p", "id", "cast(id AS string) AS v")
    tarn.spark.write(df, path, **{"primary-key": "p,id", "partition": "p", "bucket": "3"})
    table = tarn.load_table(path)
    entries = table.planner(table.schema()).live_entries(table.latest_snapshot())
    per_bucket = {}
    for e in entries:
        per_bucket.setdefault((e.partition, e.bucket), []).append(e.file)
    assert len(per_bucket) == 6  # 2 partitions x 3 buckets
    assert all(len(files) == 1 and files[0].level == 0 for files in per_bucket.values())
    # rows really are in tarn's bucket for their key (read back through tarn's own merge)
    assert table.scan().count() == 4000
    # a second write: again one new level-0 run per bucket, merged by key with the first
    tarn.spark.write(df.selectExpr("p", "id", "'again' AS v"), path)
    assert table.scan(filter=tarn.col("v") == "again").count() == 4000


def test_plain_writer_to_pk_table_is_correct_without_shuffle(spark, path):
    df = spark.range(0, 1000, numPartitions=3).selectExpr("id % 7 AS id", "id AS v")
    df.write.format("tarn").mode("append").option("primary-key", "id").option("bucket", "2").save(path)
    assert tarn.load_table(path).scan().count() == 7


def test_sql_insert_into_temporary_view(spark, path):
    spark.createDataFrame([("a", 1, "x")], DDL).write.format("tarn").mode("append").save(path)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW sql_t USING tarn OPTIONS (path '{path}')")
    spark.sql("INSERT INTO sql_t VALUES ('b', 2, 'y')")
    assert sorted(tuple(r) for r in spark.sql("SELECT * FROM sql_t").collect()) == [("a", 1, "x"), ("b", 2, "y")]
    spark.sql("INSERT OVERWRITE sql_t SELECT 'c', 3, 'z'")
    assert table_rows(path) == [("c", 3, "z")]


@pytest.mark.parametrize("ddl, rows, options, message", [
    ("dt string, id long, extra int", [("a", 1, 5)], {}, r"unknown column\(s\) \['extra'\]"),
    ("dt string, v string", [("a", "x")], {}, r"needs the key column\(s\) \['id'\]"),
    ("dt string, id string, v string", [("a", "1", "x")], {}, "column 'id' has type string"),
    (DDL, [("a", 1, "x")], {"bucket-num": "2"}, "unknown option 'bucket-num'"),
    (DDL, [("a", 1, "x")], {"primary-key": "id"}, "differs from the existing table"),
])
def test_bad_writes_fail_before_any_task_and_commit_nothing(spark, path, ddl, rows, options, message):
    spark.createDataFrame([("a", 1, "x")], DDL).write.format("tarn").mode("append") \
        .option("primary-key", "dt,id").option("bucket", "1").save(path)
    before = files_under(path)
    writer = spark.createDataFrame(rows, ddl).write.format("tarn").mode("append")
    for k, v in options.items():
        writer = writer.option(k, v)
    with pytest.raises(PySparkException, match=message):
        writer.save(path)
    assert len(tarn.load_table(path).snapshots()) == 1 and files_under(path) == before


def test_bad_create_leaves_no_table(spark, path):
    df = spark.createDataFrame([("a", 1, "x")], DDL)
    with pytest.raises(PySparkException, match="fixed 'bucket'"):
        df.write.format("tarn").mode("append").option("primary-key", "id").save(path)
    assert not os.path.exists(os.path.join(path, "schema"))


@pytest.mark.parametrize("producer", ["none", "input"])
def test_failed_job_leaves_no_snapshot_and_no_files(spark, path, producer):
    """One task writes fine (and flushes data and changelog files early), another hits a null
    key: the job fails, the driver aborts, and neither the files nor the table created for the
    write remain."""
    good = spark.range(0, 30000, numPartitions=1).selectExpr("id", "'v' AS v")
    bad = spark.createDataFrame([(None, "boom")], "id long, v string")
    df = good.union(bad).repartition(2)
    with pytest.raises(PySparkException, match="null"):
        (df.write.format("tarn").mode("append").option("primary-key", "id").option("bucket", "2")
         .option("changelog-producer", producer).option("write-buffer-size", "64 kb").save(path))
    assert files_under(os.path.dirname(path)) == []
    assert not os.path.exists(path)


def test_failed_job_on_existing_table_keeps_it_unchanged(spark, path):
    spark.createDataFrame([("a", 1, "x")], DDL).write.format("tarn").mode("append") \
        .option("primary-key", "dt,id").option("bucket", "2").option("changelog-producer", "input").save(path)
    before = files_under(path)
    good = spark.range(0, 5000, numPartitions=1).selectExpr("'a' AS dt", "id", "'v' AS v")
    bad = spark.createDataFrame([("a", None, "boom")], DDL)
    with pytest.raises(PySparkException):
        good.union(bad).repartition(2).write.format("tarn").mode("append").save(path)
    assert files_under(path) == before and len(tarn.load_table(path).snapshots()) == 1
    assert table_rows(path) == [("a", 1, "x")]


def test_upsert_key_insert_merges(spark, path):
    """Paimon 2.0's Spark makes INSERT INTO an upsert-key table a MERGE (issue 43): tarn.spark.write
    merges; df.write.format('tarn') says to use it."""
    import pyarrow as pa

    tarn.create_table(path, pa.schema([("k", pa.int64()), ("v", pa.string()), ("s", pa.int64())]),
                      options={"upsert-key": "k", "sequence.field": "s"})
    tarn.spark.write(spark.createDataFrame([(1, "a", 1), (2, "b", 1)], "k long, v string, s long"), path)
    result = tarn.spark.write(spark.createDataFrame([(1, "a2", 2), (1, "a3", 3), (2, "old", 0), (3, "c", 1)],
                                                    "k long, v string, s long"), path)
    assert (result.rows_updated, result.rows_inserted) == (1, 1)
    assert table_rows(path) == [(1, "a3", 3), (2, "b", 1), (3, "c", 1)]
    with pytest.raises(PySparkException, match="upsert-key"):
        spark.createDataFrame([(4, "d", 1)], "k long, v string, s long").write.format("tarn").mode("append").save(path)
    assert table_rows(path) == [(1, "a3", 3), (2, "b", 1), (3, "c", 1)]


def test_clustered_append_table_tasks_sort_their_rows(spark, path):
    """clustering.columns on a bucket-less append table: each Spark task's rows are written
    sorted, as Paimon's Spark batch writer sorts them."""
    import pyarrow as pa

    tarn.create_table(path, pa.schema([("k", pa.int64()), ("v", pa.string())]),
                      options={"clustering.columns": "k"})
    df = spark.createDataFrame([(i * 7919 % 1000, str(i)) for i in range(1000)], "k long, v string").repartition(2)
    tarn.spark.write(df, path)
    table = tarn.load_table(path)
    scan = table.scan()
    for split in scan.plan():
        keys = pa.concat_tables(scan.reader().read_all([split])).column("k").to_pylist()
        assert keys == sorted(keys)
    assert table.scan().count() == 1000
