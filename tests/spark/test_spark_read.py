"""Batch reads through Spark: schema, splits as input partitions, filters, time travel,
system tables, column pruning, bad options."""

from __future__ import annotations

import datetime as dt
import decimal
import os

import pyarrow as pa
import pytest
from pyspark.errors import PySparkException
from pyspark.sql.datasource import EqualTo, GreaterThan, In, IsNotNull, Not, StringStartsWith

import tarn
from tarn.ops.tags import create_tag
from tarn.spark.batch_read import FilteringBatchReader, pack_splits, task_size, to_predicate
from tarn.spark.target import ReadTarget

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


def rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def pk_table(catalog, buckets=2):
    return catalog.create_table("db.pk", SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
                                options={"bucket": str(buckets)})


def test_types_and_nullability_reach_spark(spark, catalog):
    schema = pa.schema([pa.field("id", pa.int32(), False), ("d", pa.date32()), ("ts", pa.timestamp("us")),
                        ("ltz", pa.timestamp("us", tz="UTC")), ("amount", pa.decimal128(10, 2)),
                        ("tags", pa.list_(pa.string())), ("blob", pa.binary()), ("ok", pa.bool_())])
    table = catalog.create_table("db.types", schema)
    table.write(pa.table({"id": [1], "d": [dt.date(2026, 11, 20)], "ts": [dt.datetime(2026, 11, 20, 10, 30)],
                          "ltz": [dt.datetime(2026, 11, 20, 10, 30, tzinfo=dt.timezone.utc)],
                          "amount": [decimal.Decimal("12.34")], "tags": [["a", "b"]], "blob": [b"\x00\x01"],
                          "ok": [True]}, schema=schema))
    df = spark.read.format("tarn").load(table.root)
    types = {f.name: (f.dataType.simpleString(), f.nullable) for f in df.schema.fields}
    assert types == {"id": ("int", False), "d": ("date", True), "ts": ("timestamp_ntz", True),
                     "ltz": ("timestamp", True), "amount": ("decimal(10,2)", True),
                     "tags": ("array<string>", True), "blob": ("binary", True), "ok": ("boolean", True)}
    row = df.collect()[0]
    assert (row.id, row.d, row.ts, row.amount, row.tags, row.blob, row.ok) == (
        1, dt.date(2026, 11, 20), dt.datetime(2026, 11, 20, 10, 30), decimal.Decimal("12.34"), ["a", "b"],
        bytearray(b"\x00\x01"), True)


def test_splits_become_input_partitions_packed_by_target_size(spark, catalog):
    table = catalog.create_table("db.log", SCHEMA)
    for i in range(4):
        table.write(pa.table({"dt": ["a"], "id": [i], "v": ["x"]}, schema=SCHEMA))
    tiny = spark.read.format("tarn").option("source.split.target-size", "1 b").load(table.root)
    assert tiny.rdd.getNumPartitions() == 4  # one file per split, none packed together
    big = spark.read.format("tarn").load(table.root)
    # small files are packed together, into no fewer tasks than the driver has cores
    assert big.rdd.getNumPartitions() == min(4, os.cpu_count())
    assert rows(big) == [("a", i, "x") for i in range(4)]


def test_pack_splits_balances_groups():
    from tarn.scan.planner import Split

    class F:
        def __init__(self, size):
            self.file_size, self.row_count = size, 1

    splits = [Split(b"", (), 0, "", [F(s)], False) for s in (5, 5, 20, 1, 1)]
    groups = pack_splits(splits, target_size=10, open_file_cost=2)  # costs 5 5 20 2 2: 4 groups
    assert sorted([s.files[0].file_size for s in g] for g in groups) == [[1, 1], [5], [5], [20]]
    assert len(pack_splits(splits, target_size=20, open_file_cost=2)) == 2
    assert len(pack_splits(splits, target_size=1, open_file_cost=2)) == 5  # never more than splits
    assert task_size(splits, target_size=10, open_file_cost=2, parallelism=4) == 8  # 34 bytes / 4
    assert task_size(splits, target_size=10, open_file_cost=2, parallelism=1) == 10
    assert task_size(splits, target_size=10, open_file_cost=2, parallelism=100) == 2


def test_primary_key_table_reads_merged_rows(spark, catalog):
    table = pk_table(catalog)
    table.write(pa.table({"dt": ["a", "a", "b"], "id": [1, 2, 1], "v": ["x", "y", "z"]}, schema=SCHEMA))
    table.write(pa.table({"dt": ["a"], "id": [1], "v": ["x2"]}, schema=SCHEMA))
    table.delete(pa.table({"dt": ["b"], "id": [1]}))
    df = spark.read.format("tarn").load(table.root)
    assert rows(df) == [("a", 1, "x2"), ("a", 2, "y")]
    # a value filter on a PK table applies to merged rows: the old 'x' is gone
    assert rows(df.filter("v = 'x'")) == []
    assert df.count() == 2  # the filtered scan above does not leak into this one


