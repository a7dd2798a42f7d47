"""Cross-partition upsert tables on Spark: tarn.spark.write places keys on the driver (one key
index, one commit); Spark reads one row per key; by_bucket / streaming and overwrite refuse."""

from __future__ import annotations

import pytest

import tarn
import tarn.spark
from tarn.errors import InvalidOption

DDL = "dt string, k long, v string"
OPTIONS = {"primary-key": "k", "partition": "dt", "dynamic-bucket.target-row-num": "4"}


def frame(spark, rows):
    return spark.createDataFrame(rows, DDL)


def test_spark_write_moves_keys_between_partitions(spark, path):
    tarn.spark.write(frame(spark, [("a", k, f"x{k}") for k in range(10)]), path, **OPTIONS)
    table = tarn.load_table(path)
    assert table.options.get("bucket") is None or table.options.get("bucket") == "-1"
    tarn.spark.write(frame(spark, [("b", k, f"y{k}") for k in range(0, 10, 2)] + [("c", 20, "z")]), path)
    oracle = {k: ("b", f"y{k}") if k % 2 == 0 else ("a", f"x{k}") for k in range(10)} | {20: ("c", "z")}
    read = spark.read.format("tarn").load(path).collect()
    assert sorted(r["k"] for r in read) == sorted(oracle)  # one row per key
    assert {r["k"]: (r["dt"], r["v"]) for r in read} == oracle
    assert len(table.snapshots()) >= 2


def test_streaming_and_overwrite_are_refused(spark, path):
    tarn.spark.write(frame(spark, [("a", 1, "x")]), path, **OPTIONS)
    with pytest.raises(InvalidOption, match="cross-partition"):
        tarn.spark.by_bucket(frame(spark, [("b", 1, "y")]), path)
    with pytest.raises(InvalidOption, match="OVERWRITE"):
        tarn.spark.write(frame(spark, [("b", 1, "y")]), path, mode="overwrite")
    assert tarn.load_table(path).scan().to_arrow().to_pylist() == [{"dt": "a", "k": 1, "v": "x"}]


def test_assigner_tasks_place_many_keys_like_a_local_writer(spark, path, tmp_path):
    # rows of 600 keys over 3 partitions, then half of them moved and new ones added: assigner
    # tasks each own a key range and their own buckets; the result equals a local writer's
    first = [(["a", "b", "c"][k % 3], k, f"x{k}") for k in range(600)]
    second = [(["b", "c", "d"][k % 3], k, f"y{k}") for k in range(0, 900, 2)]
    tarn.spark.write(frame(spark, first), path, **{**OPTIONS, "dynamic-bucket.target-row-num": "50"})
    tarn.spark.write(frame(spark, second).repartition(3), path)
    table = tarn.load_table(path)
    oracle = {k: (dt, v) for dt, k, v in first} | {k: (dt, v) for dt, k, v in second}
    got = table.scan().to_arrow().to_pylist()
    assert len(got) == len(oracle) and {r["k"]: (r["dt"], r["v"]) for r in got} == oracle
    channels = max(spark.sparkContext.defaultParallelism, int(spark.conf.get("spark.sql.shuffle.partitions")))
    files = table.live_entries(table.latest_snapshot(), table.schema())
    in_a = {e.bucket for e in files if e.partition == tarn.partition.to_bytes(table.schema(), ["a"])}
    assert in_a == set(range(channels))  # each assigner task opened its own bucket (id = task) in partition a
    assert len(table.snapshots()) <= 4  # one commit per write (APPEND, and COMPACT when compacted)
