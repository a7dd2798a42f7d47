"""Partition pruning from the DataFrame's own filters (issue 42 item 1): `tarn.spark.read` scans
whose index knows each file's partition, so Spark skips the other partitions' files before it
opens one. Proved by deleting those files: a pruned query still runs, an unpruned one fails."""

from __future__ import annotations

import datetime as dt
import decimal
import glob
import os
import shutil

import pyarrow as pa
import pytest

import tarn
import tarn.spark


def rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=lambda t: [(v is None, v if v is not None else 0) for v in t])


def plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def delete_partitions_except(table, keep: str) -> None:
    """Delete every partition directory of `table` but `keep` (e.g. 'day=3')."""
    for directory in glob.glob(os.path.join(table.root, "*=*")):
        if os.path.basename(directory) != keep:
            shutil.rmtree(directory)


def test_a_filter_on_the_partition_column_never_opens_other_partitions(spark, catalog):
    table = catalog.create_table("db.days", pa.schema([("day", pa.string()), ("id", pa.int64())]),
                                 partition_keys=["day"])
    table.write(pa.table({"day": [str(i % 10) for i in range(1000)], "id": list(range(1000))}))
    df = tarn.spark.read(spark, table.root)
    expected = rows(df.filter("day = '3'"))
    assert len(expected) == 100 and rows(df) == rows(spark.read.format("tarn").load(table.root))
    assert "PartitionFilters: [isnotnull(day" in plan(df.filter("day = '3'"))
    delete_partitions_except(table, "day=3")
    assert rows(df.filter("day = '3'")) == expected
    assert rows(df.where(df.day.isin("3", "no such day")).select("id")) == [(i,) for i in range(3, 1000, 10)]
    assert df.filter("day = '3' AND id > 500").count() == len([i for i in range(3, 1000, 10) if i > 500])
    with pytest.raises(Exception, match="(?i)not exist|FILE_NOT_EXIST"):
        df.filter("day = '4'").count()  # unpruned: the deleted files were needed


def test_attached_views_and_sql_prune_too(spark, tmp_path):
    catalog = tarn.Catalog(str(tmp_path / "wh"))
    table = catalog.create_table("shop.sales", pa.schema([("region", pa.string()), ("amount", pa.float64())]),
                                 partition_keys=["region"])
    table.write(pa.table({"region": ["eu", "us", "apac"] * 10, "amount": [float(i) for i in range(30)]}))
    tarn.spark.attach(spark, str(tmp_path / "wh"), name="lake")
    delete_partitions_except(table, "region=eu")
    total = sum(float(i) for i in range(0, 30, 3))
    assert spark.sql("SELECT sum(amount) FROM `shop.sales` WHERE region = 'eu'").first()[0] == total
    assert tarn.spark.sql(spark, "SELECT sum(amount) FROM lake.shop.sales WHERE region = 'eu'").first()[0] == total


PARTITION_TYPES = [
    ("an int", pa.int32(), [1, 2, None], "k = 2"),
    ("a bigint", pa.int64(), [-(2**40), 7, None], "k = 7"),
    ("a date", pa.date32(), [dt.date(2026, 11, 27), dt.date(1969, 12, 31), None], "k = DATE'1969-12-31'"),
    ("a decimal", pa.decimal128(10, 2), [decimal.Decimal("1.50"), decimal.Decimal("-3.25"), None],
     "k = CAST(-3.25 AS DECIMAL(10,2))"),
    ("a string with quotes", pa.string(), ["it's", "naïve \\ 'x'", None], "k = 'naïve \\\\ \\'x\\''"),
    ("a boolean", pa.bool_(), [True, False, None], "k = false"),
]


@pytest.mark.parametrize("label, arrow_type, values, second", PARTITION_TYPES, ids=[p[0] for p in PARTITION_TYPES])
def test_partition_values_of_each_type_read_exactly(spark, catalog, label, arrow_type, values, second):
    table = catalog.create_table("db.typed", pa.schema([("k", arrow_type), ("id", pa.int64())]), partition_keys=["k"])
    table.write(pa.table({"k": pa.array(values * 4, arrow_type), "id": list(range(12))}))
    df = tarn.spark.read(spark, table.root)
    assert "PartitionFilters" in plan(df.filter(second)) and "InMemoryFileIndex" in plan(df)
    assert rows(df) == rows(spark.read.format("tarn").load(table.root))
    assert rows(df.filter(second).select("id")) == [(1,), (4,), (7,), (10,)]
    assert rows(df.filter("k IS NULL").select("id")) == [(2,), (5,), (8,), (11,)]