def test_filters_become_tarn_predicates():
    types = {"dt": "VARCHAR", "id": "BIGINT", "ts": "TIMESTAMP"}
    assert to_predicate(EqualTo(("dt",), "a"), types) == (tarn.col("dt") == "a")
    assert to_predicate(Not(GreaterThan(("id",), 3)), types) == ~(tarn.col("id") > 3)
    assert to_predicate(In(("id",), (1, 2)), types) == tarn.col("id").isin([1, 2])
    assert to_predicate(IsNotNull(("id",)), types) == tarn.col("id").is_not_null()
    assert to_predicate(StringStartsWith(("dt",), "20"), types) == tarn.col("dt").startswith("20")
    assert to_predicate(EqualTo(("ts",), dt.datetime(2026, 1, 1)), types) is None  # left to Spark
    assert to_predicate(EqualTo(("nested", "x"), 1), types) is None


def test_pushed_filters_prune_partitions_and_files(catalog):
    """What Spark's filter pushdown does when enabled (the reader is driven directly, since
    pushdown is off on Spark releases where it leaks into other scans)."""
    table = pk_table(catalog, buckets=1)
    table.write(pa.table({"dt": ["a", "b", "c"], "id": [1, 2, 3], "v": ["x", "y", "z"]}, schema=SCHEMA))
    target = ReadTarget.of({"path": table.root})
    reader = FilteringBatchReader(target, target.spark_schema())
    left = list(reader.pushFilters([EqualTo(("dt",), "b"), StringStartsWith(("v",), "y"),
                                    EqualTo(("ts",), 1)]))
    assert left == [EqualTo(("ts",), 1)]  # not a column tarn knows: left to Spark
    groups = reader.partitions()
    splits = [s for g in groups for s in g.splits]
    assert [s.partition_values for s in splits] == [("b",)]  # partitions a and c pruned
    batches = [b for g in groups for b in reader.read(g)]
    assert pa.Table.from_batches(batches).to_pylist() == [{"dt": "b", "id": 2, "v": "y"}]


def test_time_travel_by_snapshot_tag_and_timestamp(spark, catalog):
    table = catalog.create_table("db.tt", SCHEMA)
    for i in range(3):
        table.write(pa.table({"dt": ["a"], "id": [i], "v": ["x"]}, schema=SCHEMA))
    create_tag(table, "first", snapshot_id=1)
    second = table.snapshot(2)

    def count(**options):
        reader = spark.read.format("tarn")
        for k, v in options.items():
            reader = reader.option(k, v)
        return reader.load(table.root).count()

    assert count() == 3
    assert count(**{"scan.snapshot-id": 2}) == 2
    assert count(versionAsOf=2) == 2
    assert count(versionAsOf="first") == 1
    assert count(**{"scan.tag-name": "first"}) == 1
    assert count(**{"scan.timestamp-millis": second.time_millis}) == 2
    moment = dt.datetime.fromtimestamp(second.time_millis / 1000).isoformat(sep=" ")
    assert count(timestampAsOf=moment) == 2


@pytest.mark.parametrize("option, value, message", [
    ("scan.snapshot-id", "99", "snapshot 99 does not exist"),
    ("scan.tag-name", "nope", "nope"),
    ("versionAsOf", "nope", "nope"),
    ("bucket-number", "3", "unknown option 'bucket-number'"),
    ("columns", "id,missing", "unknown column(s) ['missing']"),
])
def test_bad_reads_fail_before_any_task(spark, catalog, option, value, message):
    table = catalog.create_table("db.bad", SCHEMA)
    table.write(pa.table({"dt": ["a"], "id": [1], "v": ["x"]}, schema=SCHEMA))
    with pytest.raises(PySparkException, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        spark.read.format("tarn").option(option, value).load(table.root).collect()


def test_system_tables(spark, catalog):
    table = pk_table(catalog)
    table.write(pa.table({"dt": ["a", "b"], "id": [1, 2], "v": ["x", "y"]}, schema=SCHEMA))
    snapshots = spark.read.format("tarn").load(table.root + "$snapshots")
    assert [(r.snapshot_id, r.commit_kind) for r in snapshots.collect()] == [(1, "APPEND")]
    files = spark.read.format("tarn").load(table.root + "$files")
    assert files.count() == 2 and set(files.columns) >= {"partition", "bucket", "file_path", "level"}


def test_column_pruning_by_schema_or_option(spark, catalog):
    table = catalog.create_table("db.cols", SCHEMA)
    table.write(pa.table({"dt": ["a"], "id": [1], "v": ["x"]}, schema=SCHEMA))
    by_schema = spark.read.format("tarn").schema("v string, id long").load(table.root)
    assert by_schema.columns == ["v", "id"] and rows(by_schema) == [("x", 1)]
    by_option = spark.read.format("tarn").option("columns", "id").load(table.root)
    assert by_option.columns == ["id"] and rows(by_option) == [(1,)]


def test_empty_table_reads_empty(spark, catalog):
    table = catalog.create_table("db.empty", SCHEMA)
    assert spark.read.format("tarn").load(table.root).count() == 0
