"""tarn.spark.read: Spark's native parquet scan for reads that need no merge, the tarn source
otherwise; the same rows and types either way."""

from __future__ import annotations

import pyarrow as pa
import pytest

import tarn
import tarn.spark
from tarn.spark.native_read import native_paths
from tarn.spark.target import ReadTarget

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("d", pa.date32())])


def rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def uses_native(df) -> bool:
    plan = df._jdf.queryExecution().executedPlan().toString()
    return "FileScan parquet" in plan or "Scan parquet" in plan


def data(ids, v="x") -> pa.Table:
    import datetime as dt
    return pa.table({"id": list(ids), "v": [v] * len(ids), "d": [dt.date(2026, 11, 21)] * len(ids)}, schema=SCHEMA)


def test_append_table_reads_natively(spark, catalog):
    table = catalog.create_table("db.nat_append", SCHEMA, partition_keys=["v"])
    table.write(data(range(5), "a"))
    table.write(data(range(5, 8), "b"))
    df = tarn.spark.read(spark, table.root)
    assert uses_native(df)
    assert df.schema == spark.read.format("tarn").load(table.root).schema or \
        [f.dataType for f in df.schema] == [f.dataType for f in spark.read.format("tarn").load(table.root).schema]
    assert rows(df) == rows(spark.read.format("tarn").load(table.root))
    assert len(rows(df.filter("v = 'b'"))) == 3


def test_primary_key_table_natively_only_when_compacted(spark, catalog):
    table = catalog.create_table("db.nat_pk", SCHEMA, primary_key=["id"], options={"bucket": "2"})
    table.write(data(range(10), "old"))
    table.write(data(range(5), "new"))
    first = table.latest_snapshot().id
    df = tarn.spark.read(spark, table.root)
    assert not uses_native(df)  # level-0 runs must be merged: the tarn source reads them
    assert rows(df) == rows(spark.read.format("tarn").load(table.root))
    table.delete(pa.table({"id": [9]}))
    table.compact(full=True)
    df = tarn.spark.read(spark, table.root)
    assert uses_native(df)
    expected = sorted([(i, "new", data([0]).column("d")[0].as_py()) for i in range(5)] +
                      [(i, "old", data([0]).column("d")[0].as_py()) for i in range(5, 9)])
    assert rows(df) == expected == rows(spark.read.format("tarn").load(table.root))
    # time travel to before the compaction: merged by the tarn source again
    old = tarn.spark.read(spark, table.root, **{"scan.snapshot-id": first})
    assert not uses_native(old) and len(rows(old)) == 10
    assert rows(tarn.spark.read(spark, table.root, columns="v,id")) == sorted((r[1], r[0]) for r in expected)


def test_cases_left_to_the_tarn_source(spark, catalog):
    table = catalog.create_table("db.nat_other", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    assert native_paths(ReadTarget.of({"path": table.root})) is None  # empty table
    table.write(data(range(3)))
    table.compact(full=True)
    assert native_paths(ReadTarget.of({"path": table.root})) is not None
    assert native_paths(ReadTarget.of({"path": table.root, "read.changelog": "true"})) is None
    assert native_paths(ReadTarget.of({"path": table.root + "$snapshots"})) is None
    table.alter(tarn.AddColumn("extra", tarn.types.INT()))  # files written with an older schema
    assert native_paths(ReadTarget.of({"path": table.root})) is None
    assert rows(tarn.spark.read(spark, table.root)) == [(i, "x", data([0]).column("d")[0].as_py(), None) for i in range(3)]
    with pytest.raises(tarn.InvalidOption, match="path"):
        tarn.spark.read(spark, table.root, path="/elsewhere")