def test_two_partition_keys_prune_on_either(spark, catalog):
    table = catalog.create_table("db.two", pa.schema([("day", pa.string()), ("hour", pa.int32()), ("v", pa.int64())]),
                                 partition_keys=["day", "hour"])
    table.write(pa.table({"day": ["a", "a", "b", "b"] * 3, "hour": pa.array([1, 2, 1, 2] * 3, pa.int32()),
                          "v": list(range(12))}))
    df = tarn.spark.read(spark, table.root)
    assert rows(df.filter("hour = 2").select("v")) == [(1,), (3,), (5,), (7,), (9,), (11,)]
    delete_partitions_except(table, "day=b")
    assert rows(df.filter("day = 'b' AND hour = 1").select("v")) == [(2,), (6,), (10,)]


def test_deletion_vectors_and_pruning_together(spark, catalog):
    table = catalog.create_table("db.dv", pa.schema([("day", pa.string()), ("id", pa.int64()), ("v", pa.int64())]),
                                 primary_key=["day", "id"], partition_keys=["day"],
                                 options={"bucket": "1", "deletion-vectors.enabled": "true"})
    table.write(pa.table({"day": ["x"] * 50 + ["y"] * 50, "id": list(range(50)) * 2, "v": list(range(100))}))
    table.compact(full=True)
    table.delete(pa.table({"day": ["x", "y", "y"], "id": [3, 4, 5]}))
    df = tarn.spark.read(spark, table.root)
    expected = rows(spark.read.format("tarn").load(table.root).filter("day = 'y'"))
    assert len(expected) == 48 and rows(df) == rows(spark.read.format("tarn").load(table.root))
    delete_partitions_except(table, "day=y")
    assert rows(df.filter("day = 'y'")) == expected


def test_timestamp_partitions_are_read_unpruned_but_right(spark, catalog):
    table = catalog.create_table("db.ts", pa.schema([("at", pa.timestamp("us")), ("id", pa.int64())]),
                                 partition_keys=["at"])
    stamps = [dt.datetime(2026, 11, 27, 10, 0, 0, 123456), dt.datetime(2026, 11, 28)]
    table.write(pa.table({"at": stamps * 2, "id": [0, 1, 2, 3]}))
    df = tarn.spark.read(spark, table.root)
    assert rows(df) == rows(spark.read.format("tarn").load(table.root))
    assert "PartitionFilters: []" in plan(df.filter("id = 1")) or "PartitionFilters" not in plan(df)


def test_selected_columns_are_all_the_scan_reads(spark, catalog):
    table = catalog.create_table("db.wide", pa.schema([("day", pa.string()), ("a", pa.int64()), ("b", pa.string())]),
                                 partition_keys=["day"])
    table.write(pa.table({"day": ["1", "2"], "a": [1, 2], "b": ["x", "y"]}))
    df = tarn.spark.read(spark, table.root)
    assert "ReadSchema: struct<a:bigint>" in plan(df.filter("day = '2'").select("a"))
    assert rows(df.filter("day = '2'").select("a")) == [(2,)]
    narrow = tarn.spark.read(spark, table.root, columns="day,a")
    assert narrow.columns == ["day", "a"] and rows(narrow.filter("day = '1'")) == [("1", 1)]


def test_read_options_stored_in_the_table_pin_spark_reads(spark, catalog):
    """`scan.snapshot-id` / `scan.bucket` stored in the table (issue 43 item 3): the Python source,
    the native read and a stream start where Java's reads would; a read's own option wins."""
    table = catalog.create_table("db.pinned", pa.schema([("id", pa.int64()), ("v", pa.string())]),
                                 primary_key="id", options={"bucket": "2"})
    for i in range(3):
        table.write(pa.table({"id": [i * 10 + j for j in range(10)], "v": ["x"] * 10}))
    table.alter(tarn.SetOption("scan.snapshot-id", "2"))
    expected = [(i,) for i in range(20)]
    assert rows(spark.read.format("tarn").load(table.root).select("id")) == expected
    assert rows(tarn.spark.read(spark, table.root).select("id")) == expected
    assert len(rows(spark.read.format("tarn").option("versionAsOf", "3").load(table.root))) == 30
    table.alter(tarn.RemoveOption("scan.snapshot-id"), tarn.SetOption("scan.bucket", "1"))
    in_bucket = sorted(table.scan(columns=["id"]).to_arrow().column("id").to_pylist())
    assert 0 < len(in_bucket) < 30
    assert rows(tarn.spark.read(spark, table.root).select("id")) == [(i,) for i in in_bucket]
    assert rows(spark.read.format("tarn").load(table.root).select("id")) == [(i,) for i in in_bucket]
