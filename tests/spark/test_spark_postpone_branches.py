"""Spark on postpone-bucket tables (writes without a bucket shuffle, batch and streaming;
the postpone compaction spread over tasks) and on branches (read, write, compact, stream
through option 'branch' or a `$branch_<name>` path)."""

from __future__ import annotations

import os
import uuid

import pyarrow as pa
import pytest

import tarn
import tarn.spark

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])


@pytest.fixture
def catalog(tmp_path):
    return tarn.Catalog(str(tmp_path / "wh"))


def frame(spark, dts, ids, v):
    return spark.createDataFrame([(d, i, f"{v}{i}") for d, i in zip(dts, ids)], "dt string, id bigint, v string")


def rows_of(table) -> list[tuple]:
    return sorted((r["dt"], r["id"], r["v"]) for r in table.scan().to_arrow().to_pylist())


def test_postpone_writes_then_distributed_compaction(spark, catalog):
    table = catalog.create_table("db.p", SCHEMA, primary_key=["dt", "id"], partition_keys=["dt"],
                                 options={"bucket": "-2"})
    n = 400
    df = frame(spark, [f"d{i % 4}" for i in range(n)], range(n), "a").repartition(3)
    tarn.spark.write(df, table.root)
    frame(spark, ["d0", "d1"], [0, 1], "b").write.format("tarn").mode("append").save(table.root)
    assert rows_of(table) == []  # postponed: no reader sees them yet
    assert all(e.bucket == -2 for e in table.live_entries(table.latest_snapshot()))
    snapshot = tarn.spark.compact(spark, table.root)
    assert snapshot.commit_kind == "COMPACT"
    got = rows_of(catalog.load_table("db.p"))
    want = sorted([(f"d{i % 4}", i, f"a{i}") for i in range(2, n)] + [("d0", 0, "b0"), ("d1", 1, "b1")])
    assert got == want
    counts = {e.total_buckets for e in table.live_entries(table.latest_snapshot())}
    assert counts == {1}  # Paimon 2.1: postponed bytes over postpone.target-size-per-bucket (1 gb)


def test_postpone_streaming_write(spark, catalog, tmp_path):
    table = catalog.create_table("db.s", SCHEMA, primary_key=["dt", "id"], options={"bucket": "-2"})
    source = catalog.create_table("db.src", SCHEMA)
    source.write(pa.table({"dt": ["x"] * 3, "id": pa.array([1, 2, 3], pa.int64()), "v": ["a", "b", "c"]}))
    query = (spark.readStream.format("tarn").load(source.root).writeStream.format("tarn")
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start(table.root))
    query.awaitTermination()
    assert rows_of(table) == []
    table.compact()
    assert rows_of(table) == [("x", 1, "a"), ("x", 2, "b"), ("x", 3, "c")]


def test_branch_through_spark_options_and_paths(spark, catalog):
    table = catalog.create_table("db.b", SCHEMA, primary_key=["dt", "id"], options={"bucket": "2"})
    table.write(pa.table({"dt": ["x"], "id": pa.array([1], pa.int64()), "v": ["main"]}))
    table.create_tag("t1")
    table.create_branch("dev", from_tag="t1")
    frame(spark, ["x"], [2], "dev").write.format("tarn").mode("append").option("branch", "dev").save(table.root)
    tarn.spark.write(frame(spark, ["x"], [3], "dev"), table.root + "$branch_dev")
    read = spark.read.format("tarn").option("branch", "dev").load(table.root).collect()
    assert sorted((r.id, r.v) for r in read) == [(1, "main"), (2, "dev2"), (3, "dev3")]
    assert rows_of(table) == [("x", 1, "main")]
    tarn.spark.compact(spark, table.root + "$branch_dev", full=True)
    branch = catalog.load_table("db.b$branch_dev")
    assert branch.latest_snapshot().commit_kind == "COMPACT"
    assert table.latest_snapshot().id == 1
    snaps = spark.read.format("tarn").load(table.root + "$branch_dev$snapshots").collect()
    assert [r.snapshot_id for r in snaps] == [s.id for s in branch.snapshots()]
    with pytest.raises(Exception, match="branch 'nope' does not exist"):
        spark.read.format("tarn").option("branch", "nope").load(table.root).collect()
    assert not os.path.exists(table.root + "$branch_nope")
    name = f"q_{uuid.uuid4().hex[:8]}"
    query = (spark.readStream.format("tarn").option("branch", "dev").load(table.root).writeStream
             .format("memory").queryName(name).trigger(availableNow=True).start())
    query.awaitTermination()
    assert sorted(r.id for r in spark.sql(f"SELECT * FROM {name}").collect()) == [1, 2, 3]


def test_postpone_rescale_and_stream_read_on_spark(spark, catalog):
    table = catalog.create_table("db.r", SCHEMA, primary_key=["dt", "id"], options={
        "bucket": "-2", "postpone.merge-on-read": "true", "merge-engine": "aggregation",
        "fields.v.aggregate-function": "listagg"})
    table.write(pa.table({"dt": ["x"] * 4, "id": pa.array([1, 2, 3, 4], pa.int64()), "v": ["a", "b", "c", "d"]}))
    table.compact()
    table.write(pa.table({"dt": ["x"], "id": pa.array([1], pa.int64()), "v": ["z"]}))  # postponed
    assert tarn.spark.rescale(spark, table.root, bucket=3) is not None
    assert {e.total_buckets for e in table.live_entries(table.latest_snapshot()) if e.bucket >= 0} == {3}
    table.compact()
    got = {r["id"]: r["v"] for r in table.scan().to_arrow().to_pylist()}
    assert got == {1: "a,z", 2: "b", 3: "c", 4: "d"}  # the postponed row applied once
    name = f"q_{uuid.uuid4().hex[:8]}"
    query = (spark.readStream.format("tarn").option("scan.mode", "from-snapshot").option("scan.snapshot-id", "1")
             .load(table.root).writeStream.format("memory").queryName(name).trigger(availableNow=True).start())
    query.awaitTermination()
    streamed = sorted((r.id, r.v) for r in spark.sql(f"SELECT * FROM {name}").collect())
    assert streamed == [(1, "a"), (1, "z"), (2, "b"), (3, "c"), (4, "d")]  # postponed rows as written
