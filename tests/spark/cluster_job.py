"""The Spark job of tests/spark/test_spark_cluster.py, run as its own driver process.

    python cluster_job.py <spark://master> <warehouse s3:// URI> <storage options JSON> <checkpoint dir>

Every table lives on S3; the storage options reach the executors only as data source options
(the executors' environment has no AWS settings). Prints one JSON line of what Spark saw.
"""

from __future__ import annotations

import json
import sys
import time

from pyspark.sql import functions as F

import tarn.spark


def main(master: str, warehouse: str, storage: dict, checkpoint: str) -> dict:
    spark = tarn.spark.session(master, "tarn-cluster-test", {
        "spark.executor.memory": "1g", "spark.executor.cores": "1", "spark.cores.max": "2",
        "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
        "spark.ui.enabled": "false", "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1"})
    try:
        return run(spark, warehouse, storage, checkpoint)
    finally:
        spark.stop()


def run(spark, warehouse: str, storage: dict, checkpoint: str) -> dict:
    clock = Clock()
    executors = wait_for_executors(spark, 2)
    clock.lap("executors")
    pk, src, dst = (f"{warehouse}/db.db/{name}" for name in ("pk", "src", "dst"))

    # primary-key writes: 1000 rows, then an upsert of 100 of them, one writer per bucket
    rows = spark.range(0, 1000).select(F.col("id"), F.concat(F.lit("v"), F.col("id").cast("string")).alias("v"))
    tarn.spark.write(rows, pk, **{"primary-key": "id", "bucket": "4", **storage})
    upsert = spark.range(0, 100).select(F.col("id"), F.lit("updated").alias("v"))
    tarn.spark.write(upsert, pk, **storage)
    clock.lap("pk writes")

    # streaming: a tarn table read as a stream into another, exactly once, two runs
    batch = spark.range(0, 50).select(F.col("id"), (F.col("id") * 10).alias("amount"))
    batch.write.format("tarn").mode("append").options(**storage).save(src)
    stream(spark, src, dst, storage, checkpoint)
    more = spark.range(50, 80).select(F.col("id"), (F.col("id") * 10).alias("amount"))
    more.write.format("tarn").mode("append").options(**storage).save(src)
    stream(spark, src, dst, storage, checkpoint)
    clock.lap("streaming")

    # DML on S3 from a cluster (issue 38: the table's location lost its scheme on the way)
    tarn.spark.delete(spark, pk, "id >= 990", storage_options=storage)
    tarn.spark.update(spark, pk, {"v": "u2"}, "id < 3", storage_options=storage)
    source = spark.createDataFrame([(980, "merged"), (2000, "new")], "id long, v string")
    tarn.spark.merge_into(spark, pk, source, when_matched_update="*", storage_options=storage)
    clock.lap("dml")

    # distributed compaction on the executors, committed once by the driver
    compacted = tarn.spark.compact(spark, pk, full=True, storage_options=storage)
    clock.lap("compaction")

    # read back through Spark
    pk_rows = spark.read.format("tarn").options(**storage).load(pk)
    dst_rows = spark.read.format("tarn").options(**storage).load(dst)
    result = {
        "executors": executors,
        "pk_count": pk_rows.count(),
        "pk_updated": pk_rows.filter(F.col("v") == "updated").count(),
        "pk_sample": sorted(tuple(r) for r in pk_rows.filter(F.col("id").isin(1, 5, 500, 980, 2000)).collect()),
        "dst_ids": sorted(r.id for r in dst_rows.select("id").collect()),
        "dst_amount": dst_rows.agg(F.sum("amount")).first()[0],
        "compaction_snapshot": compacted.id if compacted is not None else None,
    }
    clock.lap("read back")
    return {**result, "seconds": clock.laps}


class Clock:
    def __init__(self):
        self.start, self.laps = time.monotonic(), {}

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.laps[name] = round(now - self.start, 1)
        self.start = now


def stream(spark, src: str, dst: str, storage: dict, checkpoint: str) -> None:
    query = (spark.readStream.format("tarn").options(**storage).load(src)
             .writeStream.format("tarn").options(**storage).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start(dst))
    query.awaitTermination(300)
    if query.exception() is not None:
        raise RuntimeError(f"streaming query failed: {query.exception()}")


def wait_for_executors(spark, wanted: int, timeout: float = 120.0) -> int:
    """How many executors registered (waits for `wanted`; the driver is not counted)."""
    deadline = time.monotonic() + timeout
    while True:
        count = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
        if count >= wanted or time.monotonic() > deadline:
            return count
        time.sleep(0.5)


if __name__ == "__main__":
    master_url, warehouse_uri, options_json, checkpoint_dir = sys.argv[1:5]
    print("RESULT " + json.dumps(main(master_url, warehouse_uri, json.loads(options_json), checkpoint_dir)))
